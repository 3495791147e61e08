//! The grammar of every command but the adds (those are in `grammar.rs`):
//! from the argument vector to a parsed request, or the error the client
//! gets. Everything a command decides before it opens a key is decided
//! here, so a command that fails here has changed nothing, and the command
//! bodies only run what these return.
//!
//! Pure: a parser reads its arguments (and, where a command needs them, the
//! time and one question about the server, passed in), never a key or the
//! server, so the fuzz target `requests` (fuzz/) compiles this file with
//! the errors and parse modules and stand-in arguments. A parser may assume
//! what dispatch guarantees, an argument count that fits the command's
//! arity in `TABLE`; within it, any bytes are a valid input, and none makes
//! it panic.
//!
//! Where several errors apply, the first one met reading left to right is
//! the reply, as in the Redis commands these mirror.

use super::parse::{
    Target, TimeUnit, is, once, parse_i64, parse_u64, parse_window, to_deadline, value_of,
};
use crate::errors::{self, err};
use crate::ffi::key::CmdArg;
use redis_module::RedisError;
use xset_core::{Delivery, ExpireCondition, MAX_DEADLINE_MS, StreamId, Window};

/// The most members a negative `XSET.RANDMEMBER` count may ask for. The
/// reply is streamed, costing what `SRANDMEMBER`'s costs, but it is still
/// all in the client's output buffer at once: an absurd count is refused
/// rather than exhausting memory with one reply.
pub const MAX_REPEATED: u64 = 1 << 20;

/// A parsed `XSET.MEMBERS key [BYDEADLINE min max] [REV] [LIMIT offset
/// count] [WITHTTL]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MembersRequest {
    /// The deadlines listed: [`Window::ALL`] without `BYDEADLINE`.
    pub window: Window,
    pub rev: bool,
    pub with_ttl: bool,
    /// `LIMIT`'s offset as given (0 without it); a negative one lists
    /// nothing.
    pub offset: i64,
    /// `LIMIT`'s count as given (-1 without it); a negative one lists all.
    pub count: i64,
}

/// Parses `XSET.MEMBERS`: `BYDEADLINE` only right after the key, each
/// other option at most once, in any order.
pub fn parse_members(args: &[CmdArg]) -> Result<MembersRequest, RedisError> {
    let mut req = MembersRequest {
        window: Window::ALL,
        rev: false,
        with_ttl: false,
        offset: 0,
        count: -1,
    };
    let mut pos = 2;
    if args.get(pos).is_some_and(|a| is(a, "BYDEADLINE")) {
        let (Some(min), Some(max)) = (args.get(pos + 1), args.get(pos + 2)) else {
            return Err(errors::value_missing(args[pos].as_slice()));
        };
        req.window = parse_window(min, max)?;
        pos += 3;
    }
    let mut limit = false;
    while pos < args.len() {
        let arg = &args[pos];
        if is(arg, "REV") {
            once(&mut req.rev, arg)?;
        } else if is(arg, "WITHTTL") {
            once(&mut req.with_ttl, arg)?;
        } else if is(arg, "LIMIT") {
            once(&mut limit, arg)?;
            if pos + 2 >= args.len() {
                return Err(errors::value_missing(arg.as_slice()));
            }
            req.offset = parse_i64(args[pos + 1].as_slice())?;
            req.count = parse_i64(args[pos + 2].as_slice())?;
            pos += 2;
        } else if is(arg, "BYDEADLINE") {
            return Err(errors::after_key(arg.as_slice()));
        } else {
            return Err(errors::unknown_option(arg.as_slice()));
        }
        pos += 1;
    }
    Ok(req)
}

/// Parses `XSET.COUNT key min max`: the window.
pub fn parse_count(args: &[CmdArg]) -> Result<Window, RedisError> {
    parse_window(&args[2], &args[3])
}

/// Parses the TTL family (`XSET.TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME`)
/// and `XSET.PERSIST`: `key <member|MEMBERS n member ...>`.
pub fn parse_member_target(args: &[CmdArg]) -> Result<Target<'_>, RedisError> {
    Target::parse(args, 2)
}

/// A parsed `XSET.SCAN key cursor [MATCH pattern] [COUNT n] [WITHTTL]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanRequest<'a> {
    pub cursor: u64,
    pub pattern: Option<&'a [u8]>,
    /// At least 1; 10 without `COUNT`.
    pub count: usize,
    pub with_ttl: bool,
}

/// Parses `XSET.SCAN`: the cursor in `SCAN`'s strict form (digits, no
/// leading zero), then options at most once each, in any order.
pub fn parse_scan(args: &[CmdArg]) -> Result<ScanRequest<'_>, RedisError> {
    let cursor = parse_u64(args[2].as_slice()).ok_or_else(|| err(errors::INVALID_CURSOR))?;
    let mut req = ScanRequest {
        cursor,
        pattern: None,
        count: 10,
        with_ttl: false,
    };
    let mut counted = false;
    let mut pos = 3;
    while pos < args.len() {
        let arg = &args[pos];
        if is(arg, "MATCH") {
            if req.pattern.is_some() {
                return Err(errors::given_twice(arg.as_slice()));
            }
            req.pattern = Some(value_of(args, pos)?.as_slice());
            pos += 1;
        } else if is(arg, "COUNT") {
            once(&mut counted, arg)?;
            let n = parse_i64(value_of(args, pos)?.as_slice())?;
            if n < 1 {
                return Err(err(errors::SYNTAX));
            }
            req.count = usize::try_from(n).unwrap_or(usize::MAX);
            pos += 1;
        } else if is(arg, "WITHTTL") {
            once(&mut req.with_ttl, arg)?;
        } else {
            return Err(errors::unknown_option(arg.as_slice()));
        }
        pos += 1;
    }
    Ok(req)
}

/// A parsed command of the `XSET.EXPIRE` family.
pub struct ExpireRequest<'a> {
    /// The absolute deadline; one not after `now_ms` removes the members.
    pub deadline_ms: u64,
    /// [`ExpireCondition::Always`] when none is given.
    pub condition: ExpireCondition,
    pub target: Target<'a>,
}

/// Parses `cmd key time [NX|XX|GT|LT] <member|MEMBERS n member ...>`, its
/// time read in `unit` and made absolute at `now_ms`. A time in the
/// future may grow the set, so it is refused with `OOM` when `over_memory`
/// says the server must refuse growth (asked only then); a time not in the
/// future only removes members, which frees memory, and is accepted, as
/// native `EXPIRE` is. With one argument after the time it is the member,
/// whatever it spells; with more, the first may be a condition, and never
/// a member.
pub fn parse_expire<'a>(
    args: &'a [CmdArg],
    cmd: &str,
    unit: TimeUnit,
    now_ms: u64,
    over_memory: impl FnOnce() -> bool,
) -> Result<ExpireRequest<'a>, RedisError> {
    let value = parse_i64(args[2].as_slice())?;
    if value < 0 {
        return Err(errors::invalid_expire(cmd));
    }
    let deadline_ms =
        to_deadline(value, unit, now_ms).ok_or_else(|| errors::invalid_expire(cmd))?;
    if deadline_ms > now_ms && over_memory() {
        return Err(err(errors::OOM));
    }
    let condition = match args.get(3) {
        Some(arg) if args.len() > 4 => [
            ("NX", ExpireCondition::NoDeadline),
            ("XX", ExpireCondition::HasDeadline),
            ("GT", ExpireCondition::Greater),
            ("LT", ExpireCondition::Less),
        ]
        .into_iter()
        .find(|(w, _)| is(arg, w))
        .map(|(_, c)| c),
        _ => None,
    };
    if let (Some(first), Some(second)) = (condition.map(|_| &args[3]), args.get(4))
        && args.len() > 5
        && ["NX", "XX", "GT", "LT"].iter().any(|w| is(second, w))
    {
        return Err(if is(second, &String::from_utf8_lossy(first.as_slice())) {
            errors::given_twice(second.as_slice())
        } else {
            err(errors::EXPIRE_CONDITIONS)
        });
    }
    let target = Target::parse(args, if condition.is_some() { 4 } else { 3 })?;
    Ok(ExpireRequest {
        deadline_ms,
        condition: condition.unwrap_or(ExpireCondition::Always),
        target,
    })
}

/// A parsed `XSET.RANDMEMBER key [count [WITHTTL]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandMemberRequest {
    /// `None`: one member, replied as a bulk string. A negative count asks
    /// for that many with repeats, at most [`MAX_REPEATED`].
    pub count: Option<i64>,
    pub with_ttl: bool,
}

/// Parses `XSET.RANDMEMBER`, as `SRANDMEMBER` parses: the count first,
/// then only `WITHTTL`.
pub fn parse_randmember(args: &[CmdArg]) -> Result<RandMemberRequest, RedisError> {
    let (count, with_ttl) = match &args[2..] {
        [] => (None, false),
        [count] => (Some(parse_i64(count.as_slice())?), false),
        [count, word] if is(word, "WITHTTL") => (Some(parse_i64(count.as_slice())?), true),
        [count, rest @ ..] => {
            parse_i64(count.as_slice())?;
            return Err(extra_word(rest, "WITHTTL", false));
        }
    };
    if count.is_some_and(|n| n.unsigned_abs() > MAX_REPEATED && n < 0) {
        return Err(err(errors::OUT_OF_RANGE));
    }
    Ok(RandMemberRequest { count, with_ttl })
}

/// A parsed `XSET.POP key [count] [SOONEST]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PopRequest {
    /// `None`: one member, replied as a bulk string.
    pub count: Option<usize>,
    pub soonest: bool,
}

/// Parses `XSET.POP`: the count, if any, first; `SOONEST` last or alone.
pub fn parse_pop(args: &[CmdArg]) -> Result<PopRequest, RedisError> {
    let (count, soonest) = match &args[2..] {
        [] => (None, false),
        [word] if is(word, "SOONEST") => (None, true),
        [count] => (Some(pop_count(count)?), false),
        [count, word] if is(word, "SOONEST") && !is(count, "SOONEST") => {
            (Some(pop_count(count)?), true)
        }
        [first, rest @ ..] => {
            let soonest = is(first, "SOONEST");
            if !soonest {
                pop_count(first)?;
            }
            return Err(extra_word(rest, "SOONEST", soonest));
        }
    };
    Ok(PopRequest { count, soonest })
}

/// `XSET.POP`'s count: a non-negative integer, with `SPOP`'s errors.
fn pop_count(arg: &CmdArg) -> Result<usize, RedisError> {
    let n = parse_i64(arg.as_slice())?;
    usize::try_from(n).map_err(|_| err(errors::OUT_OF_RANGE_POSITIVE))
}

/// The error for `words`, where only `option` may stand, once (`seen`
/// when it stood before them): the first that is another word, or it given
/// twice.
fn extra_word(words: &[CmdArg], option: &str, mut seen: bool) -> RedisError {
    for w in words {
        if !is(w, option) {
            return errors::unknown_option(w.as_slice());
        }
        if std::mem::replace(&mut seen, true) {
            return errors::given_twice(w.as_slice());
        }
    }
    err(errors::SYNTAX)
}

/// Splits `args[at..]` into the `numkeys` keys counted at `args[at]` and
/// what follows them, with `SINTERCARD`'s errors.
fn counted_keys(args: &[CmdArg], at: usize) -> Result<(&[CmdArg], &[CmdArg]), RedisError> {
    let Some(count) = args.get(at) else {
        return Err(err(errors::SYNTAX));
    };
    let n = parse_i64(count.as_slice())
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| err(errors::NUMKEYS_POSITIVE))?;
    let rest = &args[at + 1..];
    if n > rest.len() {
        return Err(err(errors::NUMKEYS_TOO_MANY));
    }
    Ok(rest.split_at(n))
}

/// A parsed `XSET.INTER|UNION|DIFF numkeys key [key ...] [WITHTTL]`.
#[derive(Clone, Copy)]
pub struct AlgebraRequest<'a> {
    /// The operands, at least one.
    pub keys: &'a [CmdArg],
    pub with_ttl: bool,
}

/// Parses `XSET.INTER`, `XSET.UNION` or `XSET.DIFF`: after the counted
/// keys, only `WITHTTL`, once.
pub fn parse_algebra(args: &[CmdArg]) -> Result<AlgebraRequest<'_>, RedisError> {
    let (keys, options) = counted_keys(args, 1)?;
    let mut with_ttl = false;
    for word in options {
        if !is(word, "WITHTTL") {
            return Err(errors::unknown_option(word.as_slice()));
        }
        once(&mut with_ttl, word)?;
    }
    Ok(AlgebraRequest { keys, with_ttl })
}

/// Parses `XSET.INTERSTORE|UNIONSTORE|DIFFSTORE destination numkeys key
/// [key ...]`: the operands, at least one; nothing may follow them.
pub fn parse_store(args: &[CmdArg]) -> Result<&[CmdArg], RedisError> {
    let (keys, options) = counted_keys(args, 2)?;
    if let Some(word) = options.first() {
        return Err(errors::unknown_option(word.as_slice()));
    }
    Ok(keys)
}

/// A parsed `XSET.INTERCARD numkeys key [key ...] [LIMIT limit]`.
#[derive(Clone, Copy)]
pub struct InterCardRequest<'a> {
    /// The operands, at least one.
    pub keys: &'a [CmdArg],
    /// How many members to count at most, at least 1: `LIMIT 0` and no
    /// `LIMIT` are `usize::MAX`.
    pub limit: usize,
}

/// Parses `XSET.INTERCARD`, with `SINTERCARD`'s errors.
pub fn parse_intercard(args: &[CmdArg]) -> Result<InterCardRequest<'_>, RedisError> {
    let (keys, options) = counted_keys(args, 1)?;
    let mut limit = usize::MAX;
    let mut limited = false;
    let mut pos = 0;
    while let Some(word) = options.get(pos) {
        if !is(word, "LIMIT") {
            return Err(errors::unknown_option(word.as_slice()));
        }
        once(&mut limited, word)?;
        limit = parse_i64(value_of(options, pos)?.as_slice())
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| err(errors::LIMIT_NEGATIVE))
            .map(|n| if n == 0 { usize::MAX } else { n })?;
        pos += 2;
    }
    Ok(InterCardRequest { keys, limit })
}

/// What an `XSET.NOTIFY` asks.
#[derive(Debug, PartialEq, Eq)]
pub enum NotifyRequest {
    /// `XSET.NOTIFY key`: the stream's name, or nil.
    Query,
    /// `XSET.NOTIFY key OFF`.
    Off,
    /// `XSET.NOTIFY key STREAM stream [MAXLEN [~] n]`: the stream is
    /// another key than the set, and `maxlen` positive.
    Stream(Delivery),
}

/// Parses `XSET.NOTIFY`.
pub fn parse_notify(args: &[CmdArg]) -> Result<NotifyRequest, RedisError> {
    let Some(word) = args.get(2) else {
        return Ok(NotifyRequest::Query);
    };
    if is(word, "OFF") {
        return match args.get(3) {
            None => Ok(NotifyRequest::Off),
            Some(extra) => Err(errors::unknown_option(extra.as_slice())),
        };
    }
    if !is(word, "STREAM") {
        return Err(errors::unknown_option(word.as_slice()));
    }
    let stream = value_of(args, 2)?.as_slice().to_vec();
    let mut maxlen = None;
    let mut pos = 4;
    while let Some(option) = args.get(pos) {
        if !is(option, "MAXLEN") {
            return Err(errors::unknown_option(option.as_slice()));
        }
        if maxlen.is_some() {
            return Err(errors::given_twice(option.as_slice()));
        }
        let mut value = value_of(args, pos)?;
        pos += 1;
        if value.as_slice() == b"~" {
            value = value_of(args, pos)?;
            pos += 1;
        }
        let n = parse_i64(value.as_slice())?;
        if n <= 0 {
            return Err(err(errors::MAXLEN_POSITIVE));
        }
        maxlen = Some(n as u64);
        pos += 1;
    }
    if stream == args[1].as_slice() {
        return Err(err(errors::STREAM_IS_THE_SET));
    }
    Ok(NotifyRequest::Stream(Delivery { stream, maxlen }))
}

/// A parsed `XSET.DELIVERED key stream first-id trimmed-to member deadline
/// [member deadline ...]`.
pub struct DeliveredRequest<'a> {
    /// The first entry's ID; entry `i` has the ID `i` places after it,
    /// and the last of them exists.
    pub first_id: StreamId,
    /// The stream's length after the primary trimmed it; `None` (written
    /// `-1`) when it was not trimmed.
    pub trimmed_to: Option<u64>,
    /// `member deadline` pairs, at least one; each deadline is the
    /// decimal of a time up to `MAX_DEADLINE_MS`.
    pub entries: &'a [CmdArg],
}

/// Parses `XSET.DELIVERED`: everything is checked before anything is
/// applied, so a bad one changes nothing.
pub fn parse_delivered(args: &[CmdArg]) -> Result<DeliveredRequest<'_>, RedisError> {
    if args[2].as_slice() == args[1].as_slice() {
        return Err(err(errors::STREAM_IS_THE_SET));
    }
    let invalid_id = || err(errors::INVALID_STREAM_ID);
    let (ms, seq) = args[3]
        .as_slice()
        .iter()
        .position(|&b| b == b'-')
        .map(|dash| args[3].as_slice().split_at(dash))
        .ok_or_else(invalid_id)?;
    let first_id = StreamId {
        ms: parse_u64(ms).ok_or_else(invalid_id)?,
        seq: parse_u64(&seq[1..]).ok_or_else(invalid_id)?,
    };
    let trimmed_to = match parse_i64(args[4].as_slice())? {
        -1 => None,
        n => Some(u64::try_from(n).map_err(|_| err(errors::OUT_OF_RANGE))?),
    };
    let entries = &args[5..];
    if !entries.len().is_multiple_of(2) {
        return Err(errors::arity("xset.delivered"));
    }
    // An entry's ID is after 0-0, as `XADD` requires, and the last one
    // exists.
    let last = first_id.after(entries.len() as u64 / 2 - 1);
    if first_id == (StreamId { ms: 0, seq: 0 }) || last.is_none() {
        return Err(invalid_id());
    }
    for deadline in entries.iter().skip(1).step_by(2) {
        if parse_u64(deadline.as_slice()).is_none_or(|d| d > MAX_DEADLINE_MS) {
            return Err(err(errors::NOT_INTEGER));
        }
    }
    Ok(DeliveredRequest {
        first_id,
        trimmed_to,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use crate::commands::{INTERNAL, TABLE};

    /// The fuzz target `requests` cannot compile the table (it holds the
    /// server's types), so it lists the commands itself: that list is the
    /// table's names and arities, in order.
    #[test]
    fn the_fuzz_target_names_every_command() {
        let target = include_str!("../../fuzz/fuzz_targets/requests.rs");
        let list = target
            .split_once("const COMMANDS: &[(&str, i32)] = &[")
            .and_then(|(_, rest)| rest.split_once("];"))
            .expect("the fuzz target's COMMANDS")
            .0;
        let listed: Vec<(String, i32)> = list
            .split('(')
            .skip(1)
            .map(|entry| {
                let (name, rest) = entry.split_once(", ").expect("name, arity");
                let arity = rest.split_once(')').expect(")").0.parse().expect("arity");
                (name.trim_matches('"').to_string(), arity)
            })
            .collect();
        let table: Vec<(String, i32)> = TABLE
            .iter()
            .chain(INTERNAL)
            .map(|spec| (spec.name.to_string(), spec.arity))
            .collect();
        assert_eq!(listed, table);
    }
}
