//! `XSET.ADD`: add members with their own TTLs.
//!
//! ```text
//! XSET.ADD key member ttl [member ttl ...]
//! XSET.ADD key [NX|XX] [GT|LT] [EX|PX|EXAT|PXAT] [MAXLEN n] MEMBERS count member time [member time ...]
//! ```
//! The first form is the card's: TTLs in seconds, no options. The second
//! form is chosen when the argument after the key is one of the option
//! words or `MEMBERS` (any case); everything after `MEMBERS count` is data,
//! so it is the safe form for arbitrary member bytes.

use super::parse::{TimeUnit, add_deadline, parse_i64};
use super::{int, notify, propagate, propagate_rem, with_write};
use crate::errors::{self, err};
use crate::ffi::{self, Clock};
use crate::xset::{AddOutcome, Compare, Presence};
use redis_module::{Context, RedisError, RedisResult, RedisString};
use std::collections::HashMap;

const OPTION_WORDS: [&str; 10] = [
    "NX", "XX", "GT", "LT", "EX", "PX", "EXAT", "PXAT", "MAXLEN", "MEMBERS",
];

/// A parsed `XSET.ADD`.
struct AddRequest<'a> {
    presence: Presence,
    compare: Compare,
    max_len: Option<usize>,
    /// Member and absolute deadline; each member once, at its last position.
    pairs: Vec<(&'a RedisString, u64)>,
}

fn parse<'a>(args: &'a [RedisString], now_ms: u64) -> Result<AddRequest<'a>, RedisError> {
    let mut presence = Presence::Any;
    let mut compare = Compare::Any;
    let mut unit = None;
    let mut max_len = None;
    let mut pos = 2;
    let first = args[2].as_slice();
    let options_form = OPTION_WORDS
        .iter()
        .any(|w| first.eq_ignore_ascii_case(w.as_bytes()));
    let data: &[RedisString] = if options_form {
        loop {
            let Some(arg) = args.get(pos).map(RedisString::as_slice) else {
                return Err(err(errors::SYNTAX));
            };
            let is = |w: &str| arg.eq_ignore_ascii_case(w.as_bytes());
            let set_unit = |u| match unit {
                None => Ok(Some(u)),
                Some(_) => Err(err(errors::SYNTAX)),
            };
            if is("NX") {
                presence = merge_presence(presence, Presence::OnlyNew)?;
            } else if is("XX") {
                presence = merge_presence(presence, Presence::OnlyExisting)?;
            } else if is("GT") {
                compare = merge_compare(compare, Compare::Greater)?;
            } else if is("LT") {
                compare = merge_compare(compare, Compare::Less)?;
            } else if is("EX") {
                unit = set_unit(TimeUnit::Seconds)?;
            } else if is("PX") {
                unit = set_unit(TimeUnit::Millis)?;
            } else if is("EXAT") {
                unit = set_unit(TimeUnit::UnixSeconds)?;
            } else if is("PXAT") {
                unit = set_unit(TimeUnit::UnixMillis)?;
            } else if is("MAXLEN") {
                let n = args.get(pos + 1).ok_or_else(|| err(errors::SYNTAX))?;
                let n = parse_i64(n.as_slice())?;
                if n <= 0 {
                    return Err(err(errors::MAXLEN_POSITIVE));
                }
                max_len = Some(usize::try_from(n).unwrap_or(usize::MAX));
                pos += 1;
            } else if is("MEMBERS") {
                let count = args.get(pos + 1).ok_or_else(|| err(errors::SYNTAX))?;
                let count = parse_i64(count.as_slice())?;
                if count <= 0 {
                    return Err(err(errors::MEMBERS_COUNT_POSITIVE));
                }
                let rest = &args[pos + 2..];
                if rest.len() as u64 != 2 * count as u64 {
                    return Err(err(errors::MEMBERS_COUNT_MISMATCH));
                }
                break rest;
            } else {
                return Err(err(errors::SYNTAX));
            }
            pos += 1;
        }
    } else {
        if !args.len().is_multiple_of(2) {
            return Err(err(errors::PAIRS_MISSING));
        }
        &args[2..]
    };
    if presence == Presence::OnlyNew && compare != Compare::Any {
        return Err(err(errors::GT_LT_NX));
    }
    let unit = unit.unwrap_or(TimeUnit::Seconds);
    let mut pairs = Vec::with_capacity(data.len() / 2);
    for pair in data.chunks_exact(2) {
        pairs.push((&pair[0], add_deadline(&pair[1], unit, now_ms)?));
    }
    if pairs.len() > 1 {
        // A member named twice counts once and its last deadline wins.
        let mut last: HashMap<&[u8], usize> = HashMap::with_capacity(pairs.len());
        for (i, (m, _)) in pairs.iter().enumerate() {
            last.insert(m.as_slice(), i);
        }
        if last.len() < pairs.len() {
            let mut i = 0;
            pairs.retain(|(m, _)| {
                let keep = last.get(m.as_slice()) == Some(&i);
                i += 1;
                keep
            });
        }
    }
    Ok(AddRequest {
        presence,
        compare,
        max_len,
        pairs,
    })
}

fn merge_presence(old: Presence, new: Presence) -> Result<Presence, RedisError> {
    match old {
        Presence::Any => Ok(new),
        o if o == new => Ok(new),
        _ => Err(err(errors::NX_AND_XX)),
    }
}

fn merge_compare(old: Compare, new: Compare) -> Result<Compare, RedisError> {
    match old {
        Compare::Any => Ok(new),
        o if o == new => Ok(new),
        _ => Err(err(errors::GT_LT_NX)),
    }
}

/// `XSET.ADD`: replies the number of members that were absent (or expired)
/// and are now present. O(k log n) for k pairs.
pub fn xset_add(ctx: &Context, args: &[RedisString], clock: Clock) -> RedisResult {
    if args.len() < 4 {
        return Err(errors::arity("xset.add"));
    }
    let mut req = parse(args, clock.now_ms)?;
    let key = &args[1];
    // Replicas and loaders apply what the primary decided, as of time zero.
    let now_ms = if clock.primary { clock.now_ms } else { 0 };
    with_write(ctx, key, clock, |set| {
        let mut added = 0;
        let mut removed: Vec<&[u8]> = Vec::new();
        // `pairs` keeps just the pairs that were written, in order: they are
        // what gets propagated, and no second vector is needed.
        req.pairs.retain(|&(member, deadline_ms)| {
            let member = member.as_slice();
            match set.add(member, deadline_ms, req.presence, req.compare, now_ms) {
                AddOutcome::Added => {
                    added += 1;
                    true
                }
                AddOutcome::Updated => true,
                AddOutcome::Removed => {
                    removed.push(member);
                    false
                }
                AddOutcome::Unchanged | AddOutcome::Skipped | AddOutcome::Ignored => false,
            }
        });
        let written = &req.pairs;
        let trimmed = match req.max_len {
            Some(max) if set.len() > max => set.pop_soonest(set.len() - max),
            _ => Vec::new(),
        };
        let fast = match written[..] {
            [(member, deadline_ms)] => ffi::replicate_add_one(ctx, key, member, deadline_ms),
            _ => false,
        };
        if !fast && !written.is_empty() {
            let deadlines: Vec<String> = written.iter().map(|(_, d)| d.to_string()).collect();
            let count = written.len().to_string();
            let mut parts: Vec<&[u8]> = Vec::with_capacity(3 + 2 * written.len());
            parts.extend([&b"PXAT"[..], b"MEMBERS", count.as_bytes()]);
            for ((member, _), d) in written.iter().zip(&deadlines) {
                parts.push(member.as_slice());
                parts.push(d.as_bytes());
            }
            propagate(ctx, "XSET.ADD", key, &parts);
        }
        if !written.is_empty() {
            notify(ctx, c"xset.add", key);
        }
        if !removed.is_empty() || !trimmed.is_empty() {
            let mut gone: Vec<&[u8]> = removed;
            gone.extend(trimmed.iter().map(|m| &**m));
            propagate_rem(ctx, key, &gone);
            notify(ctx, c"xset.rem", key);
        }
        Ok(int(added))
    })
}
