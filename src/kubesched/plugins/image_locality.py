"""ImageLocality (Score): favour nodes that already hold the pod's images, weighted by how rare they are.

For each container (init and regular, duplicates counted twice) whose image name the node reports,
add trunc(size × nodes with that name / all nodes); clamp the sum to [23 MiB, 1000 MiB × containers]
and scale it linearly to 0-100. Node image names are compared as reported, pod images with `:latest`
added when untagged (PodInfo.images).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import IntColumn
from kubesched.core.podinfo import PodInfo, normalized_image
from kubesched.framework.interfaces import MAX_NODE_SCORE, CycleState, NodeBatch, ScorePlugin, SignFragments, SignPlugin

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def scale(sums: IntColumn, containers: int) -> IntColumn:
    """calculatePriority: the sum clamped to [min, max] and mapped linearly onto 0-100 (integer division)."""
    if containers == 0:
        # Without containers the sum is 0, clamped to the minimum: score 0.
        return np.zeros_like(sums)
    top = MAX_CONTAINER_THRESHOLD * containers
    clamped = np.minimum(np.maximum(sums, MIN_THRESHOLD), top)  # two ufuncs: np.clip's wrapper costs more
    scaled: IntColumn = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (top - MIN_THRESHOLD)
    return scaled


class ImageLocality(ScorePlugin, SignPlugin):
    """Score only; no NormalizeScore."""

    name: ClassVar[str] = "ImageLocality"
    node_fields = NodeFields(images=True)
    reads_pods: ClassVar[bool] = False
    default_weight: ClassVar[int] = 1

    def sign(self, pod: PodInfo) -> SignFragments:
        # Every image with its repeats (upstream signs the set, but repeats count in the score) and the
        # image count (the clamp's upper bound).
        return (("images", self._images(pod)),)

    def _images(self, pod: PodInfo) -> tuple[tuple[str, ...], int]:
        """The images scored and how many there are: containers', and from v1.37 image volumes' too."""
        if not self.handle.release.image_locality_counts_image_volumes or not pod.pod.spec.volumes:
            return pod.images, pod.container_count
        refs = tuple(normalized_image(v.image.reference) for v in pod.pod.spec.volumes if v.image is not None)
        return pod.images + refs, pod.container_count + len(refs)

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        table = nodes.table
        index = table.image_index()
        total = len(table)
        images, count = self._images(pod)
        present = [found for found in map(index.get, images) if found is not None]
        if not present or not total:
            # No node has any of the images: every sum is 0, clamped to the minimum, so every score is 0.
            return np.zeros(len(nodes), dtype=np.int64)
        sums = np.zeros(table.size, dtype=np.int64)
        for found in present:
            rows, size = found
            # A node listing a name twice still counts once (upstream keeps a set of nodes).
            spread = len(np.unique(rows)) / total
            # Fancy-index += adds once per distinct row, matching that set.
            sums[rows] += int(size * spread)
        return scale(sums[nodes.rows], count)
