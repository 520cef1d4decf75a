"""What a server shell hands to the HTTP server: a `Handler`, and the request body under its limit."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

Response = tuple[int, bytes, bytes]  # status, body, content type
JSON = b"application/json"
TEXT = b"text/plain; charset=utf-8"


class Handler(Protocol):
    """Routes one request. Answers at once (a tuple) when no I/O is needed, else an awaitable."""

    @property
    def max_body(self) -> int: ...

    def dispatch(self, method: str, path: str, body: bytes) -> Response | Awaitable[Response]: ...

    def too_large(self, path: str) -> Response:
        """The answer to a body over ``max_body`` (`too_large_response`; the handler may count it)."""
        ...


def too_large_response(limit: int) -> Response:
    return 413, f"request body over the limit of {limit} bytes (--max-body-bytes)".encode(), TEXT


class Body:
    """A request body gathered under a size limit: the one place that limit is checked."""

    __slots__ = ("chunks", "limit", "size")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0

    def announced_fits(self, content_length: bytes) -> bool:
        """False when a Content-Length header announces more than the limit."""
        return not (content_length.isdigit() and int(content_length) > self.limit)

    def add(self, chunk: bytes) -> bool:
        """Keep ``chunk``; False (and nothing kept) once the body is over the limit."""
        self.size += len(chunk)
        if self.size > self.limit:
            self.chunks = []
            return False
        self.chunks.append(chunk)
        return True

    def take(self) -> bytes:
        """The whole body; the buffer is empty again for the next request."""
        chunks = self.chunks
        self.chunks = []
        self.size = 0
        # Join once: appending to bytes chunk by chunk would copy the body again for every chunk.
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
