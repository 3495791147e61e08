"""The wire form of every xset command and the normalisation of its reply.

Shared by the sync and asyncio clients: a builder turns a method's
arguments into a `Call` (the command's words plus options for its reply
callback); `CALLBACKS` turn a raw reply, RESP2 or RESP3, into one Python
value. Nothing here decides what the server decides (argument validity,
conditions, caps): the server answers, the library only reshapes.

The callbacks are registered under the command names on the client, so
pipelines, transactions and cluster clients apply them too.
"""

from __future__ import annotations

from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

#: A key, as redis-py takes it.
KeyT = Union[str, bytes, memoryview]
#: A member to send: any value redis-py encodes (members are bytes on the server).
Member = Union[str, bytes, memoryview, int, float]
#: A member as returned: `str` when the client decodes responses, else `bytes`.
MemberReply = Union[str, bytes]
#: A `(member, milliseconds_left)` pair; `-1` for a member without a deadline.
MemberTtl = Tuple[MemberReply, int]
#: Several members, as a list or tuple (a lone `str` is one member).
Members = Union[List[Member], Tuple[Member, ...]]
#: A bound of `XSET.COUNT` / `BYDEADLINE`: Unix milliseconds, or a string
#: such as `"-inf"`, `"+inf"`, `"(1700000000000"` (exclusive).
Bound = Union[int, str]
#: The time unit of `XSET.ADDEX`.
Unit = Literal["ex", "px", "exat", "pxat"]

T = TypeVar("T")

# Replies whose shape follows the arguments.
Codes = Union[int, List[int]]
Listed = Union[List[MemberReply], List[MemberTtl]]

# The option that tells a reply callback to pair a WITHTTL reply.
_WITHTTL = "xset_withttl"
# The option that tells XSET.NOTIFY's callback the command asked where the
# set delivers (a stream name or null) rather than set it (`OK`).
_QUERY = "xset_query"


class Call(Generic[T]):
    """A command ready to send: its words and its callback's options.

    `T` is the Python type of the reply once normalised (type checking only).
    """

    __slots__ = ("args", "options")

    def __init__(self, *args: Any, **options: Any) -> None:
        self.args = args
        self.options = options


# ---- reply normalisation ----------------------------------------------------


def pairs(reply: Any) -> List[MemberTtl]:
    """`(member, ttl_ms)` tuples of a WITHTTL reply: RESP3 nests each pair,
    RESP2 flattens them."""
    if not reply:
        return []
    if isinstance(reply[0], (list, tuple)):
        return [(m, int(t)) for m, t in reply]
    return [(m, int(t)) for m, t in zip(reply[::2], reply[1::2])]


def _members(reply: Any, **options: Any) -> Any:
    # A bulk or null (RANDMEMBER without a count) passes as it is.
    if options.get(_WITHTTL) and isinstance(reply, list):
        return pairs(reply)
    return reply


def _scan(reply: Any, **options: Any) -> Tuple[int, List[Any]]:
    cursor, items = reply
    return int(cursor), _members(items, **options)


def _bool(reply: Any, **options: Any) -> bool:
    return bool(reply)


def _bools(reply: Any, **options: Any) -> List[bool]:
    return [bool(x) for x in reply]


def _notify(reply: Any, **options: Any) -> Any:
    # The query's reply (a name or null) passes as it is; `OK` is `True`,
    # as redis-py makes it for its own commands.
    if options.get(_QUERY):
        return reply
    return reply in ("OK", b"OK")


#: Reply callbacks by command name. Commands whose reply is already the
#: same Python value under RESP2 and RESP3 (integers, lists of integers,
#: null, a bulk string or a list of them) have none.
CALLBACKS: Dict[str, Callable[..., Any]] = {
    "XSET.HAS": _bool,
    "XSET.MHAS": _bools,
    "XSET.MEMBERS": _members,
    "XSET.RANDMEMBER": _members,
    "XSET.INTER": _members,
    "XSET.UNION": _members,
    "XSET.DIFF": _members,
    "XSET.SCAN": _scan,
    "XSET.NOTIFY": _notify,
}


# ---- argument building ------------------------------------------------------


def _flatten(mapping: Mapping[Member, int]) -> List[Any]:
    out: List[Any] = []
    for member, time in mapping.items():
        out += [member, time]
    return out


def _keys(keys: Union[KeyT, Iterable[KeyT]]) -> List[KeyT]:
    if isinstance(keys, (str, bytes, memoryview)):
        return [keys]
    return list(keys)


def _target(member: Union[Member, Members]) -> List[Any]:
    """One member as itself, several as a `MEMBERS count ...` block."""
    if isinstance(member, (list, tuple)):
        return ["MEMBERS", len(member), *member]
    return [member]


def _condition(nx: bool, xx: bool, gt: bool, lt: bool) -> List[str]:
    return [w for w, on in (("NX", nx), ("XX", xx), ("GT", gt), ("LT", lt)) if on]


def add(key: KeyT, mapping: Mapping[Member, int]) -> Call[int]:
    return Call("XSET.ADD", key, *_flatten(mapping))


def addex(
    key: KeyT,
    mapping: Mapping[Member, int],
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    unit: Optional[Unit],
    maxlen: Optional[int],
    cap: Optional[int],
    codes: bool,
) -> Call[Union[int, List[int], None]]:
    args: List[Any] = ["XSET.ADDEX", key, *_condition(nx, xx, gt, lt)]
    if unit is not None:
        args.append(unit.upper())
    if maxlen is not None:
        args += ["MAXLEN", maxlen]
    if cap is not None:
        args += ["CAP", cap]
    if codes:
        args.append("CODES")
    args += ["MEMBERS", len(mapping), *_flatten(mapping)]
    return Call(*args)


def has(key: KeyT, member: Member) -> Call[bool]:
    return Call("XSET.HAS", key, member)


def mhas(key: KeyT, members: Sequence[Member]) -> Call[List[bool]]:
    return Call("XSET.MHAS", key, *members)


def rem(key: KeyT, members: Sequence[Member]) -> Call[int]:
    return Call("XSET.REM", key, *members)


def card(key: KeyT) -> Call[int]:
    return Call("XSET.CARD", key)


def count(key: KeyT, min: Bound, max: Bound) -> Call[int]:
    return Call("XSET.COUNT", key, min, max)


def members(
    key: KeyT,
    bydeadline: Optional[Tuple[Bound, Bound]],
    rev: bool,
    limit: Optional[Tuple[int, int]],
    withttl: bool,
) -> Call[Listed]:
    args: List[Any] = ["XSET.MEMBERS", key]
    if bydeadline is not None:
        args += ["BYDEADLINE", *bydeadline]
    if rev:
        args.append("REV")
    if limit is not None:
        args += ["LIMIT", *limit]
    if withttl:
        args.append("WITHTTL")
    return Call(*args, **{_WITHTTL: withttl})


def read_time(command: str, key: KeyT, member: Union[Member, Members]) -> Call[Codes]:
    """`XSET.TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME`."""
    return Call(command, key, *_target(member))


def set_time(
    command: str,
    key: KeyT,
    time: int,
    member: Union[Member, Members],
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
) -> Call[Codes]:
    """`XSET.EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT`."""
    return Call(command, key, time, *_condition(nx, xx, gt, lt), *_target(member))


def persist(key: KeyT, member: Union[Member, Members]) -> Call[Codes]:
    return Call("XSET.PERSIST", key, *_target(member))


def scan(
    key: KeyT, cursor: int, match: Optional[Member], count: Optional[int], withttl: bool
) -> Call[Tuple[int, List[Any]]]:
    args: List[Any] = ["XSET.SCAN", key, cursor]
    if match is not None:
        args += ["MATCH", match]
    if count is not None:
        args += ["COUNT", count]
    if withttl:
        args.append("WITHTTL")
    return Call(*args, **{_WITHTTL: withttl})


def randmember(
    key: KeyT, count: Optional[int], withttl: bool
) -> Call[Union[MemberReply, None, List[MemberReply], List[MemberTtl]]]:
    args: List[Any] = ["XSET.RANDMEMBER", key]
    if count is not None:
        args.append(count)
    if withttl:
        args.append("WITHTTL")
    return Call(*args, **{_WITHTTL: withttl})


def pop(
    key: KeyT, count: Optional[int], soonest: bool
) -> Call[Union[MemberReply, None, List[MemberReply]]]:
    args: List[Any] = ["XSET.POP", key]
    if count is not None:
        args.append(count)
    if soonest:
        args.append("SOONEST")
    return Call(*args)


def algebra(command: str, keys: Union[KeyT, Iterable[KeyT]], withttl: bool) -> Call[Listed]:
    """`XSET.INTER`, `UNION`, `DIFF`."""
    ks = _keys(keys)
    args: List[Any] = [command, len(ks), *ks]
    if withttl:
        args.append("WITHTTL")
    return Call(*args, **{_WITHTTL: withttl})


def store(command: str, destination: KeyT, keys: Union[KeyT, Iterable[KeyT]]) -> Call[int]:
    """`XSET.INTERSTORE`, `UNIONSTORE`, `DIFFSTORE`."""
    ks = _keys(keys)
    return Call(command, destination, len(ks), *ks)


def intercard(keys: Union[KeyT, Iterable[KeyT]], limit: Optional[int]) -> Call[int]:
    ks = _keys(keys)
    args: List[Any] = ["XSET.INTERCARD", len(ks), *ks]
    if limit is not None:
        args += ["LIMIT", limit]
    return Call(*args)


def notify(
    key: KeyT, stream: Optional[KeyT], maxlen: Optional[int], off: bool
) -> Call[Union[bool, MemberReply, None]]:
    """`XSET.NOTIFY`: the words as given (`STREAM stream [MAXLEN n]`,
    `OFF`, or none: the query); a mix is the server's to refuse."""
    args: List[Any] = ["XSET.NOTIFY", key]
    if stream is not None:
        args += ["STREAM", stream]
    if maxlen is not None:
        args += ["MAXLEN", maxlen]
    if off:
        args.append("OFF")
    query = stream is None and maxlen is None and not off
    return Call(*args, **{_QUERY: query})
