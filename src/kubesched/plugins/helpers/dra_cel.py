"""CEL device selectors of dynamic resource allocation, with Kubernetes' CEL environment for them.

The runtime is cel-expr-python (CEL's C++ implementation, type-checked like cel-go's): ``device`` is a map
with ``driver``, ``attributes`` and ``capacity``; ``attributes[domain]`` and ``capacity[domain]`` of a domain
the device lacks read as an empty map (upstream's map with a default), so ``has(...)`` answers false and a
missing attribute is the runtime error "no such key". Kubernetes' quantity and semver libraries are provided
(``quantity("1Gi").compareTo(...)``, ``isGreaterThan``, ``semver("1.2.3").major()`` …): their values travel
as tagged one-key maps, compared exactly by Python. Comprehensions are bounded by the runtime's iteration
budget and recursion limit (kube-scheduler bounds them by a cost limit); ``cel.bind`` is not offered, as an
expression could double a string in each binding. Each expression is compiled once (`SelectorCache`).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_strings

from kubesched.errors import InputError

Q_KEY = "__quantity__"
V_KEY = "__semver__"
MAX_EXPRESSION_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength

_QUANTITY = re.compile(r"^([+-]?[0-9]*(?:\.[0-9]*)?)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")
_SUFFIX = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1)}
_SUFFIX |= {"k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12)}
_SUFFIX |= {"P": Fraction(10**15), "E": Fraction(10**18)}
_SUFFIX |= {s: Fraction(2 ** (10 * (i + 1))) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))}
_SEMVER = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_LITERAL = re.compile(r"""(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)')""")


class CELError(InputError):
    """A selector that does not compile, or failed while evaluated; the message is upstream's detail."""


# ---- Kubernetes' quantity library ----------------------------------------------------------------------


def parse_quantity(text: str) -> Fraction:
    """A quantity's exact value; raises CELError as upstream's quantity() does."""
    m = _QUANTITY.match(text)
    if not text or m is None or m.group(1) in ("", "+", "-", "."):
        raise CELError(f"invalid quantity: {text!r}" if len(text) < 64 else "invalid quantity")
    number, exponent, suffix = m.groups()
    try:
        value = Fraction(Decimal(number))
    except InvalidOperation:
        raise CELError(f"invalid quantity: {text!r}") from None
    if exponent:
        power = int(exponent[1:])
        if abs(power) > 64:
            raise CELError(f"invalid quantity: {text!r}")
        value *= Fraction(10) ** power
    return value * _SUFFIX[suffix or ""]


def quantity_value(text: str | int | float) -> dict[str, str]:
    """The CEL value of a quantity: a tagged map with the exact value."""
    value = parse_quantity(str(text))
    return {Q_KEY: str(value)}


def _q(value: Any) -> Fraction:
    if isinstance(value, Mapping) and Q_KEY in value:
        return Fraction(value[Q_KEY])
    if isinstance(value, int):
        return Fraction(value)
    raise CELError("no such overload")


def _v(value: Any) -> tuple[int, int, int, tuple[tuple[int, int | str], ...] | None]:
    if not (isinstance(value, Mapping) and V_KEY in value):
        raise CELError("no such overload")
    major, minor, patch, pre = _semver_parts(str(value[V_KEY]))
    return major, minor, patch, pre


def _semver_parts(text: str) -> tuple[int, int, int, tuple[tuple[int, int | str], ...] | None]:
    m = _SEMVER.match(text)
    if m is None:
        raise CELError(f"could not parse semver: {text!r}" if len(text) < 64 else "could not parse semver")
    pre = m.group(4)
    parts = (
        None
        if pre is None
        else tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split("."))  # numbers sort first
    )
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), parts


def semver_value(text: str) -> dict[str, str]:
    _semver_parts(text)
    return {V_KEY: text}


def _semver_key(value: Any) -> tuple[Any, ...]:
    major, minor, patch, pre = _v(value)
    # A release sorts after its pre-releases.
    return (major, minor, patch, (1,) if pre is None else (0, pre))


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, Mapping) and V_KEY in a:
        x, y = _semver_key(a), _semver_key(b)
    else:
        x, y = _q(a), _q(b)  # type: ignore[assignment]
    return (x > y) - (x < y)


def _from_fraction(value: Fraction) -> dict[str, str]:
    return {Q_KEY: str(value)}


def _as_integer(a: Any) -> int:
    value = _q(a)
    if value.denominator != 1 or not -(2**63) <= value.numerator < 2**63:
        raise CELError("cannot convert value to integer")
    return value.numerator


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except CELError:
        return False
    return True


def _is_semver(text: str) -> bool:
    return _SEMVER.match(text) is not None


def _environment() -> Any:
    """The selectors' environment: ``device``, the quantity and semver libraries, the strings extension."""
    tagged = cel.Type.Map(cel.Type.STRING, cel.Type.STRING)
    S, N, B, D = cel.Type.STRING, cel.Type.INT, cel.Type.BOOL, cel.Type.DOUBLE

    def fn(name: str, *overloads: tuple[str, Any, list[Any], bool, Any]) -> Any:
        return cel.FunctionDecl(
            name,
            [
                cel.Overload(oid, ret, params, is_member=member, impl=impl)
                for oid, ret, params, member, impl in overloads
            ],
        )

    functions = [
        fn("quantity", ("quantity_string", tagged, [S], False, quantity_value)),
        fn("isQuantity", ("is_quantity_string", B, [S], False, _is_quantity)),
        fn("semver", ("semver_string", tagged, [S], False, semver_value)),
        fn("isSemver", ("is_semver_string", B, [S], False, _is_semver)),
        fn("compareTo", ("tagged_compareTo", N, [tagged, tagged], True, _compare)),
        fn("isLessThan", ("tagged_isLessThan", B, [tagged, tagged], True, lambda a, b: _compare(a, b) < 0)),
        fn("isGreaterThan", ("tagged_isGreaterThan", B, [tagged, tagged], True, lambda a, b: _compare(a, b) > 0)),
        fn("major", ("semver_major", N, [tagged], True, lambda a: _v(a)[0])),
        fn("minor", ("semver_minor", N, [tagged], True, lambda a: _v(a)[1])),
        fn("patch", ("semver_patch", N, [tagged], True, lambda a: _v(a)[2])),
        fn("sign", ("quantity_sign", N, [tagged], True, lambda a: (_q(a) > 0) - (_q(a) < 0))),
        fn("isInteger", ("quantity_isInteger", B, [tagged], True, lambda a: _q(a).denominator == 1)),
        fn("asInteger", ("quantity_asInteger", N, [tagged], True, _as_integer)),
        fn("asApproximateFloat", ("quantity_asApproximateFloat", D, [tagged], True, lambda a: float(_q(a)))),
        fn(
            "add",
            ("quantity_add", tagged, [tagged, tagged], True, lambda a, b: _from_fraction(_q(a) + _q(b))),
            ("quantity_add_int", tagged, [tagged, N], True, lambda a, b: _from_fraction(_q(a) + b)),
        ),
        fn(
            "sub",
            ("quantity_sub", tagged, [tagged, tagged], True, lambda a, b: _from_fraction(_q(a) - _q(b))),
            ("quantity_sub_int", tagged, [tagged, N], True, lambda a, b: _from_fraction(_q(a) - b)),
        ),
    ]
    return cel.NewEnv(
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[ext_strings.ExtStrings()],
        functions=functions,
    )


def _detail(err: BaseException, running: bool = False) -> str:
    """The runtime's message without its status code wrapping ("INVALID_ARGUMENT: … [INVALID_ARGUMENT]")."""
    text = str(err)
    text = re.sub(r"^[A-Z_]+: ", "", text)
    text = re.sub(r"\s*\[[A-Z_]+\]$", "", text).strip()
    # cel-go's words for the same failures, as kube-scheduler reports them.
    text = re.sub(r'^Key not found in map : "(.*)"$', r"no such key: \1", text)
    if running and text.startswith(("Iteration budget exceeded", "Expression recursion limit exceeded")):
        return "operation cancelled: actual cost limit exceeded"
    return text


class Compiled:
    """One compiled selector: ``error`` (upstream's "compilation failed: …") or a program."""

    __slots__ = ("domains", "error", "expression", "program")

    def __init__(self, expression: str, program: Any, error: str | None, domains: frozenset[str]) -> None:
        self.expression = expression
        self.program = program
        self.error = error
        self.domains = domains  # string literals: the domains an expression may index with

    def matches(self, device: Mapping[str, Any]) -> bool:
        """Whether the device (see `device_value`) passes; raises CELError with the runtime's message."""
        if self.program is None:
            raise CELError(self.error or "not compiled")
        data = dict(device)
        for key in ("attributes", "capacity"):
            present = device[key]
            missing = self.domains.difference(present)
            if missing:
                data[key] = {**present, **{d: {} for d in missing}}
        try:
            result = self.program.eval(data={"device": data})
            value = result.value()
        except Exception as err:  # the runtime's errors come as RuntimeError, its values as ERROR
            raise CELError(_detail(err, running=True)) from None
        if isinstance(value, bool):
            return value
        if str(result.type()) in ("ERROR", "Type.ERROR") or "ERROR" in str(result.type()):
            raise CELError(_detail(Exception(str(value)), running=True))
        raise CELError(f"CEL result of type {result.type()} could not be converted to bool")


class SelectorCache:
    """Compiled selectors by expression, the most recent ``size`` kept (kube-scheduler keeps 10)."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._env: Any = None
        self._compiled: OrderedDict[str, Compiled] = OrderedDict()
        # Verdicts of selectors on devices of stored slices, (expression, device, slice version) -> bool.
        self.results: dict[Any, bool] = {}
        self.max_results = 500_000

    def remember(self, key: Any, matched: bool) -> None:
        if len(self.results) >= self.max_results:
            self.results.clear()  # slices changed a lot: start over rather than track ages
        self.results[key] = matched

    def get(self, expression: str) -> Compiled:
        hit = self._compiled.get(expression)
        if hit is not None:
            self._compiled.move_to_end(expression)
            return hit
        compiled = self._compile(expression)
        self._compiled[expression] = compiled
        if len(self._compiled) > self.size:
            self._compiled.popitem(last=False)
        return compiled

    def _compile(self, expression: str) -> Compiled:
        if len(expression) > MAX_EXPRESSION_LENGTH:
            return Compiled(
                expression, None, f"compilation failed: expression longer than {MAX_EXPRESSION_LENGTH}", frozenset()
            )
        if self._env is None:
            self._env = _environment()
        try:
            program = self._env.compile(expression)
        except Exception as err:
            return Compiled(expression, None, "compilation failed: " + _detail(err), frozenset())
        out = str(program.return_type())
        if "BOOL" not in out.upper() and "DYN" not in out.upper() and out.lower() not in ("bool", "dyn"):
            shown = out.replace("Type.", "").lower()
            return Compiled(expression, None, f"must evaluate to bool or the unknown type, not {shown}", frozenset())
        domains = frozenset(a or b for a, b in _LITERAL.findall(expression))
        return Compiled(expression, program, None, domains)


def device_value(
    driver: str, attributes: Mapping[str, Any] | None, capacity: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``device`` variable of a device: attributes and capacity by domain (a name without one is the
    driver's), versions as semver values, capacities as quantities. Raises CELError on a bad version."""
    attrs: dict[str, dict[str, Any]] = {}
    for name, attr in (attributes or {}).items():
        domain, _, ident = name.rpartition("/")
        if attr.int_value is not None:
            value: Any = attr.int_value
        elif attr.bool_value is not None:
            value = attr.bool_value
        elif attr.string_value is not None:
            value = attr.string_value
        elif attr.version_value is not None:
            try:
                value = semver_value(attr.version_value)
            except CELError as err:
                raise CELError(f"attribute {name}: parse semantic version: {err}") from None
        else:
            raise CELError(f"attribute {name}: unsupported attribute value")
        attrs.setdefault(domain or driver, {})[ident] = value
    caps: dict[str, dict[str, Any]] = {}
    for name, cap in (capacity or {}).items():
        domain, _, ident = name.rpartition("/")
        try:
            caps.setdefault(domain or driver, {})[ident] = quantity_value(cap.value)
        except CELError as err:
            raise CELError(f"capacity {name}: {err}") from None
    return {"driver": driver, "attributes": attrs, "capacity": caps}
