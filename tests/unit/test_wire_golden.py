"""The wire format, byte for byte: upstream's own fixtures (extender/v1/types_test.go) and golden files."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from kubesched.api import extender as wire

GOLDEN = Path(__file__).parent.parent / "golden" / "extender"


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


def test_lower_cased_document_decodes_like_the_original() -> None:
    # Upstream's TestCompatibility lower-cases a whole document and expects the same struct back.
    original = {"Pod": {"metadata": {"name": "p"}}, "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": "u"}], "NumPDBViolations": 2}}}
    dec = msgspec.json.Decoder(wire.ExtenderPreemptionArgs)
    body = json.dumps(original).encode()
    lowered = json.dumps(json.loads(body.decode().replace("NodeNameToMetaVictims", "nodenametometavictims")
                                    .replace('"Pods"', '"pods"').replace('"UID"', '"uid"')
                                    .replace("NumPDBViolations", "numpdbviolations").replace('"Pod"', '"pod"'))).encode()
    complete = lambda a: a.Pod is not None  # noqa: E731
    assert wire.decode(lowered, wire.ExtenderPreemptionArgs, dec, complete) == wire.decode(
        body, wire.ExtenderPreemptionArgs, dec, complete
    )


@pytest.mark.parametrize("case", sorted(p.name.removesuffix(".request.json") for p in GOLDEN.glob("*.request.json")))
def test_golden_files(case: str) -> None:
    from tests.unit.extender.conftest import make_service

    service = make_service()
    request = (GOLDEN / f"{case}.request.json").read_bytes()
    expected = (GOLDEN / f"{case}.response.json").read_bytes().strip()
    verb = case.split("-")[0]
    answer = service.filter(request) if verb == "filter" else service.prioritize(request) if verb == "prioritize" else service.preempt(request)
    assert answer == expected
