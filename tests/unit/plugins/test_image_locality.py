from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.core import Node
from kubesched.framework.interfaces import CycleState, Handle
from kubesched.plugins.image_locality import ImageLocality
from kubesched.testing.builders import batch, make_node, make_pod, make_table
from kubesched.versions import parse_release

MB = 1024 * 1024


def node(name: str, images: dict[str, int]) -> Node:
    """A node reporting each image name (as given, no normalisation) with its size in MiB."""
    return make_node(name, images={image: size * MB for image, size in images.items()})


def containers(*images: str) -> list[dict[str, Any]]:
    return [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]


TWO_NODES = [
    node("n1", {"gcr.io/40:latest": 40, "gcr.io/300:latest": 300, "gcr.io/2000:latest": 2000}),
    node("n2", {"gcr.io/250:latest": 250, "gcr.io/10:latest": 10}),
]


@pytest.mark.parametrize(
    ("nodes", "spec", "expected"),
    [
        # n1: 40 MiB × 1/2 = 20 MiB, under the 23 MiB floor -> 0; n2: 100 × (125 − 23) / (2000 − 23) = 5.
        (TWO_NODES, {"containers": containers("gcr.io/40", "gcr.io/250")}, [0, 5]),
        # n1: (150 + 1000 − 23) × 100 / 1977 = 57.
        (TWO_NODES, {"containers": containers("gcr.io/300", "gcr.io/2000")}, [57, 0]),
        # Init containers count in both the sum and the ceiling: (1000 − 23) × 100 / 1977 = 49.
        (TWO_NODES, {"initContainers": containers("gcr.io/2000"), "containers": containers("gcr.io/10")}, [49, 0]),
        # Above the ceiling: clamped to 100.
        ([node("n1", {"big:1": 3000})], {"containers": containers("big:1")}, [100]),
        # The same image twice counts twice: (600 − 23) × 100 / 1977 = 29.
        ([node("n1", {"web:1": 300})], {"containers": containers("web:1", "web:1")}, [29]),
        # An untagged pod image reads as :latest; node names are compared as reported: 250 MiB -> 23.
        ([node("n1", {"nginx:latest": 500}), node("n2", {"nginx": 500})], {"containers": containers("nginx")}, [23, 0]),
        # Spread 2 of 3 nodes, size from the first node seen: trunc(500 MiB × 2/3) -> 31.
        (
            [node("n1", {"shared:1": 500}), node("n2", {"shared:1": 900}), node("n3", {})],
            {"containers": containers("shared:1")},
            [31, 31, 0],
        ),
        ([node("n1", {"x:1": 500})], {"containers": []}, [0]),
    ],
    ids=[
        "upstream-two-images",
        "larger-images",
        "init-containers",
        "clamped-to-max",
        "duplicate-containers",
        "normalised-pod-image",
        "spread-and-first-size",
        "no-containers",
    ],
)
def test_score(nodes: list[Node], spec: dict[str, Any], expected: list[int]) -> None:
    scores = ImageLocality().score(CycleState(), make_pod(**spec), batch(make_table(nodes)))
    assert scores.tolist() == expected


@pytest.mark.parametrize(("version", "expected"), [("1.35", [0, 0]), ("1.37", [49, 0])])
def test_image_volumes_count_from_v1_37(version: str, expected: list[int]) -> None:
    """v1.37 sums image volumes' images and counts them in the ceiling: (1000 − 23) × 100 / 1977 = 49 with one
    container whose image no node has and one image volume n1 holds; v1.35 reads containers only."""
    spec = {
        "containers": containers("gcr.io/10-absent"),
        "volumes": [{"name": "model", "image": {"reference": "gcr.io/2000"}}],
    }
    plugin = ImageLocality(handle=Handle(release=parse_release(version)))
    pod = make_pod(**spec)
    assert plugin.score(CycleState(), pod, batch(make_table(TWO_NODES))).tolist() == expected
    assert (
        plugin.sign(pod) != ImageLocality(handle=Handle(release=parse_release("1.35"))).sign(pod) or version == "1.35"
    )
