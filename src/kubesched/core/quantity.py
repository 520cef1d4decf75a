"""Kubernetes resource quantities ("500m", "2Gi", "1e3") as integers, rounded up like Quantity does.

Parsing takes time bounded by the length of the text, whatever the exponent: "1e9999999" (which
kube-apiserver accepts and stores) is known to be out of range from its digit count and exponent,
without computing 10**9999999. Values saturate at int64's bounds (Go's Quantity caps binary-SI
values there when it parses them; past it Go's Value()/MilliValue() overflow and wrap, e.g. "1e30"
gives 0 and "8Ei" in millis gives -1000: we saturate instead). Rounding is away from zero, as
Value() does ("1.5" is 2, "-1.5" is -2, "1n" is 1).
"""

from __future__ import annotations

import re
from functools import lru_cache

from kubesched.errors import InputError

MAX_INT64 = 2**63 - 1
# What the scheduling tables count at most per node or pod and resource: 2**53 (8 PiB of memory,
# 9 * 10**12 cores). Sums of a thousand such pods and the scores' "* 100" stay inside int64, and
# float64 holds every value exactly. No real node comes near it.
MAX_AMOUNT = 2**53

_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# The forms nearly every object uses ("4", "500m", "512Mi", "2G"): a few digits and a suffix.
_SIMPLE = re.compile(r"^([0-9]{1,15})(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_SIMPLE_FACTOR = {None: 1} | {k: 10**v for k, v in _DECIMAL.items() if v > 0} | {k: 2**v for k, v in _BINARY.items()}
# Unambiguous (no nested or adjacent repeats that could match the same digits), so matching is
# linear in the length even on a long run of digits that fails at its end.
_PATTERN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?)([0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?")
_LOG10_2 = 0.30103


class QuantityError(InputError):
    """A string that is not a Kubernetes quantity."""


def _bad(value: object) -> QuantityError:
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    return QuantityError(
        f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {shown}"
    )


def _scaled(text: str, scale: int) -> int:
    """ceil(|q| * 10**scale) with q's sign, saturated at int64; time linear in len(text)."""
    match = _PATTERN.fullmatch(text.strip())
    if match is None:
        raise _bad(text)
    sign, whole, frac, exp_sign, exp_digits, suffix = match.groups()
    frac = frac or ""
    if not whole and not frac:
        raise _bad(text)
    digits = (whole + frac).lstrip("0")
    stripped = digits.rstrip("0")
    e10 = scale - len(frac) + (len(digits) - len(stripped))
    digits = stripped
    if not digits:
        return 0
    e2 = 0
    if exp_digits is not None:
        exp_digits = exp_digits.lstrip("0") or "0"
        if len(exp_digits) > 12:  # |exponent| >= 10**12: far out of range either way
            return _signed(sign, MAX_INT64 if exp_sign != "-" else 1)
        e10 += -int(exp_digits) if exp_sign == "-" else int(exp_digits)
    elif suffix in _BINARY:
        e2 = _BINARY[suffix]
    elif suffix:
        e10 += _DECIMAL[suffix]
    d = len(digits)
    # |q| * 10**scale lies in [10**(d-1+e10) * 2**e2, 10**(d+e10) * 2**e2).
    magnitude = d + e10 + e2 * _LOG10_2
    if magnitude - 1 >= 19:  # >= 10**19 > int64
        return _signed(sign, MAX_INT64)
    if magnitude <= 0:  # in (0, 1): rounds up to 1
        return _signed(sign, 1)
    if e10 >= 0:
        return _signed(sign, min(int(digits) * 10**e10 << e2, MAX_INT64))
    # ceil(M * 2**e2 / 10**q) with q = -e10 and d - q < 20. Rounding boundaries fall on multiples of
    # 10**(q - e2) in M, so the digits below that only matter as "some are not zero": keep the top
    # ones and one sticky 1 for the rest (the stripped digits end in a non-zero one).
    q = -e10
    drop = min(d - 1, q - e2)
    if drop > 1:
        digits = digits[: d - drop] + "1"
        q -= drop - 1
    value = -(-(int(digits) << e2) // 10**q)
    return _signed(sign, min(value, MAX_INT64))


def _signed(sign: str, magnitude: int) -> int:
    return -magnitude if sign == "-" else magnitude


def _number(value: str | int | float) -> str | int:
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or a number, not {value!r}")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"quantity must be a finite number, not {value!r}")
        return repr(value)
    return value


def to_int(value: str | int | float) -> int:
    """The quantity as an integer, rounded up (memory in bytes, extended resources in units), as Value()."""
    v = _number(value)
    if isinstance(v, int):
        return max(-MAX_INT64, min(v, MAX_INT64))
    m = _SIMPLE.match(v)
    if m is not None:
        digits, suffix = m.groups()
        if suffix == "m":
            return -(-int(digits) // 1000)
        return min(int(digits) * _SIMPLE_FACTOR[suffix], MAX_INT64)
    return _scaled(v, 0)


def to_milli(value: str | int | float) -> int:
    """The quantity in thousandths, rounded up (CPU in millicores), as MilliValue()."""
    v = _number(value)
    if isinstance(v, int):
        return max(-MAX_INT64, min(v * 1000, MAX_INT64))
    m = _SIMPLE.match(v)
    if m is not None:
        digits, suffix = m.groups()
        return int(digits) if suffix == "m" else min(int(digits) * _SIMPLE_FACTOR[suffix] * 1000, MAX_INT64)
    return _scaled(v, 3)


def resource_value(resource: str, value: str | int | float) -> int:
    """The integer kube-scheduler uses for a resource (millicores for cpu, plain units otherwise),
    at most MAX_AMOUNT."""
    if isinstance(value, str):
        return _cached_value(resource == "cpu", value)
    return clamp_amount(to_milli(value) if resource == "cpu" else to_int(value))


def clamp_amount(value: int) -> int:
    """``value`` within ±MAX_AMOUNT (both ways: sums of negative amounts must not leave int64 either)."""
    return -MAX_AMOUNT if value < -MAX_AMOUNT else MAX_AMOUNT if value > MAX_AMOUNT else value


@lru_cache(maxsize=4096)
def _cached_value(milli: bool, value: str) -> int:
    # Pods of one workload repeat the same few strings ("100m", "128Mi"): parse each once.
    return clamp_amount(to_milli(value) if milli else to_int(value))


def format_milli_cpu(milli: int) -> str:
    """Millicores as a quantity string ("1500m", "2")."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
