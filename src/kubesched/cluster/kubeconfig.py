"""Where the API server is and who we are: kubeconfig files (client-go's loading rules) or the pod's service account.

One loading rule, `connect`, for every command that talks to a cluster (kubectl's and kube-scheduler's habits):

1. ``--kubeconfig PATH``: that one file;
2. else ``$KUBECONFIG``: a list of paths separated by ``os.pathsep`` (missing files skipped, at least one must
   exist), merged as client-go merges them;
3. else in-cluster, when running in a pod (``KUBERNETES_SERVICE_HOST``/``PORT`` set and the service account's
   token mounted);
4. else ``~/.kube/config`` (``$HOME/.kube/config``), kubectl's default;
5. else a `KubeConfigError` naming exactly what to pass.

Merging (client-go): for clusters, users and contexts the first file that defines a name wins, and the first file
that sets ``current-context`` sets it; relative paths in an entry (certificate, key and token files, and an exec
plugin's ``command`` when it contains a path separator) are resolved from the directory of the file that defined
it. ``--context NAME`` selects a context other than the current one.

The credentials (tokens, exec plugins, certificates) are produced by `credentials.py`.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from kubesched.cluster.credentials import TLS, CredentialError, Credentials, b64, exec_config
from kubesched.errors import ConfigurationError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
EXEC_EXTENSION = "client.authentication.k8s.io/exec"


class KubeConfigError(ConfigurationError):
    """A kubeconfig that cannot be used; the message names the file and field."""


@dataclass(frozen=True)
class Connection:
    """Where the API server is and how to authenticate (``credentials``: None for none)."""

    server: str
    ssl_context: ssl.SSLContext | bool
    source: str = ""
    credentials: Credentials | None = None
    tls_server_name: str = ""  # the name the server's certificate is checked against, when not the host's
    proxy: str = ""  # an HTTP proxy reached with CONNECT (kubeconfig's proxy-url)


@dataclass(frozen=True)
class _Entry:
    body: dict[str, Any]
    file: Path  # the file that defined it: relative paths are resolved from its directory


def kubeconfig_paths(kubeconfig: str | None, env: Mapping[str, str] = os.environ) -> list[Path]:
    """The files to merge: the explicit one, else those of $KUBECONFIG that exist (none: in-cluster)."""
    if kubeconfig:
        return [Path(kubeconfig).expanduser()]
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if not listed:
        return []
    unique = list(dict.fromkeys(Path(p).expanduser() for p in listed))
    found = [p for p in unique if p.exists()]
    if not found:
        raise KubeConfigError(f"KUBECONFIG: none of {', '.join(map(str, unique))} exists")
    return found


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise KubeConfigError(f"{path}: cannot read: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise KubeConfigError(f"{path}: not UTF-8 text (byte {err.start + 1})") from None
    except yaml.YAMLError as err:
        raise KubeConfigError(f"{path}: not valid YAML: {yaml_problem(err)}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise KubeConfigError(f"{path}: not a kubeconfig")
    return doc


def yaml_problem(err: yaml.YAMLError) -> str:
    """Where a kubeconfig's YAML breaks, never what is written there: PyYAML's message quotes the lines around the
    mark (a `token:`, a `client-key-data:`) and its problem may quote what it found; both are left out."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    if mark is None:
        position = getattr(err, "position", None)  # a ReaderError: a character YAML does not allow
        if isinstance(position, int):
            return f"a character YAML does not allow at character {position + 1}"
        return "unreadable"
    where = f"line {mark.line + 1}, column {mark.column + 1}"
    problem = getattr(err, "problem", None)
    if not isinstance(problem, str):
        return where
    if "'\\t'" in problem:
        return f"a tab at {where} (YAML indents with spaces)"
    return f"{' '.join(_QUOTED.sub('', problem).split())} at {where}"


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _merge(paths: Sequence[Path]) -> tuple[dict[str, dict[str, _Entry]], str]:
    sections: dict[str, dict[str, _Entry]] = {"clusters": {}, "users": {}, "contexts": {}}
    current = ""
    for path in paths:
        doc = _read(path)
        current = current or str(doc.get("current-context") or "")
        for section, named in sections.items():
            items = doc.get(section) or []
            if not isinstance(items, list):
                raise KubeConfigError(f"{path}: {section} is not a list")
            for i, item in enumerate(items):
                if not isinstance(item, dict) or not item.get("name"):
                    raise KubeConfigError(f"{path}: {section}[{i}] has no name")
                body = item.get(section[:-1]) or {}
                if not isinstance(body, dict):
                    raise KubeConfigError(f"{path}: {section}[{item['name']}].{section[:-1]} is not a mapping")
                named.setdefault(str(item["name"]), _Entry(body, path))
    return sections, current


def _data_or_file(entry: _Entry, key: str, where: str) -> tuple[bytes | None, Path | None]:
    data = entry.body.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(data, validate=True), None
        except (binascii.Error, ValueError):
            raise KubeConfigError(f"{where}.{key}-data is not base64") from None
    path = entry.body.get(key)
    if not path:
        return None, None
    p = Path(path).expanduser()
    return None, p if p.is_absolute() else entry.file.parent / p


def from_kubeconfig(paths: Path | Sequence[Path], context: str | None = None) -> Connection:
    """The connection of ``context`` (default: the current context) in the merged ``paths``."""
    files = [paths] if isinstance(paths, Path) else list(paths)
    source = os.pathsep.join(map(str, files))
    sections, current = _merge(files)
    ctx_name = context or current
    if not ctx_name:
        raise KubeConfigError(f"{source}: current-context is not set (give --context)")

    def get(section: str, name: str) -> _Entry:
        if name not in sections[section]:
            raise KubeConfigError(f"{source}: {section}: no entry named {name!r}")
        return sections[section][name]

    ctx = get("contexts", ctx_name)
    cluster_name = str(ctx.body.get("cluster") or "")
    cluster = get("clusters", cluster_name)
    user_name = str(ctx.body.get("user") or "")
    user = get("users", user_name) if user_name else _Entry({}, ctx.file)
    server = cluster.body.get("server")
    cwhere, uwhere = f"{cluster.file}: clusters[{cluster_name}]", f"{user.file}: users[{user_name}]"
    if not server:
        raise KubeConfigError(f"{cwhere}.server is not set")
    ca, ca_file = _data_or_file(cluster, "certificate-authority", cwhere)
    cert, cert_file = _data_or_file(user, "client-certificate", uwhere)
    key, key_file = _data_or_file(user, "client-key", uwhere)
    try:
        ca = ca if ca_file is None else ca_file.read_bytes()
        if cert_file is not None and key is not None:
            cert, cert_file = cert_file.read_bytes(), None
        if key_file is not None and cert is not None:
            key, key_file = key_file.read_bytes(), None
    except OSError as err:
        raise KubeConfigError(f"{source}: {err.filename}: {err.strerror}") from None
    insecure = bool(cluster.body.get("insecure-skip-tls-verify"))
    server_name = str(cluster.body.get("tls-server-name") or "")
    proxy = _proxy_url(cluster.body.get("proxy-url"), f"{cwhere}.proxy-url")
    tls = TLS(ca=ca, insecure=insecure, cert_data=cert, key_data=key, cert_file=cert_file, key_file=key_file)
    token_file = user.body.get("tokenFile")
    exec_section = user.body.get("exec")
    if user.body.get("auth-provider"):
        raise KubeConfigError(f"{uwhere}.auth-provider: not supported (removed from client-go; use an exec plugin)")
    ex = None
    if exec_section:
        info = {"server": server, "insecure-skip-tls-verify": insecure}
        if server_name:
            info["tls-server-name"] = server_name
        if proxy:
            info["proxy-url"] = proxy
        if ca:
            info["certificate-authority-data"] = b64(ca)
        for ext in cluster.body.get("extensions") or []:
            if isinstance(ext, dict) and ext.get("name") == EXEC_EXTENSION:
                info["config"] = ext.get("extension")
        try:
            ex = exec_config(_exec_resolved(exec_section, user.file, f"{uwhere}.exec"), info, f"{uwhere}.exec")
        except ValueError as err:
            raise KubeConfigError(str(err)) from None
    creds = Credentials(
        user_name or "(none)",
        tls=tls,
        token=user.body.get("token"),
        token_file=(user.file.parent / Path(token_file).expanduser()) if token_file else None,
        exec_config=ex,
    )
    try:
        context_ssl = creds.ssl_context()
        if creds.token_file is not None and not user.body.get("token"):
            creds.header()  # an unreadable token file is a startup error
    except CredentialError as err:
        raise KubeConfigError(f"{source}: {err}") from None
    return Connection(str(server).rstrip("/"), context_ssl, source, creds, server_name, proxy)


def _exec_resolved(section: Any, file: Path, where: str) -> Mapping[str, Any]:
    """An exec plugin's ``command`` with a path separator resolved from the kubeconfig's directory, as client-go's
    ResolvePaths does (``bin/get-token`` next to the file); a bare name (``aws``) is looked up on $PATH."""
    if not isinstance(section, Mapping):
        raise KubeConfigError(f"{where} is not a mapping")
    command = section.get("command")
    if not isinstance(command, str) or os.sep not in command or Path(command).is_absolute():
        return section
    return {**section, "command": str(file.parent / command)}


def _proxy_url(value: object, where: str) -> str:
    """kubeconfig's proxy-url: http(s)://host:port of a CONNECT proxy (socks5 is refused by name)."""
    if not value:
        return ""
    url = urlsplit(str(value))
    if url.scheme not in ("http", "https") or not url.hostname:
        raise KubeConfigError(
            f"{where}: {value!r}: only http:// and https:// proxies (HTTP CONNECT) are supported"
            + (" (socks5 is not)" if url.scheme.startswith("socks") else "")
        )
    return str(value)


def in_cluster(directory: Path = SERVICE_ACCOUNT_DIR, env: Mapping[str, str] = os.environ) -> Connection:
    """The pod's service account: KUBERNETES_SERVICE_HOST/PORT, the CA, and the token re-read as it rotates."""
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeConfigError("not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set")
    try:
        ca = (directory / "ca.crt").read_bytes()
    except OSError as err:
        raise KubeConfigError(f"in-cluster: {err.filename}: {err.strerror}") from None
    creds = Credentials("serviceaccount", tls=TLS(ca=ca), token_file=directory / "token")
    try:
        creds.header()
        context_ssl = creds.ssl_context()
    except CredentialError as err:
        raise KubeConfigError(f"in-cluster: {err}") from None
    host = f"[{host}]" if ":" in host else host
    return Connection(f"https://{host}:{port}", context_ssl, "in-cluster", creds)


def recommended_home_file(env: Mapping[str, str] = os.environ) -> Path:
    """kubectl's default kubeconfig, ``$HOME/.kube/config`` (client-go's RecommendedHomeFile)."""
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".kube" / "config"


def in_pod(env: Mapping[str, str] = os.environ, directory: Path = SERVICE_ACCOUNT_DIR) -> bool:
    """Whether this process runs in a pod with a service account: what client-go's InClusterConfig needs."""
    return (
        bool(env.get("KUBERNETES_SERVICE_HOST") and env.get("KUBERNETES_SERVICE_PORT"))
        and (directory / "token").is_file()
    )


def connect(
    kubeconfig: str | None,
    context: str | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    service_account: Path = SERVICE_ACCOUNT_DIR,
) -> Connection:
    """The one loading rule (the module's docstring): ``kubeconfig`` (``--kubeconfig``), else $KUBECONFIG (several
    paths merged), else in-cluster when in a pod (not with ``context``: a context names a kubeconfig's entry), else
    ~/.kube/config, else a KubeConfigError that says what to pass."""
    paths = kubeconfig_paths(kubeconfig, env)
    if paths:
        return from_kubeconfig(paths, context)
    if not context and in_pod(env, service_account):
        return in_cluster(service_account, env)
    home = recommended_home_file(env)
    if home.is_file():
        return from_kubeconfig([home], context)
    note = ""
    if env.get("KUBERNETES_SERVICE_HOST") and not context:
        note = f" (KUBERNETES_SERVICE_HOST is set, but {service_account / 'token'} is not there)"
    raise KubeConfigError(
        "no cluster to talk to: give --kubeconfig FILE, set KUBECONFIG=FILE, run in a pod with a service account"
        f"{note}, or create {home}"
    )
