"""Cluster events as plugins register them: labels, single events, several registrations of one event."""

from __future__ import annotations

from kubesched.framework.events import (
    NODE_ADD,
    NODE_CHANGE,
    NODE_UPDATE,
    POD_ADD,
    POD_CHANGE,
    POD_DELETE,
    POD_UPDATE,
    ClusterEventWithHint,
    registrations,
)


def yes(*_: object) -> bool:
    return True


def no(*_: object) -> bool:
    return False


def test_labels_are_kube_scheduler_s() -> None:
    assert [e.label for e in (NODE_ADD, NODE_UPDATE, POD_ADD, POD_UPDATE, POD_DELETE)] == [
        "NodeAdd",
        "NodeUpdate",
        "AssignedPodAdd",
        "AssignedPodUpdate",
        "AssignedPodDelete",
    ]


def test_a_registration_of_several_actions_covers_each_single_event() -> None:
    assert NODE_CHANGE.atoms() == [NODE_ADD, NODE_UPDATE]
    assert POD_CHANGE.atoms() == [POD_ADD, POD_UPDATE, POD_DELETE]
    assert registrations([ClusterEventWithHint(NODE_CHANGE, yes)]) == {NODE_ADD: (yes,), NODE_UPDATE: (yes,)}


def test_hints_of_one_event_add_up_and_one_registration_without_a_hint_wins() -> None:
    both = registrations([ClusterEventWithHint(NODE_ADD, yes), ClusterEventWithHint(NODE_CHANGE, no)])
    assert both == {NODE_ADD: (yes, no), NODE_UPDATE: (no,)}
    bare = registrations([ClusterEventWithHint(NODE_ADD, yes), ClusterEventWithHint(NODE_ADD)])
    assert bare == {NODE_ADD: ()}
    assert registrations([ClusterEventWithHint(NODE_ADD), ClusterEventWithHint(NODE_ADD, yes)]) == {NODE_ADD: ()}


def test_no_declaration_is_not_an_empty_one() -> None:
    assert registrations(None) is None  # every event helps
    assert registrations([]) == {}  # no event helps
