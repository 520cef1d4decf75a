"""Generated YAML keeps number-like strings strings for Go readers (kube-scheduler, kubectl)."""

from __future__ import annotations

import pytest
import yaml

from kubesched.config.yamlout import dump_yaml


@pytest.mark.parametrize("value", ["0e357655", "1e3", "-2E-4", "123", "1_000", "0b101", "0o17", ".5", "1.", "+7"])
def test_number_like_strings_are_quoted(value: str) -> None:
    text = dump_yaml({"v": value})
    assert text == f"v: '{value}'\n"
    assert yaml.safe_load(text) == {"v": value}


@pytest.mark.parametrize("value", ["abc", "kube-scheduler", "e5", "1.2.3", "10.0.0.1", "v1"])
def test_other_strings_stay_plain(value: str) -> None:
    assert dump_yaml({"v": value}) == f"v: {value}\n"


def test_numbers_stay_numbers_and_key_order_is_kept() -> None:
    assert dump_yaml({"z": 1, "a": 2.5, "m": True}) == "z: 1\na: 2.5\nm: true\n"
