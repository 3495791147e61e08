//! `XSET.ADD` and `XSET.ADDEX`: add members with their own deadlines.
//!
//! ```text
//! XSET.ADD key member ttl [member ttl ...]
//! XSET.ADDEX key [NX|XX] [GT|LT] [EX|PX|EXAT|PXAT] [MAXLEN maxlen] [CAP cap] [CODES] MEMBERS count member time [member time ...]
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
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};
use std::collections::HashMap;

/// A parsed add.
struct AddRequest<'a> {
    presence: Presence,
    compare: Compare,
    max_len: Option<usize>,
    /// `CAP n`: refuse the whole add if the set would hold more than n live
    /// members.
    cap: Option<usize>,
    /// `CODES`: reply one code per pair given, in order, instead of the
    /// count; then `given` is how many pairs were given and `origin[i]` the
    /// position of `pairs[i]` among them.
    codes: bool,
    given: usize,
    origin: Vec<usize>,
    /// Member and absolute deadline; each member once, at its last position.
    pairs: Vec<(&'a RedisString, u64)>,
}

impl<'a> AddRequest<'a> {
    fn plain(pairs: Vec<(&'a RedisString, u64)>) -> AddRequest<'a> {
        AddRequest {
            presence: Presence::Any,
            compare: Compare::Any,
            max_len: None,
            cap: None,
            codes: false,
            given: pairs.len(),
            origin: Vec::new(),
            pairs: last_wins(pairs, None),
        }
    }
}

/// A member named twice counts once and its last deadline wins. With
/// `origin`, records where each kept pair stood among those given.
fn last_wins<'a>(
    mut pairs: Vec<(&'a RedisString, u64)>,
    origin: Option<&mut Vec<usize>>,
) -> Vec<(&'a RedisString, u64)> {
    let mut kept: Vec<usize> = Vec::new();
    if pairs.len() > 1 {
        let mut last: HashMap<&[u8], usize> = HashMap::with_capacity(pairs.len());
        for (i, (m, _)) in pairs.iter().enumerate() {
            last.insert(m.as_slice(), i);
        }
        if last.len() < pairs.len() {
            let mut i = 0;
            pairs.retain(|(m, _)| {
                let keep = last.get(m.as_slice()) == Some(&i);
                if keep {
                    kept.push(i);
                }
                i += 1;
                keep
            });
        } else {
            kept.extend(0..pairs.len());
        }
    } else {
        kept.extend(0..pairs.len());
    }
    if let Some(origin) = origin {
        *origin = kept;
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
    let mut cap = None;
    let mut codes = false;
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
        } else if is("CAP") {
            let n = args.get(pos + 1).ok_or_else(|| err(errors::SYNTAX))?;
            let n = parse_i64(n.as_slice())?;
            if cap.is_some() {
                return Err(err(errors::SYNTAX));
            }
            if n <= 0 {
                return Err(err(errors::CAP_POSITIVE));
            }
            cap = Some(usize::try_from(n).unwrap_or(usize::MAX));
            pos += 1;
        } else if is("CODES") {
            if codes {
                return Err(err(errors::SYNTAX));
            }
            codes = true;
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
    let pairs = parse_pairs(data, unit, now_ms, "xset.addex")?;
    let given = pairs.len();
    let mut origin = Vec::new();
    let pairs = last_wins(pairs, codes.then_some(&mut origin));
    Ok(AddRequest {
        presence,
        compare,
        max_len,
        cap,
        codes,
        given,
        origin,
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

fn run_add(ctx: &Context, key: &RedisString, clock: Clock, req: AddRequest) -> RedisResult {
    let now_ms = clock.write_ms();
    with_write(ctx, key, clock, |set| {
        if let Some(cap) = req.cap {
            // Members this add would bring in: named, not live now, a time
            // in the future, and no XX. A refresh counts once (it is live).
            let incoming = req
                .pairs
                .iter()
                .filter(|(m, d)| {
                    *d > now_ms
                        && req.presence != Presence::OnlyExisting
                        && set.live_deadline_of(m.as_slice(), now_ms).is_none()
                })
                .count();
            if set.live_len(now_ms) + incoming > cap {
                return Ok(RedisValue::Null);
            }
        }
        let mut added = 0;
        let mut removed: Vec<&[u8]> = Vec::new();
        // The pairs that were written, in order: what gets propagated.
        let mut written: Vec<(&RedisString, u64)> = Vec::with_capacity(req.pairs.len());
        let mut codes = vec![CODE_UNTOUCHED; if req.codes { req.given } else { 0 }];
        for (i, &(member, deadline_ms)) in req.pairs.iter().enumerate() {
            let outcome = set.add(
                member.as_slice(),
                deadline_ms,
                req.presence,
                req.compare,
                now_ms,
            );
            let code = match outcome {
                AddOutcome::Added => {
                    added += 1;
                    if faults::hit(Fault::WriteMidway) {
                        panic!("fault injected in a write command");
                    }
                    written.push((member, deadline_ms));
                    CODE_ADDED
                }
                AddOutcome::Updated => {
                    written.push((member, deadline_ms));
                    CODE_CHANGED
                }
                AddOutcome::Removed => {
                    removed.push(member.as_slice());
                    CODE_REMOVED
                }
                AddOutcome::Unchanged | AddOutcome::Skipped | AddOutcome::Ignored => CODE_UNTOUCHED,
            };
            if let Some(&at) = req.origin.get(i) {
                codes[at] = code;
            }
        }
        let trimmed = match req.max_len {
            Some(max) if set.len() > max => set.pop_soonest(set.len() - max),
            _ => Vec::new(),
        };
        keyspace::propagate_add(ctx, key, &written);
        if !written.is_empty() {
            keyspace::notify(ctx, c"xset.add", key);
        }
        if !removed.is_empty() || !trimmed.is_empty() {
            let mut gone: Vec<&[u8]> = removed;
            gone.extend(trimmed.iter().map(|m| &**m));
            keyspace::propagate_rem(ctx, key, &gone);
            keyspace::notify(ctx, c"xset.rem", key);
        }
        if req.codes {
            Ok(RedisValue::Array(
                codes.into_iter().map(RedisValue::Integer).collect(),
            ))
        } else {
            Ok(int(added))
        }
    })
}

/// `CODES` replies, one per pair given: the member was added (absent or
/// expired before), its deadline changed, it was removed (an absolute time
/// not in the future), or it was left as it was (a condition, the same
/// deadline, or a later pair naming the same member).
const CODE_ADDED: i64 = 1;
const CODE_CHANGED: i64 = 2;
const CODE_REMOVED: i64 = 3;
const CODE_UNTOUCHED: i64 = 0;
