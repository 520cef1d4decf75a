"""The byte-assembled replies equal what encoding the protocol structs gives, for any names."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from kubesched.api import extender_v1 as wire
from kubesched.extender.replies import filter_reply, priorities_reply, quote_all

ODD_NAMES = ["plain", 'with"quote', "back\\slash", "comma,inside", "ünïcode", "tab\there", ""]


@pytest.mark.parametrize("names", [[], ["a"], ["n-1", "n-2", "n-3"], ODD_NAMES])
def test_filter_reply_matches_struct_encoding(names: list[str]) -> None:
    quoted = quote_all(names).tolist()
    half = len(names) // 2
    failed = [(msgspec.json.encode("Insufficient cpu"), quoted[:half])]
    unresolvable = [(msgspec.json.encode('odd "message"'), quoted[half:])]
    got = msgspec.json.decode(filter_reply(quoted[:1], None, failed, unresolvable))
    want = wire.ExtenderFilterResult(
        None,
        names[:1],
        dict.fromkeys(names[:half], "Insufficient cpu"),
        dict.fromkeys(names[half:], 'odd "message"'),
        "",
    )
    assert got == msgspec.to_builtins(want)


def test_filter_reply_echoes_raw_items_and_errors() -> None:
    items = [msgspec.Raw(b'{"metadata":{"name":"a"}}'), msgspec.Raw(b'{"metadata":{"name":"b"},"x":[1]}')]
    got = msgspec.json.decode(filter_reply(None, items, [], [], "boom"))
    assert got == {
        "Nodes": {"metadata": {}, "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}, "x": [1]}]},
        "NodeNames": None,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "boom",
    }


@pytest.mark.parametrize("names", [[], ["only"], ODD_NAMES])
def test_priorities_reply_matches_struct_encoding(names: list[str]) -> None:
    scores = np.arange(len(names), dtype=np.int64) % 11
    got = priorities_reply(quote_all(names).tolist(), scores)
    want = msgspec.json.encode([wire.HostPriority(n, int(s)) for n, s in zip(names, scores, strict=True)])
    assert got == want
