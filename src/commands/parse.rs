//! Argument parsing shared by every command: strict integers (Redis's
//! `string2ll` rules), keywords, the `MEMBERS n ...` block and the
//! one-or-many member target, and the conversion of a typed time into an
//! absolute deadline. Parsing never
//! touches a key: a command that fails here has changed nothing.

use crate::errors::{self, err};
use crate::ffi::key::CmdArg;
use redis_module::{RedisError, RedisValue};
use xset_core::{Bound, BoundValue, MAX_DEADLINE_MS, Window, string2ll};

/// Parses a signed 64-bit integer exactly as Redis does ([`string2ll`]):
/// optional `-`, no `+`, no spaces, no leading zeros.
pub fn parse_i64(bytes: &[u8]) -> Result<i64, RedisError> {
    string2ll(bytes).ok_or_else(|| err(errors::NOT_INTEGER))
}

/// Parses an unsigned 64-bit integer: digits only, no leading zeros.
pub fn parse_u64(bytes: &[u8]) -> Option<u64> {
    let well_formed = match bytes {
        [] => false,
        [b'0'] => true,
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.iter().all(u8::is_ascii_digit),
    };
    if !well_formed {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// Parses one end of a deadline window, as `ZRANGEBYSCORE` parses a score
/// but in integer Unix milliseconds: an integer (Redis's rules), `-inf` or
/// `+inf` (any case), each optionally after one `(` that makes it
/// exclusive.
pub fn parse_bound(bytes: &[u8]) -> Result<Bound, RedisError> {
    let (exclusive, rest) = match bytes.strip_prefix(b"(") {
        Some(rest) => (true, rest),
        None => (false, bytes),
    };
    let value = if rest.eq_ignore_ascii_case(b"-inf") {
        BoundValue::NegInf
    } else if rest.eq_ignore_ascii_case(b"+inf") {
        BoundValue::PosInf
    } else {
        BoundValue::Ms(parse_i64(rest).map_err(|_| err(errors::MIN_MAX_NOT_INTEGER))?)
    };
    Ok(Bound { value, exclusive })
}

/// Parses the `min max` bounds of a deadline window.
pub fn parse_window(min: &CmdArg, max: &CmdArg) -> Result<Window, RedisError> {
    Ok(Window::new(
        parse_bound(min.as_slice())?,
        parse_bound(max.as_slice())?,
    ))
}

/// Whether `arg` is the keyword `kw`, in any case.
pub fn is(arg: &CmdArg, kw: &str) -> bool {
    arg.as_slice().eq_ignore_ascii_case(kw.as_bytes())
}

/// Parses `MEMBERS count item ...` starting at `args[pos]`, which must run
/// to the end of the command, each item being `per_member` arguments (1 for
/// members, 2 for member-time pairs). The same mistake gets the same error
/// in every command: no `MEMBERS` where it must be is a syntax error that
/// names the word found there ([`not_members`]); a count that is not a
/// positive integer, or that does not match what follows, says so.
pub fn members_block(
    args: &[CmdArg],
    pos: usize,
    per_member: usize,
) -> Result<&[CmdArg], RedisError> {
    if !args.get(pos).is_some_and(|a| is(a, "MEMBERS")) {
        return Err(not_members(args, pos));
    }
    let count = args
        .get(pos + 1)
        .and_then(|c| parse_i64(c.as_slice()).ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| err(errors::MEMBERS_COUNT_POSITIVE))?;
    let rest = &args[pos + 2..];
    if rest.len() as u64 != (count as u64).saturating_mul(per_member as u64) {
        return Err(err(errors::MEMBERS_COUNT_MISMATCH));
    }
    Ok(rest)
}

/// The error for `args[pos]`, which is neither `MEMBERS` nor an option the
/// command knows: an unknown option when a `MEMBERS` follows it (the
/// block is there, this word is not an option), else the missing
/// `MEMBERS` before it (or at the end, when the command ends there).
pub fn not_members(args: &[CmdArg], pos: usize) -> RedisError {
    match args.get(pos) {
        None => errors::members_expected(None),
        Some(w) if args[pos + 1..].iter().any(|a| is(a, "MEMBERS")) => {
            errors::unknown_option(w.as_slice())
        }
        Some(w) => errors::members_expected(Some(w.as_slice())),
    }
}

/// Remembers that option `word` was given: a second time is an error
/// that names it.
pub fn once(seen: &mut bool, word: &CmdArg) -> Result<(), RedisError> {
    if std::mem::replace(seen, true) {
        return Err(errors::given_twice(word.as_slice()));
    }
    Ok(())
}

/// The value after option `args[pos]`, or the error that names the option.
pub fn value_of(args: &[CmdArg], pos: usize) -> Result<&CmdArg, RedisError> {
    args.get(pos + 1)
        .ok_or_else(|| errors::value_missing(args[pos].as_slice()))
}

/// The members a command names from `args[pos]` on: one member when it is
/// the last argument, else a `MEMBERS count member ...` block. Decided by
/// the argument count alone, so a member may be spelt like any keyword.
pub enum Target<'a> {
    /// `member`: the reply is one integer.
    One(&'a CmdArg),
    /// `MEMBERS count member ...`: the reply is an array.
    Many(&'a [CmdArg]),
}

impl<'a> Target<'a> {
    /// Parses the target starting at `args[pos]`.
    pub fn parse(args: &'a [CmdArg], pos: usize) -> Result<Target<'a>, RedisError> {
        if args.len() == pos + 1 {
            return Ok(Target::One(&args[pos]));
        }
        members_block(args, pos, 1).map(Target::Many)
    }

    /// The members, in order.
    pub fn members(&self) -> &'a [CmdArg] {
        match *self {
            Target::One(m) => std::slice::from_ref(m),
            Target::Many(ms) => ms,
        }
    }

    /// The reply: one integer for a single member, else an array.
    pub fn reply(&self, mut codes: Vec<i64>) -> RedisValue {
        match self {
            Target::One(_) => RedisValue::Integer(codes.pop().unwrap_or(-2)),
            Target::Many(_) => {
                RedisValue::Array(codes.into_iter().map(RedisValue::Integer).collect())
            }
        }
    }
}

/// How a typed time is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds from now (`EX`, the default).
    Seconds,
    /// Milliseconds from now (`PX`).
    Millis,
    /// A Unix time in seconds (`EXAT`).
    UnixSeconds,
    /// A Unix time in milliseconds (`PXAT`).
    UnixMillis,
}

/// Converts a typed time into an absolute deadline in Unix milliseconds.
/// Returns `None` when it overflows or exceeds [`MAX_DEADLINE_MS`]; a
/// negative or zero value yields a deadline not after `now_ms` (the caller
/// decides whether that is an error or a removal).
pub fn to_deadline(value: i64, unit: TimeUnit, now_ms: u64) -> Option<u64> {
    let ms = match unit {
        TimeUnit::Seconds | TimeUnit::UnixSeconds => value.checked_mul(1000)?,
        TimeUnit::Millis | TimeUnit::UnixMillis => value,
    };
    let deadline = match unit {
        TimeUnit::Seconds | TimeUnit::Millis => (now_ms as i64).checked_add(ms)?,
        TimeUnit::UnixSeconds | TimeUnit::UnixMillis => ms,
    };
    if deadline > MAX_DEADLINE_MS as i64 {
        return None;
    }
    Some(deadline.max(0) as u64)
}

/// Parses a time for `cmd` (an add): it must be positive and not overflow.
pub fn add_deadline(
    arg: &CmdArg,
    unit: TimeUnit,
    now_ms: u64,
    cmd: &str,
) -> Result<u64, RedisError> {
    let value = parse_i64(arg.as_slice())?;
    if value <= 0 {
        return Err(errors::invalid_expire(cmd));
    }
    to_deadline(value, unit, now_ms).ok_or_else(|| errors::invalid_expire(cmd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_string2ll() {
        assert_eq!(parse_i64(b"0").ok(), Some(0));
        assert_eq!(parse_i64(b"-12").ok(), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807").ok(), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808").ok(), Some(i64::MIN));
        assert_eq!(parse_i64(b"-1").ok(), Some(-1));
        assert_eq!(parse_i64(b"1234567890").ok(), Some(1_234_567_890));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"-0",
            b" 1",
            b"1 ",
            b"1.5",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"1a",
            b"--1",
            b"-01",
            b"1\xff",
        ] {
            assert!(
                parse_i64(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn bounds_follow_zrangebyscore_in_integers() {
        let ok = |b: &[u8]| parse_bound(b).ok();
        let at = |ms, exclusive| {
            Some(Bound {
                value: BoundValue::Ms(ms),
                exclusive,
            })
        };
        assert_eq!(ok(b"5"), at(5, false));
        assert_eq!(ok(b"(5"), at(5, true));
        assert_eq!(ok(b"-5"), at(-5, false));
        assert_eq!(ok(b"(-5"), at(-5, true));
        assert_eq!(ok(b"(0"), at(0, true));
        assert_eq!(ok(b"9223372036854775807"), at(i64::MAX, false));
        assert_eq!(ok(b"-inf"), Some(Bound::NEG_INF));
        assert_eq!(ok(b"+INF"), Some(Bound::POS_INF));
        assert_eq!(ok(b"(+inf"), Some(Bound::exclusive(BoundValue::PosInf)));
        assert_eq!(ok(b"(-Inf"), Some(Bound::exclusive(BoundValue::NegInf)));
        for bad in [
            &b""[..],
            b"(",
            b"((1",
            b"abc",
            b"1.5",
            b"+1",
            b"01",
            b"inf",
            b"-infinity",
            b"+inf(",
            b" 1",
            b"( 1",
            b"1)",
            b"9223372036854775808",
            b"(-9223372036854775809",
        ] {
            let e = parse_bound(bad).err();
            assert!(
                matches!(e, Some(RedisError::Str(m)) if m == errors::MIN_MAX_NOT_INTEGER),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn deadlines_convert_and_overflow() {
        assert_eq!(to_deadline(2, TimeUnit::Seconds, 1000), Some(3000));
        assert_eq!(to_deadline(2, TimeUnit::Millis, 1000), Some(1002));
        assert_eq!(to_deadline(2, TimeUnit::UnixSeconds, 1000), Some(2000));
        assert_eq!(to_deadline(2, TimeUnit::UnixMillis, 1000), Some(2));
        assert_eq!(to_deadline(i64::MAX, TimeUnit::Seconds, 1000), None);
        assert_eq!(to_deadline(i64::MAX, TimeUnit::Millis, 1000), None);
        assert_eq!(
            to_deadline(i64::MAX, TimeUnit::UnixMillis, 0),
            Some(i64::MAX as u64)
        );
        assert_eq!(to_deadline(-5, TimeUnit::Millis, 1000), Some(995));
        assert_eq!(to_deadline(-5, TimeUnit::UnixMillis, 1000), Some(0));
    }
}
