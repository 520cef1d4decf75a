"""Kubernetes resource quantities ("500m", "2Gi", "1e3") as exact integers, rounding up like Quantity does."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
# The forms nearly every object uses ("4", "500m", "512Mi", "2G"): integer digits and a suffix.
_SIMPLE = re.compile(r"^(\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_SIMPLE_FACTOR = {
    None: 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_PATTERN = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or a number, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    text = value.strip()
    match = _PATTERN.match(text)
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {value!r}"
        )
    number, exponent, suffix = match.groups()
    base = Fraction(number)
    if exponent:
        return base * Fraction(10) ** int(exponent[1:])
    return base * _SUFFIX[suffix or ""]


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def to_int(value: str | int | float) -> int:
    """The quantity as an integer, rounded up (memory in bytes, extended resources in units)."""
    if isinstance(value, str):
        m = _SIMPLE.match(value)
        if m is not None:
            digits, suffix = m.groups()
            if suffix == "m":
                return -(-int(digits) // 1000)
            return int(digits) * _SIMPLE_FACTOR[suffix]
    return _ceil(parse_quantity(value))


def to_milli(value: str | int | float) -> int:
    """The quantity in thousandths, rounded up (CPU in millicores)."""
    if isinstance(value, str):
        m = _SIMPLE.match(value)
        if m is not None:
            digits, suffix = m.groups()
            return int(digits) if suffix == "m" else int(digits) * _SIMPLE_FACTOR[suffix] * 1000
    return _ceil(parse_quantity(value) * 1000)


def resource_value(resource: str, value: str | int | float) -> int:
    """The integer kube-scheduler uses for a resource: millicores for cpu, plain units otherwise."""
    if isinstance(value, str):
        return _cached_value(resource == "cpu", value)
    return to_milli(value) if resource == "cpu" else to_int(value)


@lru_cache(maxsize=4096)
def _cached_value(milli: bool, value: str) -> int:
    # Pods of one workload repeat the same few strings ("100m", "128Mi"): parse each once.
    return to_milli(value) if milli else to_int(value)


def format_milli_cpu(milli: int) -> str:
    """Millicores as a quantity string ("1500m", "2")."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
