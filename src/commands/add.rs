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

use super::grammar::{AddRequest, parse_add, parse_addex};
use super::reply::int;
use crate::clock::Clock;
use crate::faults::{self, Fault};
use crate::ffi::key::CmdArg;
use crate::keyspace::with_write;
use redis_module::{Context, RedisResult, RedisValue};
use xset_core::{AddOutcome, add_outcome};

/// `XSET.ADD key member ttl [member ttl ...]`: replies the number of
/// members that were absent (or expired) and are now present.
pub fn xset_add(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let req = parse_add(args, clock.primary, clock.now_ms)?;
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
    with_write(ctx, key, clock, |set, effects| {
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
        effects.added(&pairs);
        let mut gone: Vec<&[u8]> = removed;
        gone.extend(trimmed.iter().map(|m| &**m));
        effects.removed(&gone, c"xset.rem");
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
