"""Build kube-apiserver, kube-scheduler and etcd from the Go module proxy, once per version.

The Kubernetes replace block is generated from upstream's own go.mod (every
``k8s.io/NAME => ./staging/src/k8s.io/NAME`` line becomes a replace to the
matching ``v0.MINOR.PATCH`` tag), so a new release needs no hand edits.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kubesched.errors import HarnessError
from kubesched.versions import ETCD_VERSION, KUBERNETES_VERSION, SUPPORTED, parse_release

# progress(phase, detail): phase changes rarely ("building etcd v3.6.16 (1/2)"), detail may change every
# half second ("held by pid 412 ... for 3m05s"); the caller adds elapsed time and decides what to show.
Progress = Callable[[str, str], None]

BINARIES = ("kube-apiserver", "kube-scheduler", "etcd")
HELM_VERSION = "3.22.0"
# Bounds each step of helm's build (downloads; compile): CI has 90 minutes for everything, a cold build takes ~13.
HELM_STEP_TIMEOUT = 1500.0
_HELM_RECIPE = 2  # bump when the build changes: a cached helm of an older recipe is built again


class BuildError(HarnessError):
    """The control-plane binaries could not be built."""


@dataclass(frozen=True)
class Binaries:
    """Paths of the three control-plane programs."""

    kube_apiserver: Path
    kube_scheduler: Path
    etcd: Path


def cache_root() -> Path:
    """The cache folder: $KUBESCHED_CACHE, else ~/.cache/kubesched/controlplane."""
    env = os.environ.get("KUBESCHED_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kubesched" / "controlplane"


def _key_dir(root: Path, k8s: str, etcd: str) -> Path:
    goos = os.uname().sysname.lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    return root / f"k8s-v{k8s}-etcd-v{etcd}-{goos}-{arch}"


def _binaries(bindir: Path) -> Binaries:
    return Binaries(bindir / "kube-apiserver", bindir / "kube-scheduler", bindir / "etcd")


def _overrides() -> Binaries | None:
    """Prebuilt binaries named by $KUBESCHED_BIN_DIR, if all three are there."""
    env = os.environ.get("KUBESCHED_BIN_DIR")
    if not env:
        return None
    found = _binaries(Path(env))
    missing = [str(p) for p in (found.kube_apiserver, found.kube_scheduler, found.etcd) if not p.is_file()]
    if missing:
        raise BuildError(f"KUBESCHED_BIN_DIR={env} lacks: {', '.join(missing)}")
    return found


def cached(k8s: str = KUBERNETES_VERSION, etcd: str = ETCD_VERSION) -> Binaries | None:
    """The binaries if they are built already, else None (never builds)."""
    override = _overrides()
    if override:
        return override
    key = _key_dir(cache_root(), k8s, etcd)
    stamp = key / "stamp.json"
    if not stamp.is_file():
        return None
    if json.loads(stamp.read_text()).get("versions") != {"kubernetes": k8s, "etcd": etcd}:
        return None
    bins = _binaries(key / "bin")
    if all(p.is_file() for p in (bins.kube_apiserver, bins.kube_scheduler, bins.etcd)):
        return bins
    return None


def go_available() -> str | None:
    """None when Go can build here, else the reason it cannot."""
    if shutil.which("go") is None:
        return "the go toolchain is not on PATH"
    return None


def _run(cmd: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float | None = None) -> None:
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BuildError(f"{' '.join(cmd)} took more than {timeout:.0f}s; see {log}") from None
    if proc.returncode != 0:
        tail = log.read_text().splitlines()[-30:]
        raise BuildError(f"{' '.join(cmd)} failed (exit {proc.returncode}); last lines of {log}:\n" + "\n".join(tail))


def _go_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GOMODCACHE=str(root / "gomod"),
        GOCACHE=str(root / "gocache"),
        GOFLAGS="-mod=mod",
        CGO_ENABLED="0",
        GOTOOLCHAIN=env.get("GOTOOLCHAIN", "auto"),
    )
    return env


def staging_replaces(upstream_gomod: str, k8s: str) -> tuple[str, list[str]]:
    """The go directive and one replace line per staging module of upstream's go.mod."""
    go_directive = re.search(r"^go\s+(\S+)", upstream_gomod, re.M)
    if go_directive is None:
        raise BuildError("upstream go.mod has no go directive")
    minor_patch = k8s.split(".", 1)[1]
    names = re.findall(r"^\s*k8s\.io/(\S+)\s*=>\s*\./staging/src/k8s\.io/\S+", upstream_gomod, re.M)
    if not names:
        raise BuildError("upstream go.mod lists no staging modules")
    return go_directive.group(1), [f"k8s.io/{n} => k8s.io/{n} v0.{minor_patch}" for n in names]


def _no_progress(phase: str, detail: str) -> None:
    pass


def _quiet(what: str) -> None:
    pass


def _echo_progress() -> Progress:
    """Plain lines, one per phase (the old ``echo=True`` output, for pytest and scripts)."""
    last: list[str] = []

    def show(phase: str, detail: str) -> None:
        if last[-1:] != [phase]:
            last.append(phase)
            print(f"{phase}: {detail}" if detail else phase, flush=True)

    return show


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def lock_holder(lock_path: Path) -> str:
    """Who holds a build lock, as its holder wrote it: "pid 412 (kubesched dev-cluster up) on host, for 3m05s"."""
    try:
        info = json.loads(lock_path.read_text() or "{}")
        pid, command, host, since = info["pid"], info.get("command", "?"), info.get("host", "?"), float(info["since"])
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it did not say which)"
    return f"pid {pid} ({command}) on {host}, for {_duration(time.time() - since)}"


def _own_command() -> str:
    """This process's command line, program by its base name (for the lock note), at most 200 characters."""
    try:
        argv = Path("/proc/self/cmdline").read_bytes().decode(errors="replace").rstrip("\0").split("\0")
    except OSError:
        argv = [sys.executable, *sys.argv]
    return " ".join([os.path.basename(argv[0]), *argv[1:]])[:200]


def _acquire(lock_path: Path, progress: Progress) -> IO[str]:
    """The build lock, exclusive; while another process holds it, report who and for how long, every 0.5 s."""
    lock = lock_path.open("a+")  # never "w": that would wipe the holder's note for everyone waiting
    try:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                progress("waiting for another build of the control plane", f"lock held by {lock_holder(lock_path)}")
                time.sleep(0.5)
        lock.seek(0)
        lock.truncate()
        command = _own_command()
        lock.write(
            json.dumps({"pid": os.getpid(), "command": command, "host": socket.gethostname(), "since": time.time()})
        )
        lock.flush()
    except BaseException:
        lock.close()
        raise
    return lock


def _build_kubernetes(
    work: Path, out: Path, k8s: str, env: dict[str, str], log: Path, step: Callable[[str], None] | None = None
) -> None:
    work.mkdir(parents=True, exist_ok=True)
    (work / "go.mod").write_text("module kubesched.local/build\n\ngo 1.25.0\n")
    step = step or _quiet
    step(f"downloading k8s.io/kubernetes@v{k8s}")
    dl = subprocess.run(
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@v{k8s}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    if dl.returncode != 0:
        raise BuildError(f"cannot fetch k8s.io/kubernetes@v{k8s} from the module proxy: {dl.stdout}{dl.stderr}")
    gomod = Path(json.loads(dl.stdout)["GoMod"]).read_text()
    go_directive, replaces = staging_replaces(gomod, k8s)
    (work / "go.mod").write_text(
        "module kubesched.local/build\n\n"
        f"go {go_directive}\n\n"
        "// generated from k8s.io/kubernetes@v" + k8s + "'s go.mod: each staging module at its tag\n"
        "replace (\n" + "".join(f"\t{r}\n" for r in replaces) + ")\n"
    )
    minor = k8s.split(".")[1]
    ldflags = (
        f"-X k8s.io/component-base/version.gitVersion=v{k8s} "
        f"-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor={minor} "
        "-X k8s.io/component-base/version.gitTreeState=clean -s -w"
    )
    for prog in ("kube-apiserver", "kube-scheduler"):
        step(f"go get {prog} (downloads its modules)")
        _run(["go", "get", f"k8s.io/kubernetes/cmd/{prog}@v{k8s}"], work, env, log)
    for prog in ("kube-apiserver", "kube-scheduler"):
        step(f"go build {prog}")
        _run(
            ["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(out / prog), f"k8s.io/kubernetes/cmd/{prog}"],
            work,
            env,
            log,
        )


def _build_etcd(
    work: Path, out: Path, etcd: str, env: dict[str, str], log: Path, step: Callable[[str], None] | None = None
) -> None:
    work.mkdir(parents=True, exist_ok=True)
    (work / "go.mod").write_text("module kubesched.local/etcdbuild\n\ngo 1.25.0\n")
    step = step or _quiet
    step("go get (downloads its modules)")
    _run(["go", "get", f"go.etcd.io/etcd/server/v3@v{etcd}"], work, env, log)
    step("go build")
    _run(
        ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(out / "etcd"), "go.etcd.io/etcd/server/v3"],
        work,
        env,
        log,
    )


def ensure(
    k8s: str = KUBERNETES_VERSION, etcd: str = ETCD_VERSION, *, echo: bool = False, progress: Progress | None = None
) -> Binaries:
    """Return the binaries, building them first if the cache lacks them (under a file lock).

    ``progress(phase, detail)`` hears each phase of the build and, while another process builds, who holds the
    lock and for how long; ``echo=True`` prints the phases as plain lines.
    """
    found = cached(k8s, etcd)
    if found:
        return found
    report = progress or (_echo_progress() if echo else _no_progress)
    root = cache_root()
    key = _key_dir(root, k8s, etcd)
    key.mkdir(parents=True, exist_ok=True)
    with _acquire(key / ".lock", report):
        found = cached(k8s, etcd)
        if found:
            return found  # another process built them while we waited: no Go needed here
        reason = go_available()
        if reason:
            raise BuildError(reason)
        env = _go_env(root)
        log = key / "build.log"
        tmp = key / "bin.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        times: dict[str, float] = {}
        start = time.monotonic()
        _build_etcd(
            key / "build-etcd",
            tmp,
            etcd,
            env,
            log,
            lambda step: report(f"building etcd v{etcd} (1/2), {step}", f"log {log}"),
        )
        times["etcd"] = time.monotonic() - start
        _build_kubernetes(
            key / "build-k8s",
            tmp,
            k8s,
            env,
            log,
            lambda step: report(f"building kubernetes v{k8s} (2/2), {step}", f"log {log}"),
        )
        times["kubernetes"] = time.monotonic() - start - times["etcd"]
        for prog in ("kube-apiserver", "kube-scheduler"):
            version = subprocess.run([str(tmp / prog), "--version"], capture_output=True, text=True).stdout
            if f"v{k8s}" not in version:
                raise BuildError(f"{prog} --version printed {version!r}, expected v{k8s}")
        shutil.rmtree(key / "bin", ignore_errors=True)
        tmp.rename(key / "bin")
        (key / "stamp.json").write_text(
            json.dumps({"versions": {"kubernetes": k8s, "etcd": etcd}, "seconds": times}, indent=1)
        )
        report(f"built in {sum(times.values()):.0f}s", ", ".join(f"{k} {v:.0f}s" for k, v in times.items()))
    return _binaries(key / "bin")


def _platform() -> str:
    goos = os.uname().sysname.lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    return f"{goos}-{arch}"


def helm_cached(version: str = HELM_VERSION) -> Path | None:
    """helm if it is built already ($KUBESCHED_HELM names a prebuilt one), else None (never builds)."""
    env = os.environ.get("KUBESCHED_HELM")
    if env:
        if not Path(env).is_file():
            raise BuildError(f"KUBESCHED_HELM={env} is not a file")
        return Path(env)
    key = cache_root() / f"helm-v{version}-{_platform()}"
    stamp, binary = key / "stamp.json", key / "bin" / "helm"
    if stamp.is_file() and binary.is_file():
        recorded = json.loads(stamp.read_text())
        if recorded.get("version") == version and recorded.get("recipe") == _HELM_RECIPE:
            return binary
    return None


def ensure_helm(version: str = HELM_VERSION, *, echo: bool = False) -> Path:
    """helm (helm.sh/helm/v3 at `version`), built from the Go module proxy on first use, under a file lock.

    It shares the control plane's Go module and build caches: one directory for CI to cache."""
    found = helm_cached(version)
    if found:
        return found
    reason = go_available()
    if reason:
        raise BuildError(reason)
    root = cache_root()
    key = root / f"helm-v{version}-{_platform()}"
    key.mkdir(parents=True, exist_ok=True)
    with (key / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = helm_cached(version)
        if found:
            return found
        env, log, work = _go_env(root), key / "build.log", key / "build"
        start = time.monotonic()
        if echo:
            print(f"building helm v{version} (log: {log})", flush=True)
        work.mkdir(parents=True, exist_ok=True)
        (work / "go.mod").write_text("module kubesched.local/helmbuild\n\ngo 1.25.0\n")
        _run(["go", "get", f"helm.sh/helm/v3@v{version}"], work, env, log, HELM_STEP_TIMEOUT)
        # As upstream's Makefile: the version `helm version` prints, and the Kubernetes version `helm template` and
        # `helm lint` assume (client-go's minor; else v1.20, which charts with a kubeVersion refuse).
        listed = subprocess.run(
            ["go", "list", "-m", "-f", "{{.Version}}", "k8s.io/client-go"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
        )
        minor = re.match(r"v0\.(\d+)\.", listed.stdout.strip())
        if minor is None:
            raise BuildError(f"cannot tell helm's client-go version: {listed.stdout}{listed.stderr}")
        pkg = "helm.sh/helm/v3/internal/version"
        ldflags = f"-X {pkg}.version=v{version} -X {pkg}.gitTreeState=clean -s -w"
        for where in ("pkg/lint/rules", "pkg/chartutil"):
            ldflags += (
                f" -X helm.sh/helm/v3/{where}.k8sVersionMajor=1 -X helm.sh/helm/v3/{where}.k8sVersionMinor={minor[1]}"
            )
        tmp = key / "bin.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        _run(
            ["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(tmp / "helm"), "helm.sh/helm/v3/cmd/helm"],
            work,
            env,
            log,
            HELM_STEP_TIMEOUT,
        )
        printed = subprocess.run([str(tmp / "helm"), "version", "--short"], capture_output=True, text=True).stdout
        if f"v{version}" not in printed:
            raise BuildError(f"helm version printed {printed!r}, expected v{version}")
        shutil.rmtree(key / "bin", ignore_errors=True)
        tmp.rename(key / "bin")
        seconds = time.monotonic() - start
        (key / "stamp.json").write_text(
            json.dumps({"version": version, "recipe": _HELM_RECIPE, "seconds": seconds}, indent=1)
        )
        if echo:
            print(f"built helm in {seconds:.0f}s", flush=True)
    return key / "bin" / "helm"


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["helm"]:
        # scripts/build-helm: the helm the chart's tests run.
        print(ensure_helm(echo=True))
        sys.exit(0)
    # scripts/build-control-plane [VERSION...]: build what is missing of every supported release (the reference
    # first: most tests run on it), or of the ones named, then show where the binaries are.
    try:
        wanted = [parse_release(v).version for v in sys.argv[1:]] or sorted(
            SUPPORTED, key=lambda v: v != KUBERNETES_VERSION
        )
    except ValueError as err:
        print(f"build: {err}", file=sys.stderr)
        sys.exit(2)
    for k8s in wanted:
        built = ensure(k8s, echo=True)
        for path in (built.etcd, built.kube_apiserver, built.kube_scheduler):
            print(path)
