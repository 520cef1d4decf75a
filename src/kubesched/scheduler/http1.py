"""A small HTTP/1.1 client for the scheduler's writes: persistent connections, one request at a time each.

Why not httpx here: with hundreds of bindings in flight, httpx/httpcore spent milliseconds per request
in pool bookkeeping (checking every connection's socket for each request) — more than the scheduling
itself. The writes are small JSON requests to one server, so a pool of plain asyncio streams does.
"""

from __future__ import annotations

import asyncio
import ssl
from urllib.parse import urlsplit


class HTTPError(OSError):
    """The connection failed or the answer was not HTTP."""


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.closed = False
        self.used = False

    def close(self) -> None:
        self.closed = True
        self.writer.close()

    async def roundtrip(self, request: bytes) -> tuple[int, bytes]:
        self.used = True
        self.writer.write(request)
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            raise HTTPError("connection closed before the response")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise HTTPError(f"not an HTTP response: {status_line[:80]!r}")
        status = int(parts[1])
        length: int | None = None
        chunked = close = False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"content-length":
                length = int(value.strip())
            elif key == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif key == b"connection" and b"close" in value.lower():
                close = True
        if chunked:
            chunks = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0].strip(), 16)
                if size == 0:
                    while (await self.reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            body = b"".join(chunks)
        elif length is not None:
            body = await self.reader.readexactly(length)
        else:
            body = await self.reader.read()
            close = True
        if close:
            self.close()
        return status, body


class Pool:
    """Up to ``size`` persistent connections to one server (https or http)."""

    def __init__(
        self, server: str, ssl_context: ssl.SSLContext | bool, headers: dict[str, str], size: int = 16
    ) -> None:
        url = urlsplit(server)
        self.host = url.hostname or "localhost"
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.base = url.path.rstrip("/")
        if url.scheme != "https":
            self.ssl: ssl.SSLContext | None = None
        elif isinstance(ssl_context, ssl.SSLContext):
            self.ssl = ssl_context
        else:
            self.ssl = ssl.create_default_context()
            if not ssl_context:
                self.ssl.check_hostname = False
                self.ssl.verify_mode = ssl.CERT_NONE
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        fixed = {"Host": f"{netloc}:{self.port}", **headers}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode()
        self._idle: list[_Conn] = []
        self._slots = asyncio.Semaphore(size)

    async def _open(self) -> _Conn:
        reader, writer = await asyncio.open_connection(
            self.host, self.port, ssl=self.ssl, server_hostname=self.host if self.ssl else None
        )
        return _Conn(reader, writer)

    async def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        """(status, body); raises HTTPError (an OSError) when the server cannot be reached."""
        head = f"{method} {self.base}{path} HTTP/1.1\r\n".encode() + self._head
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n".encode()
        request = head + b"\r\n" + (body or b"")
        async with self._slots:
            while self._idle:
                conn = self._idle.pop()
                if conn.closed:
                    continue
                try:
                    result = await conn.roundtrip(request)
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    # A kept-alive connection the server closed meanwhile: try the next (or a new) one.
                    conn.close()
                    continue
                self._release(conn)
                return result
            try:
                conn = await self._open()
                result = await conn.roundtrip(request)
            except (OSError, asyncio.IncompleteReadError, ValueError) as err:
                raise HTTPError(f"{method} {path}: {type(err).__name__}: {err}") from None
            self._release(conn)
            return result

    def _release(self, conn: _Conn) -> None:
        if not conn.closed:
            self._idle.append(conn)

    async def aclose(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()
