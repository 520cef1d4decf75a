from __future__ import annotations

import pytest

from kubesched.core.quantity import (
    MAX_AMOUNT,
    MAX_INT64,
    QuantityError,
    format_milli_cpu,
    resource_value,
    to_int,
    to_milli,
)


@pytest.mark.parametrize(
    ("text", "milli", "units"),
    [
        ("1", 1000, 1),
        ("500m", 500, 1),
        ("1500m", 1500, 2),
        ("0.5", 500, 1),
        ("2.25", 2250, 3),
        ("1k", 1_000_000, 1000),
        ("1Ki", 1_024_000, 1024),
        ("512Mi", 512 * 2**20 * 1000, 512 * 2**20),
        ("1.5Gi", 3 * 2**29 * 1000, 3 * 2**29),
        ("1e3", 1_000_000, 1000),
        ("1E-3", 1, 1),
        ("100n", 1, 1),
        ("3u", 1, 1),
        (".5", 500, 1),
        ("+2", 2000, 2),
        (4, 4000, 4),
        (0.25, 250, 1),
    ],
)
def test_quantities_round_up_like_kubernetes(text: str | int | float, milli: int, units: int) -> None:
    assert to_milli(text) == milli
    assert to_int(text) == units


@pytest.mark.parametrize("bad", ["", "lots", "1.2.3", "5Kb", "--1", "1 Gi", "0x10", ".", "1e", "1e9999999m", "1Kie3"])
def test_invalid_quantities_name_the_value(bad: str) -> None:
    with pytest.raises(QuantityError, match="quantities must match"):
        to_int(bad)
    with pytest.raises(QuantityError, match="quantities must match"):
        to_milli(bad)


def test_resource_value_uses_millicores_only_for_cpu() -> None:
    assert resource_value("cpu", "250m") == 250
    assert resource_value("memory", "1Ki") == 1024
    assert resource_value("example.com/gpu", "2") == 2


def test_format_milli_cpu() -> None:
    assert format_milli_cpu(2000) == "2"
    assert format_milli_cpu(1500) == "1500m"


# Reference values from Go: k8s.io/apimachinery v0.35.4, resource.ParseQuantity(s) then Value() and
# MilliValue() (a ten-line `go run` program, 2026). Only rows where Go's int64 arithmetic does not
# overflow; the rows past int64 are in test_out_of_range_saturates_where_go_wraps.
GO_REFERENCE = [
    ("0", 0, 0),
    ("1", 1, 1000),
    ("500m", 1, 500),
    ("1e3", 1000, 1000000),
    ("100m", 1, 100),
    ("0.1", 1, 100),
    ("2Gi", 2147483648, 2147483648000),
    ("128Mi", 134217728, 134217728000),
    ("1.5Ki", 1536, 1536000),
    ("0.5Ki", 512, 512000),
    ("0.001Ki", 2, 1024),
    ("0.0000000001Ei", 115292151, 115292150461),
    ("9223372036854775807m", 9223372036854776, 9223372036854775807),
    (".5", 1, 500),
    ("5.", 5, 5000),
    ("+5", 5, 5000),
    ("2e0", 2, 2000),
    ("1E3", 1000, 1000000),
    ("1e-9", 1, 1),
    ("1e-12", 1, 1),
    ("5e-4", 1, 1),
    ("1.1e-3", 1, 2),
    ("1e-3", 1, 1),
    ("0.000000001", 1, 1),
    ("0.0000000001", 1, 1),
    ("1e-9999999", 1, 1),
    ("1.5", 2, 1500),
    ("-1.5", -2, -1500),
    ("0.5m", 1, 1),
    ("1.0001m", 1, 2),
    ("-1", -1, -1000),
    ("1n", 1, 1),
    ("1u", 1, 1),
    ("999n", 1, 1),
    ("1.000000001", 2, 1001),
    ("12.3456789e2", 1235, 1234568),
    ("0.1234567890123456789012345678901234567890123e3", 124, 123457),
    # Value() alone is in range for these (MilliValue() overflows in Go; we saturate, below).
    ("7Ei", 8070450532247928832, None),
    ("4Ei", 4611686018427387904, None),
    ("1e18", 1000000000000000000, None),
    ("9223372036854775807", 9223372036854775807, None),
    ("99999999999999999999m", 100000000000000000, None),
    ("9223372036854775k", 9223372036854775000, None),
    ("8589934591Gi", 9223372035781033984, None),
    ("123456789123456789", 123456789123456789, None),
    # Go's parser caps binary-SI values at int64 max: Value() saturates there.
    ("8Ei", MAX_INT64, None),
    ("100Ei", MAX_INT64, None),
    ("8589934592Gi", MAX_INT64, None),
]


@pytest.mark.parametrize(("text", "value", "milli"), GO_REFERENCE)
def test_values_match_go(text: str, value: int, milli: int | None) -> None:
    assert to_int(text) == value
    assert to_milli(text) == (MAX_INT64 if milli is None else milli)


# Past int64, Go's Value()/MilliValue() wrap or return 0 (Go's answer in the comment); we saturate.
@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1e30", MAX_INT64, MAX_INT64),  # Go: 0, 0
        ("1e19", MAX_INT64, MAX_INT64),  # Go: 0, 0
        ("9.3e18", MAX_INT64, MAX_INT64),  # Go: 0, 0
        ("10E", MAX_INT64, MAX_INT64),  # Go: 0, 0
        ("9223372036854775808", MAX_INT64, MAX_INT64),  # Go: -9223372036854775808, 0
        ("1e9999999", MAX_INT64, MAX_INT64),  # Go: 0, 0
        ("1e2147483648", MAX_INT64, MAX_INT64),  # Go: does not answer within 5 s
        ("1e99999999999999999999", MAX_INT64, MAX_INT64),
        ("-1e30", -MAX_INT64, -MAX_INT64),
        ("1e-2147483648", 1, 1),  # Go: does not answer within 5 s
        ("-1e-9999999", -1, -1),  # Go: 1, 1 (rounds a negative nano "up" past zero)
        (10**30, MAX_INT64, MAX_INT64),
        (2**63, MAX_INT64, MAX_INT64),
        (1e300, MAX_INT64, MAX_INT64),
    ],
)
def test_out_of_range_saturates_where_go_wraps(text: str | int | float, value: int, milli: int) -> None:
    assert to_int(text) == value
    assert to_milli(text) == milli


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1." + "0" * 3000 + "1", 2, 1001),
        ("1" + "0" * 3000 + "e-3000", 1, 1000),
        ("1" + "0" * 2999 + "1e-3000", 2, 1001),
        ("0." + "0" * 5000 + "1", 1, 1),
        ("9" * 5000, MAX_INT64, MAX_INT64),
        ("9" * 5000 + "e-4990", 10**10, 10**13),
        ("9" * 5000 + "e-4995", 100000, 100000000),
        ("0" * 5000 + "7", 7, 7000),
    ],
)
def test_long_mantissas_are_exact(text: str, value: int, milli: int) -> None:
    assert to_int(text) == value
    assert to_milli(text) == milli


def test_huge_exponents_and_mantissas_parse_in_bounded_time() -> None:
    # Each of these took seconds (or forever) with exact fractions; linear-time parsing does them all at once.
    texts = [f"1e{10**k}" for k in range(1, 30)] + [f"1e-{10**k}" for k in range(1, 30)]
    texts += ["9" * 200_000 + f"e-{200_000 - k}" for k in range(0, 40, 3)]
    texts += ["1." + "3" * 200_000 + "Ei", "1" * 1_000_000]
    for text in texts:
        assert to_int(text) >= 1
        assert to_milli(text) >= 1
    with pytest.raises(QuantityError):
        to_int("1" * 1_000_000 + "x")


def test_resource_value_caps_what_the_tables_count() -> None:
    assert resource_value("memory", "8Ei") == MAX_AMOUNT
    assert resource_value("cpu", "1e30") == MAX_AMOUNT
    assert resource_value("example.com/gpu", 10**30) == MAX_AMOUNT
    assert resource_value("memory", "8Pi") == MAX_AMOUNT
    assert resource_value("memory", "7Pi") == 7 * 2**50


def test_amounts_are_clamped_both_ways_and_digits_are_ascii() -> None:
    from kubesched.core.quantity import MAX_AMOUNT, QuantityError, resource_value

    assert resource_value("memory", "-1e30") == -MAX_AMOUNT
    assert resource_value("cpu", -(10**30)) == -MAX_AMOUNT
    assert resource_value("memory", "1e30") == MAX_AMOUNT
    with pytest.raises(QuantityError):
        resource_value("memory", "١٢")  # Arabic-Indic digits: Go's parser refuses them
