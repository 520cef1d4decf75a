"""Go `time.Duration` values: parsed and printed exactly as Go's `ParseDuration` and `Duration.String` do.

`metav1.Duration` (the type of `httpTimeout` in the v1 config) is marshalled with `String()`, so rendering through
this module produces the text kube-scheduler itself would write: `5s`, `1m30s`, `1h0m0s`, `1.5ms`.
"""

from __future__ import annotations

from dataclasses import dataclass

NANOSECOND = 1
MICROSECOND = 1_000 * NANOSECOND
MILLISECOND = 1_000 * MICROSECOND
SECOND = 1_000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

# Go's time.Duration is an int64 of nanoseconds.
_MAX_NANOSECONDS = 2**63 - 1
_DIGITS = "0123456789"
# Go accepts both micro signs: U+00B5 (micro sign) and U+03BC (Greek small letter mu).
_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,
    "\u03bcs": MICROSECOND,
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}


@dataclass(frozen=True, slots=True, order=True)
class Duration:
    """A span of time in integer nanoseconds, like Go's `time.Duration` (negative values are representable)."""

    nanoseconds: int

    @classmethod
    def of(cls, *, hours: int = 0, minutes: int = 0, seconds: float = 0, milliseconds: int = 0) -> Duration:
        """Build a duration from parts: `Duration.of(minutes=1, seconds=30)`."""
        return cls(hours * HOUR + minutes * MINUTE + round(seconds * SECOND) + milliseconds * MILLISECOND)

    @classmethod
    def parse(cls, text: str) -> Duration:
        """Parse a Go duration string ("500ms", "5s", "1h2m3.5s", "-1.5h"); raise ValueError like Go does."""
        return cls(parse_nanoseconds(text))

    def total_seconds(self) -> float:
        return self.nanoseconds / SECOND

    def __str__(self) -> str:
        return format_nanoseconds(self.nanoseconds)


def parse_nanoseconds(text: str) -> int:
    """Go's `time.ParseDuration`, returning nanoseconds."""
    quoted = f'"{text}"'
    s = text
    negative = False
    if s and s[0] in "+-":
        negative = s[0] == "-"
        s = s[1:]
    # Go special-cases a bare zero; every other number needs a unit.
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"invalid duration {quoted}")
    total = 0
    while s:
        if not (s[0] == "." or s[0] in _DIGITS):
            raise ValueError(f"invalid duration {quoted}")
        whole, s = _take_digits(s)
        fraction = ""
        if s.startswith("."):
            fraction, s = _take_digits(s[1:])
        if not whole and not fraction:
            raise ValueError(f"invalid duration {quoted}")
        end = 0
        while end < len(s) and s[end] != "." and s[end] not in _DIGITS:
            end += 1
        unit_text, s = s[:end], s[end:]
        if not unit_text:
            raise ValueError(f"missing unit in duration {quoted}")
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise ValueError(f'unknown unit "{unit_text}" in duration {quoted}')
        # Integer arithmetic; Go truncates the fractional part towards zero as well.
        total += int(whole or "0") * unit
        if fraction:
            total += int(fraction) * unit // 10 ** len(fraction)
        if total > _MAX_NANOSECONDS + (1 if negative else 0):
            raise ValueError(f"invalid duration {quoted}")
    return -total if negative else total


def _take_digits(s: str) -> tuple[str, str]:
    end = 0
    while end < len(s) and s[end] in _DIGITS:
        end += 1
    return s[:end], s[end:]


def format_nanoseconds(nanoseconds: int) -> str:
    """Go's `Duration.String()`: "0s", "1.5ms", "5s", "1m30s", "1h0m0s"."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    u = abs(nanoseconds)
    if u < SECOND:
        # Below one second Go switches to the largest sub-second unit, with a fraction.
        if u < MICROSECOND:
            return f"{sign}{u}ns"
        if u < MILLISECOND:
            return f"{sign}{_with_fraction(u, MICROSECOND)}\u00b5s"
        return f"{sign}{_with_fraction(u, MILLISECOND)}ms"
    seconds_text = _with_fraction(u % MINUTE, SECOND) + "s"
    minutes = u // MINUTE
    if minutes == 0:
        return sign + seconds_text
    hours = minutes // 60
    if hours == 0:
        return f"{sign}{minutes}m{seconds_text}"
    return f"{sign}{hours}h{minutes % 60}m{seconds_text}"


def _with_fraction(value: int, unit: int) -> str:
    whole, rest = divmod(value, unit)
    if rest == 0:
        return str(whole)
    width = len(str(unit)) - 1
    return f"{whole}.{str(rest).rjust(width, '0').rstrip('0')}"
