//! What the server calls in for, besides the data type's callbacks: the
//! commands of the table (under the panic guard), the event loop, flushes
//! and swaps, the command filter, keyspace events and `INFO`. Each hook
//! hands the work to the layer that owns it.

use crate::clock::{self, Clock};
use crate::commands::{self, Body, CommandSpec};
use crate::errors;
use crate::expiry;
use crate::ffi::command::{Dispatch, KeySpec};
use crate::ffi::key::CmdArg;
use crate::ffi::reply;
use crate::ffi::server::{self, ContextFlags, ServerHooks};
use crate::keyspace;
use crate::stats;
use crate::tracking;
use redis_module::{Context, InfoContext, RedisError, RedisResult, RedisValue};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The commands of [`commands::all`], by index.
pub struct Commands;

impl Dispatch for Commands {
    const PANIC_REPLY: &'static str = errors::INTERNAL;

    /// Runs the command under the panic guard: a panic becomes an `ERR`
    /// reply and a log line, never a crash, and a set the command left
    /// empty is deleted (an empty set must not stay: the next RDB would not
    /// load).
    ///
    /// Inlined into each command's own callback, where `index` is a
    /// constant: the table's entry, its arity and its body are then known
    /// when compiling, and the body is called directly.
    #[inline(always)]
    fn run(index: usize, ctx: &Context, args: &[CmdArg]) -> RedisResult {
        let Some(spec) = commands::by_index(index) else {
            return Err(RedisError::Str(errors::INTERNAL));
        };
        // Every handler indexes its arguments by the arity: a command
        // loaded from an AOF comes without the server's arity check.
        if !spec.fits(args.len()) {
            return Err(errors::arity(spec.name));
        }
        reply::forget_started();
        catch_unwind(AssertUnwindSafe(|| match spec.run {
            Body::Timed(run) => run(ctx, args, Clock::of(ctx)),
            Body::Live(run) => run(ctx, args),
        }))
        .unwrap_or_else(|_| after_caught_panic(spec, ctx, args))
    }

    fn key_specs(index: usize) -> &'static [KeySpec] {
        commands::by_index(index).map_or(&[], |spec| spec.keys)
    }
}

/// After a command's body panicked: repairs its key, logs, and gives the
/// reply the client gets.
#[cold]
#[inline(never)]
fn after_caught_panic(spec: &CommandSpec, ctx: &Context, args: &[CmdArg]) -> RedisResult {
    stats::record_command_panic();
    let clock = Clock::of(ctx);
    // Reads too: their lazy reclaim writes.
    let repair = match spec.repairable_key().and_then(|pos| args.get(pos)) {
        Some(key) => catch_unwind(AssertUnwindSafe(|| {
            keyspace::repair_after_panic(ctx, key, clock)
        }))
        .map_or(KeyRepair::Failed, KeyRepair::Done),
        None => KeyRepair::NoKey,
    };
    let (reply, outcome) = after_panic(spec, repair, ctx);
    ctx.log_warning(&format!(
        "xset: a bug was caught in {}{outcome}; the server keeps running",
        spec.name
    ));
    if reply::started() {
        // The command wrote its reply itself, padded to its length:
        // another reply would put the client out of step.
        return Ok(RedisValue::NoReply);
    }
    Err(RedisError::Str(reply))
}

/// What the panic guard did about a command's key.
enum KeyRepair {
    /// The command has no key of its own (a read: the table gives every
    /// write one).
    NoKey,
    /// The repair ran.
    Done(keyspace::Repair),
    /// The repair panicked too.
    Failed,
}

/// What the client and the log are told after a command panicked, given
/// what became of its key: every claim true on a primary, on a replica
/// and while loading.
fn after_panic(spec: &CommandSpec, repair: KeyRepair, ctx: &Context) -> (&'static str, String) {
    use keyspace::Repair;
    let read = spec.is_read_only();
    let unpropagated = || {
        if ContextFlags::of(Some(ctx)).loading() {
            "nothing is propagated while loading"
        } else {
            "a replica propagates nothing, so it may now differ from its primary"
        }
    };
    match repair {
        KeyRepair::NoKey => (errors::INTERNAL_NOTHING_CHANGED, String::new()),
        KeyRepair::Done(Repair::Nothing) => (
            if read {
                errors::INTERNAL_NOTHING_CHANGED
            } else {
                errors::INTERNAL_PARTIAL
            },
            "; its key holds no set, so there was nothing to repair".into(),
        ),
        // A read changes nothing a client can see: at most it reclaimed
        // expired members, and propagated that.
        KeyRepair::Done(Repair::Kept { resent }) => (
            if read {
                errors::INTERNAL_NOTHING_CHANGED
            } else if resent {
                errors::INTERNAL_RESENT
            } else {
                errors::INTERNAL_PARTIAL
            },
            if resent {
                "; its key was kept as the command left it and re-sent whole to replicas and the AOF"
                    .into()
            } else {
                format!(
                    "; its key was kept as the command left it, not propagated ({})",
                    unpropagated()
                )
            },
        ),
        KeyRepair::Done(Repair::Deleted { propagated }) => (
            errors::INTERNAL_DELETED,
            if propagated {
                "; its key was empty or broken and was deleted, on replicas and in the AOF too"
                    .into()
            } else {
                format!(
                    "; its key was empty or broken and was deleted here only ({})",
                    unpropagated()
                )
            },
        ),
        KeyRepair::Failed => (
            errors::INTERNAL_UNREPAIRED,
            "; repairing its key failed too".into(),
        ),
    }
}

/// The server events xset follows.
pub struct Server;

impl ServerHooks for Server {
    fn before_sleep(ctx: &Context) {
        expiry::before_sleep(ctx);
    }

    fn flushing(db: i32) {
        tracking::with(|t| t.flush(db));
    }

    fn swapped(a: i32, b: i32) {
        tracking::with(|t| t.swap(a, b));
    }

    fn command_arrives(name: &[u8]) {
        clock::command_arrives(name);
    }

    /// Events that bring a value under a new name or database
    /// (`rename_to`, `move_to`, `copy_to`, `restore`): the key is tracked
    /// anew if it holds an xset. Loaded keys are tracked by the type's
    /// `rdb_load`; `restore` is followed too because `RESTORE ... REPLACE`
    /// deletes the old value (untracking the key) after loading the new one.
    fn keyspace_event(ctx: &Context, event: &[u8], key: &[u8]) {
        if matches!(event, b"rename_to" | b"move_to" | b"copy_to" | b"restore") {
            keyspace::retrack(ctx, key);
        }
    }
}

/// `INFO xset`: the counters, and the tracking index's sizes when it is
/// free (never waited for: this may run for a crash report).
pub fn info(ctx: &InfoContext, _for_crash_report: bool) {
    // A field that fails to add ends the section; nothing else to do.
    let _ = info_section(ctx);
}

fn info_section(ctx: &InfoContext) -> RedisResult<()> {
    let mut section = ctx.builder().add_section("stats");
    for (name, value) in stats::fields() {
        section = section.field(name, value.to_string())?;
    }
    if let Some((tracked, due)) = tracking::sizes(server::milliseconds()) {
        section = section
            .field("keys_tracked", tracked.to_string())?
            .field("keys_due", due.to_string())?;
    }
    section.build_section()?.build_info()?;
    Ok(())
}
