"""kubectl's and kube-scheduler's CLI habits: --version, closed pipes, JSON output, CI exit codes, flags."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.cli import scheduler_cmd, serving
from kubesched.cli.main import build_parser, main
from kubesched.config.profiles import LeaderElectionConfig
from kubesched.errors import CLIError, ConfigurationError

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "examples" / "cluster.yaml"


def test_version_names_ours_and_the_kubernetes_reference(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as end:
        main(["--version"])
    assert end.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("kubesched ") and "(Kubernetes reference v1.37.2; also supported: v1.35.4)" in out


def test_a_closed_pipe_ends_quietly_as_kubectl_does() -> None:
    # `kubesched … -o json | head -c 10`: the reader leaves after 10 bytes; no traceback, 141 as a SIGPIPE.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "kubesched", "scheduler", "run", "--cluster", str(CLUSTER), "-o", "json"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.read(10)
        proc.stdout.close()  # before the output (~1.5 kB, below the pipe's buffer) is flushed at exit
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
    assert first.startswith(b"{")
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code in (0, 141), err  # 0 when the whole output fit in the pipe before it closed


def test_a_closed_pipe_on_a_big_output_exits_141(tmp_path: Path) -> None:
    nodes = [{"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1", "pods": "110"}}}]
    pods = [
        {"kind": "Pod", "metadata": {"name": f"pod-with-a-long-name-{i}", "namespace": "default"}, "spec": {}}
        for i in range(3000)
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"kind": "List", "items": nodes + pods}))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "kubesched", "scheduler", "run", "--cluster", str(path), "-o", "json"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
        assert proc.stdout is not None
        assert proc.stdout.read(10)
        proc.stdout.close()
        _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err.decode(), err.decode()
    assert proc.returncode == 141


def test_json_output_carries_the_preemptions_the_text_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scheduler", "run", "--cluster", str(CLUSTER)]) == 0
    text = capsys.readouterr().out
    assert main(["scheduler", "run", "--cluster", str(CLUSTER), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["preemptions"], "the example preempts jobs/batch-0"
    for p in out["preemptions"]:
        assert f"{p['pod']} preempted: {p['note']}" in text
    assert {p["pod"] for p in out["placements"]} == {line.split()[0] for line in text.splitlines()[:7]}


def test_fail_on_pending_exits_1_when_a_pod_stays_pending(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scheduler", "run", "--cluster", str(CLUSTER)]) == 0
    assert main(["scheduler", "run", "--cluster", str(CLUSTER), "--fail-on-pending"]) == 1
    assert main(["scheduler", "run", "--cluster", str(CLUSTER), "--fail-on-pending", "-o", "json"]) == 1
    assert "5/7 pending pod(s) scheduled" in capsys.readouterr().out


def test_fail_on_pending_exits_0_when_every_pod_fits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = {"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "pods": "110"}}}
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": {}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"kind": "List", "items": [node, pod]}))
    assert main(["scheduler", "run", "--cluster", str(path), "--fail-on-pending"]) == 0
    assert "1/1 pending pod(s) scheduled" in capsys.readouterr().out


def parse_run(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["scheduler", "run", *argv])


def test_leader_election_flags_override_the_file_as_kube_scheduler_does(tmp_path: Path) -> None:
    config = tmp_path / "sched.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: true, leaseDuration: 30s, resourceName: from-file}\n"
    )
    args = parse_run("--config", str(config), "--leader-elect=false", "--leader-elect-resource-namespace", "ns")
    le = scheduler_cmd.read_config(config, live=True, args=args)[0].leader_election
    assert (le.leader_elect, le.lease_duration, le.resource_name, le.resource_namespace) == (
        False,
        30,
        "from-file",
        "ns",
    )
    args = parse_run("--config", str(config), "--leader-elect-lease-duration", "1m", "--leader-elect-retry-period=3s")
    le = scheduler_cmd.read_config(config, live=True, args=args)[0].leader_election
    assert (le.leader_elect, le.lease_duration, le.retry_period) == (True, 60, 3)
    # No flag given: the file stands.
    le = scheduler_cmd.read_config(config, live=True, args=parse_run())[0].leader_election
    assert le.lease_duration == 30 and le.resource_name == "from-file"


def test_leader_election_flags_are_checked_with_client_gos_rules() -> None:
    args = parse_run("--leader-elect-renew-deadline", "20s")  # above the default lease of 15s
    with pytest.raises(ConfigurationError, match="leaseDuration must be greater than renewDeadline"):
        scheduler_cmd.leader_election(args, LeaderElectionConfig())
    with pytest.raises(SystemExit):
        parse_run("--leader-elect-lease-duration", "15")  # Go durations need a unit
    with pytest.raises(SystemExit):
        parse_run("--leader-elect=maybe")


def test_bind_address_and_secure_port_are_the_halves_of_listen() -> None:
    assert scheduler_cmd._listen(parse_run()) == ("127.0.0.1", 10251)
    assert scheduler_cmd._listen(parse_run("--bind-address", "0.0.0.0", "--secure-port", "10259")) == ("0.0.0.0", 10259)
    assert scheduler_cmd._listen(parse_run("--secure-port", "10259")) == ("127.0.0.1", 10259)
    with pytest.raises(CLIError, match="excludes"):
        scheduler_cmd._listen(parse_run("--listen", "1.2.3.4:5", "--secure-port", "10259"))
    with pytest.raises(CLIError, match="--secure-port"):
        scheduler_cmd._listen(parse_run("--secure-port", "70000"))


@pytest.mark.parametrize(
    ("command", "default"),
    [
        (["extender", "serve", "--policy", "custom-label"], 256 << 20),
        (["webhook", "serve", "--config", "r.yaml"], 16 << 20),
    ],
)
def test_the_body_limit_is_one_of_the_connection_limits_of_each_server(command: list[str], default: int) -> None:
    parser = build_parser()
    assert parser.parse_args(command).max_body_bytes == default
    args = parser.parse_args([*command, "--max-body-bytes", "0"])
    with pytest.raises(CLIError, match="--max-body-bytes: must be positive"):
        serving.limits_from(args)


def test_the_lease_named_in_help_and_docs_is_the_one_the_scheduler_takes(capsys: pytest.CaptureFixture[str]) -> None:
    from kubesched.config.profiles import DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE, default_configuration

    le = default_configuration().leader_election  # what leader election uses without flags or file
    assert (le.resource_namespace, le.resource_name) == (DEFAULT_LEASE_NAMESPACE, DEFAULT_LEASE_NAME)
    with pytest.raises(SystemExit):
        main(["scheduler", "run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"the Lease's name (default {le.resource_name})" in help_text
    assert f"the Lease's namespace (default {le.resource_namespace})" in help_text
    docs = (ROOT / "docs" / "scheduler.md").read_text()
    assert f"Lease `{le.resource_namespace}/{le.resource_name}`" in docs
    assert "Lease `kube-system/kubesched`" not in docs
