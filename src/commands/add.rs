//! `XSET.ADD` and `XSET.ADDEX`: add members with their own deadlines.
//!
//! ```text
//! XSET.ADD key member ttl [member ttl ...]
//! XSET.ADDEX key [NX|XX] [GT|LT] [EX|PX|EXAT|PXAT] [MAXLEN maxlen] MEMBERS count member time [member time ...]
//! ```
//! `XSET.ADD` takes pairs only, literally: every other argument is a member
//! whatever it spells, every one after it a TTL in seconds. `XSET.ADDEX`
//! takes options in any order before `MEMBERS`; everything after `MEMBERS
//! count` is data.
//!
//! Compatibility: version 0.1 propagated and rewrote adds as `XSET.ADD key
//! PXAT MEMBERS n ...`, which always has an odd argument count. A replica or
//! a loading server (its AOF) still reads that as `XSET.ADDEX`; on a
//! primary an odd count is an arity error, as for `HSET`.

use super::parse::{TimeUnit, add_deadline, members_block, parse_i64};
use super::reply::int;
use crate::clock::Clock;
use crate::errors::{self, err};
use crate::faults::{self, Fault};
use crate::keyspace::{self, with_write};
use crate::xset::{AddOutcome, Compare, Presence};
use redis_module::{Context, RedisError, RedisResult, RedisString};
use std::collections::HashMap;

/// A parsed add.
struct AddRequest<'a> {
    presence: Presence,
    compare: Compare,
    max_len: Option<usize>,
    /// Member and absolute deadline; each member once, at its last position.
    pairs: Vec<(&'a RedisString, u64)>,
}

impl<'a> AddRequest<'a> {
    fn plain(pairs: Vec<(&'a RedisString, u64)>) -> AddRequest<'a> {
        AddRequest {
            presence: Presence::Any,
            compare: Compare::Any,
            max_len: None,
            pairs: last_wins(pairs),
        }
    }
}

/// A member named twice counts once and its last deadline wins.
fn last_wins(mut pairs: Vec<(&RedisString, u64)>) -> Vec<(&RedisString, u64)> {
    if pairs.len() > 1 {
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
    pairs
}

fn parse_pairs<'a>(
    data: &'a [RedisString],
    unit: TimeUnit,
    now_ms: u64,
    cmd: &str,
) -> Result<Vec<(&'a RedisString, u64)>, RedisError> {
    let mut pairs = Vec::with_capacity(data.len() / 2);
    for pair in data.chunks_exact(2) {
        pairs.push((&pair[0], add_deadline(&pair[1], unit, now_ms, cmd)?));
    }
    Ok(pairs)
}

/// Parses `XSET.ADDEX`'s options from `args[pos]` on, then its `MEMBERS`
/// block.
fn parse_addex(
    args: &[RedisString],
    mut pos: usize,
    now_ms: u64,
) -> Result<AddRequest<'_>, RedisError> {
    let mut presence = Presence::Any;
    let mut compare = Compare::Any;
    let mut unit = None;
    let mut max_len = None;
    let data = loop {
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
            break members_block(args, pos, 2)?;
        } else {
            return Err(err(errors::SYNTAX));
        }
        pos += 1;
    };
    if presence == Presence::OnlyNew && compare != Compare::Any {
        return Err(err(errors::GT_LT_NX));
    }
    let unit = unit.unwrap_or(TimeUnit::Seconds);
    Ok(AddRequest {
        presence,
        compare,
        max_len,
        pairs: last_wins(parse_pairs(data, unit, now_ms, "xset.addex")?),
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

/// `XSET.ADD key member ttl [member ttl ...]`: replies the number of
/// members that were absent (or expired) and are now present.
pub fn xset_add(ctx: &Context, args: &[RedisString], clock: Clock) -> RedisResult {
    let req = if args.len().is_multiple_of(2) && args.len() >= 4 {
        AddRequest::plain(parse_pairs(
            &args[2..],
            TimeUnit::Seconds,
            clock.now_ms,
            "xset.add",
        )?)
    } else if !clock.primary && args.len() >= 5 {
        // A 0.1 `XSET.ADD key PXAT MEMBERS ...` from a primary or an AOF.
        parse_addex(args, 2, clock.now_ms)?
    } else {
        return Err(errors::arity("xset.add"));
    };
    run_add(ctx, &args[1], clock, req)
}

/// `XSET.ADDEX key [NX|XX] [GT|LT] [EX|PX|EXAT|PXAT] [MAXLEN n] MEMBERS
/// count member time [...]`: replies as `XSET.ADD`.
pub fn xset_addex(ctx: &Context, args: &[RedisString], clock: Clock) -> RedisResult {
    let req = parse_addex(args, 2, clock.now_ms)?;
    run_add(ctx, &args[1], clock, req)
}

fn run_add(ctx: &Context, key: &RedisString, clock: Clock, mut req: AddRequest) -> RedisResult {
    let now_ms = clock.write_ms();
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
                    if faults::hit(Fault::WriteMidway) {
                        panic!("fault injected in a write command");
                    }
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
        let trimmed = match req.max_len {
            Some(max) if set.len() > max => set.pop_soonest(set.len() - max),
            _ => Vec::new(),
        };
        keyspace::propagate_add(ctx, key, &req.pairs);
        if !req.pairs.is_empty() {
            keyspace::notify(ctx, c"xset.add", key);
        }
        if !removed.is_empty() || !trimmed.is_empty() {
            let mut gone: Vec<&[u8]> = removed;
            gone.extend(trimmed.iter().map(|m| &**m));
            keyspace::propagate_rem(ctx, key, &gone);
            keyspace::notify(ctx, c"xset.rem", key);
        }
        Ok(int(added))
    })
}
