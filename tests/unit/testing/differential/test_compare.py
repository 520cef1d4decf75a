"""Comparing two answers, the figures, and the Known differences' predicates."""

from __future__ import annotations

from kubesched.testing.differential.known import KNOWN
from kubesched.testing.differential.runner import Answer, Case, Report, compare

MSG = "0/3 nodes are available: 3 Insufficient cpu."
PRE = " preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."


def bound(node: str, feasible: tuple[str, ...] = ("a", "b"), best: tuple[str, ...] = ()) -> Answer:
    return Answer("bound", node, None, "", feasible, best)


def failed(message: str = MSG + PRE) -> Answer:
    return Answer("unschedulable", None, None, message, ())


def case(kube: Answer, ours: Answer, full_nodes: bool = False) -> Case:
    c = Case(1, "ns/p", {"metadata": {"namespace": "ns", "labels": {}}, "spec": {}}, kube, ours, compare(kube, ours))
    c.full_nodes = full_nodes
    c.known = [k.id for k in KNOWN if c.differences and k.applies(c)]
    return c


def test_equal_answers_do_not_differ() -> None:
    assert compare(bound("a", best=("a", "b")), bound("a", best=("a", "b"))) == []
    assert compare(failed(), failed()) == []


def test_a_node_among_our_best_is_placement_agreement_another_is_not() -> None:
    assert compare(bound("b"), bound("a", best=("a", "b"))) == []
    assert compare(bound("b"), bound("a", best=("a",))) == ["placement"]


def test_outcome_message_and_feasible_set_are_told_apart() -> None:
    assert compare(bound("a"), failed()) == ["outcome", "feasible"]
    assert compare(failed(MSG), failed(MSG + PRE)) == ["message"]
    assert compare(bound("a", ("a",), ("a",)), bound("a", ("a", "b"), ("a",))) == ["feasible"]


def test_two_preemptions_compare_nomination_and_victims() -> None:
    kube = Answer("nominated", None, "a", MSG, (), victims=("ns/x",))
    assert compare(kube, Answer("nominated", None, "a", MSG, (), victims=("ns/x",))) == []
    assert compare(kube, Answer("nominated", None, "b", MSG, (), victims=("ns/y",))) == ["nomination", "victims"]


def test_a_message_that_differs_is_not_known() -> None:
    # DynamicResources' "no new claims to deallocate," was a known difference until kubesched had the plugin.
    dra = MSG + " no new claims to deallocate," + PRE
    assert case(failed(dra), failed()).known == []
    assert case(bound("a"), failed()).known == []


def test_another_placement_is_known_only_with_an_extender_of_whole_nodes() -> None:
    kube, ours = bound("b"), bound("a", best=("a",))
    assert case(kube, ours, full_nodes=True).known == ["extender-full-nodes-scores"]
    assert case(kube, ours, full_nodes=False).known == []
    assert case(bound("b", ("b",)), ours, full_nodes=True).known == []  # the feasible set must still agree


def test_the_report_counts_unexplained_cases_and_prints_every_figure() -> None:
    report = Report([case(bound("a"), bound("a", best=("a",))), case(bound("a"), failed())])
    figures = report.figures()
    assert figures["outcome"] == (1, 2)
    assert figures["same node"] == (1, 1)
    assert len(report.unexplained()) == 1
    assert "no unexplained difference" in report.table()
    assert "differ in outcome, feasible" in report.unexplained()[0].describe()
