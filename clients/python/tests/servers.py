"""Real redis-server processes with the xset module, on free loopback ports.

The module is `XSET_MODULE`, else `target/release/libxset.so` at the root
of the repository (built by `cargo build --release --features
fault-injection`, which `scripts/test` runs); the server is `XSET_SERVER`,
else `redis-server` on PATH. Readiness is waited on (PING, cluster_state),
never slept for.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Optional

import redis

ROOT = Path(__file__).resolve().parents[3]


def module_path() -> str:
    path = os.environ.get("XSET_MODULE") or str(ROOT / "target/release/libxset.so")
    if not os.path.exists(path):
        raise RuntimeError(
            f"{path} is missing: run cargo build --release --features fault-injection "
            "at the repository root, or name the module in XSET_MODULE"
        )
    return os.path.abspath(path)


def free_port(cluster: bool = False) -> int:
    """A free loopback port; for a cluster node, one whose bus port (+10000)
    is free too."""
    for _ in range(1000):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if not cluster:
            return port
        if port < 55000:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                    return port
                except OSError:
                    pass
    raise RuntimeError("no free port")


def wait_until(what: str, ok: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ok():
                return
        except (redis.ConnectionError, redis.ResponseError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


class Server:
    """A redis-server with the module; `stop()` kills it and removes its files."""

    def __init__(self, extra: Optional[List[str]] = None, cluster: bool = False) -> None:
        self.dir = tempfile.mkdtemp(prefix="xset-py-")
        binary = os.environ.get("XSET_SERVER") or "redis-server"
        args = ["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"] if cluster else []
        args += extra or []
        for _attempt in range(5):
            self.port = free_port(cluster)
            self.proc = subprocess.Popen(
                [
                    binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    self.dir,
                    "--logfile",
                    os.path.join(self.dir, "redis.log"),
                    "--loadmodule",
                    module_path(),
                    *args,
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            client = redis.Redis(port=self.port, socket_connect_timeout=1)
            try:
                wait_until("PING", lambda: self.proc.poll() is None and bool(client.ping()), 10)
                return
            except TimeoutError:
                # Lost the race for the port, or failed to start: try again.
                self.proc.kill()
                self.proc.wait()
            finally:
                client.close()
        log = Path(self.dir, "redis.log")
        raise RuntimeError(
            f"redis-server did not start:\n{log.read_text() if log.exists() else ''}"
        )

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def cluster_ok(c: redis.Redis) -> bool:
    # A dict where redis-py parses CLUSTER INFO, else the text.
    info = c.execute_command("CLUSTER INFO")
    return (
        info.get("cluster_state") == "ok" if isinstance(info, dict) else "cluster_state:ok" in info
    )


def start_cluster(n: int = 3) -> List[Server]:
    """`n` primaries joined by `redis-cli --cluster create`, waited on
    until every node reports cluster_state:ok."""
    nodes = [Server(cluster=True) for _ in range(n)]
    try:
        out = subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *[f"127.0.0.1:{s.port}" for s in nodes],
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create:\n{out.stdout}\n{out.stderr}")
        for s in nodes:
            c = redis.Redis(port=s.port, decode_responses=True)
            wait_until("cluster_state:ok", lambda: cluster_ok(c))
            c.close()
    except BaseException:
        for s in nodes:
            s.stop()
        raise
    return nodes
