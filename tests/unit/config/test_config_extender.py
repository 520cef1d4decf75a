"""kube-scheduler extender configuration: model, rendering, parsing, validation and the `kubesched config` CLI."""

from __future__ import annotations

import base64
import importlib
import json
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from kubesched.config.duration import Duration, format_nanoseconds, parse_nanoseconds
from kubesched.config.errors import ConfigParseError, FieldError
from kubesched.config.model import (
    Extender,
    LeaderElection,
    LegacyPolicy,
    ManagedResource,
    Profile,
    SchedulerConfig,
    TLSConfig,
)
from kubesched.config.parse import load_text, parse_document
from kubesched.config.render import dump, render_config, render_legacy_policy
from kubesched.config.validation import collect_warnings, validate

GOLDEN = Path(__file__).parents[2] / "golden" / "config-extender-default.yaml"
URL = "http://kubesched-extender.kube-system.svc:8888/scheduler"
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def ext(**kw: object) -> Extender:
    """A valid extender with the CLI's defaults, overridden by `kw`."""
    base: dict[str, object] = {
        "url_prefix": URL,
        "filter_verb": "filter",
        "prioritize_verb": "prioritize",
        "weight": 1,
        "http_timeout": Duration.of(seconds=5),
        "node_cache_capable": True,
    }
    return Extender(**{**base, **kw})  # type: ignore[arg-type]


def problems(*extenders: Extender, **config: object) -> list[str]:
    return [str(e) for e in validate(SchedulerConfig(extenders=extenders, **config))]  # type: ignore[arg-type]


# --- durations -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "nanoseconds", "canonical"),
    [
        ("500ms", 500_000_000, "500ms"),
        ("5s", 5_000_000_000, "5s"),
        ("1m", 60_000_000_000, "1m0s"),
        ("1m30s", 90_000_000_000, "1m30s"),
        ("1h2m3.5s", 3_723_500_000_000, "1h2m3.5s"),
        ("1h", 3_600_000_000_000, "1h0m0s"),
        ("1.5ms", 1_500_000, "1.5ms"),
        ("2us", 2_000, "2\u00b5s"),
        ("300ns", 300, "300ns"),
        ("0", 0, "0s"),
        (".5s", 500_000_000, "500ms"),
        ("-1.5h", -5_400_000_000_000, "-1h30m0s"),
    ],
)
def test_duration_parse_and_format_round_trip(text: str, nanoseconds: int, canonical: str) -> None:
    assert parse_nanoseconds(text) == nanoseconds
    assert format_nanoseconds(nanoseconds) == canonical
    assert Duration.parse(canonical) == Duration(nanoseconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "invalid duration"), ("5", "missing unit"), ("5x", 'unknown unit "x"'), ("1e3s", "unknown unit")],
)
def test_duration_parse_rejects_what_go_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Duration.parse(text)


# --- rendering -------------------------------------------------------------------------------------------------


def test_default_config_matches_golden_file() -> None:
    assert dump(render_config(SchedulerConfig(extenders=(ext(),)))) == GOLDEN.read_text()


def test_representative_config_renders_exactly() -> None:
    config = SchedulerConfig(
        extenders=(
            ext(
                url_prefix="https://ext.kube-system.svc:8443/scheduler",
                preempt_verb="preempt",
                bind_verb="bind",
                weight=2,
                enable_https=True,
                tls_config=TLSConfig(ca_data=PEM, cert_file="/etc/c.crt", key_file="/etc/c.key", server_name="ext"),
                http_timeout=Duration.of(minutes=1, seconds=30),
                managed_resources=(ManagedResource("example.com/gpu", ignored_by_scheduler=True),),
                ignorable=True,
            ),
        ),
        profiles=(Profile("default-scheduler"), Profile("kubesched")),
        leader_election=LeaderElection(resource_name="kubesched-scheduler"),
        kubeconfig="/etc/kubernetes/scheduler.conf",
    )
    assert render_config(config) == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": True, "resourceName": "kubesched-scheduler"},
        "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf"},
        "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "kubesched"}],
        "extenders": [
            {
                "urlPrefix": "https://ext.kube-system.svc:8443/scheduler",
                "filterVerb": "filter",
                "preemptVerb": "preempt",
                "prioritizeVerb": "prioritize",
                "weight": 2,
                "bindVerb": "bind",
                "enableHTTPS": True,
                "tlsConfig": {
                    "serverName": "ext",
                    "certFile": "/etc/c.crt",
                    "keyFile": "/etc/c.key",
                    "caData": base64.b64encode(PEM.encode()).decode(),
                },
                "httpTimeout": "1m30s",
                "nodeCacheCapable": True,
                "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
                "ignorable": True,
            }
        ],
    }
    assert parse_document(load_text(dump(render_config(config)))) == config
    assert parse_document(json.loads(dump(render_config(config), "json"))) == config


def test_legacy_policy_uses_enable_https_and_nanoseconds() -> None:
    extender = ext(url_prefix="https://e:8443/s", enable_https=True, tls_config=TLSConfig(ca_file="/ca"))
    doc = render_legacy_policy([extender])
    assert doc == {
        "kind": "Policy",
        "apiVersion": "v1",
        "extenders": [
            {
                "urlPrefix": "https://e:8443/s",
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 1,
                "enableHttps": True,
                "tlsConfig": {"caFile": "/ca"},
                "httpTimeout": 5_000_000_000,
                "nodeCacheCapable": True,
            }
        ],
    }
    assert parse_document(json.loads(dump(doc, "json"))) == LegacyPolicy(extenders=(extender,))


def test_tls_data_accepts_pem_text_or_bytes() -> None:
    assert TLSConfig(ca_data=PEM) == TLSConfig(ca_data=PEM.encode())
    assert TLSConfig(ca_data=PEM).ca_data == PEM.encode()


# --- parsing ---------------------------------------------------------------------------------------------------


def parse_errors(doc: object) -> list[str]:
    with pytest.raises(ConfigParseError) as info:
        parse_document(doc)
    return [str(e) for e in info.value.errors]


def v1(*extenders: dict[str, object], **top: object) -> dict[str, object]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": list(extenders),
        **top,
    }


def test_parse_reads_durations_data_and_passthrough_keys() -> None:
    doc = v1(
        {"urlPrefix": URL, "httpTimeout": "1h2m3.5s", "tlsConfig": {"caData": base64.b64encode(b"CA").decode()}},
        parallelism=8,
        profiles=[{"schedulerName": "s", "plugins": {"score": {"disabled": [{"name": "*"}]}}}],
    )
    config = parse_document(doc)
    assert isinstance(config, SchedulerConfig)
    assert config.extenders[0].http_timeout == Duration.parse("1h2m3.5s")
    assert config.extenders[0].tls_config == TLSConfig(ca_data=b"CA")
    assert config.extra == {"parallelism": 8}
    assert render_config(config)["profiles"] == doc["profiles"]


def test_parse_unknown_field_is_an_error_with_its_path() -> None:
    assert parse_errors(v1({"urlPrefix": URL, "enableHttps": True, "filtreVerb": "f"})) == [
        "extenders[0].enableHttps: unknown field; the v1 API spells it 'enableHTTPS' and keys are case-sensitive"
        " (enableHttps is the legacy Policy spelling)",
        "extenders[0].filtreVerb: unknown field; did you mean 'filterVerb'?",
    ]


def test_parse_wrong_types_are_errors_with_their_paths() -> None:
    doc = v1(
        {"urlPrefix": URL, "weight": "2", "nodeCacheCapable": "yes", "httpTimeout": 5},
        {"urlPrefix": URL, "httpTimeout": "5", "managedResources": ["example.com/a"]},
        {"urlPrefix": URL, "tlsConfig": {"caData": PEM}},
    )
    assert parse_errors(doc) == [
        "extenders[0].weight: must be an integer",
        'extenders[0].httpTimeout: must be a duration string such as "5s" or "1m30s"',
        "extenders[0].nodeCacheCapable: must be a boolean",
        'extenders[1].httpTimeout: missing unit in duration "5" (expected a Go duration such as "500ms", "5s" or'
        ' "1m30s")',
        "extenders[1].managedResources[0]: must be an object",
        "extenders[2].tlsConfig.caData: must be base64-encoded data; this looks like PEM text: base64-encode it first",
    ]


def test_parse_rejects_removed_api_versions_and_other_kinds() -> None:
    assert parse_errors({**v1(), "apiVersion": "kubescheduler.config.k8s.io/v1beta3"}) == [
        "apiVersion: must be 'kubescheduler.config.k8s.io/v1': v1beta3 is not accepted since Kubernetes 1.29"
    ]
    assert parse_errors({"kind": "Pod"})[0].startswith("kind: must be 'KubeSchedulerConfiguration'")
    assert parse_errors([1]) == ["<document>: must be an object (a KubeSchedulerConfiguration or a Policy)"]


def test_legacy_policy_keys_are_case_insensitive_and_timeout_is_nanoseconds() -> None:
    doc = {"kind": "Policy", "apiVersion": "v1", "extenders": [{"URLPrefix": URL, "enablehttps": False}]}
    assert parse_document(doc) == LegacyPolicy(extenders=(Extender(url_prefix=URL),))
    doc["extenders"] = [{"urlPrefix": URL, "httpTimeout": "5s"}]
    assert parse_errors(doc) == [
        "extenders[0].httpTimeout: must be an integer number of nanoseconds in a legacy Policy (5000000000 = 5s)"
    ]


# --- validation: kube-scheduler's rules ------------------------------------------------------------------------


def test_valid_default_config_has_no_problems() -> None:
    assert problems(ext()) == []


def test_prioritize_needs_positive_weight() -> None:
    assert problems(ext(weight=0)) == [
        "extenders[0].weight: must have a positive weight applied to it when prioritizeVerb is set (got 0)"
    ]
    assert problems(ext(weight=0, prioritize_verb="")) == []


def test_only_one_extender_can_bind() -> None:
    assert problems(ext(bind_verb="bind"), ext(), ext(bind_verb="bind")) == [
        "extenders: only one extender can implement bind (found 2: extenders[0], extenders[2])"
    ]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("gpu", "needs a domain prefix"),
        ("kubernetes.io/gpu", "domains ending in kubernetes.io are reserved"),
        ("nvidia.kubernetes.io/gpu", "domains ending in kubernetes.io are reserved"),
        # Upstream tests containment of "kubernetes.io/", so this one is reserved too (checked against v1.35.4).
        ("notkubernetes.io/gpu", "domains ending in kubernetes.io are reserved"),
        ("requests.example.com/gpu", "reserved for resource quota"),
        ("example.com/" + "g" * 64, "not a valid qualified name: name part must be no more than 63 characters"),
        ("Example.com/gpu", "not a valid qualified name: prefix part must be a lowercase RFC 1123 subdomain"),
        ("example.com/-gpu", "not a valid qualified name: name part must consist of alphanumeric"),
        ("a/b/c", "not a valid qualified name"),
        ("", "name part must be non-empty"),
    ],
)
def test_managed_resource_must_be_an_extended_resource_name(name: str, reason: str) -> None:
    found = problems(ext(managed_resources=(ManagedResource(name),)))
    assert found
    assert all(p.startswith("extenders[0].managedResources[0].name: ") for p in found)
    assert reason in found[0]


def test_quota_name_must_also_be_qualified() -> None:
    # 249 + "/x": fine as a name, but "requests." + it overflows the 253-character prefix limit.
    name = "a" * 249 + "/x"
    assert problems(ext(managed_resources=(ManagedResource(name),))) == [
        f"extenders[0].managedResources[0].name: is an invalid extended resource name: its quota name"
        f" 'requests.{name}' is not a valid qualified name"
    ]


def test_duplicate_managed_resources_are_found_across_extenders() -> None:
    gpu = (ManagedResource("example.com/gpu", True),)
    assert problems(ext(managed_resources=gpu), ext(prioritize_verb="", managed_resources=gpu)) == [
        "extenders[1].managedResources[0].name: duplicate extender managed resource name 'example.com/gpu'"
    ]


def test_profiles_need_unique_non_empty_names() -> None:
    assert problems(ext(), profiles=(Profile("a"), Profile("a"), Profile(""))) == [
        "profiles[1].schedulerName: duplicate value 'a'",
        "profiles[2].schedulerName: is required",
    ]


def test_resource_lock_must_be_leases() -> None:
    assert problems(ext(), leader_election=LeaderElection(resource_lock="endpoints")) == [
        "leaderElection.resourceLock: must be \"leases\" (got 'endpoints')"
    ]
    off = validate(SchedulerConfig(leader_election=LeaderElection(leader_elect=False, resource_lock="configmaps")))
    assert [e.upstream for e in off] == [False]


def test_upstream_scalar_ranges() -> None:
    extra = {
        "parallelism": 0,
        "percentageOfNodesToScore": 101,
        "podInitialBackoffSeconds": 5,
        "podMaxBackoffSeconds": 2,
    }
    assert problems(extra=extra) == [
        "parallelism: should be an integer value greater than zero",
        "percentageOfNodesToScore: not in range [0-100]",
        "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds",
    ]


# --- validation: kubesched's own checks ------------------------------------------------------------------------

OURS = " (kubesched check; kube-scheduler itself accepts this)"


@pytest.mark.parametrize(
    ("extender", "expected"),
    [
        (
            ext(enable_https=True, tls_config=TLSConfig(ca_file="/ca")),
            "extenders[0].urlPrefix: must start with https:// when enableHTTPS is true: kube-scheduler uses the URL"
            " as written and enableHTTPS does not change the scheme",
        ),
        (ext(url_prefix="ftp://x/s"), "extenders[0].urlPrefix: must be an http:// or https:// URL (got 'ftp://x/s')"),
        (ext(url_prefix="http:///s"), "extenders[0].urlPrefix: must name a host (got 'http:///s')"),
        (ext(url_prefix=""), "extenders[0].urlPrefix: is required"),
        (ext(http_timeout=Duration.parse("-1s")), "extenders[0].httpTimeout: must not be negative (got -1s)"),
        (
            ext(tls_config=TLSConfig(ca_file="/ca")),
            "extenders[0].tlsConfig: is ignored unless enableHTTPS is true; set enableHTTPS or remove tlsConfig",
        ),
        (
            ext(url_prefix="https://e/s", enable_https=True, tls_config=TLSConfig(ca_file="/ca", cert_file="/c")),
            "extenders[0].tlsConfig: a client certificate needs both a cert (certFile/certData) and a key"
            " (keyFile/keyData)",
        ),
    ],
)
def test_our_checks_are_marked_as_ours(extender: Extender, expected: str) -> None:
    found = validate(SchedulerConfig(extenders=(extender,)))
    assert [str(e) for e in found] == [expected + OURS]
    assert not found[0].upstream


def test_every_problem_is_reported_at_once() -> None:
    bad = ext(
        url_prefix="http://e/s",
        weight=0,
        bind_verb="bind",
        enable_https=True,
        managed_resources=(ManagedResource("gpu"), ManagedResource("example.com/a"), ManagedResource("example.com/a")),
    )
    found = problems(bad, ext(bind_verb="b"), profiles=(Profile(""),))
    assert [p.split(":")[0] for p in found] == [
        "extenders[0].weight",
        "extenders[0].managedResources[0].name",
        "extenders[0].managedResources[2].name",
        "extenders[0].urlPrefix",
        "extenders",
        "profiles[0].schedulerName",
    ]


def test_field_error_str() -> None:
    assert str(FieldError("extenders[0].weight", "must be an integer")) == "extenders[0].weight: must be an integer"


# --- warnings --------------------------------------------------------------------------------------------------


def test_warnings_for_missing_ca_and_resources_still_checked_by_the_scheduler() -> None:
    config = SchedulerConfig(
        extenders=(
            ext(
                url_prefix="https://e/s",
                enable_https=True,
                managed_resources=(ManagedResource("example.com/a"), ManagedResource("example.com/b", True)),
            ),
        )
    )
    assert validate(config) == []
    found = [str(w) for w in collect_warnings(config)]
    assert len(found) == 3
    assert found[0].startswith("extenders[0].tlsConfig: enableHTTPS without caFile or caData")
    assert "sets insecure" in found[0]
    assert found[1].startswith("extenders[0].bindVerb: is empty while 'example.com/b' is ignoredByScheduler")
    assert found[2].startswith("extenders[0].managedResources[0].ignoredByScheduler: is false")
    assert "NodeResourcesFit still checks node capacity for 'example.com/a'" in found[2]


def test_an_ignored_resource_without_bind_verb_is_a_warning_not_an_error() -> None:
    ignored = (ManagedResource("example.com/a", True), ManagedResource("example.com/b", True))
    unbound = SchedulerConfig(extenders=(ext(managed_resources=ignored),))
    assert validate(unbound) == []
    found = [str(w) for w in collect_warnings(unbound)]
    assert found == [
        "extenders[0].bindVerb: is empty while 'example.com/a', 'example.com/b' are ignoredByScheduler:"
        " kube-scheduler does not count it and, without a bind verb, the extender cannot know the chosen node to"
        " reserve it, so pods created in a burst can over-commit it; set bindVerb (kubesched extender serve"
        " answers 'bind')"
    ]
    binding = SchedulerConfig(extenders=(ext(managed_resources=ignored, bind_verb="bind"),))
    counted = SchedulerConfig(extenders=(ext(managed_resources=(ManagedResource("example.com/a"),)),))
    assert not [w for w in collect_warnings(binding) + collect_warnings(counted) if "bindVerb" in w.path]


def test_extender_helpers() -> None:
    e = ext(http_timeout=None, managed_resources=(ManagedResource("example.com/a", True),))
    assert e.effective_timeout == Duration.of(seconds=5)
    assert e.is_interested(["cpu", "example.com/a"])
    assert not e.is_interested(["cpu"])
    assert SchedulerConfig(extenders=(e,)).ignored_resources == ("example.com/a",)


# --- CLI -------------------------------------------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[[Sequence[str]], int]:
    """`kubesched.cli.main.main`. Sibling subcommands that cannot be imported (still being written) are stubbed,
    so these tests exercise `config` alone."""
    for name in ("extender_cmd", "dev_cluster"):
        full = f"kubesched.cli.{name}"
        try:
            importlib.import_module(full)
        except ImportError:
            stub = types.ModuleType(full)
            stub.register = lambda sub: None  # type: ignore[attr-defined]
            monkeypatch.setitem(sys.modules, full, stub)
            monkeypatch.delitem(sys.modules, "kubesched.cli.main", raising=False)
    from kubesched.cli.main import main

    return main


def test_cli_default_prints_golden_yaml_that_validates(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli(["config", "extender", "--url-prefix", URL]) == 0
    out = capsys.readouterr()
    assert out.out == GOLDEN.read_text()
    assert out.err == ""
    written = tmp_path / "config.yaml"
    written.write_text(out.out)
    assert cli(["config", "validate", str(written)]) == 0
    assert capsys.readouterr().out == "ok\n"


def test_cli_failure_lists_every_problem_without_traceback(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["config", "extender", "--url-prefix", "http://e/s", "--weight", "0", "--enable-https"]
    argv += ["--managed-resource", "gpu", "--http-timeout=-2s"]
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "kubesched: error: invalid extender configuration (4 problems):" in err
    for path in ("weight", "managedResources[0].name", "urlPrefix", "httpTimeout"):
        assert f"\n  extenders[0].{path}: " in err
    assert "kubesched: warning: extenders[0].tlsConfig: enableHTTPS without caFile" in err


def test_cli_bad_flag_values_are_user_errors(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["config", "extender", "--url-prefix", URL, "--http-timeout", "5"]) == 2
    assert cli(["config", "extender", "--url-prefix", URL, "--managed-resource", "example.com/a=maybe"]) == 2
    assert cli(["config", "extender", "--url-prefix", URL, "--embed-tls-data"]) == 2
    assert cli(["config", "extender", "--url-prefix", URL, "--legacy-policy", "--scheduler-name", "x"]) == 2
    err = capsys.readouterr().err
    assert 'kubesched: error: --http-timeout: missing unit in duration "5"' in err
    assert "expected NAME or NAME=ignored" in err
    assert "--scheduler-name: a legacy Policy has no such field" in err
    assert "Traceback" not in err


def test_cli_legacy_policy_and_embedded_tls(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text(PEM)
    argv = ["config", "extender", "--url-prefix", "https://e:8443/s", "--enable-https", "--ca-file", str(ca)]
    assert cli([*argv, "--embed-tls-data", "--http-timeout", "1m30s", "--legacy-policy"]) == 0
    policy = json.loads(capsys.readouterr().out)
    extender = policy["extenders"][0]
    assert (policy["kind"], extender["enableHttps"], extender["httpTimeout"]) == ("Policy", True, 90_000_000_000)
    assert base64.b64decode(extender["tlsConfig"]["caData"]) == PEM.encode()

    out = tmp_path / "sched.json"
    assert (
        cli([*argv, "--scheduler-name", "kubesched", "--lease-name", "kubesched", "--format", "json", "-o", str(out)])
        == 0
    )
    doc = json.loads(out.read_text())
    assert doc["leaderElection"] == {"leaderElect": True, "resourceName": "kubesched"}
    assert doc["profiles"] == [{"schedulerName": "kubesched"}]
    assert doc["extenders"][0]["tlsConfig"] == {"caFile": str(ca)}


@dataclass(frozen=True)
class _FakeResource:
    name: str
    ignored_by_scheduler: bool


def test_cli_policy_supplies_managed_resources(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def load(spec: str) -> object:
        if spec != "gpu":
            raise ValueError(f"unknown policy {spec!r}")
        return types.SimpleNamespace(managed_resources=(_FakeResource("example.com/gpu", True),))

    fake = types.ModuleType("kubesched.policies")
    fake.load = load  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kubesched.policies", fake)
    assert cli(["config", "extender", "--url-prefix", URL, "--policy", "gpu"]) == 0
    out = capsys.readouterr()
    doc = yaml.safe_load(out.out)
    assert doc["extenders"][0]["managedResources"] == [{"name": "example.com/gpu", "ignoredByScheduler": True}]
    # No bind verb: the file and stderr say the resource cannot be reserved.
    assert out.out.startswith("# WARNING: no bindVerb, so managed resources cannot be reserved")
    assert "kubesched: warning: extenders[0].bindVerb: is empty while 'example.com/gpu'" in out.err
    assert cli(["config", "extender", "--url-prefix", URL, "--policy", "gpu", "--bind-verb", "bind"]) == 0
    out = capsys.readouterr()
    assert not out.out.startswith("#") and "bindVerb" not in out.err
    assert cli(["config", "extender", "--url-prefix", URL, "--policy", "nope"]) == 2
    assert "kubesched: error: --policy nope: unknown policy 'nope'" in capsys.readouterr().err


def test_cli_validate_reports_every_problem_in_a_file(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.yaml"
    doc = v1(
        {"urlPrefix": URL, "prioritizeVerb": "p", "weight": "high", "enableHttps": True},
        {"urlPrefix": URL, "bindVerb": "b", "managedResources": [{"name": "gpu"}]},
        {"urlPrefix": URL, "bindVerb": "b"},
    )
    path.write_text(yaml.safe_dump(doc))
    assert cli(["config", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"kubesched: error: {path} is invalid (4 problems):" in err
    assert "\n  extenders[0].enableHttps: unknown field" in err
    assert "\n  extenders[0].weight: must be an integer" in err
    # The unparsable weight is not also reported as "must have a positive weight".
    assert "positive weight" not in err
    assert "\n  extenders[1].managedResources[0].name: is an invalid extended resource name" in err
    assert "\n  extenders: only one extender can implement bind" in err
    assert cli(["config", "validate", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_validate_accepts_a_legacy_policy(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(render_legacy_policy([ext()])))
    assert cli(["config", "validate", str(path)]) == 0
    assert capsys.readouterr().out == "ok\n"


def test_cli_validate_warns_but_accepts_an_unreserved_resource(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["config", "extender", "--url-prefix", URL, "--managed-resource", "example.com/gpu=ignored"]
    assert cli(argv) == 0
    generated = capsys.readouterr().out
    assert generated.startswith("# WARNING: no bindVerb")
    written = tmp_path / "config.yaml"
    written.write_text(generated)
    assert cli(["config", "validate", str(written)]) == 0
    out = capsys.readouterr()
    assert out.out == "ok\n"
    assert "warning: extenders[0].bindVerb: is empty while 'example.com/gpu' is ignoredByScheduler" in out.err
    assert cli([*argv, "--format", "json"]) == 0  # JSON has no comments: the warning goes to stderr only
    out = capsys.readouterr()
    assert out.out.startswith("{") and "extenders[0].bindVerb" in out.err
