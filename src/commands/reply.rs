//! Reply values the command files share.

use crate::xset::NO_DEADLINE;
use redis_module::RedisValue;

/// An integer reply from a count.
pub fn int(n: usize) -> RedisValue {
    RedisValue::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A bulk reply holding `bytes`.
pub fn bulk(bytes: &[u8]) -> RedisValue {
    RedisValue::StringBuffer(bytes.to_vec())
}

/// Milliseconds left before `deadline_ms`, or -1 for no deadline.
pub fn pttl(deadline_ms: u64, now_ms: u64) -> i64 {
    if deadline_ms == NO_DEADLINE {
        -1
    } else {
        (deadline_ms - now_ms) as i64
    }
}
