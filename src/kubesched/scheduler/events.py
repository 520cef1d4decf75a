"""events.k8s.io/v1 Events recorded as client-go's event broadcaster (tools/events, v0.35.4) records them.

Isomorphic events — same type, action, reason, reporting controller and instance, and regarding
object; the note does not count — become one Event with a series:

* the first is created;
* the second sets the series (count 2, lastObservedTime) with a strategic-merge patch (created anew
  if the Event is gone);
* later ones are only counted here; the counts are written every 30 minutes, and once more when the
  series ends (6 minutes without a new one), when it is forgotten. A single event is forgotten 6
  minutes after it happened.

So a pod that fails scheduling again and again makes one FailedScheduling Event, not one per attempt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubesched.cluster.kubeclient import APIError

log = logging.getLogger("kubesched.scheduler")
FINISH_TIME = 6 * 60.0
REFRESH_TIME = 30 * 60.0
STRATEGIC = "application/strategic-merge-patch+json"

Call = Callable[[str, str, Any, str], Awaitable[bytes]]


def micro_time(ts: float | None = None) -> str:
    """A metav1.MicroTime: RFC 3339 with microseconds, UTC (now by default)."""
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Recorded:
    event: dict[str, Any]
    happened: float
    count: int = 0  # 0: a single event, no series yet
    last_observed: float = 0.0


class EventRecorder:
    """Writes Events through ``call(method, path, body, content_type)``, aggregating repeats into series."""

    def __init__(self, call: Call, now: Callable[[], float] = time.time) -> None:
        self._call = call
        self._now = now
        self._cache: dict[tuple[Any, ...], _Recorded] = {}

    def __len__(self) -> int:
        return len(self._cache)

    def record(self, event: dict[str, Any]) -> Awaitable[None] | None:
        """Take an event; returns the write to make, or None when it only counts in a series."""
        regarding = event["regarding"]
        key = (
            event["type"],
            event["action"],
            event["reason"],
            event["reportingController"],
            event["reportingInstance"],
            regarding.get("uid"),
            regarding.get("namespace"),
            regarding.get("name"),
        )
        now = self._now()
        seen = self._cache.get(key)
        if seen is None:
            self._cache[key] = _Recorded(event, now)
            return self._create(event)
        seen.last_observed = now
        if seen.count:
            seen.count += 1
            return None
        seen.count = 2
        return self._write_series(seen)

    async def finish(self) -> None:
        """End the series quiet for 6 minutes (writing their last count); forget old single events."""
        limit = self._now() - FINISH_TIME
        for key, seen in list(self._cache.items()):
            if seen.count and seen.last_observed < limit:
                await self._write_series(seen)
                del self._cache[key]
            elif not seen.count and seen.happened < limit:
                del self._cache[key]

    async def refresh(self) -> None:
        """Write every live series' count."""
        for seen in list(self._cache.values()):
            if seen.count:
                await self._write_series(seen)

    async def run(self) -> None:
        """finish every 6 minutes and refresh every 30, until cancelled."""
        elapsed = 0.0
        while True:
            await asyncio.sleep(FINISH_TIME)
            elapsed += FINISH_TIME
            await self.finish()
            if elapsed >= REFRESH_TIME:
                elapsed = 0.0
                await self.refresh()

    async def _create(self, event: dict[str, Any]) -> None:
        path = f"/apis/events.k8s.io/v1/namespaces/{event['metadata']['namespace']}/events"
        try:
            await self._call("POST", path, event, "application/json")
        except (APIError, OSError) as err:
            log.info("could not record event %s: %s", event["reason"], err)

    async def _write_series(self, seen: _Recorded) -> None:
        series = {"count": seen.count, "lastObservedTime": micro_time(seen.last_observed)}
        meta = seen.event["metadata"]
        path = f"/apis/events.k8s.io/v1/namespaces/{meta['namespace']}/events/{meta['name']}"
        try:
            await self._call("PATCH", path, {"series": series}, STRATEGIC)
        except APIError as err:
            if err.status != 404:
                log.info("could not record event %s: %s", seen.event["reason"], err)
                return
            # Gone (expired, deleted): the series is written as a new Event.
            await self._create({**seen.event, "series": series})
        except OSError as err:
            log.info("could not record event %s: %s", seen.event["reason"], err)
