"""DRA's CEL device selectors: Kubernetes' environment, its quantity and semver libraries, hostile input."""

from __future__ import annotations

import time

import pytest

from kubesched.api.resource_v1 import DeviceAttribute, DeviceCapacity
from kubesched.plugins.helpers.dra_cel import CELError, SelectorCache, device_value, parse_quantity

DRIVER = "gpu.example.com"


def gpu(**extra: DeviceAttribute) -> dict[str, object]:
    attrs = {
        "model": DeviceAttribute(string_value="a100"),
        "cores": DeviceAttribute(int_value=108),
        "mig": DeviceAttribute(bool_value=True),
        "driverVersion": DeviceAttribute(version_value="1.2.3"),
        "example.org/zone": DeviceAttribute(string_value="z1"),
        **extra,
    }
    return device_value(DRIVER, attrs, {"memory": DeviceCapacity("40Gi")})


def matches(expression: str, device: dict[str, object] | None = None) -> bool:
    compiled = SelectorCache().get(expression)
    assert compiled.error is None, compiled.error
    return compiled.matches(device or gpu())


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.driver == "other"', False),
        # A name without a domain is the driver's; map keys read with "." as upstream's maps do.
        ('device.attributes["gpu.example.com"].model == "a100"', True),
        ('device.attributes["gpu.example.com"].cores > 100 && device.attributes["gpu.example.com"].mig', True),
        ('device.attributes["example.org"].zone == "z1"', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40960Mi")) == 0', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("16Gi")) >= 0', True),
        ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("64Gi"))', False),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("64Gi"))', True),
        ('quantity("1Gi") == quantity("1024Mi")', True),
        ('quantity("1.5").add(quantity("500m")).asInteger() == 2', True),
        ('quantity("3").sub(1).sign() == 1 && quantity("500m").isInteger() == false', True),
        ('isQuantity("1Gi") && !isQuantity("1 Gi")', True),
        ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))', True),
        ('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.10.0"))', True),
        ('device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.2.3")) == 0', True),
        ('semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))', True),
        ('semver("2.3.4").major() == 2 && semver("2.3.4").minor() == 3 && semver("2.3.4").patch() == 4', True),
        ('isSemver("1.2.3") && !isSemver("1.2")', True),
        # An absent domain reads as an empty map (upstream's map with a default): has() is false.
        ('has(device.attributes["missing.example.com"].model)', False),
        ('has(device.attributes["gpu.example.com"].model)', True),
        ('device.attributes["gpu.example.com"].model.startsWith("a1")', True),  # the strings extension
        ('["a100", "h100"].exists(m, m == device.attributes["gpu.example.com"].model)', True),
    ],
)
def test_kubernetes_device_selectors(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


def test_an_unknown_attribute_is_upstream_s_runtime_error() -> None:
    with pytest.raises(CELError, match=r"^no such key: nope$"):
        matches('device.attributes["gpu.example.com"].nope == "x"')
    with pytest.raises(CELError, match=r"^no such key: model$"):  # an absent domain: the attribute is missing
        matches('device.attributes["other.example.com"].model == "x"')


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("device.driver ==", "compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>'"),
        ('device.driver == "a" &&', "compilation failed: ERROR: <input>:1:"),
        ("1 + 1", "must evaluate to bool or the unknown type, not int"),
        ("undefined_thing == 1", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'undefined_thing'"),
        ('"\\', "compilation failed:"),
        ("(" * 200 + "true" + ")" * 200, "compilation failed:"),
        ("x" * 20000, "compilation failed: expression longer than 10240"),
        ("cel.bind(a, 1, a == 1)", "compilation failed:"),  # not offered: it could grow a string exponentially
    ],
)
def test_selectors_that_do_not_compile_say_why(expression: str, message: str) -> None:
    compiled = SelectorCache().get(expression)
    assert compiled.error is not None and compiled.error.startswith(message), compiled.error
    with pytest.raises(CELError):
        compiled.matches(gpu())


def test_a_runaway_expression_is_stopped_as_by_a_cost_limit() -> None:
    big = "[" + ",".join(["0"] * 1000) + "]"
    expression = f"{big}.all(a, {big}.all(b, {big}.all(c, true)))"  # 10**9 steps unbounded
    started = time.perf_counter()
    with pytest.raises(CELError, match=r"^operation cancelled: actual cost limit exceeded$"):
        matches(expression)
    assert time.perf_counter() - started < 10  # bounded, not 10**9 iterations (generous on a loaded machine)


def test_runtime_errors_of_the_libraries_are_errors_not_false() -> None:
    with pytest.raises(CELError, match="invalid quantity"):
        matches('quantity("ten") == quantity("1")')
    with pytest.raises(CELError, match="could not parse semver"):
        matches('semver("v1") == semver("1.0.0")')
    with pytest.raises(CELError, match="could not be converted to bool"):
        matches('device.attributes["gpu.example.com"]')  # dyn: compiles, but is no bool


def test_a_device_with_a_bad_version_attribute_is_an_error() -> None:
    with pytest.raises(CELError, match="attribute bad: parse semantic version"):
        device_value(DRIVER, {"bad": DeviceAttribute(version_value="1.2")}, None)


def test_each_expression_is_compiled_once() -> None:
    cache = SelectorCache(size=2)
    first = cache.get("device.driver == 'a'")
    assert cache.get("device.driver == 'a'") is first
    cache.get("true")
    cache.get("false")  # the least recently used goes
    assert cache.get("device.driver == 'a'") is not first


@pytest.mark.parametrize(
    ("text", "value"), [("1Gi", 2**30), ("500m", 0.5), ("1.5k", 1500), ("2e3", 2000), ("-1", -1), ("12n", 12e-9)]
)
def test_quantities_are_exact(text: str, value: float) -> None:
    assert float(parse_quantity(text)) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "1 Gi", "Gi", "1e999", "1.2.3", "--1", "1Qi"])
def test_bad_quantities_are_refused(text: str) -> None:
    with pytest.raises(CELError):
        parse_quantity(text)
