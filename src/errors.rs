//! Every error string a client can receive, in one place, worded as Redis
//! words its own (with the `ERR` prefix the crate's errors lack).

use redis_module::RedisError;

pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const SYNTAX: &str = "ERR syntax error";
pub const NX_AND_XX: &str = "ERR XX and NX options at the same time are not compatible";
pub const GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
/// `EXPIRE`'s wording for two of its conditions.
pub const EXPIRE_CONDITIONS: &str =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
pub const MEMBERS_COUNT_POSITIVE: &str = "ERR MEMBERS count must be a positive integer";
pub const MEMBERS_COUNT_MISMATCH: &str =
    "ERR the MEMBERS count must match the number of members that follow";
pub const MAXLEN_POSITIVE: &str = "ERR MAXLEN must be a positive integer";
/// `XSET.NOTIFY key STREAM key`: a set cannot deliver into itself.
pub const STREAM_IS_THE_SET: &str = "ERR the STREAM must be another key than the set";
/// Redis's wording for a stream ID that does not parse (`XADD`, `XRANGE`).
pub const INVALID_STREAM_ID: &str = "ERR Invalid stream ID specified as stream command argument";
/// `XSET.DELIVERED` from a client: only a primary's replication stream and
/// an AOF carry it.
pub const DELIVERED_INTERNAL: &str = "ERR XSET.DELIVERED is internal: only a primary or an AOF may \
                                      send it (expired members are delivered by XSET.NOTIFY)";
/// `XSET.DELIVERED` whose first entry the stream refuses: its ID is not
/// after the stream's last, as `XADD` says it.
pub const DELIVERED_ID_NOT_AFTER: &str =
    "ERR The ID specified in XSET.DELIVERED is equal or smaller than the target stream top item";
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

/// The word a syntax error names, as the client typed it: printable
/// ASCII kept, any other byte (a newline would break the reply) written
/// `\xHH`, and cut after 64 bytes.
fn word(w: &[u8]) -> String {
    let mut out = String::new();
    for &b in w.iter().take(64) {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    if w.len() > 64 {
        out.push_str("...");
    }
    out
}

/// Every syntax error names what was wrong after Redis's own prefix.
fn syntax(detail: String) -> RedisError {
    RedisError::String(format!("{SYNTAX}: {detail}"))
}

/// `ERR syntax error: unknown option 'W'`: a word where an option may
/// stand that is none of the command's options.
pub fn unknown_option(w: &[u8]) -> RedisError {
    syntax(format!("unknown option '{}'", word(w)))
}

/// `ERR syntax error: 'W' given twice`: an option repeated.
pub fn given_twice(w: &[u8]) -> RedisError {
    syntax(format!("'{}' given twice", word(w)))
}

/// `ERR syntax error: 'W' conflicts with 'E'`: a second option of a group
/// that takes one (`EX|PX|EXAT|PXAT`) where Redis has no wording of its
/// own for the pair.
pub fn conflicts(w: &[u8], earlier: &[u8]) -> RedisError {
    syntax(format!("'{}' conflicts with '{}'", word(w), word(earlier)))
}

/// `ERR syntax error: value missing after 'W'`: an option that takes a
/// value (`MAXLEN n`, `LIMIT offset count`) ends the command.
pub fn value_missing(w: &[u8]) -> RedisError {
    syntax(format!("value missing after '{}'", word(w)))
}

/// `ERR syntax error: 'W' must come right after the key`.
pub fn after_key(w: &[u8]) -> RedisError {
    syntax(format!("'{}' must come right after the key", word(w)))
}

/// `ERR syntax error: MEMBERS expected before 'W'` (or `at the end`): a
/// member block must start where `W` stands.
pub fn members_expected(before: Option<&[u8]>) -> RedisError {
    match before {
        Some(w) => syntax(format!("MEMBERS expected before '{}'", word(w))),
        None => syntax("MEMBERS expected at the end".to_string()),
    }
}

/// A fixed error reply.
pub fn err(msg: &'static str) -> RedisError {
    RedisError::Str(msg)
}
