//! Commands that pick members: `XSET.RANDMEMBER` (at random, read-only) and
//! `XSET.POP` (at random, or soonest deadline first, removing them):
//!
//! ```text
//! XSET.RANDMEMBER key [count [WITHTTL]]
//! XSET.POP key [count] [SOONEST]
//! ```
//! No member is ever an argument, so the grammar is fixed by position:
//! the count, if any, is argument 2; a keyword may only follow it (or, for
//! `XSET.POP`, stand alone as argument 2).
//!
//! `XSET.POP` propagates what it removed as `XSET.REM key m1 m2 ...`, never
//! itself: a replica or an AOF replay must remove the members the primary
//! chose, not draw its own. The random source is a per-process SplitMix64
//! stream ([`next_u64`]); the sampling itself is the core's.

use super::reply::{WithTtl, bulk, pttl, stream_members};
use super::requests::{PopRequest, RandMemberRequest, parse_pop, parse_randmember};
use crate::clock::Clock;
use crate::ffi::key::CmdArg;
use crate::keyspace::{with_read, with_write};
use redis_module::{Context, RedisResult, RedisValue};
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use xset_core::SplitMix64;

static SEED: OnceLock<u64> = OnceLock::new();
static DRAWS: AtomicU64 = AtomicU64::new(0);

/// The next word of this process's random stream: SplitMix64 over a draw
/// counter, seeded once from std's randomly keyed hasher (so each process,
/// replica or restart draws differently). Not cryptographic; replies only
/// need to be unpredictable enough to spread picks.
pub fn next_u64() -> u64 {
    let seed = *SEED.get_or_init(|| RandomState::new().hash_one(0x7873_6574u64));
    let n = DRAWS.fetch_add(1, Ordering::Relaxed);
    // The n-th word of the generator seeded with `seed`.
    SplitMix64(seed.wrapping_add(n.wrapping_mul(SplitMix64::GAMMA))).next_u64()
}

/// An array of members, each with its TTL in milliseconds (-1: no
/// deadline) when `with_ttl` says how (flat under RESP2, pairs under
/// RESP3).
fn members_reply<M: AsRef<[u8]>>(
    found: &[(M, u64)],
    with_ttl: Option<WithTtl>,
    now_ms: u64,
) -> RedisValue {
    let mut out = Vec::with_capacity(found.len() * if with_ttl.is_some() { 2 } else { 1 });
    for (member, deadline_ms) in found {
        let member = AsRef::<[u8]>::as_ref(member);
        match with_ttl {
            Some(shape) => shape.push(&mut out, member, pttl(*deadline_ms, now_ms)),
            None => out.push(bulk(member)),
        }
    }
    RedisValue::Array(out)
}

/// A bulk reply of the first member, or nil.
fn single_reply<M: AsRef<[u8]>>(found: Option<&M>) -> RedisValue {
    found.map_or(RedisValue::Null, |m| bulk(AsRef::<[u8]>::as_ref(m)))
}

/// `XSET.RANDMEMBER key [count [WITHTTL]]`, as `SRANDMEMBER`: without a
/// count, one random live member (nil if none); a positive count, up to
/// that many distinct live members; a negative one, exactly that many with
/// repeats (at most
/// [`MAX_REPEATED`](super::requests::MAX_REPEATED)); 0, an empty array. `WITHTTL`
/// follows each member with its TTL in milliseconds. O(1) without a count,
/// O(count) with one; O(n) in a small set, for a count above a third of
/// the set, or a set mostly expired or vacant.
pub fn xset_randmember(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let RandMemberRequest { count, with_ttl } = parse_randmember(args)?;
    let now_ms = clock.now_ms;
    let with_ttl = with_ttl.then(|| WithTtl::for_client(ctx));
    with_read(ctx, &args[1], clock, |set| {
        let Some(count) = count else {
            let one = set.and_then(|s| s.random_live(now_ms, &mut next_u64));
            return Ok(single_reply(one.map(|(m, _)| m).as_ref()));
        };
        let Some(set) = set else {
            return Ok(RedisValue::Array(Vec::new()));
        };
        // Members are written to the client as they are drawn, never
        // copied into a reply value first: a reply of a million members
        // costs what SRANDMEMBER's costs.
        if count >= 0 {
            let found = set.sample_distinct(now_ms, count as usize, &mut next_u64);
            let len = found.len();
            return Ok(stream_members(
                ctx,
                len,
                found.into_iter(),
                with_ttl,
                now_ms,
            ));
        }
        let mut draws = set.draws(now_ms, next_u64).peekable();
        let len = if draws.peek().is_some() {
            count.unsigned_abs() as usize
        } else {
            0
        };
        Ok(stream_members(ctx, len, draws, with_ttl, now_ms))
    })
}

/// `XSET.POP key [count] [SOONEST]`: removes and returns live members, at
/// random (`SPOP`) or, with `SOONEST`, those expiring soonest, members
/// without a deadline last (`ZPOPMIN`). Without a count: one member as a
/// bulk string (nil if none); with one: an array of up to `count`. The key
/// goes when its last member does. Propagated as `XSET.REM` of the members
/// returned; emits `xset.rem`. O(log n) for each member popped; at random,
/// O(n) for a count above a third of the set or a set mostly expired.
pub fn xset_pop(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let PopRequest { count, soonest } = parse_pop(args)?;
    let key = &args[1];
    let now_ms = clock.write_ms();
    with_write(ctx, key, clock, |set, effects| {
        let want = count.unwrap_or(1);
        let popped = if soonest {
            set.pop_soonest_live(now_ms, want)
        } else {
            set.pop_random(now_ms, want, &mut next_u64)
        };
        if !popped.is_empty() {
            let members: Vec<&[u8]> = popped.iter().map(|(m, _)| m.as_slice()).collect();
            effects.removed(&members, c"xset.rem");
        }
        Ok(match count {
            None => single_reply(popped.first().map(|(m, _)| m)),
            Some(_) => members_reply(&popped, None, now_ms),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_random_stream_does_not_repeat_itself() {
        let words: std::collections::HashSet<u64> = (0..10_000).map(|_| next_u64()).collect();
        assert_eq!(words.len(), 10_000);
    }
}
