from __future__ import annotations

import pytest

from kubesched.core.quantity import QuantityError, format_milli_cpu, parse_quantity, resource_value, to_int, to_milli


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


@pytest.mark.parametrize("bad", ["", "lots", "1.2.3", "5Kb", "--1", "1 Gi", "0x10"])
def test_invalid_quantities_name_the_value(bad: str) -> None:
    with pytest.raises(QuantityError, match="quantities must match"):
        parse_quantity(bad)


def test_resource_value_uses_millicores_only_for_cpu() -> None:
    assert resource_value("cpu", "250m") == 250
    assert resource_value("memory", "1Ki") == 1024
    assert resource_value("example.com/gpu", "2") == 2


def test_format_milli_cpu() -> None:
    assert format_milli_cpu(2000) == "2"
    assert format_milli_cpu(1500) == "1500m"
