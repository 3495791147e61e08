//! Integers as Redis writes and reads them (`string2ll` in `src/util.c`):
//! an optional `-`, then `0` alone or digits without a leading zero; no
//! `+`, no spaces, no `-0`, nothing past `i64`'s range. Commands read their
//! integer arguments this way and module arguments their numbers, so that
//! every spelling the server refuses (in a command or in `CONFIG SET`) is
//! refused here too.

/// The `i64` that `bytes` spells in Redis's grammar, or `None`. Digits
/// are accumulated directly (no UTF-8 check or `str::parse`): every add
/// parses a time.
pub fn string2ll(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    let value = match digits {
        [b'0'] if !negative => Some(0),
        [b'1'..=b'9', ..] => digits.iter().try_fold(0u64, |acc, &d| {
            let digit = d.checked_sub(b'0').filter(|&d| d <= 9)?;
            acc.checked_mul(10)?.checked_add(u64::from(digit))
        }),
        _ => None,
    }?;
    if negative {
        // i64::MIN's magnitude is one more than i64::MAX.
        (value <= i64::MAX as u64 + 1).then(|| (value as i64).wrapping_neg())
    } else {
        i64::try_from(value).ok()
    }
}
