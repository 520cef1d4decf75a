# examples/tests/test_gpu_policy.py — the GPU policy's decisions on examples/gpu-cluster.yaml, offline:
#   pytest -p kubesched.scheduler.explain.pytest_plugin examples/tests

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1]
CLUSTER = EXAMPLES / "gpu-cluster.yaml"
CONFIG = EXAMPLES / "gpu-scheduler-config.yaml"


def test_training_goes_to_the_a100_with_the_most_free_gpus(kubesched_explain):
    ex = kubesched_explain(CLUSTER, "ml/train-0", config=CONFIG)
    assert ex.node == "a100-big"
    scores = {n.name: {s.plugin: s.weighted for s in n.scores} for n in ex.nodes if n.scored}
    assert scores["a100-big"]["MostFreeGpus"] > scores["a100-small"]["MostFreeGpus"]


def test_a_model_no_node_has_is_refused_by_our_plugin(kubesched_explain):
    ex = kubesched_explain(CLUSTER, "ml/legacy-0", config=CONFIG)
    assert ex.node is None
    refused = {n.name: n.reported.plugin for n in ex.nodes if n.reported}
    assert set(refused.values()) == {"GpuModel", "NodeResourcesFit"}
    assert "3 node(s) didn't have GPU model v100" in ex.message


def test_the_whole_explanation_is_the_golden_one(kubesched_explain, kubesched_golden):
    kubesched_golden(kubesched_explain(CLUSTER, "ml/huge-0", config=CONFIG), "golden/huge-0.json")
