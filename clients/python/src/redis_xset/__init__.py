"""redis-xset: typed redis-py commands for xset, the Redis module whose
set members each expire on their own.

    import redis
    from redis_xset import XSet

    xs = XSet(redis.Redis(decode_responses=True))
    xs.add("active:users", {"alice": 3600})
    xs.members("active:users", withttl=True)   # [("alice", 3599998)]

`redis_xset.XSet` wraps `redis.Redis`, `redis.RedisCluster` and their
pipelines; `redis_xset.asyncio.XSet` the asyncio clients. Replies are the
same Python values whether the client speaks RESP2 or RESP3.
"""

from ._commands import Bound, KeyT, Member, MemberReply, MemberTtl, Unit, pairs
from ._sync import XSet

__all__ = ["XSet", "pairs", "Bound", "KeyT", "Member", "MemberReply", "MemberTtl", "Unit"]
__version__ = "0.4.0"
