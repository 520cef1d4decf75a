"""Validating the extender configuration: kube-scheduler's rules, kubesched's own checks, warnings."""

from __future__ import annotations

import pytest

from kubesched.config.duration import Duration
from kubesched.config.v1 import (
    Extender,
    LeaderElectionV1,
    ManagedResource,
    ProfileV1,
    SchedulerConfigV1,
    TLSConfig,
)
from kubesched.config.validation import collect_warnings, validate
from kubesched.errors import FieldError
from tests.unit.config.extenders import ext, problems

# --- validation: kube-scheduler's rules ------------------------------------------------------------------------


def test_valid_default_config_has_no_problems() -> None:
    assert problems(ext()) == []


def test_prioritize_needs_positive_weight() -> None:
    assert problems(ext(weight=0)) == [
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it (prioritizeVerb is set)"
    ]
    assert problems(ext(weight=0, prioritize_verb="")) == []


def test_only_one_extender_can_bind() -> None:
    assert problems(ext(bind_verb="bind"), ext(), ext(bind_verb="bind")) == [
        'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind'
        " (extenders[0], extenders[2])"
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
        f'extenders[0].managedResources[0].name: Invalid value: "{name}": is an invalid extended resource name:'
        f" its quota name 'requests.{name}' is not a valid qualified name"
    ]


def test_duplicate_managed_resources_are_found_across_extenders() -> None:
    gpu = (ManagedResource("example.com/gpu", True),)
    assert problems(ext(managed_resources=gpu), ext(prioritize_verb="", managed_resources=gpu)) == [
        'extenders[1].managedResources[0].name: Invalid value: "example.com/gpu":'
        " duplicate extender managed resource name"
    ]


def test_profiles_need_unique_non_empty_names() -> None:
    assert problems(ext(), profiles=(ProfileV1("a"), ProfileV1("a"), ProfileV1(""))) == [
        'profiles[1].schedulerName: Duplicate value: "a"',
        "profiles[2].schedulerName: Required value",
    ]


def test_resource_lock_must_be_leases() -> None:
    assert problems(ext(), leader_election=LeaderElectionV1(resource_lock="endpoints")) == [
        'leaderElection.resourceLock: Invalid value: "endpoints": resourceLock value must be "leases"'
    ]
    off = validate(SchedulerConfigV1(leader_election=LeaderElectionV1(leader_elect=False, resource_lock="configmaps")))
    assert [e.upstream for e in off] == [False]


def test_upstream_scalar_ranges() -> None:
    extra = {
        "parallelism": 0,
        "percentageOfNodesToScore": 101,
        "podInitialBackoffSeconds": 5,
        "podMaxBackoffSeconds": 2,
    }
    assert problems(extra=extra) == [
        "parallelism: Invalid value: 0: should be an integer value greater than zero",
        "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        "podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds",
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
    found = validate(SchedulerConfigV1(extenders=(extender,)))
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
    found = problems(bad, ext(bind_verb="b"), profiles=(ProfileV1(""),))
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
    config = SchedulerConfigV1(
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
    unbound = SchedulerConfigV1(extenders=(ext(managed_resources=ignored),))
    assert validate(unbound) == []
    found = [str(w) for w in collect_warnings(unbound)]
    assert found == [
        "extenders[0].bindVerb: is empty while 'example.com/a', 'example.com/b' are ignoredByScheduler:"
        " kube-scheduler does not count it and, without a bind verb, the extender cannot know the chosen node to"
        " reserve it, so pods created in a burst can over-commit it; set bindVerb (kubesched extender serve"
        " answers 'bind')"
    ]
    binding = SchedulerConfigV1(extenders=(ext(managed_resources=ignored, bind_verb="bind"),))
    counted = SchedulerConfigV1(extenders=(ext(managed_resources=(ManagedResource("example.com/a"),)),))
    assert not [w for w in collect_warnings(binding) + collect_warnings(counted) if "bindVerb" in w.path]


def test_extender_helpers() -> None:
    e = ext(http_timeout=None, managed_resources=(ManagedResource("example.com/a", True),))
    assert e.effective_timeout == Duration.of(seconds=5)
    assert e.is_interested(["cpu", "example.com/a"])
    assert not e.is_interested(["cpu"])
    assert SchedulerConfigV1(extenders=(e,)).ignored_resources == ("example.com/a",)
