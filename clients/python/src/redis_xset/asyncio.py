"""`redis_xset.asyncio.XSet`: the xset commands over `redis.asyncio.Redis`,
`redis.asyncio.RedisCluster` or one of their pipelines. The methods mirror
`redis_xset.XSet` (see it for each command) and return awaitables of the
same values; on a pipeline, a call queues the command (awaiting it is not
needed) and `await pipe.execute()` returns the values."""

from __future__ import annotations

from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Tuple,
    TypeVar,
    Union,
    overload,
)

from . import _commands as c
from ._commands import (
    Bound,
    Call,
    KeyT,
    Member,
    MemberReply,
    Members,
    MemberTtl,
    Unit,
)
from ._sync import Keys, register

__all__ = ["XSet"]

T = TypeVar("T")


class AsyncClient(Protocol):
    """What `XSet` needs of a client: `redis.asyncio.Redis`,
    `redis.asyncio.RedisCluster`, or a pipeline of either."""

    def execute_command(self, *args: Any, **options: Any) -> Any: ...

    def set_response_callback(self, command: str, callback: Any) -> None: ...


class XSet:
    """The xset commands over an asyncio redis-py client (see
    `redis_xset.XSet`): `await xs.has(key, member)`."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        register(client)

    def _run(self, call: Call[T]) -> Awaitable[T]:
        result: Awaitable[T] = self.client.execute_command(*call.args, **call.options)
        return result

    # ---- adding ---------------------------------------------------------

    def add(self, key: KeyT, mapping: Mapping[Member, int]) -> Awaitable[int]:
        """`XSET.ADD`: adds or refreshes members, each with a TTL in seconds
        (`{member: ttl_seconds}`); returns how many were new."""
        return self._run(c.add(key, mapping))

    @overload
    def addex(
        self,
        key: KeyT,
        mapping: Mapping[Member, int],
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
        unit: Optional[Unit] = ...,
        maxlen: Optional[int] = ...,
        cap: Optional[int] = ...,
        codes: Literal[False] = ...,
    ) -> Awaitable[Optional[int]]: ...

    @overload
    def addex(
        self,
        key: KeyT,
        mapping: Mapping[Member, int],
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
        unit: Optional[Unit] = ...,
        maxlen: Optional[int] = ...,
        cap: Optional[int] = ...,
        codes: Literal[True],
    ) -> Awaitable[Optional[List[int]]]: ...

    def addex(
        self,
        key: KeyT,
        mapping: Mapping[Member, int],
        *,
        nx: bool = False,
        xx: bool = False,
        gt: bool = False,
        lt: bool = False,
        unit: Optional[Unit] = None,
        maxlen: Optional[int] = None,
        cap: Optional[int] = None,
        codes: bool = False,
    ) -> Awaitable[Union[int, List[int], None]]:
        """`XSET.ADDEX`: adds `{member: time}` with conditions (`nx`, `xx`,
        `gt`, `lt`), a unit for the times (`"ex"` seconds, the default;
        `"px"` milliseconds; `"exat"`/`"pxat"` Unix times), an evicting
        `maxlen` or a refusing `cap`. Returns how many were new, or with
        `codes=True` one code per member (1 added, 2 deadline changed,
        3 removed, 0 unchanged); `None` when `cap` refused the add."""
        return self._run(c.addex(key, mapping, nx, xx, gt, lt, unit, maxlen, cap, codes))

    # ---- reading --------------------------------------------------------

    def has(self, key: KeyT, member: Member) -> Awaitable[bool]:
        """`XSET.HAS`: whether `member` is live."""
        return self._run(c.has(key, member))

    def mhas(self, key: KeyT, *members: Member) -> Awaitable[List[bool]]:
        """`XSET.MHAS`: whether each member is live, in order."""
        return self._run(c.mhas(key, members))

    def card(self, key: KeyT) -> Awaitable[int]:
        """`XSET.CARD`: the number of live members."""
        return self._run(c.card(key))

    def count(self, key: KeyT, min: Bound, max: Bound) -> Awaitable[int]:
        """`XSET.COUNT`: live members whose deadline (Unix ms) is within
        `min`..`max` (`"-inf"`, `"+inf"`, `"(n"` exclusive)."""
        return self._run(c.count(key, min, max))

    @overload
    def members(
        self,
        key: KeyT,
        bydeadline: Optional[Tuple[Bound, Bound]] = ...,
        rev: bool = ...,
        limit: Optional[Tuple[int, int]] = ...,
        withttl: Literal[False] = ...,
    ) -> Awaitable[List[MemberReply]]: ...

    @overload
    def members(
        self,
        key: KeyT,
        bydeadline: Optional[Tuple[Bound, Bound]] = ...,
        rev: bool = ...,
        limit: Optional[Tuple[int, int]] = ...,
        *,
        withttl: Literal[True],
    ) -> Awaitable[List[MemberTtl]]: ...

    def members(
        self,
        key: KeyT,
        bydeadline: Optional[Tuple[Bound, Bound]] = None,
        rev: bool = False,
        limit: Optional[Tuple[int, int]] = None,
        withttl: bool = False,
    ) -> Awaitable[Union[List[MemberReply], List[MemberTtl]]]:
        """`XSET.MEMBERS`: live members, soonest deadline first (`rev`:
        latest first), optionally those whose deadline is within
        `bydeadline=(min, max)`, a page `limit=(offset, count)`; with
        `withttl=True`, `(member, ttl_ms)` tuples (`-1`: no deadline)."""
        return self._run(c.members(key, bydeadline, rev, limit, withttl))

    @overload
    def ttl(self, key: KeyT, member: Member) -> Awaitable[int]: ...
    @overload
    def ttl(self, key: KeyT, member: Members) -> Awaitable[List[int]]: ...
    def ttl(self, key: KeyT, member: Union[Member, Members]) -> Awaitable[Union[int, List[int]]]:
        """`XSET.TTL`: seconds left (`-1` no deadline, `-2` not live); a
        list of members gives a list."""
        return self._run(c.read_time("XSET.TTL", key, member))

    @overload
    def pttl(self, key: KeyT, member: Member) -> Awaitable[int]: ...
    @overload
    def pttl(self, key: KeyT, member: Members) -> Awaitable[List[int]]: ...
    def pttl(self, key: KeyT, member: Union[Member, Members]) -> Awaitable[Union[int, List[int]]]:
        """`XSET.PTTL`: milliseconds left, as `ttl`."""
        return self._run(c.read_time("XSET.PTTL", key, member))

    @overload
    def expiretime(self, key: KeyT, member: Member) -> Awaitable[int]: ...
    @overload
    def expiretime(self, key: KeyT, member: Members) -> Awaitable[List[int]]: ...
    def expiretime(
        self, key: KeyT, member: Union[Member, Members]
    ) -> Awaitable[Union[int, List[int]]]:
        """`XSET.EXPIRETIME`: deadlines as Unix seconds, as `ttl`."""
        return self._run(c.read_time("XSET.EXPIRETIME", key, member))

    @overload
    def pexpiretime(self, key: KeyT, member: Member) -> Awaitable[int]: ...
    @overload
    def pexpiretime(self, key: KeyT, member: Members) -> Awaitable[List[int]]: ...
    def pexpiretime(
        self, key: KeyT, member: Union[Member, Members]
    ) -> Awaitable[Union[int, List[int]]]:
        """`XSET.PEXPIRETIME`: deadlines as Unix milliseconds, as `ttl`."""
        return self._run(c.read_time("XSET.PEXPIRETIME", key, member))

    # ---- deadlines ------------------------------------------------------

    @overload
    def expire(
        self,
        key: KeyT,
        seconds: int,
        member: Member,
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
    ) -> Awaitable[int]: ...
    @overload
    def expire(
        self,
        key: KeyT,
        seconds: int,
        member: Members,
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
    ) -> Awaitable[List[int]]: ...
    def expire(
        self,
        key: KeyT,
        seconds: int,
        member: Union[Member, Members],
        *,
        nx: bool = False,
        xx: bool = False,
        gt: bool = False,
        lt: bool = False,
    ) -> Awaitable[Union[int, List[int]]]:
        """`XSET.EXPIRE`: sets a TTL in seconds; one code per member (`-2`
        not live, `0` condition not met, `1` set, `2` removed); a list of
        members gives a list of codes."""
        return self._run(c.set_time("XSET.EXPIRE", key, seconds, member, nx, xx, gt, lt))

    @overload
    def pexpire(
        self,
        key: KeyT,
        milliseconds: int,
        member: Member,
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
    ) -> Awaitable[int]: ...
    @overload
    def pexpire(
        self,
        key: KeyT,
        milliseconds: int,
        member: Members,
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
    ) -> Awaitable[List[int]]: ...
    def pexpire(
        self,
        key: KeyT,
        milliseconds: int,
        member: Union[Member, Members],
        *,
        nx: bool = False,
        xx: bool = False,
        gt: bool = False,
        lt: bool = False,
    ) -> Awaitable[Union[int, List[int]]]:
        """`XSET.PEXPIRE`: as `expire`, in milliseconds."""
        return self._run(c.set_time("XSET.PEXPIRE", key, milliseconds, member, nx, xx, gt, lt))

    @overload
    def expireat(
        self,
        key: KeyT,
        unix_seconds: int,
        member: Member,
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
    ) -> Awaitable[int]: ...
    @overload
    def expireat(
        self,
        key: KeyT,
        unix_seconds: int,
        member: Members,
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
    ) -> Awaitable[List[int]]: ...
    def expireat(
        self,
        key: KeyT,
        unix_seconds: int,
        member: Union[Member, Members],
        *,
        nx: bool = False,
        xx: bool = False,
        gt: bool = False,
        lt: bool = False,
    ) -> Awaitable[Union[int, List[int]]]:
        """`XSET.EXPIREAT`: as `expire`, to a Unix time in seconds."""
        return self._run(c.set_time("XSET.EXPIREAT", key, unix_seconds, member, nx, xx, gt, lt))

    @overload
    def pexpireat(
        self,
        key: KeyT,
        unix_ms: int,
        member: Member,
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
    ) -> Awaitable[int]: ...
    @overload
    def pexpireat(
        self,
        key: KeyT,
        unix_ms: int,
        member: Members,
        *,
        nx: bool = ...,
        xx: bool = ...,
        gt: bool = ...,
        lt: bool = ...,
    ) -> Awaitable[List[int]]: ...
    def pexpireat(
        self,
        key: KeyT,
        unix_ms: int,
        member: Union[Member, Members],
        *,
        nx: bool = False,
        xx: bool = False,
        gt: bool = False,
        lt: bool = False,
    ) -> Awaitable[Union[int, List[int]]]:
        """`XSET.PEXPIREAT`: as `expire`, to a Unix time in milliseconds."""
        return self._run(c.set_time("XSET.PEXPIREAT", key, unix_ms, member, nx, xx, gt, lt))

    @overload
    def persist(self, key: KeyT, member: Member) -> Awaitable[int]: ...
    @overload
    def persist(self, key: KeyT, member: Members) -> Awaitable[List[int]]: ...
    def persist(
        self, key: KeyT, member: Union[Member, Members]
    ) -> Awaitable[Union[int, List[int]]]:
        """`XSET.PERSIST`: removes deadlines; a code per member (`-2` not
        live, `-1` had none, `1` removed); a list of members gives a list."""
        return self._run(c.persist(key, member))

    # ---- removing -------------------------------------------------------

    def rem(self, key: KeyT, *members: Member) -> Awaitable[int]:
        """`XSET.REM`: removes members; returns how many were live."""
        return self._run(c.rem(key, members))

    @overload
    def pop(
        self, key: KeyT, count: None = ..., soonest: bool = ...
    ) -> Awaitable[Optional[MemberReply]]: ...
    @overload
    def pop(self, key: KeyT, count: int, soonest: bool = ...) -> Awaitable[List[MemberReply]]: ...
    def pop(
        self, key: KeyT, count: Optional[int] = None, soonest: bool = False
    ) -> Awaitable[Union[MemberReply, None, List[MemberReply]]]:
        """`XSET.POP`: removes and returns random members, or with
        `soonest=True` those expiring first. Without `count`, one member or
        `None`; with it, a list of up to `count`."""
        return self._run(c.pop(key, count, soonest))

    # ---- random and scan ------------------------------------------------

    @overload
    def randmember(self, key: KeyT, count: None = ...) -> Awaitable[Optional[MemberReply]]: ...
    @overload
    def randmember(
        self, key: KeyT, count: int, withttl: Literal[False] = ...
    ) -> Awaitable[List[MemberReply]]: ...
    @overload
    def randmember(
        self, key: KeyT, count: int, withttl: Literal[True]
    ) -> Awaitable[List[MemberTtl]]: ...
    def randmember(
        self, key: KeyT, count: Optional[int] = None, withttl: bool = False
    ) -> Awaitable[Union[MemberReply, None, List[MemberReply], List[MemberTtl]]]:
        """`XSET.RANDMEMBER`: without `count`, one random live member or
        `None`; with it, a list (`count < 0`: repeats allowed); `withttl`
        gives `(member, ttl_ms)` tuples."""
        return self._run(c.randmember(key, count, withttl))

    def scan(
        self,
        key: KeyT,
        cursor: int = 0,
        match: Optional[Member] = None,
        count: Optional[int] = None,
        withttl: bool = False,
    ) -> Awaitable[Tuple[int, List[Any]]]:
        """`XSET.SCAN`: one step, `(next_cursor, members)` (with `withttl`,
        `(member, ttl_ms)` tuples); the scan is over when the cursor is 0."""
        return self._run(c.scan(key, cursor, match, count, withttl))

    @overload
    def scan_iter(
        self,
        key: KeyT,
        match: Optional[Member] = ...,
        count: Optional[int] = ...,
        withttl: Literal[False] = ...,
    ) -> AsyncIterator[MemberReply]: ...
    @overload
    def scan_iter(
        self,
        key: KeyT,
        match: Optional[Member] = ...,
        count: Optional[int] = ...,
        *,
        withttl: Literal[True],
    ) -> AsyncIterator[MemberTtl]: ...
    async def scan_iter(
        self,
        key: KeyT,
        match: Optional[Member] = None,
        count: Optional[int] = None,
        withttl: bool = False,
    ) -> AsyncIterator[Any]:
        """Every live member (or `(member, ttl_ms)`) through `XSET.SCAN`
        steps, as `async for`; a member may come more than once."""
        cursor = 0
        while True:
            cursor, items = await self.scan(key, cursor, match, count, withttl)
            for item in items:
                yield item
            if cursor == 0:
                return

    # ---- set algebra ----------------------------------------------------

    @overload
    def inter(self, keys: Keys, withttl: Literal[False] = ...) -> Awaitable[List[MemberReply]]: ...
    @overload
    def inter(self, keys: Keys, withttl: Literal[True]) -> Awaitable[List[MemberTtl]]: ...
    def inter(
        self, keys: Keys, withttl: bool = False
    ) -> Awaitable[Union[List[MemberReply], List[MemberTtl]]]:
        """`XSET.INTER`: members live in every key, each until its earliest
        deadline, soonest first."""
        return self._run(c.algebra("XSET.INTER", keys, withttl))

    @overload
    def union(self, keys: Keys, withttl: Literal[False] = ...) -> Awaitable[List[MemberReply]]: ...
    @overload
    def union(self, keys: Keys, withttl: Literal[True]) -> Awaitable[List[MemberTtl]]: ...
    def union(
        self, keys: Keys, withttl: bool = False
    ) -> Awaitable[Union[List[MemberReply], List[MemberTtl]]]:
        """`XSET.UNION`: members live in any key, each until its latest
        deadline, soonest first."""
        return self._run(c.algebra("XSET.UNION", keys, withttl))

    @overload
    def diff(self, keys: Keys, withttl: Literal[False] = ...) -> Awaitable[List[MemberReply]]: ...
    @overload
    def diff(self, keys: Keys, withttl: Literal[True]) -> Awaitable[List[MemberTtl]]: ...
    def diff(
        self, keys: Keys, withttl: bool = False
    ) -> Awaitable[Union[List[MemberReply], List[MemberTtl]]]:
        """`XSET.DIFF`: members of the first key in none of the others,
        with the first key's deadlines."""
        return self._run(c.algebra("XSET.DIFF", keys, withttl))

    def interstore(self, destination: KeyT, keys: Keys) -> Awaitable[int]:
        """`XSET.INTERSTORE`: stores `inter(keys)` with its deadlines;
        returns its size."""
        return self._run(c.store("XSET.INTERSTORE", destination, keys))

    def unionstore(self, destination: KeyT, keys: Keys) -> Awaitable[int]:
        """`XSET.UNIONSTORE`: stores `union(keys)`; returns its size."""
        return self._run(c.store("XSET.UNIONSTORE", destination, keys))

    def diffstore(self, destination: KeyT, keys: Keys) -> Awaitable[int]:
        """`XSET.DIFFSTORE`: stores `diff(keys)`; returns its size."""
        return self._run(c.store("XSET.DIFFSTORE", destination, keys))

    def intercard(self, keys: Keys, limit: Optional[int] = None) -> Awaitable[int]:
        """`XSET.INTERCARD`: the size of `inter(keys)`, counting stops at
        `limit`."""
        return self._run(c.intercard(keys, limit))

    # ---- delivery of expired members -------------------------------------

    @overload
    def notify(self, key: KeyT) -> Awaitable[Optional[MemberReply]]: ...
    @overload
    def notify(
        self, key: KeyT, stream: KeyT, *, maxlen: Optional[int] = ...
    ) -> Awaitable[bool]: ...
    @overload
    def notify(self, key: KeyT, *, off: Literal[True]) -> Awaitable[bool]: ...
    def notify(
        self,
        key: KeyT,
        stream: Optional[KeyT] = None,
        *,
        maxlen: Optional[int] = None,
        off: bool = False,
    ) -> Awaitable[Union[bool, MemberReply, None]]:
        """`XSET.NOTIFY`: delivers expired members to `stream`, stops with
        `off=True` (both `True`), or names the stream (`None`: nowhere)."""
        return self._run(c.notify(key, stream, maxlen, off))
