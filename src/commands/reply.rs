//! Reply values the command files share.

use redis_module::RedisValue;

/// An integer reply from a count.
pub fn int(n: usize) -> RedisValue {
    RedisValue::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A bulk reply holding `bytes`.
pub fn bulk(bytes: &[u8]) -> RedisValue {
    RedisValue::StringBuffer(bytes.to_vec())
}
