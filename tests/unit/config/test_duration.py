"""Go durations: parse and format as kube-scheduler does."""

from __future__ import annotations

import pytest

from kubesched.config.duration import Duration, format_nanoseconds, parse_nanoseconds


@pytest.mark.parametrize(
    ("text", "nanoseconds", "canonical"),
    [
        ("500ms", 500_000_000, "500ms"),
        ("5s", 5_000_000_000, "5s"),
        ("1m", 60_000_000_000, "1m0s"),
        ("1m30s", 90_000_000_000, "1m30s"),
        ("1h2m3.5s", 3_723_500_000_000, "1h2m3.5s"),
        ("1h", 3_600_000_000_000, "1h0m0s"),
        ("1.5ms", 1_500_000, "1.5ms"),
        ("2us", 2_000, "2\u00b5s"),
        ("300ns", 300, "300ns"),
        ("0", 0, "0s"),
        (".5s", 500_000_000, "500ms"),
        ("-1.5h", -5_400_000_000_000, "-1h30m0s"),
    ],
)
def test_duration_parse_and_format_round_trip(text: str, nanoseconds: int, canonical: str) -> None:
    assert parse_nanoseconds(text) == nanoseconds
    assert format_nanoseconds(nanoseconds) == canonical
    assert Duration.parse(canonical) == Duration(nanoseconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "invalid duration"), ("5", "missing unit"), ("5x", 'unknown unit "x"'), ("1e3s", "unknown unit")],
)
def test_duration_parse_rejects_what_go_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Duration.parse(text)
