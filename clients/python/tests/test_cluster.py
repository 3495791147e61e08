"""redis.RedisCluster over a 3-primary cluster (sync and asyncio), RESP2
and RESP3: commands go to the node owning their key's slot."""

from __future__ import annotations

import asyncio
from typing import List

import pytest
import redis
import redis.asyncio

import redis_xset
import redis_xset.asyncio
from scenario import STEPS, check


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_every_command_and_keys_on_every_node(cluster_ports: List[int], protocol: int) -> None:
    rc = redis.RedisCluster(
        host="127.0.0.1", port=cluster_ports[0], protocol=protocol, decode_responses=True
    )
    rc.flushall()
    xs = redis_xset.XSet(rc)
    check([step(xs) for step, _ in STEPS])
    # Keys spread over every node's slots: each write and read is routed.
    keys = [f"user:{i}" for i in range(60)]
    for k in keys:
        assert xs.add(k, {k: 3600}) == 1
    assert all(xs.members(k, withttl=True)[0][0] == k for k in keys)
    owners = {rc.get_node_from_key(k).port for k in keys}
    assert owners == set(cluster_ports)
    rc.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_asyncio_cluster(cluster_ports: List[int], protocol: int) -> None:
    async def run() -> None:
        rc = redis.asyncio.RedisCluster(
            host="127.0.0.1", port=cluster_ports[0], protocol=protocol, decode_responses=True
        )
        await rc.flushall()
        xs = redis_xset.asyncio.XSet(rc)
        check([await step(xs) for step, _ in STEPS])
        await rc.aclose() if hasattr(rc, "aclose") else await rc.close()

    asyncio.run(run())
