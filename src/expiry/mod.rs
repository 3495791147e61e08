//! Active expiry: a budgeted timer that reclaims members no client touches,
//! driven by the per-database [`index::Indexes`] of keys by earliest member
//! deadline, so its work follows what is due, not the size of the keyspace.
//!
//! Keeping the index true (it is a hint; see `index.rs`):
//! - writes: every command that changes a set re-tracks its key
//!   ([`track`]), on primaries and replicas alike, so a promoted replica is
//!   ready;
//! - `DEL`/`UNLINK`/overwrite/key expiry/eviction and the source of
//!   `RENAME`/`MOVE`: the type's `unlink2` callback ([`forget`]);
//! - `RENAME`/`MOVE`/`COPY` targets, `RESTORE` and RDB loading: keyspace
//!   events ([`on_keyspace_event`]);
//! - `FLUSHDB`/`FLUSHALL` and `SWAPDB`: server events ([`on_flush`],
//!   [`on_swap`]).
//!
//! The timer fires at the earliest tracked deadline (or after the period)
//! and spends at most the configured budget per tick. While a backlog
//! remains, every event-loop turn also runs one budgeted slice just before
//! sleeping (as Redis's own fast expire cycle does), so clients are served
//! between slices and the backlog drains at full speed.
//! Replicas and loading servers run no cycle: they never delete on their
//! own clock.

pub mod index;

use crate::commands::reclaim_due;
use crate::ffi::type_methods::XSET_TYPE;
use crate::ffi::{self, clock};
use crate::stats;
use crate::xset::XSet;
use index::Indexes;
use lazy_static::lazy_static;
use redis_module::key::KeyFlags;
use redis_module::{Context, NotifyEvent};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Members drained between two looks at the clock (and per propagated
/// `XSET.REM`).
const CHUNK: usize = 128;

lazy_static! {
    static ref INDEX: Mutex<Indexes> = Mutex::new(Indexes::default());
    /// `xset.active-expire`: whether the timer reclaims anything.
    pub static ref ACTIVE_EXPIRE: AtomicBool = AtomicBool::new(true);
    /// `xset.active-expire-period-ms`: the longest sleep between ticks.
    pub static ref PERIOD_MS: AtomicI64 = AtomicI64::new(100);
    /// `xset.active-expire-budget-us`: the most time one tick may spend.
    pub static ref BUDGET_US: AtomicI64 = AtomicI64::new(1000);
}

/// Only the newest armed timer acts; older ones find a stale generation and
/// stop, which is how the timer is moved earlier without `StopTimer`.
static TIMER_GENERATION: AtomicU64 = AtomicU64::new(0);
/// When the newest timer fires, in Unix milliseconds.
static TIMER_FIRES_AT: AtomicU64 = AtomicU64::new(u64::MAX);
static NEXT_DB_TURN: AtomicU64 = AtomicU64::new(0);
/// Set when a cycle ended with keys still due: the next event-loop turns
/// run fast slices until it is cleared.
static BEHIND: AtomicBool = AtomicBool::new(false);
/// When the last slice ended, in microseconds since `EPOCH`.
static LAST_SLICE_END_US: AtomicU64 = AtomicU64::new(0);

lazy_static! {
    static ref EPOCH: Instant = Instant::now();
}

fn micros_since_epoch() -> u64 {
    EPOCH.elapsed().as_micros() as u64
}

fn index() -> MutexGuard<'static, Indexes> {
    // Only the main thread takes this lock; a poisoned lock means a panic
    // was caught mid-update, and the index is a hint, so go on with it.
    INDEX.lock().unwrap_or_else(|e| e.into_inner())
}

fn period_ms() -> u64 {
    PERIOD_MS.load(Ordering::Relaxed).clamp(1, 60_000) as u64
}

/// Records that the earliest member deadline of `key` in the selected
/// database moved from `before` to `after` (`None`: nothing to expire), and
/// brings the timer forward if `after` is sooner than its next tick.
pub fn track(ctx: &Context, key: &[u8], before: Option<u64>, after: Option<u64>) {
    let db = ffi::selected_db(ctx);
    index().relocate(db, key, before, after);
    let Some(d) = after else { return };
    let c = clock(ctx);
    // Replicas and loaders run no cycle; a deadline already due waits for
    // the tick already armed, so a burst of writes arms one timer, not one
    // each.
    let target = d.max(c.now_ms + 1);
    if c.primary && !c.paused && target < TIMER_FIRES_AT.load(Ordering::Relaxed) {
        arm(ctx, target - c.now_ms);
    }
}

/// Stops tracking `key` of `db`, tracked under `deadline_ms` (the type's
/// `unlink2`: the value left the key).
pub fn forget(db: i32, key: &[u8], deadline_ms: Option<u64>) {
    index().relocate(db, key, deadline_ms, None);
}

/// `FLUSHDB` (`db`) or `FLUSHALL` (-1).
pub fn on_flush(db: i32) {
    index().flush(db);
}

/// `SWAPDB a b`.
pub fn on_swap(a: i32, b: i32) {
    index().swap(a, b);
}

/// Keys tracked and keys due now, for `INFO`.
pub fn index_sizes(now_ms: u64) -> (usize, usize) {
    let index = index();
    (index.len(), index.due_count(now_ms))
}

/// Re-tracks the key named by events that bring a value under a new name
/// or database: `rename_to`, `move_to`, `copy_to`, `restore`, `loaded`.
/// Keys of other types are ignored.
pub fn on_keyspace_event(ctx: &Context, _kind: NotifyEvent, event: &str, key: &[u8]) {
    if !matches!(
        event,
        "rename_to" | "move_to" | "copy_to" | "restore" | "loaded"
    ) {
        return;
    }
    let caught = catch_unwind(AssertUnwindSafe(|| {
        let name = ctx.create_string(key);
        let handle = ctx.open_key_with_flags(&name, KeyFlags::NOTOUCH);
        if let Ok(Some(set)) = handle.get_value::<XSet>(&XSET_TYPE) {
            track(ctx, key, None, set.next_deadline());
        }
    }));
    if caught.is_err() {
        ctx.log_warning("xset: a bug was caught in a keyspace event handler");
    }
}

/// Whether the last cycle left keys due.
pub fn behind() -> bool {
    BEHIND.load(Ordering::Relaxed)
}

/// A budgeted slice run before the event loop sleeps, while behind.
pub fn fast_cycle(ctx: &Context) {
    if catch_unwind(AssertUnwindSafe(|| cycle(ctx))).is_err() {
        BEHIND.store(false, Ordering::Relaxed);
        ctx.log_warning("xset: a bug was caught in the fast expiry cycle");
    }
}

/// Starts the timer (module load).
pub fn start(ctx: &Context) {
    arm(ctx, period_ms());
}

fn arm(ctx: &Context, delay_ms: u64) {
    let generation = TIMER_GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    let now = clock(ctx).now_ms;
    TIMER_FIRES_AT.store(now.saturating_add(delay_ms), Ordering::Relaxed);
    ctx.create_timer(Duration::from_millis(delay_ms), tick, generation);
}

fn tick(ctx: &Context, generation: u64) {
    if generation != TIMER_GENERATION.load(Ordering::Relaxed) {
        return;
    }
    TIMER_FIRES_AT.store(u64::MAX, Ordering::Relaxed);
    let next = catch_unwind(AssertUnwindSafe(|| cycle(ctx))).unwrap_or_else(|_| {
        ctx.log_warning("xset: a bug was caught in the active expiry cycle");
        period_ms()
    });
    // A command during the cycle may already have armed a sooner timer.
    if generation == TIMER_GENERATION.load(Ordering::Relaxed) {
        arm(ctx, next);
    }
}

/// One budgeted pass over the due keys, databases taken round-robin.
/// Returns the delay until the next tick in milliseconds.
fn cycle(ctx: &Context) -> u64 {
    let period = period_ms();
    let c = clock(ctx);
    if !ACTIVE_EXPIRE.load(Ordering::Relaxed) || !c.primary || c.paused {
        BEHIND.store(false, Ordering::Relaxed);
        return period;
    }
    let budget_us = BUDGET_US.load(Ordering::Relaxed).clamp(10, 1_000_000) as u64;
    if BEHIND.load(Ordering::Relaxed)
        && micros_since_epoch() < LAST_SLICE_END_US.load(Ordering::Relaxed) + budget_us / 2
    {
        // Keep a gap after the last slice so clients are served in between,
        // even when the timer and a fast slice fall in the same loop turn.
        return 1;
    }
    let started = Instant::now();
    let budget = Duration::from_micros(budget_us);
    let now = c.now_ms;
    let dbs = index().due_dbs(now);
    let mut expired = 0;
    if !dbs.is_empty() {
        let first = NEXT_DB_TURN.fetch_add(1, Ordering::Relaxed) as usize % dbs.len();
        'dbs: for i in 0..dbs.len() {
            let db = dbs[(first + i) % dbs.len()];
            ffi::select_db(ctx, db);
            loop {
                if started.elapsed() >= budget {
                    break 'dbs;
                }
                let Some(key) = index().pop_due(db, now) else {
                    continue 'dbs;
                };
                expired += expire_key(ctx, &key, now, started, budget);
            }
        }
    }
    stats::record_cycle(expired, started.elapsed());
    LAST_SLICE_END_US.store(micros_since_epoch(), Ordering::Relaxed);
    let next = index().next_deadline();
    BEHIND.store(next.is_some_and(|d| d <= now), Ordering::Relaxed);
    match next {
        // Behind: the fast slices before each sleep carry on; the timer
        // comes back as soon as it can.
        Some(d) if d <= now => 1,
        Some(d) => (d - now).clamp(1, period),
        None => period,
    }
}

/// Drains the due members of one key within the budget, re-tracks it (or
/// deletes it once empty) and returns how many members went.
fn expire_key(ctx: &Context, key: &[u8], now: u64, started: Instant, budget: Duration) -> usize {
    let name = ctx.create_string(key);
    let handle = ctx.open_key_writable(&name);
    let Ok(Some(set)) = handle.get_value::<XSet>(&XSET_TYPE) else {
        // Gone or no longer an xset: the popped entry was stale.
        return 0;
    };
    let mut expired = 0;
    loop {
        let n = reclaim_due(ctx, &name, set, now, CHUNK);
        expired += n;
        if n < CHUNK || started.elapsed() >= budget {
            break;
        }
    }
    // The popped entry is gone from the index: track what is left anew.
    if set.is_empty() {
        if handle.delete().is_ok() {
            ctx.notify_keyspace_event(NotifyEvent::GENERIC, "del", &name);
        }
    } else {
        index().relocate(ffi::selected_db(ctx), key, None, set.next_deadline());
    }
    expired
}
