"""`python -m kubesched.testing.build [VERSION...]` (scripts/build-control-plane): which releases it builds."""

from __future__ import annotations

import subprocess
import sys


def test_an_unsupported_release_is_refused_naming_the_supported_ones() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kubesched.testing.build", "1.36"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "unsupported Kubernetes version '1.36': supported are 1.35 (v1.35.4), 1.37 (v1.37.2)" in out.stderr
    assert out.stdout == ""
