"""List then watch one resource, keeping a handler in step (client-go's reflector, in asyncio).

LIST records the resourceVersion; WATCH resumes from it with bookmarks on; every event (bookmarks
too) advances it. A watch the server ends is resumed from the last version; a 410 Gone — as an
HTTP status or as an ERROR event in the stream — means the version is too old: relist. Connection
failures back off exponentially (0.5 s doubling to 8 s, with jitter) and never end the loop.

A connection that goes silent without a reset (a proxy or NAT that forgot it) is found out within
25 s: HTTP/1.1 has no ping (client-go's HTTP/2 pings take ~46 s), so each watch asks the server to end
it after a random 10–20 s (`timeoutSeconds`; the server sends a bookmark before it ends) and a watch
silent for that long plus 5 s is a dead connection: dropped, and resumed from the last version on a
new one. It costs one watch request per resource every 15 s on average.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import msgspec

from kubesched.cluster.kubeclient import APIError, CredentialError, KubeClient
from kubesched.errors import ClusterError

T = TypeVar("T")
log = logging.getLogger("kubesched.reflector")


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""


class _List(msgspec.Struct, Generic[T]):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[T] | None = None


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _ObjMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""


class _Obj(msgspec.Struct):
    metadata: _ObjMeta = msgspec.field(default_factory=_ObjMeta)
    code: int = 0
    message: str = ""


WATCH_MIN, WATCH_MAX = 10, 20  # timeoutSeconds of a watch, drawn anew for each
SILENCE_MARGIN = 5.0  # a watch silent for its timeoutSeconds plus this is dead
MAX_BACKOFF = 8.0


class Gone(ClusterError):
    """The watch's resourceVersion is too old (410): relist."""


@dataclass
class Handlers(Generic[T]):
    """What the reflector calls: a full replace after each list, then one call per event."""

    replace: Callable[[list[T]], None]
    upsert: Callable[[T], None]
    delete: Callable[[T], None]
    synced: Callable[[], None] = lambda: None


class Reflector(Generic[T]):
    """Keeps ``handlers`` in step with the objects at ``path`` (e.g. ``/api/v1/nodes``)."""

    def __init__(
        self,
        client: KubeClient,
        path: str,
        kind: type[T],
        handlers: Handlers[T],
        *,
        field_selector: str = "",
        watch_timeout: int | None = None,
        list_timeout: float = 60.0,
    ) -> None:
        self.client = client
        self.path = path
        self.handlers = handlers
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout  # None: random in [WATCH_MIN, WATCH_MAX) for each watch
        self.list_timeout = list_timeout
        self.watches = 0  # watch requests made (tests and docs read it)
        self.resource_version = ""
        self.lists = 0  # how many times it listed: tests read it to see relists
        self._list_decoder = msgspec.json.Decoder(_List[kind])  # type: ignore[valid-type]
        self._obj_decoder = msgspec.json.Decoder(kind)
        self._event_decoder = msgspec.json.Decoder(_Event)
        self._meta_decoder = msgspec.json.Decoder(_Obj)

    async def list(self) -> None:
        params = {"fieldSelector": self.field_selector} if self.field_selector else {}
        body = await self.client.request("GET", self.path, params=params, time_limit=self.list_timeout)
        lst = self._list_decoder.decode(body)
        self.resource_version = lst.metadata.resource_version
        self.handlers.replace(list(lst.items or []))
        self.lists += 1
        self.handlers.synced()

    async def watch(self) -> None:
        """One watch request, until the server ends it; raises Gone on 410, TransportError on silence."""
        timeout = self.watch_timeout or random.randrange(WATCH_MIN, WATCH_MAX)
        params = {
            "watch": "1",
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        if self.field_selector:
            params["fieldSelector"] = self.field_selector
        try:
            self.watches += 1
            # aclosing: the stream's connection is aborted when the loop leaves early (Gone, an error,
            # cancellation between lines), not whenever the generator is collected.
            stream = self.client.stream_lines(self.path, params, read_timeout=timeout + SILENCE_MARGIN)
            async with contextlib.aclosing(stream) as lines:
                async for line in lines:
                    event = self._event_decoder.decode(line)
                    meta = self._meta_decoder.decode(event.object)
                    if event.type == "ERROR":
                        if meta.code == 410:
                            raise Gone(meta.message)
                        raise APIError(meta.code or 500, meta.message)
                    if meta.metadata.resource_version:
                        self.resource_version = meta.metadata.resource_version
                    if event.type == "BOOKMARK":
                        continue
                    obj = self._obj_decoder.decode(event.object)
                    if event.type == "DELETED":
                        self.handlers.delete(obj)
                    else:
                        self.handlers.upsert(obj)
        except APIError as err:
            if err.status == 410:
                raise Gone(err.message) from None
            raise

    async def run(self, resume: bool = False) -> None:
        """List and watch forever (until cancelled); with ``resume``, watch from the current version first."""
        delay = 0.5
        need_list = not (resume and self.resource_version)
        while True:
            try:
                if need_list:
                    await self.list()
                    need_list = False
                await self.watch()
                delay = 0.5
            except Gone as err:
                log.info("watch of %s expired (%s): relisting", self.path, err)
                need_list = True
            except (APIError, msgspec.DecodeError, OSError) as err:
                pause = delay * random.uniform(0.5, 1.0)  # jitter: replicas do not retry in step
                if isinstance(err, CredentialError) or (isinstance(err, APIError) and err.status == 401):
                    log.error("watch of %s: authentication failed: %s; retrying in %.1fs", self.path, err, pause)
                else:
                    log.warning("watch of %s failed: %s; retrying in %.1fs", self.path, err, pause)
                await asyncio.sleep(pause)
                delay = min(delay * 2, MAX_BACKOFF)
