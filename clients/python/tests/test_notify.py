"""XSET.NOTIFY end to end: a member with a short TTL leaves the set and
arrives in the stream, read by a consumer group as a worker reads it (sync,
asyncio and cluster, RESP2 and RESP3). The tests wait on the stream (a
blocking XREADGROUP, again until a deadline), never for a fixed time."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Dict, List, Tuple

import pytest
import redis
import redis.asyncio

import redis_xset
import redis_xset.asyncio

LEASES, EXPIRED = "{leases}", "{leases}:expired"
Entry = Tuple[str, Dict[str, str]]


def entries(reply: Any) -> List[Entry]:
    """The `(id, fields)` entries of an XREADGROUP reply: redis-py gives
    `[[stream, entries]]` under RESP2, `{stream: [entries]}` under RESP3,
    and `None` or `{}` when the block timed out."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return [e for batches in reply.values() for batch in batches for e in batch]
    return [e for _, batch in reply for e in batch]


def now_ms() -> int:
    return int(time.time() * 1000)


def read_one(r: Any) -> List[Entry]:
    """Waits, by blocking reads until 20 s have passed, for the group's
    first entries."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        got = entries(r.xreadgroup("workers", "w1", {EXPIRED: ">"}, count=10, block=2000))
        if got:
            return got
    raise TimeoutError(f"nothing arrived in {EXPIRED}")


def check_delivery(r: Any, xs: redis_xset.XSet) -> None:
    assert xs.notify(LEASES, EXPIRED, maxlen=1000) is True
    assert xs.notify(LEASES) == EXPIRED
    # XSET.NOTIFY made the stream, so the group can start at its end.
    assert r.xgroup_create(EXPIRED, "workers", "$") is True
    deadline = now_ms() + 300
    assert xs.addex(LEASES, {"seat-14": deadline, "seat-15": deadline + 3_600_000}, unit="pxat")
    [(_, fields)] = read_one(r)
    assert fields == {"key": LEASES, "member": "seat-14", "deadline": str(deadline)}
    assert xs.members(LEASES) == ["seat-15"]
    # Removed by hand: not delivered. Then the set stays, empty, while it
    # delivers, and goes when delivery stops.
    assert xs.rem(LEASES, "seat-15") == 1
    assert xs.card(LEASES) == 0 and r.exists(LEASES) == 1
    assert xs.notify(LEASES, off=True) is True
    assert r.exists(LEASES) == 0 and xs.notify(LEASES) is None
    assert r.xlen(EXPIRED) == 1


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_an_expired_member_arrives_in_the_stream(port: int, protocol: int) -> None:
    r = redis.Redis(port=port, protocol=protocol, decode_responses=True)
    r.flushall()
    check_delivery(r, redis_xset.XSet(r))
    r.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_in_a_cluster(cluster_ports: List[int], protocol: int) -> None:
    rc = redis.RedisCluster(
        host="127.0.0.1", port=cluster_ports[0], protocol=protocol, decode_responses=True
    )
    rc.flushall()
    check_delivery(rc, redis_xset.XSet(rc))
    # A stream in another slot: redis-py finds both keys (the command's key
    # specs, through COMMAND GETKEYS) and refuses to send it.
    with pytest.raises(redis.exceptions.RedisClusterException, match="same key slot"):
        redis_xset.XSet(rc).notify("set-a", "stream-b")
    rc.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_asyncio(port: int, protocol: int) -> None:
    async def run() -> None:
        r = redis.asyncio.Redis(port=port, protocol=protocol, decode_responses=True)
        await r.flushall()
        xs = redis_xset.asyncio.XSet(r)
        assert await xs.notify(LEASES, EXPIRED) is True
        await r.xgroup_create(EXPIRED, "workers", "$")
        assert await xs.addex(LEASES, {"seat-1": 50}, unit="px") == 1
        got: List[Entry] = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            reply = await r.xreadgroup("workers", "w1", {EXPIRED: ">"}, block=2000)
            got = entries(reply)
        assert [f["member"] for _, f in got] == ["seat-1"]
        assert await xs.notify(LEASES, off=True) is True
        assert await xs.notify(LEASES) is None
        await r.aclose() if hasattr(r, "aclose") else await r.close()

    asyncio.run(run())


def test_the_words_sent() -> None:
    from redis_xset import _commands as c

    assert c.notify("k", None, None, False).args == ("XSET.NOTIFY", "k")
    assert c.notify("k", "s", None, False).args == ("XSET.NOTIFY", "k", "STREAM", "s")
    assert c.notify("k", "s", 10, False).args == ("XSET.NOTIFY", "k", "STREAM", "s", "MAXLEN", 10)
    assert c.notify("k", None, None, True).args == ("XSET.NOTIFY", "k", "OFF")
