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

use super::parse::{Target, TimeUnit, is, parse_i64, to_deadline};
use super::reply::int;
use crate::clock::Clock;
use crate::errors::{self, err};
use crate::ffi::key::CmdArg;
use crate::ffi::server::ContextFlags;
use crate::keyspace::with_write;
use redis_module::{Context, RedisResult};
use xset_core::{ExpireCondition, ExpireOutcome, PersistOutcome};

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
    let value = parse_i64(args[2].as_slice())?;
    if value < 0 {
        return Err(errors::invalid_expire(name));
    }
    let deadline_ms =
        to_deadline(value, unit, clock.now_ms).ok_or_else(|| errors::invalid_expire(name))?;
    // A time not in the future only removes members, which frees memory:
    // accepted over maxmemory, as native EXPIRE is (these commands are not
    // `deny-oom`). A later one may grow the set (a small set can convert,
    // a leaf split), so it is refused there as the server refuses an add.
    if deadline_ms > clock.now_ms && out_of_memory(ctx, clock) {
        return Err(err(errors::OOM));
    }
    // With one argument after the time it is the member; with more, the
    // first may be a condition, and never a member.
    let condition = match args.get(3) {
        Some(arg) if args.len() > 4 => [
            ("NX", ExpireCondition::NoDeadline),
            ("XX", ExpireCondition::HasDeadline),
            ("GT", ExpireCondition::Greater),
            ("LT", ExpireCondition::Less),
        ]
        .into_iter()
        .find(|(w, _)| is(arg, w))
        .map(|(_, c)| c),
        _ => None,
    };
    if let (Some(first), Some(second)) = (condition.map(|_| &args[3]), args.get(4))
        && args.len() > 5
        && ["NX", "XX", "GT", "LT"].iter().any(|w| is(second, w))
    {
        return Err(if is(second, &String::from_utf8_lossy(first.as_slice())) {
            errors::given_twice(second.as_slice())
        } else {
            err(errors::EXPIRE_CONDITIONS)
        });
    }
    let target = Target::parse(args, if condition.is_some() { 4 } else { 3 })?;
    let condition = condition.unwrap_or(ExpireCondition::Always);
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
    let target = Target::parse(args, 2)?;
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
