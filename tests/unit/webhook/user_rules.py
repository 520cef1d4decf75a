"""A user rule imported as package.module:function by the config tests."""

from __future__ import annotations

from typing import Any

from kubesched.webhook.review import AdmissionRequest
from kubesched.webhook.rules import Verdict


def label_free(pod: dict[str, Any], request: AdmissionRequest) -> Verdict | None:
    return Verdict.deny("no labels allowed") if pod["metadata"].get("labels") else None
