"""Reaching the API server through an HTTP proxy (kubeconfig's ``proxy-url``): a CONNECT tunnel, then TLS.

client-go honours ``proxy-url`` per cluster (http, https and socks5); kubesched speaks HTTP CONNECT to an
http:// or https:// proxy, which is what corporate proxies in front of managed clusters offer.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from urllib.parse import unquote, urlsplit

# A CONNECT answer's head is a few lines; anything longer is not a proxy speaking HTTP.
_MAX_HEAD_LINES = 100


async def open_tunnel(
    proxy: str, host: str, port: int, context: ssl.SSLContext | None, server_hostname: str | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A stream to ``host:port`` through ``proxy``, with TLS to the server on top when ``context`` is set.

    Raises OSError naming the proxy when it cannot be reached or refuses the tunnel.
    """
    url = urlsplit(proxy)
    proxy_port = url.port or (443 if url.scheme == "https" else 80)
    proxy_tls = ssl.create_default_context() if url.scheme == "https" else None
    reader, writer = await asyncio.open_connection(url.hostname, proxy_port, ssl=proxy_tls)
    try:
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
        if url.username is not None:
            secret = f"{unquote(url.username)}:{unquote(url.password or '')}".encode()
            head += f"Proxy-Authorization: Basic {base64.b64encode(secret).decode()}\r\n"
        writer.write(head.encode() + b"\r\n")
        await writer.drain()
        status_line = await reader.readline()
        parts = status_line.split(None, 2)
        for _ in range(_MAX_HEAD_LINES):
            if (await reader.readline()) in (b"\r\n", b"\n", b""):
                break
        else:
            raise OSError(f"proxy {url.hostname}:{proxy_port}: CONNECT answer too long")
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or parts[1] != b"200":
            answer = status_line.decode(errors="replace").strip() or "nothing (connection closed)"
            raise OSError(f"proxy {url.hostname}:{proxy_port} refused CONNECT {target}: {answer}")
        if context is not None:
            await writer.start_tls(context, server_hostname=server_hostname)
        return reader, writer
    except BaseException:
        writer.transport.abort()
        raise
