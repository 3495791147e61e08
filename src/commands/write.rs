//! Member-level writes other than adding: `XSET.REM`, the `XSET.EXPIRE`
//! family and `XSET.PERSIST`, in the shape of Redis's `HEXPIRE`/`HPERSIST`
//! so users can move between them, each with a single-member form that
//! replies one integer:
//!
//! ```text
//! XSET.EXPIRE key seconds [NX|XX|GT|LT] <member|MEMBERS count member [member ...]>
//! XSET.PERSIST key <member|MEMBERS count member [member ...]>
//! ```
//! The form is decided by the argument count: with four arguments after
//! the name (five with a condition) the last is one member, whatever it
//! spells; otherwise a `MEMBERS` block must follow.

use super::parse::TimeUnit;
use super::reply::int;
use super::requests::{ExpireRequest, parse_expire, parse_member_target};
use crate::clock::Clock;
use crate::ffi::key::CmdArg;
use crate::ffi::server::ContextFlags;
use crate::keyspace::with_write;
use redis_module::{Context, RedisResult};
use xset_core::{ExpireOutcome, PersistOutcome};

/// `XSET.REM key member [member ...]`: replies how many live members were
/// removed. An expired member still stored is reclaimed but not counted.
/// O(k log n).
pub fn xset_rem(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let key = &args[1];
    let now_ms = clock.write_ms();
    with_write(ctx, key, clock, |set, effects| {
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
        effects.removed(&gone, c"xset.rem");
        Ok(int(live))
    })
}

/// Whether a write that may grow memory must be refused: a primary over
/// `maxmemory` after the server's evictions for this command. Replicas and
/// loaders apply what they are given, as the server lets them.
fn out_of_memory(ctx: &Context, clock: Clock) -> bool {
    clock.primary && ContextFlags::of(Some(ctx)).out_of_memory()
}

fn expire_family(
    ctx: &Context,
    args: &[CmdArg],
    clock: Clock,
    name: &str,
    unit: TimeUnit,
) -> RedisResult {
    let key = &args[1];
    // A later time may grow the set (a small set can convert, a leaf
    // split), so it is refused over maxmemory as the server refuses an add;
    // these commands are not `deny-oom`, so that removals stay allowed.
    let ExpireRequest {
        deadline_ms,
        condition,
        target,
    } = parse_expire(args, name, unit, clock.now_ms, || out_of_memory(ctx, clock))?;
    let now_ms = clock.write_ms();
    with_write(ctx, key, clock, |set, effects| {
        let members = target.members();
        let mut codes = Vec::with_capacity(members.len());
        let mut changed: Vec<&[u8]> = Vec::new();
        let mut removed: Vec<&[u8]> = Vec::new();
        for m in members {
            let outcome = set.expire(m.as_slice(), deadline_ms, condition, now_ms);
            match outcome {
                ExpireOutcome::Set => changed.push(m.as_slice()),
                ExpireOutcome::Removed => removed.push(m.as_slice()),
                ExpireOutcome::NoMember | ExpireOutcome::ConditionNotMet => {}
            }
            codes.push(outcome as i64);
        }
        effects.deadline_set(deadline_ms, &changed);
        effects.removed(&removed, c"xset.expired");
        Ok(target.reply(codes))
    })
}

/// `XSET.EXPIRE key seconds [NX|XX|GT|LT] <member|MEMBERS n member ...>`: per-member
/// codes -2 (no such member), 0 (condition not met), 1 (set), 2 (removed:
/// the time is not in the future). O(k log n).
pub fn xset_expire(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    expire_family(ctx, args, clock, "xset.expire", TimeUnit::Seconds)
}

/// `XSET.PEXPIRE`: as `XSET.EXPIRE`, in milliseconds.
pub fn xset_pexpire(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    expire_family(ctx, args, clock, "xset.pexpire", TimeUnit::Millis)
}

/// `XSET.EXPIREAT`: as `XSET.EXPIRE`, at a Unix time in seconds.
pub fn xset_expireat(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    expire_family(ctx, args, clock, "xset.expireat", TimeUnit::UnixSeconds)
}

/// `XSET.PEXPIREAT`: as `XSET.EXPIRE`, at a Unix time in milliseconds.
pub fn xset_pexpireat(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    expire_family(ctx, args, clock, "xset.pexpireat", TimeUnit::UnixMillis)
}

/// `XSET.PERSIST key <member|MEMBERS n member ...>`: per-member codes -2
/// (no such member), -1 (no deadline), 1 (deadline removed). O(log n) per
/// member.
pub fn xset_persist(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let key = &args[1];
    let target = parse_member_target(args)?;
    let now_ms = clock.write_ms();
    with_write(ctx, key, clock, |set, effects| {
        let members = target.members();
        let mut codes = Vec::with_capacity(members.len());
        let mut persisted: Vec<&[u8]> = Vec::new();
        for m in members {
            let outcome = set.persist(m.as_slice(), now_ms);
            if outcome == PersistOutcome::Persisted {
                persisted.push(m.as_slice());
            }
            codes.push(outcome as i64);
        }
        effects.persisted(&persisted);
        Ok(target.reply(codes))
    })
}
