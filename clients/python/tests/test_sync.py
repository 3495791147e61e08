"""The sync client over redis.Redis and its pipelines, RESP2 and RESP3."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import redis

from redis_xset import XSet, pairs
from scenario import KEYS, STEPS, check


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request: Any, port: int) -> Iterator[redis.Redis]:
    client = redis.Redis(port=port, protocol=request.param, decode_responses=True)
    client.flushall()
    yield client
    client.close()


def test_every_command(r: redis.Redis) -> None:
    xs = XSet(r)
    check([step(xs) for step, _ in STEPS])


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi"])
def test_every_command_in_a_pipeline(r: redis.Redis, transaction: bool) -> None:
    with r.pipeline(transaction=transaction) as pipe:
        xs = XSet(pipe)
        for step, _ in STEPS:
            step(xs)
        check(pipe.execute())


@pytest.mark.parametrize("protocol", [2, 3])
def test_bytes_without_decode_responses(port: int, protocol: int) -> None:
    client = redis.Redis(port=port, protocol=protocol)
    client.flushall()
    xs = XSet(client)
    check([step(xs) for step, _ in STEPS], decoded=False)
    client.close()


def test_scan_iter_visits_every_member(r: redis.Redis) -> None:
    xs = XSet(r)
    # 500 members: the large encoding, scanned over several cursor steps.
    xs.add("big", {f"user:{i}": 3600 for i in range(500)})
    xs.persist("big", ["user:7"])
    assert set(xs.scan_iter("big", count=50)) == {f"user:{i}" for i in range(500)}
    assert set(xs.scan_iter("big", match="user:4?")) == {f"user:4{i}" for i in range(10)}
    ttls = dict(xs.scan_iter("big", count=50, withttl=True))
    assert len(ttls) == 500 and ttls["user:7"] == -1
    assert all(0 < t <= 3_600_000 for m, t in ttls.items() if m != "user:7")
    assert list(xs.scan_iter("nokey")) == []


def test_server_errors_raise(r: redis.Redis) -> None:
    xs = XSet(r)
    with pytest.raises(redis.ResponseError, match="not compatible"):
        xs.addex("k", {"m": 10}, nx=True, xx=True)
    r.set("plain", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        xs.card("plain")


def test_pairs_of_both_shapes() -> None:
    assert pairs(["a", 1, "b", -1]) == [("a", 1), ("b", -1)]
    assert pairs([["a", 1], ["b", -1]]) == [("a", 1), ("b", -1)]
    assert pairs([]) == []


def test_keys_cover_the_scenario() -> None:
    assert len(set(KEYS)) == len(KEYS)
