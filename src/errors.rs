//! Every error string a client can receive, in one place, worded as Redis
//! words its own (with the `ERR` prefix the crate's errors lack).

use redis_module::RedisError;

pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const SYNTAX: &str = "ERR syntax error";
pub const NX_AND_XX: &str = "ERR XX and NX options at the same time are not compatible";
pub const GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
pub const MEMBERS_COUNT_POSITIVE: &str = "ERR MEMBERS count must be a positive integer";
pub const MEMBERS_COUNT_MISMATCH: &str =
    "ERR the MEMBERS count must match the number of members that follow";
pub const MAXLEN_POSITIVE: &str = "ERR MAXLEN must be a positive integer";
pub const CAP_POSITIVE: &str = "ERR CAP must be a positive integer";
pub const INVALID_CURSOR: &str = "ERR invalid cursor";
/// A `BYDEADLINE`/`XSET.COUNT` bound that is neither an integer (optionally
/// after `(`) nor `-inf`/`+inf`; `ZRANGEBYSCORE` says "is not a float".
pub const MIN_MAX_NOT_INTEGER: &str = "ERR min or max is not an integer or out of range";
/// `SPOP key -1`'s wording.
pub const OUT_OF_RANGE_POSITIVE: &str = "ERR value is out of range, must be positive";
/// `SRANDMEMBER`'s wording for a count out of its range.
pub const OUT_OF_RANGE: &str = "ERR value is out of range";
/// `SINTERCARD`'s wordings for its `numkeys` and `LIMIT`.
pub const NUMKEYS_POSITIVE: &str = "ERR numkeys should be greater than 0";
pub const NUMKEYS_TOO_MANY: &str = "ERR Number of keys can't be greater than number of args";
pub const LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";
/// Redis's reply to a `deny-oom` command over `maxmemory`.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// A bug was caught (a panic) where nothing more is known of its effects.
pub const INTERNAL: &str = "ERR internal error in xset (see the server log)";
/// A bug was caught in a command that writes nothing (no key of its own
/// to repair).
pub const INTERNAL_NOTHING_CHANGED: &str =
    "ERR internal error in xset (the command changed nothing; see the server log)";
/// A bug was caught in a write on a primary: what the command did before
/// stays, and its key was re-sent whole.
pub const INTERNAL_RESENT: &str = "ERR internal error in xset (the command may have been applied \
                                   in part; its key was re-sent whole to replicas and the AOF; \
                                   see the server log)";
/// A bug was caught in a write on a replica or while loading: what the
/// command did before stays.
pub const INTERNAL_PARTIAL: &str = "ERR internal error in xset (the command may have been applied \
                                    in part; see the server log)";
/// A bug was caught and left the command's set empty or broken.
pub const INTERNAL_DELETED: &str = "ERR internal error in xset (the command left its key's set \
                                    empty or broken, and it was deleted; see the server log)";
/// A bug was caught and repairing the command's key failed too.
pub const INTERNAL_UNREPAIRED: &str = "ERR internal error in xset (the command may have been \
                                       applied in part, and repairing its key failed; see the \
                                       server log)";
/// Each missing element of a reply cut short by a bug.
pub const INTERNAL_REPLY_CUT: &str =
    "ERR internal error in xset (the reply was cut short; see the server log)";

/// `ERR invalid expire time in '<cmd>' command`, as Redis says for `SET EX 0`.
pub fn invalid_expire(cmd: &str) -> RedisError {
    RedisError::String(format!("ERR invalid expire time in '{cmd}' command"))
}

/// `ERR wrong number of arguments for '<cmd>' command`.
pub fn arity(cmd: &str) -> RedisError {
    RedisError::String(format!("ERR wrong number of arguments for '{cmd}' command"))
}

/// A fixed error reply.
pub fn err(msg: &'static str) -> RedisError {
    RedisError::Str(msg)
}
