"""`kubesched dev-cluster down` for a cluster started in another terminal (here: another process) with --keep, and
`status` with the dev cluster's bearer token, which kube-apiserver accepts."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kubesched.testing import build
from kubesched.testing.waiting import wait_until
from tests.integration.test_dev_cluster import DevCluster, _alive

pytestmark = pytest.mark.controlplane


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesched", "dev-cluster", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_down_stops_a_kept_cluster_of_another_process_and_its_token_works(
    control_plane_binaries: build.Binaries, tmp_path: Path
) -> None:
    # Its own runtime dir: `status` and `down` find this cluster without flags, whatever else runs.
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    env.pop("KUBESCHED_DEV_CLUSTER", None)
    dc = DevCluster("--nodes", "1", "--no-scheduler", "--keep", env=env)
    data_dir = None
    try:
        state = dc.state()
        data_dir = Path(state["dataDir"])
        assert state["keep"] is True
        token = state["token"]
        assert (token["user"], token["groups"]) == ("kubesched-token-admin", ["system:masters"])
        with httpx.Client(
            base_url=state["apiServer"]["url"], verify=ssl.create_default_context(cafile=state["apiServer"]["caFile"])
        ) as api:
            me = api.post(
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                headers={"Authorization": f"Bearer {token['value']}"},
            )
            assert me.status_code == 201, me.text
            assert me.json()["status"]["userInfo"]["username"] == "kubesched-token-admin"
            assert api.get("/api/v1/nodes", headers={"Authorization": "Bearer wrong"}).status_code == 401
        status = _cli(env, "status")
        assert status.returncode == 0, status.stderr
        assert "token:          kubesched-token-admin (system:masters)" in status.stdout

        down = _cli(env, "down")
        assert down.returncode == 0, down.stderr
        assert down.stdout.strip() == (
            f"kubesched dev-cluster: stopped (pid {state['pid']}, kube-apiserver {state['apiServer']['url']});"
            f" its data dir {data_dir} is kept (--keep)"
        )
        assert dc.proc.wait(timeout=30) == 0  # the up process ended as after Ctrl-C
        pids = (state["pid"], state["apiServer"]["pid"], state["etcd"]["pid"])
        wait_until(lambda: not any(_alive(pid) for pid in pids), "every process of the dev-cluster gone", within=30)
        assert (data_dir / "logs").is_dir()  # --keep: logs and kubeconfigs stay
        again = _cli(env, "status")
        assert again.returncode == 2 and "no dev-cluster is running" in again.stderr
        gone = _cli(env, "down")
        assert gone.returncode == 2 and "no dev-cluster is running" in gone.stderr
        stopped = _cli(env, "down", "--dir", str(data_dir))
        assert stopped.returncode == 2 and "is not running" in stopped.stderr
    finally:
        dc.stop()
        if data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)


def test_down_without_keep_removes_the_working_directory(
    control_plane_binaries: build.Binaries, tmp_path: Path
) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    env.pop("KUBESCHED_DEV_CLUSTER", None)
    env.pop("KUBESCHED_KEEP_LOGS", None)
    dc = DevCluster("--nodes", "0", "--no-scheduler", env=env)
    try:
        state = dc.state()
        down = _cli(env, "down", "--dir", state["dataDir"])
        assert down.returncode == 0, down.stderr
        assert "is kept" not in down.stdout
        assert dc.proc.wait(timeout=30) == 0
        assert not Path(state["dataDir"]).exists()
        assert state["keep"] is False
    finally:
        dc.stop()
