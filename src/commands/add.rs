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

use super::parse::{TimeUnit, add_deadline, members_block, not_members, once, parse_i64, value_of};
use super::reply::int;
use crate::clock::Clock;
use crate::errors::{self, err};
use crate::faults::{self, Fault};
use crate::ffi::key::CmdArg;
use crate::keyspace::{self, with_write};
use redis_module::{Context, RedisError, RedisResult, RedisValue};
use smallvec::SmallVec;
use std::collections::HashMap;
use xset_core::{AddOutcome, Compare, Presence, add_outcome};

/// Members and absolute deadlines, one of them inline: an add of one
/// member, the common case, allocates nothing to hold it.
type Pairs<'a> = SmallVec<[(&'a CmdArg, u64); 1]>;

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
    pairs: Pairs<'a>,
}

impl<'a> AddRequest<'a> {
    fn plain(pairs: Pairs<'a>) -> AddRequest<'a> {
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
fn last_wins<'a>(mut pairs: Pairs<'a>, origin: Option<&mut Vec<usize>>) -> Pairs<'a> {
    let want_origin = origin.is_some();
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
                if keep && want_origin {
                    kept.push(i);
                }
                i += 1;
                keep
            });
        } else if want_origin {
            kept.extend(0..pairs.len());
        }
    } else if want_origin {
        kept.extend(0..pairs.len());
    }
    if let Some(origin) = origin {
        *origin = kept;
    }
    pairs
}

fn parse_pairs<'a>(
    data: &'a [CmdArg],
    unit: TimeUnit,
    now_ms: u64,
    cmd: &str,
) -> Result<Pairs<'a>, RedisError> {
    let mut pairs = Pairs::with_capacity(data.len() / 2);
    for pair in data.chunks_exact(2) {
        pairs.push((&pair[0], add_deadline(&pair[1], unit, now_ms, cmd)?));
    }
    Ok(pairs)
}

/// Parses `XSET.ADDEX`'s options from `args[pos]` on, then its `MEMBERS`
/// block. A syntax error names the word: an unknown option, one given
/// twice, a second unit, an option without its value, or the missing
/// `MEMBERS`.
fn parse_addex(args: &[CmdArg], mut pos: usize, now_ms: u64) -> Result<AddRequest<'_>, RedisError> {
    let mut presence = Presence::Any;
    let mut compare = Compare::Any;
    let mut unit: Option<(TimeUnit, &CmdArg)> = None;
    let mut max_len = None;
    let mut cap = None;
    let mut codes = false;
    let data = loop {
        let Some(word) = args.get(pos) else {
            return Err(errors::members_expected(None));
        };
        let arg = word.as_slice();
        let is = |w: &str| arg.eq_ignore_ascii_case(w.as_bytes());
        let mut set_unit = |u| match unit {
            None => {
                unit = Some((u, word));
                Ok(())
            }
            Some((old, _)) if old == u => Err(errors::given_twice(arg)),
            Some((_, earlier)) => Err(errors::conflicts(arg, earlier.as_slice())),
        };
        if is("NX") {
            presence = merge_presence(presence, Presence::OnlyNew, arg)?;
        } else if is("XX") {
            presence = merge_presence(presence, Presence::OnlyExisting, arg)?;
        } else if is("GT") {
            compare = merge_compare(compare, Compare::Greater, arg)?;
        } else if is("LT") {
            compare = merge_compare(compare, Compare::Less, arg)?;
        } else if is("EX") {
            set_unit(TimeUnit::Seconds)?;
        } else if is("PX") {
            set_unit(TimeUnit::Millis)?;
        } else if is("EXAT") {
            set_unit(TimeUnit::UnixSeconds)?;
        } else if is("PXAT") {
            set_unit(TimeUnit::UnixMillis)?;
        } else if is("MAXLEN") {
            if max_len.is_some() {
                return Err(errors::given_twice(arg));
            }
            let n = parse_i64(value_of(args, pos)?.as_slice())?;
            if n <= 0 {
                return Err(err(errors::MAXLEN_POSITIVE));
            }
            max_len = Some(usize::try_from(n).unwrap_or(usize::MAX));
            pos += 1;
        } else if is("CAP") {
            if cap.is_some() {
                return Err(errors::given_twice(arg));
            }
            let n = parse_i64(value_of(args, pos)?.as_slice())?;
            if n <= 0 {
                return Err(err(errors::CAP_POSITIVE));
            }
            cap = Some(usize::try_from(n).unwrap_or(usize::MAX));
            pos += 1;
        } else if is("CODES") {
            once(&mut codes, word)?;
        } else if is("MEMBERS") {
            break members_block(args, pos, 2)?;
        } else {
            return Err(not_members(args, pos));
        }
        pos += 1;
    };
    if presence == Presence::OnlyNew && compare != Compare::Any {
        return Err(err(errors::GT_LT_NX));
    }
    let unit = unit.map_or(TimeUnit::Seconds, |(u, _)| u);
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

/// `NX`/`XX` given once: the same word twice is a syntax error that names
/// it, the other one Redis's own error for the pair.
fn merge_presence(old: Presence, new: Presence, word: &[u8]) -> Result<Presence, RedisError> {
    match old {
        Presence::Any => Ok(new),
        o if o == new => Err(errors::given_twice(word)),
        _ => Err(err(errors::NX_AND_XX)),
    }
}

/// `GT`/`LT` given once, as [`merge_presence`].
fn merge_compare(old: Compare, new: Compare, word: &[u8]) -> Result<Compare, RedisError> {
    match old {
        Compare::Any => Ok(new),
        o if o == new => Err(errors::given_twice(word)),
        _ => Err(err(errors::GT_LT_NX)),
    }
}

/// `XSET.ADD key member ttl [member ttl ...]`: replies the number of
/// members that were absent (or expired) and are now present.
pub fn xset_add(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
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
pub fn xset_addex(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let req = parse_addex(args, 2, clock.now_ms)?;
    run_add(ctx, &args[1], clock, req)
}

fn run_add(ctx: &Context, key: &CmdArg, clock: Clock, req: AddRequest) -> RedisResult {
    let now_ms = clock.write_ms();
    let AddRequest {
        presence,
        compare,
        max_len,
        cap,
        codes: want_codes,
        given,
        origin,
        mut pairs,
    } = req;
    with_write(ctx, key, clock, |set| {
        if let Some(cap) = cap {
            // Live members after the add: members brought in (named, not
            // live now, a time in the future, no XX; a refresh is live
            // already) minus live members a time not in the future removes
            // (where the conditions let the command touch them).
            let (mut incoming, mut outgoing) = (0usize, 0usize);
            for (m, d) in &pairs {
                // Only live members count: an expired one is absent here.
                let live = set.live_deadline_of(m.as_slice(), now_ms);
                match add_outcome(live, live.is_some(), *d, now_ms, presence, compare) {
                    AddOutcome::Added => incoming += 1,
                    AddOutcome::Removed => outgoing += 1,
                    _ => {}
                }
            }
            if (set.live_len(now_ms) + incoming).saturating_sub(outgoing) > cap {
                return Ok(RedisValue::Null);
            }
        }
        let mut added = 0;
        let mut removed: Vec<&[u8]> = Vec::new();
        let mut codes = vec![CODE_UNTOUCHED; if want_codes { given } else { 0 }];
        let mut i = 0;
        // `pairs` keeps just the pairs that were written, in order: they are
        // what gets propagated, and no second vector is needed.
        pairs.retain(|&mut (member, deadline_ms)| {
            let outcome = set.add(member.as_slice(), deadline_ms, presence, compare, now_ms);
            let (code, written) = match outcome {
                AddOutcome::Added => {
                    added += 1;
                    if faults::hit(Fault::WriteMidway) {
                        panic!("fault injected in a write command");
                    }
                    (CODE_ADDED, true)
                }
                AddOutcome::Updated => (CODE_CHANGED, true),
                AddOutcome::Removed => {
                    removed.push(member.as_slice());
                    (CODE_REMOVED, false)
                }
                AddOutcome::Unchanged | AddOutcome::Skipped | AddOutcome::Ignored => {
                    (CODE_UNTOUCHED, false)
                }
            };
            if let Some(&at) = origin.get(i) {
                codes[at] = code;
            }
            i += 1;
            written
        });
        let trimmed = match max_len {
            Some(max) if set.len() > max => set.pop_soonest(set.len() - max),
            _ => Vec::new(),
        };
        keyspace::propagate_add(ctx, key, &pairs);
        if !pairs.is_empty() {
            keyspace::notify(ctx, c"xset.add", key);
        }
        if !removed.is_empty() || !trimmed.is_empty() {
            let mut gone: Vec<&[u8]> = removed;
            gone.extend(trimmed.iter().map(|m| &**m));
            keyspace::propagate_rem(ctx, key, &gone);
            keyspace::notify(ctx, c"xset.rem", key);
        }
        if want_codes {
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
