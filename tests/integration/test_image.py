"""The image without a container runtime: deploy/Dockerfile's own steps, run in a clean venv.

No registry is reachable here, so the Dockerfile cannot be built. What it does can: this test reads the Dockerfile
and runs its build stage's COPY and `pip wheel`, its final stage's `pip install` (offline, from those wheels), and
then its ENTRYPOINT + CMD, with its ENV and (when we are root) its USER. Change the Dockerfile and this test follows.
The wheels are cached by the hash of the Dockerfile and every file the build stage copies.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.image

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
NETWORK_TROUBLE = ("NewConnectionError", "Name or service not known", "Temporary failure in name resolution")


@dataclass
class Stage:
    """One FROM ... stage: its instructions in order, as (keyword, argument text)."""

    name: str
    steps: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [arg for kw, arg in self.steps if kw == keyword]

    def last(self, keyword: str) -> list[str]:
        """A JSON-array instruction (ENTRYPOINT, CMD): the last one counts, as in Docker."""
        found = self.all(keyword)
        assert found, f"{DOCKERFILE}: no {keyword} in stage {self.name}"
        value = json.loads(found[-1])  # exec form only: a shell form would run under /bin/sh, not as written
        assert isinstance(value, list) and all(isinstance(v, str) for v in value), found[-1]
        return value


def parse_dockerfile(text: str) -> list[Stage]:
    """Stages of a Dockerfile: comments dropped, backslash continuations joined."""
    stages: list[Stage] = []
    logical = ""
    for raw in text.splitlines():
        if not logical and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        logical += raw.rstrip()[:-1] + " " if raw.rstrip().endswith("\\") else raw
        if raw.rstrip().endswith("\\"):
            continue
        keyword, _, arg = logical.strip().partition(" ")
        logical = ""
        if keyword.upper() == "FROM":
            words = arg.split()
            stages.append(Stage(words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(stages))))
        elif stages:
            stages[-1].steps.append((keyword.upper(), arg.strip()))
    return stages


def pip_commands(run_arg: str) -> list[list[str]]:
    """The pip commands of a RUN line (`a && b`); other commands (useradd, rm) concern the image's file system."""
    commands = [shlex.split(part) for part in run_arg.split("&&")]
    return [c for c in commands if c and c[0] == "pip"]


def env_of(stage: Stage) -> dict[str, str]:
    env: dict[str, str] = {}
    for arg in stage.all("ENV"):
        for pair in shlex.split(arg):
            key, _, value = pair.partition("=")
            env[key] = value
    return env


def _cache_dir() -> Path:
    return Path(os.environ.get("KUBESCHED_IMAGE_CACHE") or Path.home() / ".cache" / "kubesched" / "image")


def _copy_sources(stage: Stage) -> list[tuple[list[Path], str]]:
    """(sources in the repository, destination) of each context COPY (not --from) of a stage."""
    out = []
    for arg in stage.all("COPY"):
        words = shlex.split(arg)
        if any(w.startswith("--from") for w in words):
            continue
        *sources, dest = [w for w in words if not w.startswith("--")]
        out.append(([REPO / s for s in sources], dest))
    return out


def _files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for p in sorted(path.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p):
            yield p


def _build_key(build: Stage) -> str:
    digest = hashlib.sha256(DOCKERFILE.read_bytes())
    for sources, _ in _copy_sources(build):
        for source in sources:
            for f in _files(source):
                digest.update(str(f.relative_to(REPO)).encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()[:16]


def _pip(argv: list[str], python: str, wheels: Path, *, keep_cache_flag: bool = True) -> list[str]:
    """A Dockerfile pip command for our python; /wheels becomes ``wheels``."""
    args = [a.replace("/wheels", str(wheels)) for a in argv[1:]]
    if not keep_cache_flag:
        args = [a for a in args if a != "--no-cache-dir"]  # pip's HTTP cache keeps reruns quick
    return [python, "-m", "pip", *args]


def build_wheels(build: Stage) -> Path:
    """The build stage: its context COPYs into a scratch WORKDIR, then its `pip wheel` (cached by content)."""
    key = _build_key(build)
    done = _cache_dir() / key / "wheels"
    if (done / ".complete").is_file():
        return done
    scratch = Path(tempfile.mkdtemp(prefix="kubesched-image-build-"))
    try:
        workdir = scratch / build.all("WORKDIR")[-1].lstrip("/")
        workdir.mkdir(parents=True)
        for sources, dest in _copy_sources(build):
            target = workdir / dest
            for source in sources:
                if source.is_dir():
                    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
                else:
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, target / source.name)
        wheels = scratch / "wheels"
        runs = [c for arg in build.all("RUN") for c in pip_commands(arg)]
        assert runs, f"{DOCKERFILE}: the build stage runs no pip command"
        for argv in runs:
            cmd = _pip(argv, sys.executable, wheels, keep_cache_flag=False)
            out = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=900)
            if out.returncode != 0:
                text = out.stdout + out.stderr
                if any(t in text for t in NETWORK_TROUBLE) and os.environ.get("CI", "").lower() != "true":
                    pytest.skip(f"the package index is not reachable and no wheels are cached: {text[-400:]}")
                pytest.fail(f"{shlex.join(cmd)} failed (exit {out.returncode}):\n{text[-3000:]}")
        (wheels / ".complete").write_text(key)
        shutil.rmtree(done.parent, ignore_errors=True)
        done.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(wheels, done)
        for old in _cache_dir().iterdir():  # only the newest build is worth its disk space
            if old.name != key:
                shutil.rmtree(old, ignore_errors=True)
        return done
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@dataclass
class Image:
    """The final stage, installed into a venv: how to run its ENTRYPOINT as the image would."""

    root: Path
    venv: Path
    wheels: Path
    final: Stage
    as_user: dict[str, int]

    def env(self) -> dict[str, str]:
        path = f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
        return {"PATH": path, "HOME": "/nonexistent", "LANG": "C.UTF-8", **env_of(self.final)}

    def user(self) -> dict[str, int]:
        """The Dockerfile's USER uid:gid when we may switch to it (root, and a Python it can run), else nothing."""
        return self.as_user

    def command(self, args: list[str] | None = None) -> list[str]:
        """ENTRYPOINT + (args, or the CMD when none are given), as `docker run IMAGE [args]`."""
        entry = self.final.last("ENTRYPOINT")
        cmd = self.final.last("CMD") if args is None else args
        program = shutil.which(entry[0], path=self.env()["PATH"])
        assert program is not None and program.startswith(str(self.venv)), f"{entry[0]} not installed in the venv"
        return [program, *entry[1:], *cmd]

    def run(self, args: list[str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(args),
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            **self.user(),  # type: ignore[arg-type]
        )

    def snapshot(self) -> dict[str, float]:
        return {str(p): p.stat().st_mtime for p in self.venv.rglob("*")}


def _user_of(final: Stage) -> dict[str, int]:
    """The Dockerfile's USER as subprocess arguments, when we are root and may switch to it."""
    users = final.all("USER")
    if not users or os.getuid() != 0:
        return {}
    uid, _, gid = users[-1].partition(":")
    return {"user": int(uid), "group": int(gid or uid)}


def _interpreter(user: dict[str, int]) -> tuple[str, dict[str, int]]:
    """A Python >= 3.11 the image's user can run (a venv's interpreter lives outside the venv, e.g. under a 0700
    /root); with none, our own, run as ourselves."""
    for python in (os.environ.get("KUBESCHED_IMAGE_PYTHON"), "/usr/local/bin/python3", "/usr/bin/python3"):
        if not python or not Path(python).is_file():
            continue
        check = "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))"
        try:
            ok = subprocess.run([python, "-c", check], cwd="/", capture_output=True, timeout=60, **user)  # type: ignore[call-overload]
        except PermissionError:
            continue
        if ok.returncode == 0:
            return python, user
    print(f"image test: no Python the image user can run; running as ourselves with {sys.executable}")
    return sys.executable, {}


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    stages = parse_dockerfile(DOCKERFILE.read_text())
    assert len(stages) >= 2, "a build stage and a final stage"
    wheels = build_wheels(stages[0])
    final = stages[-1]
    python, user = _interpreter(_user_of(final))
    root = Path(tempfile.mkdtemp(prefix="kubesched-image-"))
    root.chmod(0o755)  # the image's user (uid 65532) reads the venv and our input files
    try:
        venv = root / "venv"
        subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
        for sources, dest in _copy_sources(final):  # the final stage's own COPYs (the lock) land beside the wheels
            assert dest.startswith("/wheels/"), f"{DOCKERFILE}: the final stage copies {dest}, outside /wheels"
            for source in sources:
                shutil.copy2(source, wheels / dest.removeprefix("/wheels/"))
        installs = [c for arg in final.all("RUN") for c in pip_commands(arg)]
        assert installs, f"{DOCKERFILE}: the final stage installs nothing with pip"
        for argv in installs:
            cmd = _pip(argv, str(venv / "bin" / "python"), wheels)
            out = subprocess.run(
                cmd, cwd=root, capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin"}
            )
            assert out.returncode == 0, f"{shlex.join(cmd)}:\n{out.stdout}{out.stderr}"
        yield Image(root, venv, wheels, final, user)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_dockerfile_is_read_as_written() -> None:
    stages = parse_dockerfile(DOCKERFILE.read_text())
    assert [s.name for s in stages] == ["build", "1"]
    assert stages[-1].last("ENTRYPOINT") == ["kubesched"]
    assert pip_commands(stages[-1].all("RUN")[-1])[0][:2] == ["pip", "install"]
    assert env_of(stages[-1])["PYTHONDONTWRITEBYTECODE"] == "1"
    # Continuations and comments, as Docker reads them.
    parsed = parse_dockerfile('# c\nFROM a AS b\nRUN x \\\n  && pip wheel .\n# note\nCMD ["y"]\n')
    assert parsed[0].steps == [("RUN", "x    && pip wheel ."), ("CMD", '["y"]')]


def test_the_wheel_holds_the_package_and_its_entry_point(image: Image) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    (wheel,) = image.wheels.glob(f"kubesched-{version}-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        entry_points = whl.read(f"kubesched-{version}.dist-info/entry_points.txt").decode()
    assert "kubesched/py.typed" in names and "kubesched/cli/main.py" in names
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]
    assert "kubesched = kubesched.cli.main:main" in entry_points


def test_default_command_and_version(image: Image) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    default = image.run()
    assert default.returncode == 0, default.stderr
    assert default.stdout.startswith("usage: kubesched")
    shown = image.run(["--version"])
    assert shown.returncode == 0, shown.stderr
    assert version in shown.stdout
    where = subprocess.run(
        [str(image.venv / "bin" / "python"), "-c", "import os, kubesched; print(kubesched.__file__, os.getuid())"],
        cwd=image.root,
        env=image.env(),
        capture_output=True,
        text=True,
        check=True,
        **image.user(),  # type: ignore[call-overload]
    )
    module, uid = where.stdout.split()
    assert module.startswith(str(image.venv))  # the installed wheel, not this checkout
    assert int(uid) == image.user().get("user", os.getuid())  # the Dockerfile's USER when we could switch to it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_extender_serve_answers_as_the_image_would(image: Image) -> None:
    shutil.copy(REPO / "examples" / "nodes.yaml", image.root / "nodes.yaml")
    port = _free_port()
    before = image.snapshot()
    args = ["extender", "serve", "--policy", "custom-label", "--nodes", str(image.root / "nodes.yaml")]
    proc = subprocess.Popen(
        image.command([*args, "--listen", f"127.0.0.1:{port}"]),
        cwd=image.root,
        env=image.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **image.user(),  # type: ignore[arg-type]
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "no /healthz within 60 s"
            time.sleep(0.1)
        assert httpx.get(f"{url}/readyz", timeout=5, trust_env=False).status_code == 200
        request = json.loads((REPO / "examples" / "filter-request.json").read_text())
        answer = httpx.post(f"{url}/filter", json=request, timeout=5, trust_env=False).json()
        assert answer["NodeNames"] == ["gpu-a"]  # custom label and 3 free custom resources: only gpu-a
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert image.snapshot() == before  # a read-only root file system would have been fine


def test_the_base_image_is_pinned_and_the_installs_hash_checked() -> None:
    text = DOCKERFILE.read_text()
    (default,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.M)
    assert re.fullmatch(r"python:3\.\d+(\.\d+)?-slim(-\w+)?@sha256:[0-9a-f]{64}", default), default
    stages = parse_dockerfile(text)
    assert [s for s in re.findall(r"^FROM (\S+)", text, re.M)] == ["${PYTHON_IMAGE}"] * len(stages)
    build, final = stages[0], stages[-1]
    wheels = [c for arg in build.all("RUN") for c in pip_commands(arg)]
    installs = [c for arg in final.all("RUN") for c in pip_commands(arg)]
    # Every dependency comes through the lock with --require-hashes; kubesched itself resolves nothing.
    for commands, lock in ((wheels, "requirements.lock"), (installs, "/wheels/requirements.lock")):
        locked = [c for c in commands if "-r" in c and c[c.index("-r") + 1] == lock]
        assert locked and all("--require-hashes" in c for c in locked), commands
        assert all(c in locked or "--no-deps" in c for c in commands), commands
    copied = {s.name for sources, _ in _copy_sources(build) for s in sources}
    assert {"requirements.lock", "LICENSE"} <= copied


def test_the_wheel_ships_the_license_and_no_pytest_plugin(image: Image) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    (wheel,) = image.wheels.glob(f"kubesched-{version}-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        licenses = [n for n in whl.namelist() if n.startswith(f"kubesched-{version}.dist-info/licenses/")]
        assert [whl.read(n) for n in licenses] == [(REPO / "LICENSE").read_bytes()]
        entry_points = whl.read(f"kubesched-{version}.dist-info/entry_points.txt").decode()
    assert "[pytest11]" not in entry_points  # pytest auto-loads that group in every project that installs us


def test_pytest_beside_the_installed_wheel_loads_no_harness(image: Image, tmp_path: Path) -> None:
    """pytest installed (hash-checked, from requirements-dev.lock) into the venv the wheel was installed into
    loads kubesched's harness only when asked with -p. Last in the file: it adds pytest to the shared venv."""
    wanted = {"pytest", "iniconfig", "packaging", "pluggy", "pygments"}
    blocks = re.split(r"\n(?=\S)", (REPO / "requirements-dev.lock").read_text())
    subset = tmp_path / "pytest.lock"
    subset.write_text("\n".join(b for b in blocks if b.split("==")[0] in wanted) + "\n")
    assert subset.read_text().count("==") == len(wanted), subset.read_text()
    python = str(image.venv / "bin" / "python")
    cmd = [python, "-m", "pip", "install", "-q", "--require-hashes", "--no-deps", "-r", str(subset)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin"})
    if out.returncode != 0 and any(t in out.stderr for t in NETWORK_TROUBLE) and os.environ.get("CI") != "true":
        pytest.skip(f"the package index is not reachable: {out.stderr[-400:]}")
    assert out.returncode == 0, out.stdout + out.stderr
    probe = tmp_path / "probe"
    probe.mkdir()

    def fixtures(*extra: str) -> str:
        run = [python, "-m", "pytest", "-p", "no:cacheprovider", *extra, "--fixtures", "-q"]
        done = subprocess.run(run, cwd=probe, env=image.env(), capture_output=True, text=True, timeout=120)
        assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: no tests, which is the case here
        return done.stdout

    assert "kube_namespace" not in fixtures()
    assert "kube_namespace" in fixtures("-p", "kubesched.testing.pytest_plugin")  # on request, it is there
