//! Member-level writes other than adding: `XSET.REM`, the `XSET.EXPIRE`
//! family and `XSET.PERSIST`, in the shape of Redis's `HEXPIRE`/`HPERSIST`
//! so users can move between them.

use super::parse::{TimeUnit, is, members_block, parse_i64, to_deadline};
use super::{int, notify, propagate, propagate_rem, with_write};
use crate::errors;
use crate::ffi::Clock;
use crate::xset::{ExpireCondition, ExpireOutcome, PersistOutcome};
use redis_module::{Context, RedisResult, RedisString, RedisValue};

/// `XSET.REM key member [member ...]`: replies how many live members were
/// removed. An expired member still stored is reclaimed but not counted.
/// O(k log n).
pub fn xset_rem(ctx: &Context, args: &[RedisString], clock: Clock) -> RedisResult {
    if args.len() < 3 {
        return Err(errors::arity("xset.rem"));
    }
    let key = &args[1];
    let now_ms = if clock.primary { clock.now_ms } else { 0 };
    with_write(ctx, key, clock, |set| {
        let mut live = 0;
        let mut gone: Vec<&[u8]> = Vec::new();
        for m in &args[2..] {
            if let Some(deadline_ms) = set.remove(m.as_slice()) {
                gone.push(m.as_slice());
                if deadline_ms > now_ms {
                    live += 1;
                }
            }
        }
        if !gone.is_empty() {
            propagate_rem(ctx, key, &gone);
            notify(ctx, c"xset.rem", key);
        }
        Ok(int(live))
    })
}

fn expire_family(
    ctx: &Context,
    args: &[RedisString],
    clock: Clock,
    name: &str,
    unit: TimeUnit,
) -> RedisResult {
    if args.len() < 6 {
        return Err(errors::arity(name));
    }
    let key = &args[1];
    let value = parse_i64(args[2].as_slice())?;
    if value < 0 {
        return Err(errors::invalid_expire(name));
    }
    let deadline_ms =
        to_deadline(value, unit, clock.now_ms).ok_or_else(|| errors::invalid_expire(name))?;
    let (condition, block) = {
        let arg = &args[3];
        let cond = [
            ("NX", ExpireCondition::NoDeadline),
            ("XX", ExpireCondition::HasDeadline),
            ("GT", ExpireCondition::Greater),
            ("LT", ExpireCondition::Less),
        ]
        .into_iter()
        .find(|(w, _)| is(arg, w));
        match cond {
            Some((_, c)) => (c, 4),
            None => (ExpireCondition::Always, 3),
        }
    };
    let members = members_block(args, block)?;
    let now_ms = if clock.primary { clock.now_ms } else { 0 };
    with_write(ctx, key, clock, |set| {
        let mut codes = Vec::with_capacity(members.len());
        let mut set_members: Vec<&[u8]> = Vec::new();
        let mut removed: Vec<&[u8]> = Vec::new();
        for m in members {
            let outcome = set.expire(m.as_slice(), deadline_ms, condition, now_ms);
            match outcome {
                ExpireOutcome::Set => set_members.push(m.as_slice()),
                ExpireOutcome::Removed => removed.push(m.as_slice()),
                ExpireOutcome::NoMember | ExpireOutcome::ConditionNotMet => {}
            }
            codes.push(RedisValue::Integer(outcome as i64));
        }
        if !set_members.is_empty() {
            let when = deadline_ms.to_string();
            let count = set_members.len().to_string();
            let mut parts: Vec<&[u8]> = vec![when.as_bytes(), b"MEMBERS", count.as_bytes()];
            parts.extend(set_members);
            propagate(ctx, "XSET.PEXPIREAT", key, &parts);
            notify(ctx, c"xset.expire", key);
        }
        if !removed.is_empty() {
            propagate_rem(ctx, key, &removed);
            notify(ctx, c"xset.expired", key);
        }
        Ok(RedisValue::Array(codes))
    })
}

/// `XSET.EXPIRE key seconds [NX|XX|GT|LT] MEMBERS n member ...`: per-member
/// codes -2 (no such member), 0 (condition not met), 1 (set), 2 (removed:
/// the time is not in the future). O(k log n).
pub fn xset_expire(ctx: &Context, args: &[RedisString], clock: Clock) -> RedisResult {
    expire_family(ctx, args, clock, "xset.expire", TimeUnit::Seconds)
}

/// `XSET.PEXPIRE`: as `XSET.EXPIRE`, in milliseconds.
pub fn xset_pexpire(ctx: &Context, args: &[RedisString], clock: Clock) -> RedisResult {
    expire_family(ctx, args, clock, "xset.pexpire", TimeUnit::Millis)
}

/// `XSET.EXPIREAT`: as `XSET.EXPIRE`, at a Unix time in seconds.
pub fn xset_expireat(ctx: &Context, args: &[RedisString], clock: Clock) -> RedisResult {
    expire_family(ctx, args, clock, "xset.expireat", TimeUnit::UnixSeconds)
}

/// `XSET.PEXPIREAT`: as `XSET.EXPIRE`, at a Unix time in milliseconds.
pub fn xset_pexpireat(ctx: &Context, args: &[RedisString], clock: Clock) -> RedisResult {
    expire_family(ctx, args, clock, "xset.pexpireat", TimeUnit::UnixMillis)
}

/// `XSET.PERSIST key MEMBERS n member ...`: per-member codes -2 (no such
/// member), -1 (no deadline), 1 (deadline removed). O(k log n).
pub fn xset_persist(ctx: &Context, args: &[RedisString], clock: Clock) -> RedisResult {
    if args.len() < 5 {
        return Err(errors::arity("xset.persist"));
    }
    let key = &args[1];
    let members = members_block(args, 2)?;
    let now_ms = if clock.primary { clock.now_ms } else { 0 };
    with_write(ctx, key, clock, |set| {
        let mut codes = Vec::with_capacity(members.len());
        let mut persisted: Vec<&[u8]> = Vec::new();
        for m in members {
            let outcome = set.persist(m.as_slice(), now_ms);
            if outcome == PersistOutcome::Persisted {
                persisted.push(m.as_slice());
            }
            codes.push(RedisValue::Integer(outcome as i64));
        }
        if !persisted.is_empty() {
            let count = persisted.len().to_string();
            let mut parts: Vec<&[u8]> = vec![b"MEMBERS", count.as_bytes()];
            parts.extend(persisted);
            propagate(ctx, "XSET.PERSIST", key, &parts);
            notify(ctx, c"xset.persist", key);
        }
        Ok(RedisValue::Array(codes))
    })
}
