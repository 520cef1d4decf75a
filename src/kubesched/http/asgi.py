"""A `Handler` as an ASGI application (tests, and any ASGI server): the lifespan handshake, the body
read under the handler's limit, the whole response sent at once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubesched.http.handler import Body, Handler

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def lifespan(receive: Receive, send: Send) -> None:
    """Answer startup and shutdown; the handlers have nothing to set up."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class ASGIApp:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        if scope["type"] != "http":
            return
        handler = self.handler
        body = Body(handler.max_body)
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and not body.announced_fits(value):
                return await reply(send, *handler.too_large(scope["path"]))
        more = True
        while more:
            message = await receive()
            chunk = message.get("body", b"")
            if chunk and not body.add(chunk):
                return await reply(send, *handler.too_large(scope["path"]))
            more = message.get("more_body", False)
        result = handler.dispatch(scope["method"], scope["path"], body.take())
        await reply(send, *(result if isinstance(result, tuple) else await result))


async def reply(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]})
    await send({"type": "http.response.body", "body": body})
