"""The scheduler's HTTP face: /healthz and /livez, /readyz (200 once the cache has synced), /metrics, and
/debug/decisions[/NAMESPACE/NAME] (each pod's last decision, `kubesched explain --scheduler`).

A `kubesched.http` handler, carried by the same lean server as the extender and the webhook, with the
same limits (header size, read and idle timeouts, connection cap).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

from kubesched.http.handler import TEXT, Response, too_large_response
from kubesched.scheduler.decisions import DecisionRecords
from kubesched.scheduler.metrics import SchedulerMetrics

_PROMETHEUS = b"text/plain; version=0.0.4"
_JSON = b"application/json"
_DECISIONS = "/debug/decisions"
_LISTED = 100  # /debug/decisions lists the most recent ones
# A namespace is a DNS label, a pod name a DNS subdomain (at most 63 and 253 characters).
_POD_KEY = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?")


class SchedulerRoutes:
    """``ready`` says whether the cluster state has synced. No route takes a body."""

    max_body = 0

    def __init__(
        self, metrics: SchedulerMetrics, ready: Callable[[], bool], records: DecisionRecords | None = None
    ) -> None:
        self.metrics = metrics
        self.ready = ready
        self.records = records

    def dispatch(self, method: str, path: str, body: bytes) -> Response:
        if method not in ("GET", "HEAD"):
            return 405, f"{path} takes GET, not {method}".encode(), TEXT
        if path in ("/healthz", "/livez"):
            return 200, b"ok", TEXT
        if path == "/readyz":
            ok = self.ready()
            return (200, b"ok", TEXT) if ok else (503, b"cluster state not synced yet", TEXT)
        if path == "/metrics":
            return 200, self.metrics.render(), _PROMETHEUS
        if path == _DECISIONS or path.startswith(_DECISIONS + "/"):
            return self._decisions(path.removeprefix(_DECISIONS).strip("/"))
        return 404, f"unknown path {path[:200]!r}: try /healthz, /readyz, /metrics or {_DECISIONS}".encode(), TEXT

    def _decisions(self, key: str) -> Response:
        records = self.records
        if records is None or not records.size:
            return 404, b"this scheduler keeps no decision records (--decision-records 0)", TEXT
        if not key:
            items = [msgspec.to_builtins(d) for d in records.recent(_LISTED)]
            doc = {"kind": "DecisionList", "kept": len(records), "size": records.size, "items": items}
            return 200, msgspec.json.encode(doc), _JSON
        if not _POD_KEY.fullmatch(key):
            return 400, f"{_DECISIONS}/NAMESPACE/NAME: {key[:300]!r} is not a namespace and a pod name".encode(), TEXT
        found = records.get(key)
        if found is None:
            kept = f"it keeps the last decision of {records.size} pods, {len(records)} now"
            return 404, f"no decision recorded for {key} by this scheduler ({kept})".encode(), TEXT
        return 200, msgspec.json.encode(found), _JSON

    def too_large(self, path: str) -> Response:
        return too_large_response(self.max_body)
