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

A write that fails on the network (not reached, answer lost) is retried as client-go's recordToSink
retries it: up to 12 tries, the first pause a random part of 10 s, then 10 s each; an answer of the
server (4xx/5xx) is not retried. A create whose answer was lost may be sent again: the Event's name is
fixed, so a second copy is refused (409 AlreadyExists), never duplicated. At most 1000 writes wait at
once (client-go's broadcaster queue); beyond that, new events are dropped and counted.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubesched.cluster.kubeclient import AnswerLost, APIError, Fenced

log = logging.getLogger("kubesched.scheduler")
FINISH_TIME = 6 * 60.0
REFRESH_TIME = 30 * 60.0
STRATEGIC = "application/strategic-merge-patch+json"
MAX_TRIES = 12  # client-go's maxTriesPerEvent
RETRY_SLEEP = 10.0  # client-go's defaultSleepDuration
MAX_PENDING = 1000  # client-go's maxQueuedEvents

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

    def __init__(
        self,
        call: Call,
        now: Callable[[], float] = time.time,
        *,
        retry_sleep: float = RETRY_SLEEP,
        max_tries: int = MAX_TRIES,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self._call = call
        self._now = now
        self._cache: dict[tuple[Any, ...], _Recorded] = {}
        self.retry_sleep = retry_sleep
        self.max_tries = max_tries
        self.max_pending = max_pending
        self.pending = 0  # writes started and not finished (retries included)
        self.dropped = 0  # events never written: queue full or retries exhausted
        self.retried = 0  # tries after a failed one

    def __len__(self) -> int:
        return len(self._cache)

    def record(self, event: dict[str, Any]) -> Awaitable[None] | None:
        """Take an event; returns the write to make, or None when it only counts in a series (or is dropped)."""
        if self.pending >= self.max_pending:
            self.dropped += 1
            log.warning("event queue full (%d writes waiting): dropping event %s", self.pending, event["reason"])
            return None
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
        ended = []
        for key, seen in list(self._cache.items()):
            if seen.count and seen.last_observed < limit:
                ended.append(self._write_series(seen))
                del self._cache[key]
            elif not seen.count and seen.happened < limit:
                del self._cache[key]
        await asyncio.gather(*ended)

    async def refresh(self) -> None:
        """Write every live series' count."""
        await asyncio.gather(*(self._write_series(seen) for seen in list(self._cache.values()) if seen.count))

    async def _send(self, method: str, path: str, body: Any, content_type: str, reason: str) -> bool:
        """One write with client-go's retries; True once written. APIError (an answer) is raised, not retried."""
        self.pending += 1
        lost = False
        try:
            for tries in range(1, self.max_tries + 1):
                try:
                    await self._call(method, path, body, content_type)
                    return True
                except APIError as err:
                    if lost and err.status == 409 and method == "POST":
                        return True  # the try whose answer was lost had created it
                    raise
                except Fenced as err:
                    log.info("event %s not written: %s", reason, err)
                    return False
                except OSError as err:
                    lost = lost or isinstance(err, AnswerLost)
                    if tries == self.max_tries:
                        break
                    # Random first pause, so that clients do not all retry in step when the server comes back.
                    pause = self.retry_sleep * (random.random() if tries == 1 else 1.0)
                    log.info("could not write event %s (try %d): %s; retrying in %.1fs", reason, tries, err, pause)
                    self.retried += 1
                    await asyncio.sleep(pause)
            log.warning("unable to write event %s (retry limit exceeded)", reason)
            self.dropped += 1
            return False
        finally:
            self.pending -= 1

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
            await self._send("POST", path, event, "application/json", event["reason"])
        except APIError as err:
            log.info("could not record event %s: %s", event["reason"], err)

    async def _write_series(self, seen: _Recorded) -> None:
        series = {"count": seen.count, "lastObservedTime": micro_time(seen.last_observed)}
        meta = seen.event["metadata"]
        path = f"/apis/events.k8s.io/v1/namespaces/{meta['namespace']}/events/{meta['name']}"
        try:
            await self._send("PATCH", path, {"series": series}, STRATEGIC, seen.event["reason"])
        except APIError as err:
            if err.status != 404:
                log.info("could not record event %s: %s", seen.event["reason"], err)
                return
            # Gone (expired, deleted): the series is written as a new Event.
            await self._create({**seen.event, "series": series})
