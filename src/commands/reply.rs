//! Reply values the command files share.

use crate::errors;
use crate::faults::{self, Fault};
use crate::ffi::reply::Array;
use crate::ffi::server::ContextFlags;
use redis_module::{Context, RedisValue};
use xset_core::NO_DEADLINE;

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
    let mut out = MemberStream::start(ctx, len, with_ttl, now_ms);
    for (member, deadline_ms) in members.take(len) {
        out.push(member, deadline_ms);
    }
    RedisValue::NoReply
}

/// An array of members being replied straight to the client, as
/// [`stream_members`] replies one, for a caller that is handed its
/// members one at a time. Elements not pushed by the time it is dropped
/// are padded with errors.
pub struct MemberStream<'c> {
    out: Array<'c>,
    len: usize,
    pushed: usize,
    with_ttl: Option<WithTtl>,
    now_ms: u64,
}

impl<'c> MemberStream<'c> {
    /// Starts the array of `len` members. Call it once nothing else can
    /// fail: the command has replied from here on.
    pub fn start(
        ctx: &'c Context,
        len: usize,
        with_ttl: Option<WithTtl>,
        now_ms: u64,
    ) -> MemberStream<'c> {
        let flat_ttl = with_ttl.is_some_and(|s| !s.pairs);
        let elements = if flat_ttl { len.saturating_mul(2) } else { len };
        MemberStream {
            out: Array::start(ctx, elements, errors::INTERNAL_REPLY_CUT),
            len,
            pushed: 0,
            with_ttl,
            now_ms,
        }
    }

    /// Whether all `len` members are written.
    pub fn is_full(&self) -> bool {
        self.pushed >= self.len
    }

    /// Writes the next member (nothing once all `len` are written).
    #[inline]
    pub fn push(&mut self, member: &[u8], deadline_ms: u64) {
        if self.is_full() {
            return;
        }
        if self.pushed == self.len / 2 && faults::hit(Fault::ReplyMidway) {
            panic!("fault injected halfway through a streamed reply");
        }
        self.pushed += 1;
        match self.with_ttl {
            None => self.out.bulk(member),
            Some(WithTtl { pairs: true }) => {
                self.out
                    .bulk_integer_pair(member, pttl(deadline_ms, self.now_ms));
            }
            Some(WithTtl { pairs: false }) => {
                self.out.bulk(member);
                self.out.integer(pttl(deadline_ms, self.now_ms));
            }
        }
    }
}
