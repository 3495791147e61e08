"""One run of every command, as steps: each step is a call on an `XSet`
(sync, pipeline, asyncio or cluster) and the Python value it must return.
Every flavour of client runs the same steps under RESP2 and RESP3 and must
return the same values: the expected ones below.

Keys share the hash tag `{t}` so that the multi-key commands run in a
cluster too. Deadlines are absolute (2100-01-01) or hours away, so values
do not depend on the moment; `Ttl(s)` stands for "milliseconds left, about
s seconds".
"""

from __future__ import annotations

from typing import Any, Callable, List, Tuple

A, OTP, ONE, Q, S1, S2, D, N, NS, MISSING = (
    "{t}a",
    "{t}otp",
    "{t}one",
    "{t}q",
    "{t}s1",
    "{t}s2",
    "{t}d",
    "{t}n",
    "{t}n:expired",
    "{t}missing",
)
KEYS = [A, OTP, ONE, Q, S1, S2, D, N, NS, MISSING]
Y2100_MS = 4102444800000


class Ttl:
    """Equal to a TTL in milliseconds within 5 s below `seconds`."""

    def __init__(self, seconds: int) -> None:
        self.ms = seconds * 1000

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and self.ms - 5000 < other <= self.ms

    def __repr__(self) -> str:
        return f"Ttl({self.ms // 1000})"


class Secs(Ttl):
    """Equal to a TTL in seconds, rounded, within 5 s below `seconds`."""

    def __init__(self, seconds: int) -> None:
        self.ms = seconds

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and self.ms - 5 <= other <= self.ms


Step = Tuple[Callable[[Any], Any], Any]

STEPS: List[Step] = [
    # adding
    (lambda x: x.add(A, {"m1": 3600, "m2": 7200}), 2),
    (lambda x: x.add(A, {"m1": 3600}), 0),
    (lambda x: x.addex(A, {"m3": 100}, nx=True, codes=True), [1]),
    (lambda x: x.addex(A, {"m3": 100, "m4": 100}, nx=True, codes=True), [0, 1]),
    (lambda x: x.addex(A, {"m5": Y2100_MS}, unit="pxat"), 1),
    (lambda x: x.addex(OTP, {"c1": 300, "c2": 300}, cap=2), 2),
    (lambda x: x.addex(OTP, {"c3": 300}, cap=2), None),
    (lambda x: x.addex(OTP, {"c3": 300}, cap=2, codes=True), None),
    (lambda x: x.addex(OTP, {"c1": 300000}, xx=True, gt=True, unit="px", maxlen=5), 0),
    # reading
    (lambda x: x.has(A, "m1"), True),
    (lambda x: x.has(A, "nobody"), False),
    (lambda x: x.has(MISSING, "m1"), False),
    (lambda x: x.mhas(A, "m1", "nobody", "m5"), [True, False, True]),
    (lambda x: x.card(A), 5),
    (lambda x: x.card(MISSING), 0),
    (lambda x: x.count(A, Y2100_MS, "+inf"), 1),
    (lambda x: x.count(A, "-inf", f"({Y2100_MS}"), 4),
    (lambda x: x.members(A), ["m3", "m4", "m1", "m2", "m5"]),
    (lambda x: x.members(A, rev=True, limit=(0, 2)), ["m5", "m2"]),
    (lambda x: x.members(A, bydeadline=(Y2100_MS, "+inf")), ["m5"]),
    (lambda x: x.members(MISSING, withttl=True), []),
    (lambda x: x.members(A, limit=(0, 2), withttl=True), [("m3", Ttl(100)), ("m4", Ttl(100))]),
    (lambda x: x.ttl(A, "m1"), Secs(3600)),
    (lambda x: x.pttl(A, "m2"), Ttl(7200)),
    (lambda x: x.pexpiretime(A, "m5"), Y2100_MS),
    (lambda x: x.expiretime(A, ["m5", "nobody"]), [Y2100_MS // 1000, -2]),
    (lambda x: x.pttl(A, ["m1", "m2"]), [Ttl(3600), Ttl(7200)]),
    # deadlines
    (lambda x: x.persist(A, "m2"), 1),
    (lambda x: x.persist(A, ["m2", "nobody"]), [-1, -2]),
    (lambda x: x.members(A, rev=True, limit=(0, 1), withttl=True), [("m2", -1)]),
    (lambda x: x.ttl(A, ["m2", "nobody"]), [-1, -2]),
    (lambda x: x.expire(A, 600, "m3"), 1),
    (lambda x: x.expire(A, 600, ["m3", "m2", "nobody"], nx=True), [0, 1, -2]),
    (lambda x: x.pexpire(A, 700000, ["m2"], xx=True), [1]),
    (lambda x: x.expireat(A, Y2100_MS // 1000, "m4"), 1),
    (lambda x: x.pexpireat(A, Y2100_MS, "m4", lt=True), 0),
    (lambda x: x.pexpireat(A, Y2100_MS + 1000, ["m4"], gt=True), [1]),
    (lambda x: x.expire(A, 0, "m1"), 2),
    # removing
    (lambda x: x.rem(A, "m4", "nobody"), 1),
    (lambda x: x.card(A), 3),
    (lambda x: x.add(Q, {"j1": 10, "j2": 20, "j3": 30}), 3),
    (lambda x: x.pop(Q, 2, soonest=True), ["j1", "j2"]),
    (lambda x: x.pop(Q), "j3"),
    (lambda x: x.pop(Q), None),
    (lambda x: x.pop(Q, 1), []),
    (lambda x: x.add(Q, {"j4": 10}), 1),
    (lambda x: x.pop(Q, soonest=True), "j4"),
    # random and scan
    (lambda x: x.add(ONE, {"only": 3600}), 1),
    (lambda x: x.persist(ONE, "only"), 1),
    (lambda x: x.randmember(ONE), "only"),
    (lambda x: x.randmember(MISSING), None),
    (lambda x: x.randmember(ONE, 2), ["only"]),
    (lambda x: x.randmember(ONE, -2), ["only", "only"]),
    (lambda x: x.randmember(ONE, 1, withttl=True), [("only", -1)]),
    (lambda x: x.scan(ONE), (0, ["only"])),
    (lambda x: x.scan(ONE, 0, match="o*", count=10, withttl=True), (0, [("only", -1)])),
    (lambda x: x.scan(ONE, match="x*"), (0, [])),
    # set algebra
    (lambda x: x.add(S1, {"x": 100, "y": 200}), 2),
    (lambda x: x.add(S2, {"x": 300, "z": 10}), 2),
    (lambda x: x.inter([S1, S2]), ["x"]),
    (lambda x: x.union((S1, S2)), ["z", "y", "x"]),
    (lambda x: x.diff([S1, S2]), ["y"]),
    (lambda x: x.diff(S1), ["x", "y"]),
    (lambda x: x.inter([S1, S2], withttl=True), [("x", Ttl(100))]),
    (lambda x: x.union([S1, S2], withttl=True), [("z", Ttl(10)), ("y", Ttl(200)), ("x", Ttl(300))]),
    (lambda x: x.diff([S1, S2], withttl=True), [("y", Ttl(200))]),
    (lambda x: x.interstore(D, [S1, S2]), 1),
    (lambda x: x.pttl(D, "x"), Ttl(100)),
    (lambda x: x.unionstore(D, [S1, S2]), 3),
    (lambda x: x.diffstore(D, [S1, S2, MISSING]), 1),
    (lambda x: x.intercard([S1, S2]), 1),
    (lambda x: x.intercard([S1, S1], limit=1), 1),
    # delivery of expired members (tests/test_notify.py waits for one)
    (lambda x: x.notify(N), None),
    (lambda x: x.notify(N, NS, maxlen=1000), True),
    (lambda x: x.notify(N), NS),
    (lambda x: x.notify(N, NS), True),
    (lambda x: x.card(N), 0),
    (lambda x: x.notify(N, off=True), True),
    (lambda x: x.notify(N), None),
    (lambda x: x.notify(MISSING, off=True), True),
]


def as_bytes(value: Any) -> Any:
    """The expected value of a client without decode_responses."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, list):
        return [as_bytes(v) for v in value]
    if isinstance(value, tuple):
        return tuple(as_bytes(v) for v in value)
    return value


def same(got: Any, want: Any) -> bool:
    """Equal, and of the same types all the way down (`True` is not `1`)."""
    if isinstance(want, Ttl):
        return want == got
    if type(got) is not type(want):
        return False
    if isinstance(want, (list, tuple)):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    return bool(got == want)


def check(results: List[Any], decoded: bool = True) -> None:
    """Each step's result is its expected value, types included."""
    assert len(results) == len(STEPS)
    for i, ((_, want), got) in enumerate(zip(STEPS, results)):
        if not decoded:
            want = as_bytes(want)
        assert same(got, want), f"step {i}: got {got!r}, want {want!r}"
