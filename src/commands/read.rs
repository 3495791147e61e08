//! Read commands: `XSET.HAS`, `XSET.MHAS`, `XSET.CARD`, `XSET.COUNT`,
//! `XSET.MEMBERS`, `XSET.TTL`/`PTTL`/`EXPIRETIME`/`PEXPIRETIME` and
//! `XSET.SCAN`. None of them ever returns or counts a member whose deadline
//! has passed.

use super::reply::{MemberStream, WithTtl, bulk, int, pttl};
use super::requests::{
    MembersRequest, ScanRequest, parse_count, parse_member_target, parse_members, parse_scan,
};
use crate::clock::Clock;
use crate::ffi::key::CmdArg;
use crate::keyspace::{with_live_read, with_read};
use redis_module::{Context, RedisResult, RedisValue};
use std::ops::ControlFlow;
use xset_core::{NO_DEADLINE, XSet, glob_match};

/// `XSET.HAS key member`: 1 if live, else 0. O(1).
pub fn xset_has(ctx: &Context, args: &[CmdArg]) -> RedisResult {
    with_live_read(ctx, &args[1], |set, now_ms| {
        let live = set.is_some_and(|s| s.contains(args[2].as_slice(), now_ms));
        Ok(RedisValue::Integer(i64::from(live)))
    })
}

/// `XSET.MHAS key member [member ...]`: an array of 1/0, one per member, in
/// order. O(k).
pub fn xset_mhas(ctx: &Context, args: &[CmdArg]) -> RedisResult {
    with_live_read(ctx, &args[1], |set, now_ms| {
        let replies = args[2..]
            .iter()
            .map(|m| {
                let live = set.is_some_and(|s| s.contains(m.as_slice(), now_ms));
                RedisValue::Integer(i64::from(live))
            })
            .collect();
        Ok(RedisValue::Array(replies))
    })
}

/// `XSET.CARD key`: the number of live members. O(1) on a primary (due
/// members were just reclaimed); O(log n + expired) on a replica.
pub fn xset_card(ctx: &Context, args: &[CmdArg]) -> RedisResult {
    with_live_read(ctx, &args[1], |set, now_ms| {
        Ok(int(set.map_or(0, |s| s.live_len(now_ms))))
    })
}

/// `XSET.COUNT key min max`: the number of live members whose deadline lies
/// in the window (bounds as in `BYDEADLINE`). Large: O(log n + min(m, n -
/// m)/127) for m members in the window; small: O(n).
pub fn xset_count(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let window = parse_count(args)?;
    with_read(ctx, &args[1], clock, |set| {
        Ok(int(set.map_or(0, |s| s.count_window(window, clock.now_ms))))
    })
}

/// `XSET.MEMBERS key [BYDEADLINE min max] [REV] [LIMIT offset count]
/// [WITHTTL]`: live members soonest-to-expire first (`REV`: latest first;
/// members without a deadline count as latest), only those whose deadline
/// lies in the window when `BYDEADLINE` is given (right after the key, bounds
/// in that order even with `REV`). `WITHTTL` follows each member with its TTL
/// in milliseconds (-1: no deadline). Equal deadlines come in byte order.
/// The reply is written as the members are walked, not built first.
/// O(log n + offset + count).
pub fn xset_members(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let MembersRequest {
        window,
        rev,
        with_ttl,
        offset,
        count,
    } = parse_members(args)?;
    let shape = with_ttl.then(|| WithTtl::for_client(ctx));
    with_read(ctx, &args[1], clock, |set| {
        let Some(set) = set else {
            return Ok(RedisValue::Array(Vec::new()));
        };
        if offset < 0 {
            return Ok(RedisValue::Array(Vec::new()));
        }
        let take = usize::try_from(count).unwrap_or(usize::MAX);
        let skip = usize::try_from(offset).unwrap_or(usize::MAX);
        let len = set
            .count_window(window, clock.now_ms)
            .saturating_sub(skip)
            .min(take);
        let mut out = MemberStream::start(ctx, len, shape, clock.now_ms);
        if len == 0 {
            return Ok(RedisValue::NoReply);
        }
        let mut skipped = 0;
        set.for_each_in_window(window, clock.now_ms, rev, |member, deadline_ms| {
            if skipped < skip {
                skipped += 1;
                return ControlFlow::Continue(());
            }
            out.push(member, deadline_ms);
            if out.is_full() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        Ok(RedisValue::NoReply)
    })
}

/// Which time a TTL-family command reports.
#[derive(Clone, Copy)]
enum TimeReply {
    TtlSeconds,
    TtlMillis,
    AtSeconds,
    AtMillis,
}

fn time_reply(set: Option<&XSet>, member: &[u8], now_ms: u64, what: TimeReply) -> i64 {
    match set.and_then(|s| s.live_deadline_of(member, now_ms)) {
        None => -2,
        Some(NO_DEADLINE) => -1,
        Some(d) => match what {
            // Rounded as Redis rounds TTL.
            TimeReply::TtlSeconds => (pttl(d, now_ms) + 500) / 1000,
            TimeReply::TtlMillis => pttl(d, now_ms),
            TimeReply::AtSeconds => (d / 1000) as i64,
            TimeReply::AtMillis => d as i64,
        },
    }
}

/// The TTL family: `CMD key member` replies one integer; `CMD key MEMBERS n
/// m1 .. mn` replies an array. -2: no such (live) member; -1: no deadline.
fn ttl_family(ctx: &Context, args: &[CmdArg], clock: Clock, what: TimeReply) -> RedisResult {
    let target = parse_member_target(args)?;
    with_read(ctx, &args[1], clock, |set| {
        let codes = target
            .members()
            .iter()
            .map(|m| time_reply(set, m.as_slice(), clock.now_ms, what))
            .collect();
        Ok(target.reply(codes))
    })
}

/// `XSET.TTL`: seconds left. O(1) per member.
pub fn xset_ttl(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    ttl_family(ctx, args, clock, TimeReply::TtlSeconds)
}

/// `XSET.PTTL`: milliseconds left. O(1) per member.
pub fn xset_pttl(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    ttl_family(ctx, args, clock, TimeReply::TtlMillis)
}

/// `XSET.EXPIRETIME`: the deadline as a Unix time in seconds. O(1) per
/// member.
pub fn xset_expiretime(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    ttl_family(ctx, args, clock, TimeReply::AtSeconds)
}

/// `XSET.PEXPIRETIME`: the deadline as a Unix time in milliseconds. O(1)
/// per member.
pub fn xset_pexpiretime(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    ttl_family(ctx, args, clock, TimeReply::AtMillis)
}

/// `XSET.SCAN key cursor [MATCH pattern] [COUNT n] [WITHTTL]`: replies
/// `[next-cursor, [member ...]]` (with `WITHTTL`, each member is followed by
/// its TTL in milliseconds). A member present for the whole scan is
/// returned at least once, whatever happens to deadlines meanwhile. O(COUNT)
/// per call.
pub fn xset_scan(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let ScanRequest {
        cursor,
        pattern,
        count,
        with_ttl,
    } = parse_scan(args)?;
    let shape = WithTtl::for_client(ctx);
    with_read(ctx, &args[1], clock, |set| {
        let (next, found) = match set {
            Some(set) => set.scan(cursor, count, clock.now_ms),
            None => (0, Vec::new()),
        };
        let mut items = Vec::with_capacity(found.len());
        for (member, deadline_ms) in found {
            if pattern.is_some_and(|p| !glob_match(p, member)) {
                continue;
            }
            if with_ttl {
                shape.push(&mut items, member, pttl(deadline_ms, clock.now_ms));
            } else {
                items.push(bulk(member));
            }
        }
        Ok(RedisValue::Array(vec![
            bulk(next.to_string().as_bytes()),
            RedisValue::Array(items),
        ]))
    })
}
