//! Reply values the command files share.

use crate::errors;
use crate::faults::{self, Fault};
use crate::ffi::reply::Array;
use crate::ffi::server::ContextFlags;
use crate::xset::NO_DEADLINE;
use redis_module::{Context, RedisValue};

/// An integer reply from a count.
pub fn int(n: usize) -> RedisValue {
    RedisValue::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A bulk reply holding `bytes`.
pub fn bulk(bytes: &[u8]) -> RedisValue {
    RedisValue::StringBuffer(bytes.to_vec())
}

/// How a `WITHTTL` reply is shaped for the client in `ctx`.
#[derive(Clone, Copy)]
pub struct WithTtl {
    pairs: bool,
}

impl WithTtl {
    /// RESP3 clients get `[member, ttl]` pairs, as `ZRANGE ... WITHSCORES`
    /// gives them; RESP2 clients a flat `member, ttl, ...` array.
    pub fn for_client(ctx: &Context) -> WithTtl {
        WithTtl {
            pairs: ContextFlags::of(Some(ctx)).resp3(),
        }
    }

    /// Appends `member` and its `ttl_ms` to `out`.
    pub fn push(self, out: &mut Vec<RedisValue>, member: &[u8], ttl_ms: i64) {
        if self.pairs {
            out.push(RedisValue::Array(vec![
                bulk(member),
                RedisValue::Integer(ttl_ms),
            ]));
        } else {
            out.push(bulk(member));
            out.push(RedisValue::Integer(ttl_ms));
        }
    }
}

/// Milliseconds left before `deadline_ms`, or -1 for no deadline.
pub fn pttl(deadline_ms: u64, now_ms: u64) -> i64 {
    if deadline_ms == NO_DEADLINE {
        -1
    } else {
        (deadline_ms - now_ms) as i64
    }
}

/// Replies an array of the first `len` of `members` straight to the client
/// as they come, each followed by its TTL in milliseconds when `with_ttl`
/// says how, so that no copy of a large reply is built first. `members`
/// must yield `len` (a shortfall is padded with errors, keeping the
/// protocol in step). Returns [`RedisValue::NoReply`]: the command has
/// replied. Call it last, once nothing else can fail.
pub fn stream_members<'m>(
    ctx: &Context,
    len: usize,
    members: impl Iterator<Item = (&'m [u8], u64)>,
    with_ttl: Option<WithTtl>,
    now_ms: u64,
) -> RedisValue {
    let flat_ttl = with_ttl.is_some_and(|s| !s.pairs);
    let elements = if flat_ttl { len.saturating_mul(2) } else { len };
    let mut out = Array::start(ctx, elements, errors::INTERNAL_REPLY_CUT);
    for (i, (member, deadline_ms)) in members.take(len).enumerate() {
        if i == len / 2 && faults::hit(Fault::ReplyMidway) {
            panic!("fault injected halfway through a streamed reply");
        }
        let ttl = pttl(deadline_ms, now_ms);
        match with_ttl {
            None => out.bulk(member),
            Some(WithTtl { pairs: true }) => out.bulk_integer_pair(member, ttl),
            Some(WithTtl { pairs: false }) => {
                out.bulk(member);
                out.integer(ttl);
            }
        }
    }
    RedisValue::NoReply
}
