//! The command layer: each command parses its arguments, runs the core, then
//! propagates, notifies and replies. This file holds what they share: the
//! panic guard, key access with lazy reclaim, propagation and events.
//!
//! Rules every command keeps:
//! - everything is parsed and validated before a key is opened, so a
//!   rejected command changes nothing;
//! - on a primary, touching a key first reclaims its due members and
//!   propagates that as `XSET.REM`; replicas and loaders never delete on
//!   their own clock (they run writes with `now_ms = 0`, so nothing is due)
//!   and hide expired members on reads;
//! - writes are propagated in absolute form (`PXAT`), never as typed;
//! - a set that becomes empty is deleted, with a `del` event.

pub mod add;
pub mod parse;
pub mod read;
pub mod write;

use crate::errors;
use crate::expiry;
use crate::ffi::type_methods::XSET_TYPE;
use crate::ffi::{self, Clock, clock};
use crate::stats;
use crate::xset::{Limits, Member, XSet};
use lazy_static::lazy_static;
use redis_module::{Context, NotifyEvent, RedisError, RedisResult, RedisString, RedisValue};
use std::ffi::CStr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

lazy_static! {
    /// `xset.notify-expired-members`: publish the members that expire.
    pub static ref NOTIFY_EXPIRED_MEMBERS: AtomicBool = AtomicBool::new(false);
    /// `xset.small-max-members`: the most members a set keeps in the small
    /// encoding.
    pub static ref SMALL_MAX_MEMBERS: AtomicI64 = AtomicI64::new(128);
    /// `xset.small-max-member-bytes`: the longest member a small set holds.
    pub static ref SMALL_MAX_MEMBER_BYTES: AtomicI64 = AtomicI64::new(64);
}

/// The encoding limits new sets get, from the module configuration.
pub fn limits() -> Limits {
    let members = SMALL_MAX_MEMBERS
        .load(Ordering::Relaxed)
        .clamp(0, i64::from(u16::MAX));
    let bytes = SMALL_MAX_MEMBER_BYTES.load(Ordering::Relaxed).clamp(0, 255);
    Limits {
        max_small_members: members as u16,
        max_small_member_bytes: bytes as u8,
    }
}

/// At most this many due members are reclaimed when a command touches a
/// key; any rest stays hidden from replies and is left to later touches, so
/// one command never stalls the server on a huge backlog.
pub const LAZY_RECLAIM_LIMIT: usize = 1024;

/// A command body: the context, all arguments (name first), the clock.
pub type Body = fn(&Context, &[RedisString], Clock) -> RedisResult;

/// Runs `body`, turning a panic into an `ERR` reply so that it never crosses
/// into Redis.
pub fn guard(ctx: &Context, args: &[RedisString], body: Body) -> RedisResult {
    let clock = clock(ctx);
    catch_unwind(AssertUnwindSafe(|| body(ctx, args, clock))).unwrap_or_else(|_| {
        ctx.log_warning("xset: a bug was caught in a command; the server keeps running");
        // A body that panicked after emptying its set skipped the deletion:
        // an empty set must not stay, or the next RDB would not load.
        if let Some(key) = args.get(1) {
            let _ = catch_unwind(AssertUnwindSafe(|| delete_if_empty(ctx, key)));
        }
        Err(RedisError::Str(errors::INTERNAL))
    })
}

fn delete_if_empty(ctx: &Context, key: &RedisString) {
    let handle = ctx.open_key_writable(key);
    if let Ok(Some(set)) = handle.get_value::<XSet>(&XSET_TYPE)
        && set.is_empty()
        && handle.delete().is_ok()
    {
        ctx.notify_keyspace_event(NotifyEvent::GENERIC, "del", key);
    }
}

/// Fails with Redis's arity error unless `args.len()` is at least `min`.
/// Redis checks the registered arity first; this covers the shapes it cannot
/// express.
pub fn check_arity(args: &[RedisString], min: usize, name: &str) -> Result<(), RedisError> {
    if args.len() < min {
        return Err(errors::arity(name));
    }
    Ok(())
}

/// Replicates `cmd key parts...` to replicas and the AOF.
pub fn propagate(ctx: &Context, cmd: &str, key: &RedisString, parts: &[&[u8]]) {
    let mut argv: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
    argv.push(key.as_slice());
    argv.extend_from_slice(parts);
    ctx.replicate(cmd, argv.as_slice());
}

/// Replicates the removal of `members` as one `XSET.REM`.
pub fn propagate_rem<M: AsRef<[u8]>>(ctx: &Context, key: &RedisString, members: &[M]) {
    if members.is_empty() {
        return;
    }
    let parts: Vec<&[u8]> = members.iter().map(AsRef::as_ref).collect();
    propagate(ctx, "XSET.REM", key, &parts);
}

/// Emits the module-class keyspace event `event` for `key`.
pub fn notify(ctx: &Context, event: &CStr, key: &RedisString) {
    ffi::notify(ctx, NotifyEvent::MODULE, event, key);
}

/// Removes up to `limit` due members of `set`, propagates their removal as
/// one `XSET.REM` and emits `xset.expired`; returns how many went. The one
/// place where expiry deletes, for lazy and active expiry alike. Primary
/// only. The caller deletes the key if the set is left empty.
pub fn reclaim_due(
    ctx: &Context,
    key: &RedisString,
    set: &mut XSet,
    now_ms: u64,
    limit: usize,
) -> usize {
    let (gone, _) = set.drain_expired(now_ms, limit);
    if !gone.is_empty() {
        propagate_rem(ctx, key, &gone);
        notify(ctx, c"xset.expired", key);
        if NOTIFY_EXPIRED_MEMBERS.load(Ordering::Relaxed) {
            publish_expired(ctx, key, &gone);
        }
    }
    gone.len()
}

/// Publishes each expired member on `__xset@<db>__:expired:<key>`, one
/// message per member (binary-safe), when `xset.notify-expired-members` is
/// on. Keyspace events name only the key; this says which members went.
fn publish_expired(ctx: &Context, key: &RedisString, gone: &[Member]) {
    let mut channel = format!("__xset@{}__:expired:", ffi::selected_db(ctx)).into_bytes();
    channel.extend_from_slice(key.as_slice());
    for member in gone {
        ffi::publish(ctx, &channel, member);
    }
}

/// Opens `key` for writing and runs `body` on its set: an empty set when the
/// key is absent (stored afterwards only if `body` left members in it). On a
/// primary, due members are reclaimed first. A set left empty is deleted.
pub fn with_write(
    ctx: &Context,
    key: &RedisString,
    clock: Clock,
    body: impl FnOnce(&mut XSet) -> RedisResult,
) -> RedisResult {
    let handle = ctx.open_key_writable(key);
    let existing = handle
        .get_value::<XSet>(&XSET_TYPE)
        .map_err(|_| RedisError::WrongType)?;
    let tracked = existing.as_ref().map(|s| s.next_deadline());
    let mut fresh = XSet::with_limits(limits());
    let set: &mut XSet = match existing {
        Some(set) => {
            if clock.primary {
                let n = reclaim_due(ctx, key, set, clock.now_ms, LAZY_RECLAIM_LIMIT);
                stats::record_lazy(n);
            }
            set
        }
        None => &mut fresh,
    };
    let reply = body(set);
    let empty = set.is_empty();
    let next = set.next_deadline();
    match tracked {
        Some(before) if empty => {
            // The emptied value no longer knows where it was tracked.
            expiry::track(ctx, key.as_slice(), before, None);
            handle.delete()?;
            ctx.notify_keyspace_event(NotifyEvent::GENERIC, "del", key);
        }
        Some(before) if before == next => {}
        Some(before) => expiry::track(ctx, key.as_slice(), before, next),
        None if empty => {}
        None => {
            handle.set_value(&XSET_TYPE, fresh)?;
            expiry::track(ctx, key.as_slice(), None, next);
        }
    }
    reply
}

/// Runs `body` on the set at `key` (`None` when absent), read-only. On a
/// primary, a key with due members is first reclaimed through
/// [`with_write`]; elsewhere expired members stay and the core's `now_ms`
/// filters hide them.
pub fn with_read(
    ctx: &Context,
    key: &RedisString,
    clock: Clock,
    body: impl FnOnce(Option<&XSet>) -> RedisResult,
) -> RedisResult {
    {
        let handle = ctx.open_key(key);
        let set = handle
            .get_value::<XSet>(&XSET_TYPE)
            .map_err(|_| RedisError::WrongType)?;
        let due = clock.primary
            && !clock.paused
            && set
                .and_then(XSet::next_deadline)
                .is_some_and(|d| d <= clock.now_ms);
        if !due {
            return body(set);
        }
    }
    with_write(ctx, key, clock, |_| Ok(RedisValue::NoReply))?;
    let handle = ctx.open_key(key);
    body(
        handle
            .get_value::<XSet>(&XSET_TYPE)
            .map_err(|_| RedisError::WrongType)?,
    )
}

/// An integer reply from a count.
pub fn int(n: usize) -> RedisValue {
    RedisValue::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A bulk reply holding `bytes`.
pub fn bulk(bytes: &[u8]) -> RedisValue {
    RedisValue::StringBuffer(bytes.to_vec())
}

#[cfg(feature = "fault-injection")]
/// `XSET.DEBUG-PANIC`: panics inside a command body, in test builds only,
/// so the tests can prove that no panic crosses into Redis.
pub fn debug_panic(_ctx: &Context, _args: &[RedisString], _clock: Clock) -> RedisResult {
    panic!("fault injected by XSET.DEBUG-PANIC");
}
