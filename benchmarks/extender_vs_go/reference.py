"""The Go reference extender and the answer check, shared by the benchmark driver and the test suite.

``build_go()`` compiles ``goext/`` once per source hash and Go version into
``$KUBESCHED_BENCH_CACHE`` (default ``~/.cache/kubesched/bench``). ``Server`` starts one extender
process and waits until it answers. ``differences()`` posts the same bodies to two servers and
returns what their answers disagree on, looking only at what the policy fixes (POLICY.md).
Standard library only, so that it runs under any interpreter that can import kubesched.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GOEXT = HERE / "goext"
VERBS = ("filter", "prioritize")


class BenchError(RuntimeError):
    """The benchmark cannot run: a tool is missing, a build failed or a server did not come up."""


def cache_dir() -> Path:
    env = os.environ.get("KUBESCHED_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kubesched" / "bench"


def _go_env() -> dict[str, str]:
    # Standard library only: the module proxy is never needed, and a toolchain download would hide a wrong setup.
    return dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local", CGO_ENABLED="0")


def build_go() -> Path:
    """The goext binary, built into the cache if this source and Go version have not been built before."""
    go = shutil.which("go")
    if go is None:
        raise BenchError("the go toolchain is not on PATH (needed to build the Go reference extender)")
    version = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, env=_go_env()).stdout.strip()
    digest = hashlib.sha256(version.encode())
    for path in sorted(GOEXT.iterdir()):
        if path.suffix == ".go" or path.name == "go.mod":
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    key = cache_dir() / f"goext-{digest.hexdigest()[:16]}"
    binary = key / "goext"
    if binary.is_file():
        return binary
    key.mkdir(parents=True, exist_ok=True)
    with (key / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs at once build it once
        if binary.is_file():
            return binary
        tmp = key / "goext.tmp"
        proc = subprocess.run(
            [go, "build", "-trimpath", "-o", str(tmp), "."], cwd=GOEXT, env=_go_env(), capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise BenchError(f"go build in {GOEXT} failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
        tmp.rename(binary)
    return binary


def post(port: int, verb: str, body: bytes, timeout: float = 120) -> tuple[int, Any]:
    """POST body to /verb; the status and the decoded JSON reply (or the text of an error reply)."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/{verb}", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def python_command(nodes: Path, listen: str, template: str | None = None) -> list[str]:
    """Our extender's command line: TEMPLATE with {nodes} and {listen} filled in, else this interpreter's."""
    if template:
        import shlex

        return shlex.split(template.format(nodes=nodes, listen=listen))
    return [
        sys.executable, "-m", "kubesched", "extender", "serve", "--policy", "custom-label",
        "--nodes", str(nodes), "--listen", listen, "--log-level", "warning",
    ]  # fmt: skip


def go_command(binary: Path, nodes: Path, listen: str) -> list[str]:
    return [str(binary), "-listen", listen, "-nodes", str(nodes)]


class Server:
    """One extender process on 127.0.0.1:port, its stderr kept in log; stop() ends it."""

    def __init__(self, name: str, argv: list[str], port: int, log: Path, env: dict[str, str] | None = None) -> None:
        self.name, self.port, self.log = name, port, log
        with log.open("wb") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)

    def wait_ready(self, probe: bytes, seconds: float = 60) -> None:
        """Poll filter with probe until it answers 200 (the node cache is loaded), or fail with the log."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited with code {self.proc.returncode}: {self._tail()}")
            with contextlib.suppress(OSError):
                if post(self.port, "filter", probe, timeout=10)[0] == 200:
                    return
            time.sleep(0.2)
        raise BenchError(f"{self.name} did not answer on port {self.port} within {seconds:.0f}s: {self._tail()}")

    def _tail(self) -> str:
        text = self.log.read_text(errors="replace").strip().splitlines()[-20:]
        return f"last lines of {self.log}:\n" + "\n".join(text) if text else f"{self.log} is empty"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def normalize(verb: str, reply: Any) -> Any:
    """What the policy fixes in a reply: names passed and failed with their messages, error; or the scores.

    Keys are compared case-insensitively (Go's decoder is case-insensitive too); a full-node reply is
    reduced to the names of the nodes it echoes.
    """
    if verb == "prioritize":
        if not isinstance(reply, list):
            return ("not a HostPriorityList", reply)
        return [({k.lower(): v for k, v in h.items()}.get("host"), {k.lower(): v for k, v in h.items()}.get("score"))
                for h in reply]  # fmt: skip
    if not isinstance(reply, dict):
        return ("not an ExtenderFilterResult", reply)
    low = {k.lower(): v for k, v in reply.items()}
    names = low.get("nodenames")
    if names is None and low.get("nodes") is not None:
        names = [item["metadata"]["name"] for item in low["nodes"].get("items") or []]
    return {
        "passed": names or [],
        "failed": low.get("failednodes") or {},
        "unresolvable": low.get("failedandunresolvablenodes") or {},
        "error": low.get("error") or "",
    }


def differences(go_port: int, py_port: int, cases: dict[str, bytes]) -> list[str]:
    """Post every case to both servers for both verbs; one line per case and verb whose answers differ."""
    out = []
    for label, body in cases.items():
        for verb in VERBS:
            g_status, g_reply = post(go_port, verb, body)
            p_status, p_reply = post(py_port, verb, body)
            if g_status != 200:
                out.append(f"{verb} {label}: the Go reference answered {g_status}: {g_reply!r:.300}")
            elif p_status != 200:
                out.append(f"{verb} {label}: ours answered {p_status}: {p_reply!r:.300}")
            else:
                g, p = normalize(verb, g_reply), normalize(verb, p_reply)
                if g != p:
                    out.append(f"{verb} {label}: Go {json.dumps(g)[:300]} vs ours {json.dumps(p)[:300]}")
    return out
