"""A pass-through filter extender: passes every node and records which ones kube-scheduler sent, per pod.

kube-scheduler calls a filter extender with the nodes that passed its own filters (when any did), so the
first call for a pod is kube-scheduler's feasible set. A minimal HTTP/1.1 server (keep-alive, Content-Length
bodies) on its own asyncio loop in a thread, so the synchronous runner can wait on the API server meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from kubesched.testing.process import free_port


class PassThroughExtender:
    """``start()``, then ``config()`` for the KubeSchedulerConfiguration's ``extenders``; ``feasible(uid)``."""

    def __init__(self, node_cache_capable: bool = True) -> None:
        self.node_cache_capable = node_cache_capable
        self.port = free_port()
        self._seen: dict[str, list[str]] = {}  # first call per pod UID
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self.calls = 0

    def config(self) -> dict[str, Any]:
        return {
            "urlPrefix": f"http://127.0.0.1:{self.port}",
            "filterVerb": "filter",
            "nodeCacheCapable": self.node_cache_capable,
            "weight": 1,
            "httpTimeout": "10s",
        }

    def feasible(self, uid: str) -> list[str] | None:
        """The nodes of kube-scheduler's first filter call for the pod, None if it made none."""
        with self._lock:
            found = self._seen.get(uid)
        return None if found is None else list(found)

    def start(self) -> PassThroughExtender:
        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", self.port))
            ready.set()
            loop.run_forever()
            self._server.close()
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

        self._thread = threading.Thread(target=main, name="pass-through-extender", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the pass-through extender did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    def __enter__(self) -> PassThroughExtender:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                body = await reader.readexactly(length)
                status, reply = self._answer(lines[0], body)
                data = json.dumps(reply).encode()
                head_out = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                writer.write(head_out.encode() + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    def _answer(self, request_line: str, body: bytes) -> tuple[str, dict[str, Any]]:
        parts = request_line.split(" ")
        if len(parts) < 2 or parts[0] != "POST" or parts[1].rstrip("/").rsplit("/", 1)[-1] != "filter":
            return "404 Not Found", {"error": f"not served: {request_line}"}
        try:
            args = {k.lower(): v for k, v in json.loads(body).items()}
        except (ValueError, AttributeError):
            return "400 Bad Request", {"error": "the body is not ExtenderArgs JSON"}
        pod = args.get("pod") or {}
        uid = (pod.get("metadata") or {}).get("uid", "")
        if self.node_cache_capable:
            names = list(args.get("nodenames") or [])
        else:
            names = [n["metadata"]["name"] for n in (args.get("nodes") or {}).get("items") or []]
        with self._lock:
            self.calls += 1
            self._seen.setdefault(uid, names)
        reply: dict[str, Any] = {"failedNodes": {}, "failedAndUnresolvableNodes": {}, "error": ""}
        if self.node_cache_capable:
            reply["nodenames"] = names
        else:
            reply["nodes"] = args.get("nodes")
        return "200 OK", reply
