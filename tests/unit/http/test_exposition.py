"""The exposition: no `_created` series, and FastHistograms written by hand give exactly the samples
prometheus_client's own Histogram gives for the same observations (labels escaped, buckets cumulative)."""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.parser import text_string_to_metric_families

from kubesched.http.exposition import FastHistograms, exponential_buckets, render


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_fast_histograms_render_as_prometheus_client_histograms() -> None:
    buckets = exponential_buckets(0.001, 2, 12)
    reference = CollectorRegistry()
    slow = Histogram(
        "h", 'Help with "quotes", a \\ and\na newline.', ["plugin", "point"], buckets=buckets, registry=reference
    )
    fast = FastHistograms("h", 'Help with "quotes", a \\ and\na newline.', ["plugin", "point"], buckets)
    rng = random.Random(7)
    keys = [("Fit", "Filter"), ('we"ird\\name\n', "Score"), ("Fit", "Score")]
    for _ in range(500):
        key, value = rng.choice(keys), rng.expovariate(200)
        slow.labels(*key).observe(value)
        fast.observe(key, value)
    fast.observe(keys[0], 1e9)  # beyond the last bound: +Inf only
    slow.labels(*keys[0]).observe(1e9)
    got = samples(render(CollectorRegistry(), [fast]))
    want = {k: v for k, v in samples(render(reference)).items() if not k[0].endswith("_created")}
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert abs(got[k] - v) <= 1e-9 * max(1.0, abs(v)), k
    families = list(text_string_to_metric_families(render(CollectorRegistry(), [fast]).decode()))
    assert families[0].documentation == 'Help with "quotes", a \\ and\na newline.'


def test_no_created_series_and_empty_histograms_render_their_header_only() -> None:
    registry = CollectorRegistry()
    Counter("c", "A counter.", registry=registry).inc()
    text = render(registry, [FastHistograms("empty", "Nothing yet.", [], (1.0,))]).decode()
    assert "c_created" not in text and "c_total 1.0" in text
    assert "# TYPE empty histogram" in text and "empty_count" not in text
