"""List then watch one resource, keeping a handler in step (client-go's reflector, in asyncio).

LIST records the resourceVersion; WATCH resumes from it with bookmarks on; every event (bookmarks
too) advances it. A watch the server ends is resumed from the last version; a 410 Gone — as an
HTTP status or as an ERROR event in the stream — means the version is too old: relist. Connection
failures back off exponentially (0.5 s doubling to 30 s) and never end the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import httpx
import msgspec

from kubesched.cluster.kubeclient import APIError, KubeClient

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


class Gone(Exception):
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
        watch_timeout: int = 300,
    ) -> None:
        self.client = client
        self.path = path
        self.handlers = handlers
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self.resource_version = ""
        self.lists = 0  # how many times it listed: tests read it to see relists
        self._list_decoder = msgspec.json.Decoder(_List[kind])  # type: ignore[valid-type]
        self._obj_decoder = msgspec.json.Decoder(kind)
        self._event_decoder = msgspec.json.Decoder(_Event)
        self._meta_decoder = msgspec.json.Decoder(_Obj)

    async def list(self) -> None:
        params = {"fieldSelector": self.field_selector} if self.field_selector else {}
        body = await self.client.request("GET", self.path, params=params)
        lst = self._list_decoder.decode(body)
        self.resource_version = lst.metadata.resource_version
        self.handlers.replace(list(lst.items or []))
        self.lists += 1
        self.handlers.synced()

    async def watch(self) -> None:
        """One watch request, until the server ends it; raises Gone on 410."""
        params = {
            "watch": "1",
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self.watch_timeout),
        }
        if self.field_selector:
            params["fieldSelector"] = self.field_selector
        try:
            async for line in self.client.stream_lines(self.path, params, read_timeout=self.watch_timeout + 30):
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
            except (httpx.HTTPError, APIError, msgspec.DecodeError, OSError) as err:
                log.warning("watch of %s failed: %s; retrying in %.1fs", self.path, err, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
