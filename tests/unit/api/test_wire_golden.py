"""The wire format, byte for byte: upstream's own fixtures (extender/v1/types_test.go) and golden files."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from kubesched.api import extender_v1 as wire

GOLDEN = Path(__file__).parents[2] / "golden" / "extender"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (wire.HostPriority("myhost", 1), b'{"Host":"myhost","Score":1}'),
        (
            wire.ExtenderBindingArgs("mypodname", "mypodnamespace", "mypoduid", "mynode"),
            b'{"PodName":"mypodname","PodNamespace":"mypodnamespace","PodUID":"mypoduid","Node":"mynode"}',
        ),
        (wire.ExtenderBindingResult("myerror"), b'{"Error":"myerror"}'),
        (
            wire.ExtenderPreemptionResult({"foo": wire.MetaVictims([wire.MetaPod("myuid")], 1)}),
            b'{"NodeNameToMetaVictims":{"foo":{"Pods":[{"UID":"myuid"}],"NumPDBViolations":1}}}',
        ),
        (
            wire.ExtenderFilterResult(None, ["a"], {"b": "x"}, {}, ""),
            b'{"Nodes":null,"NodeNames":["a"],"FailedNodes":{"b":"x"},"FailedAndUnresolvableNodes":{},"Error":""}',
        ),
    ],
)
def test_upstream_serializations(value: msgspec.Struct, expected: bytes) -> None:
    assert msgspec.json.encode(value) == expected


def _lower_keys(doc: object, keys: set[str]) -> object:
    if isinstance(doc, dict):
        return {(k.lower() if k in keys else k): _lower_keys(v, keys) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_lower_keys(v, keys) for v in doc]
    return doc


def test_lower_cased_document_decodes_like_the_original() -> None:
    # Upstream's TestCompatibility lower-cases a whole document and expects the same struct back.
    victims = {"n": {"Pods": [{"UID": "u"}], "NumPDBViolations": 2}}
    original = {"Pod": {"metadata": {"name": "p"}}, "NodeNameToMetaVictims": victims}
    lowered = _lower_keys(original, {"Pod", "NodeNameToMetaVictims", "Pods", "UID", "NumPDBViolations"})
    dec = msgspec.json.Decoder(wire.ExtenderPreemptionArgs)

    def complete(a: wire.ExtenderPreemptionArgs) -> bool:
        return a.Pod is not None

    got = wire.decode(json.dumps(lowered).encode(), wire.ExtenderPreemptionArgs, dec, complete)
    assert got == wire.decode(json.dumps(original).encode(), wire.ExtenderPreemptionArgs, dec, complete)
    assert got.NodeNameToMetaVictims == {"n": wire.MetaVictims([wire.MetaPod("u")], 2)}


@pytest.mark.parametrize("case", sorted(p.name.removesuffix(".request.json") for p in GOLDEN.glob("*.request.json")))
def test_golden_files(case: str) -> None:
    from tests.unit.extender.conftest import make_service

    service = make_service()
    request = (GOLDEN / f"{case}.request.json").read_bytes()
    expected = (GOLDEN / f"{case}.response.json").read_bytes().strip()
    verbs = {"filter": service.filter, "prioritize": service.prioritize, "preempt": service.preempt}
    assert verbs[case.split("-")[0]](request) == expected
