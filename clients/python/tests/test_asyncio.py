"""redis_xset.asyncio over redis.asyncio.Redis and its pipelines, RESP2 and
RESP3."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio

from redis_xset.asyncio import XSet
from scenario import STEPS, check


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_every_command(port: int, protocol: int) -> None:
    async def run() -> None:
        client = redis.asyncio.Redis(port=port, protocol=protocol, decode_responses=True)
        await client.flushall()
        xs = XSet(client)
        check([await step(xs) for step, _ in STEPS])
        await client.aclose() if hasattr(client, "aclose") else await client.close()

    asyncio.run(run())


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_every_command_in_a_pipeline(port: int, protocol: int) -> None:
    async def run() -> None:
        client = redis.asyncio.Redis(port=port, protocol=protocol, decode_responses=True)
        await client.flushall()
        async with client.pipeline(transaction=True) as pipe:
            xs = XSet(pipe)
            for step, _ in STEPS:
                step(xs)  # queues; no await needed
            check(await pipe.execute())
        await client.aclose() if hasattr(client, "aclose") else await client.close()

    asyncio.run(run())


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_scan_iter(port: int, protocol: int) -> None:
    async def run() -> None:
        client = redis.asyncio.Redis(port=port, protocol=protocol, decode_responses=True)
        await client.flushall()
        xs = XSet(client)
        await xs.add("big", {f"user:{i}": 3600 for i in range(300)})
        seen = {m async for m in xs.scan_iter("big", count=40)}
        assert seen == {f"user:{i}" for i in range(300)}
        pairs = [p async for p in xs.scan_iter("big", withttl=True)]
        assert {m for m, _ in pairs} == seen and all(0 < t <= 3_600_000 for _, t in pairs)
        await client.aclose() if hasattr(client, "aclose") else await client.close()

    asyncio.run(run())
