"""Replies assembled from pre-encoded pieces, so no Python object is built per node.

Node names go on the wire as JSON strings; each node's quoted form is encoded once (per node
table generation) and a reply is a handful of ``bytes.join`` calls over those pieces: the node
names sharing a failure message are joined with ``:"<message>",`` in one C call. The output is
the same JSON as encoding the protocol structs (`kubesched.api.extender_v1`), with the failed nodes
grouped by message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.extender_v1 import MAX_EXTENDER_PRIORITY, MIN_EXTENDER_PRIORITY

Quoted = list[bytes]
_encode = msgspec.json.Encoder().encode
# `,"Score":s},{"Host":` for every score a reply can carry (scores are clipped to 0..10).
_SCORE_SEP = np.array(
    [b',"Score":%d},{"Host":' % s for s in range(MIN_EXTENDER_PRIORITY, MAX_EXTENDER_PRIORITY + 1)], dtype=object
)
_SCORE_END = [b',"Score":%d}]' % s for s in range(MIN_EXTENDER_PRIORITY, MAX_EXTENDER_PRIORITY + 1)]


def quote_all(names: Iterable[str]) -> npt.NDArray[np.object_]:
    """Each name as a JSON string (bytes), in a numpy object array for fancy indexing."""
    return np.array(list(map(_encode, names)) or [], dtype=object)


def _pairs(groups: Sequence[tuple[bytes, Quoted]]) -> bytes:
    out = []
    for message, names in groups:
        if names:
            glue = b":" + message + b","
            out.append(glue.join(names) + b":" + message)
    return b",".join(out)


def filter_reply(
    passed: Quoted | None,
    echo: Sequence[msgspec.Raw] | None,
    failed: Sequence[tuple[bytes, Quoted]],
    unresolvable: Sequence[tuple[bytes, Quoted]],
    error: str = "",
) -> bytes:
    """ExtenderFilterResult. ``failed``/``unresolvable``: (quoted message, quoted node names) groups."""
    nodes = b"null" if echo is None else b'{"metadata":{},"items":[' + b",".join(echo) + b"]}"
    names = b"null" if passed is None else b"[" + b",".join(passed) + b"]"
    return b"".join(
        (
            b'{"Nodes":',
            nodes,
            b',"NodeNames":',
            names,
            b',"FailedNodes":{',
            _pairs(failed),
            b'},"FailedAndUnresolvableNodes":{',
            _pairs(unresolvable),
            b'},"Error":',
            _encode(error),
            b"}",
        )
    )


def priorities_reply(quoted: Quoted, scores: npt.NDArray[np.int64]) -> bytes:
    """HostPriorityList: ``[{"Host":name,"Score":s},...]`` in the given order; scores must be in 0..10."""
    n = len(quoted)
    if n == 0:
        return b"[]"
    parts: list[bytes] = [b""] * (2 * n)
    parts[0::2] = quoted
    parts[1::2] = _SCORE_SEP[scores].tolist()
    parts[-1] = _SCORE_END[int(scores[-1])]
    return b'[{"Host":' + b"".join(parts)
