"""ASGI plumbing the HTTP shells share (the extender's ASGI adapter, the webhook): the lifespan
handshake, reading a request body under a size limit, and sending a whole response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class TooLarge(Exception):
    """The body is over the limit (announced by Content-Length, or found while reading)."""


async def lifespan(receive: Receive, send: Send) -> None:
    """Answer startup and shutdown; the apps have nothing to set up."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The whole request body; raises TooLarge past ``limit`` bytes."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            raise TooLarge
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise TooLarge
            chunks.append(chunk)
        more = message.get("more_body", False)
    # Join once: appending to bytes in the loop would copy the body again for every chunk.
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def reply(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]})
    await send({"type": "http.response.body", "body": body})
