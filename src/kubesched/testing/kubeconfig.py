"""Write self-contained kubeconfig files (inline CA and client cert) and read them back into an HTTP client."""

from __future__ import annotations

import base64
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesched.pki import CertKey, write_private

CONTEXT = "kubesched"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write_kubeconfig(path: Path, *, server: str, ca_pem: bytes, user: str, client: CertKey) -> Path:
    """Write a one-cluster, one-user kubeconfig whose current context is ``kubesched``."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}],
        "users": [
            {
                "name": user,
                "user": {"client-certificate-data": _b64(client.cert_pem), "client-key-data": _b64(client.key_pem)},
            }
        ],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": user}}],
        "current-context": CONTEXT,
    }
    # The file holds a private key: owner-only from the first byte.
    return write_private(path, yaml.safe_dump(doc, sort_keys=False).encode())


@dataclass(frozen=True)
class KubeconfigCredentials:
    """What the current context of a kubeconfig says: where the server is and how to reach it."""

    server: str
    ca_pem: bytes
    client: CertKey


def _entry(doc: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    for item in doc.get(section) or []:
        if item.get("name") == name:
            value: dict[str, Any] = item[section[:-1]]
            return value
    raise ValueError(f"kubeconfig has no {section[:-1]} named {name!r}")


def read_kubeconfig(path: Path) -> KubeconfigCredentials:
    """The current context's server, CA and client certificate (inline ``-data`` fields only)."""
    doc = yaml.safe_load(path.read_text())
    context = _entry(doc, "contexts", doc["current-context"])
    cluster = _entry(doc, "clusters", context["cluster"])
    user = _entry(doc, "users", context["user"])
    return KubeconfigCredentials(
        server=cluster["server"],
        ca_pem=base64.b64decode(cluster["certificate-authority-data"]),
        client=CertKey(base64.b64decode(user["client-certificate-data"]), base64.b64decode(user["client-key-data"])),
    )


def ssl_context(ca_pem: bytes, client: CertKey | None = None) -> ssl.SSLContext:
    """A TLS context trusting ``ca_pem`` and presenting ``client`` if given."""
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    if client is not None:
        # ssl can only load a key pair from files; they are read at once, then removed with the directory.
        with tempfile.TemporaryDirectory(prefix="kubesched-tls-") as tmp:
            cert_path, key_path = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
            cert_path.write_bytes(client.cert_pem)
            write_private(key_path, client.key_pem)
            ctx.load_cert_chain(cert_path, key_path)
    return ctx


def client_from_kubeconfig(path: Path, *, timeout: float = 10.0) -> httpx.Client:
    """A synchronous httpx client for the kubeconfig's current context."""
    creds = read_kubeconfig(path)
    ctx = ssl_context(creds.ca_pem, creds.client)
    return httpx.Client(base_url=creds.server, verify=ctx, timeout=timeout, trust_env=False)
