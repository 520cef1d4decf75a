"""`kubesched explain --scheduler URL`: the decision a running `kubesched scheduler run` recorded for a pod."""

from __future__ import annotations

import datetime as dt

import httpx
import msgspec

from kubesched.scheduler.decisions import Decision
from kubesched.scheduler.explain.model import Recorded

MAX_ANSWER = 1 << 20  # a record is a few hundred bytes: a longer answer is not one
TIMEOUT = 5.0


def fetch(base: str, key: str) -> tuple[Recorded | None, str, str]:
    """The scheduler's record of pod ``key``, or None and why not; and the scheduler name it ran under."""
    url = f"{base.rstrip('/')}/debug/decisions/{key}"
    try:
        with httpx.stream("GET", url, timeout=TIMEOUT) as resp:
            body = b""
            for chunk in resp.iter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER:
                    return None, f"the scheduler at {base} answered more than {MAX_ANSWER} bytes: not a record", ""
            status = resp.status_code
    except (httpx.HTTPError, OSError) as err:
        return None, f"the scheduler at {base} could not be asked ({type(err).__name__}: {err})", ""
    if status == 404:
        return None, f"the scheduler at {base} has no record: {body.decode(errors='replace')[:300]}", ""
    if status != 200:
        return None, f"the scheduler at {base} answered {status}: {body.decode(errors='replace')[:300]}", ""
    try:
        got = msgspec.json.decode(body, type=Decision)
    except msgspec.DecodeError as err:
        return None, f"the scheduler at {base} answered something that is not a decision record ({err})", ""
    when = dt.datetime.fromtimestamp(got.time, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    recorded = Recorded(base, got.result, got.node, got.message, got.nominated_node, when, got.attempts)
    return recorded, "", got.scheduler_name
