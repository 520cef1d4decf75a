"""`--kubernetes-version`: which supported Kubernetes release a command follows.

The flag wins; without it, a command connected to a cluster follows the API server's /version (the nearest
supported release, with a warning when the server is neither); without both, the reference (`kubesched.versions`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging

import msgspec

from kubesched.cluster.kubeclient import Connection, KubeClient
from kubesched.errors import CLIError, ClusterError, TransportError
from kubesched.versions import REFERENCE, SUPPORTED, Release, for_server, parse_release

log = logging.getLogger("kubesched")
VERSION_TIMEOUT = 10.0  # seconds for the one GET /version at start-up
VERSION_ATTEMPTS = 3  # a connection reset or refused is asked again (after 0.5 s, then 1 s)


class _Version(msgspec.Struct):
    major: str = ""
    minor: str = ""


def add_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, connected: bool = False) -> None:
    where = "; default: the API server's /version, else " if connected else "; default: "
    parser.add_argument(
        "--kubernetes-version",
        metavar="VERSION",
        help=f"the Kubernetes release to follow: {' or '.join(SUPPORTED)} (or its minor, e.g. 1.35)"
        f"{where}the reference v{REFERENCE.version}",
    )


def selected(args: argparse.Namespace) -> Release | None:
    """The release --kubernetes-version names, None when the flag is absent; CLIError when unsupported."""
    text = getattr(args, "kubernetes_version", None)
    if text is None:
        return None
    try:
        return parse_release(text)
    except ValueError as err:
        raise CLIError(f"--kubernetes-version: {err}") from None


def release(args: argparse.Namespace) -> Release:
    """The flag's release, else the reference (commands with no cluster)."""
    return selected(args) or REFERENCE


async def server_release(client: KubeClient) -> Release:
    """The release to follow against the server ``client`` talks to (its /version); the reference, with a warning,
    when the server cannot say."""
    for attempt in range(VERSION_ATTEMPTS):
        try:
            data = await client.request("GET", "/version", time_limit=VERSION_TIMEOUT)
            info = msgspec.json.decode(data, type=_Version)
            break
        except (TransportError, OSError) as err:  # a reset or refused connection: asked again, briefly
            if attempt + 1 < VERSION_ATTEMPTS:
                await asyncio.sleep(0.5 * 2**attempt)
                continue
            log.warning(
                "cannot read the API server's /version (%s): following the reference v%s", err, REFERENCE.version
            )
            return REFERENCE
        except (ClusterError, msgspec.DecodeError) as err:
            log.warning(
                "cannot read the API server's /version (%s): following the reference v%s", err, REFERENCE.version
            )
            return REFERENCE
    found, warning = for_server(info.major, info.minor)
    if warning is not None:
        log.warning("%s", warning)
    else:
        log.info("API server is Kubernetes %s.%s: following v%s", info.major, info.minor, found.version)
    return found


def for_connection(args: argparse.Namespace, conn: Connection) -> Release:
    """The flag's release, else the server's (one GET /version on a client of its own, bounded in time)."""
    chosen = selected(args)
    if chosen is not None:
        return chosen

    async def ask() -> Release:
        client = KubeClient(conn, VERSION_TIMEOUT, connections=1, user_agent="kubesched/version")
        try:
            async with asyncio.timeout(VERSION_TIMEOUT + 2):
                return await server_release(client)
        except TimeoutError:
            log.warning("the API server's /version did not answer: following the reference v%s", REFERENCE.version)
            return REFERENCE
        finally:
            await client.aclose()

    return asyncio.run(ask())
