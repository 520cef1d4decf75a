"""The config file: the example loads, every problem is listed with its field path, python rules import."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.cluster.cache import ClusterCache
from kubesched.webhook import rules_file as config
from kubesched.webhook.feasibility import Feasibility
from kubesched.webhook.rules import PythonRule, RequireLabel, SetScheduler

ROOT = Path(__file__).resolve().parents[3]


def problems(text: str, base: Path = Path(".")) -> list[str]:
    with pytest.raises(config.WebhookConfigError) as err:
        config.parse(yaml.safe_load(text), ClusterCache(), base=base, source="c.yaml")
    assert str(err.value).startswith("c.yaml: invalid webhook config:\n  - ")
    return err.value.problems


def test_the_example_loads() -> None:
    built = config.load(ROOT / "examples" / "webhook-config.yaml", ClusterCache())
    assert built.operations == {"CREATE"}
    assert [type(r) for r in built.rules] == [SetScheduler, RequireLabel, Feasibility, Feasibility]
    assert [r.name for r in built.rules] == ["route-batch", "custom-label", "can-fit", "can-fit-elsewhere"]
    assert [r.phase for r in built.rules] == ["mutate", "validate", "validate", "validate"]
    assert built.needs_nodes


def test_defaults() -> None:
    built = config.parse(
        {"rules": [{"requireLabel": {"schedulerName": "s", "label": "l"}}]}, ClusterCache(), base=Path("."), source="x"
    )
    assert built.operations == {"CREATE"} and not built.needs_nodes
    assert built.rules == (RequireLabel("requireLabel-0", "s", "l", None, "deny"),)


def test_every_problem_is_listed_with_its_path() -> None:
    text = """
apiVersion: kubesched.io/v2
kind: Config
operations: [CREATE, DELETE]
extra: 1
rules:
- requireLabel: {schedulerName: "", label: "bad key!", value: true, action: block}
- setScheduler: {schedulerName: s, force: "yes", nodeSelector: {ok: 1}, labels: {"a/b/c": x}}
- setScheduler:
    schedulerName: s
    namespaces: [a, 3]
    tolerations:
    - {operator: Equal, value: x}
    - {key: k, operator: Exists, value: v, effect: Sometimes, tolerationSeconds: "10"}
    - {key: k, color: red}
    - 7
- feasibility: {}
- feasibility: {action: deny}
  requireLabel: {schedulerName: s, label: l}
- {name: dup, feasibility: {action: warn, schedulerNames: x}}
- {name: ok, feasibility: {action: warn}}
- python: nothing-here
- {python: "mod:f", phase: later}
- name: x
- 5
"""
    assert problems(text) == [
        "extra: unknown field (known: apiVersion, kind, operations, rules)",
        "apiVersion: must be kubesched.io/v1alpha1, got 'kubesched.io/v2'",
        "kind: must be WebhookConfig, got 'Config'",
        "operations[1]: 'DELETE' is not one of CREATE, UPDATE (other operations are always allowed)",
        "rules[0].requireLabel.schedulerName: must not be empty",
        "rules[0].requireLabel.value: expected a string, got a boolean (quote it in YAML)",
        "rules[0].requireLabel.action: 'block' is not one of deny, warn",
        "rules[0].requireLabel.label: 'bad key!' is not a valid label key",
        "rules[1].setScheduler: select pods: give namespaces, matchLabels or both",
        "rules[1].setScheduler.force: expected true or false, got a string",
        "rules[1].setScheduler.nodeSelector['ok']: expected a string value, got a number (quote it in YAML)",
        "rules[1].setScheduler.labels['a/b/c']: not a valid label key (prefix/name, name at most 63 characters)",
        "rules[2].setScheduler.namespaces[1]: expected a non-empty string, got a number",
        "rules[2].setScheduler.tolerations[0].operator: an empty key needs operator Exists",
        "rules[2].setScheduler.tolerations[1].effect: "
        "'Sometimes' is not one of (empty), NoSchedule, PreferNoSchedule, NoExecute",
        "rules[2].setScheduler.tolerations[1].value: must be empty when operator is Exists",
        "rules[2].setScheduler.tolerations[1].tolerationSeconds: expected an integer, got a string",
        "rules[2].setScheduler.tolerations[2].color: "
        "unknown field (known: key, operator, value, effect, tolerationSeconds)",
        "rules[2].setScheduler.tolerations[3]: expected a mapping, got a number",
        "rules[3].feasibility.action: required",
        "rules[4]: needs exactly one of requireLabel, setScheduler, feasibility, python; "
        "got requireLabel and feasibility",
        "rules[5].feasibility.schedulerNames: expected a list of strings, got a string",
        "rules[7].python: nothing-here: expected file.py:function or package.module:function",
        "rules[8].phase: 'later' is not one of validate, mutate",
        "rules[8].python: mod:f: cannot import mod: No module named 'mod'",
        "rules[9]: needs exactly one of requireLabel, setScheduler, feasibility, python; got none",
        "rules[10]: expected a mapping, got a number",
    ]


def test_duplicate_names() -> None:
    text = "rules:\n- {name: a, feasibility: {action: warn}}\n- {name: a, feasibility: {action: deny}}\n"
    assert problems(text) == ["rules[1].name: 'a' is already the name of rules[0]"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "rules: expected a non-empty list of rules, got null"),
        ("rules: []", "rules: expected a non-empty list of rules, got a list"),
        ("[1]", "$: expected a mapping, got a list"),
        ("operations: []\nrules: [{feasibility: {action: warn}}]", "operations: at least one of CREATE, UPDATE"),
    ],
)
def test_empty_documents(text: str, problem: str) -> None:
    assert problem in problems(text)


def test_python_rule_targets(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("def check(pod, request):\n    return None\nVALUE = 3\n")
    (tmp_path / "broken.py").write_text("raise ValueError('no')\n")
    text = """
rules:
- {name: a, python: ok.py:check, phase: mutate}
- {name: b, python: ok.py:VALUE}
- {name: c, python: ok.py:missing}
- {name: d, python: missing.py:check}
- {name: e, python: broken.py:check}
- {name: f, python: "tests.unit.webhook.user_rules:label_free"}
"""
    found = problems(text, base=tmp_path)
    assert found == [
        "rules[1].python: ok.py:VALUE: ok.py has no function 'VALUE'",
        "rules[2].python: ok.py:missing: ok.py has no attribute 'missing'",
        f"rules[3].python: missing.py:check: no such file {tmp_path / 'missing.py'}",
        f"rules[4].python: broken.py:check: importing {tmp_path / 'broken.py'} failed: ValueError: no",
    ]
    good = yaml.safe_load(text)
    good["rules"] = [good["rules"][0], good["rules"][5]]
    built = config.parse(good, ClusterCache(), base=tmp_path, source="c.yaml")
    assert [(type(r), r.phase) for r in built.rules] == [(PythonRule, "mutate"), (PythonRule, "validate")]


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(config.WebhookConfigError, match="cannot read"):
        config.load(tmp_path / "none.yaml", ClusterCache())
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [\n")
    with pytest.raises(config.WebhookConfigError, match="not valid YAML"):
        config.load(bad, ClusterCache())


def test_a_misspelt_rule_kind_or_field_gets_a_did_you_mean() -> None:
    got = problems("rules:\n- name: x\n  feasibilty: {action: deny}\n")
    assert got == [
        "rules[0]: needs exactly one of requireLabel, setScheduler, feasibility, python; got none"
        " ('feasibilty': did you mean 'feasibility'?)"
    ]
    got = problems("rules:\n- name: x\n  bogus: {}\n")
    assert got[0].endswith("got none ('bogus' is not a rule kind)")
    got = problems("rules:\n- nmae: x\n  feasibility: {action: deny}\n")
    assert got == ["rules[0].nmae: unknown field; did you mean 'name'? (known: name, feasibility)"]
