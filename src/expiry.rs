//! Active expiry: a budgeted timer that reclaims members no client touches,
//! driven by the per-database [`crate::tracking`] index of keys by earliest
//! member deadline, so its work follows what is due, not the size of the
//! keyspace.
//!
//! The index is kept true below this layer (`keyspace` on every write, the
//! data type's `unlinked` on `DEL`/`UNLINK`/overwrite/eviction and the
//! source of `RENAME`/`MOVE`, `hooks` on flushes, swaps and keys arriving
//! under a new name); this file only reads and pops it.
//!
//! The timer fires at the earliest tracked deadline (or after the period)
//! and spends at most the configured budget per tick. Commands never arm it
//! themselves: before the event loop sleeps, [`before_sleep`] brings the
//! timer forward if a write made a sooner deadline, and while a backlog
//! remains it runs one budgeted slice (as Redis's own fast expire cycle
//! does), so clients are served between slices and the backlog drains at
//! full speed. Replicas and loading servers run no cycle: they never delete
//! on their own clock.

use crate::clock::Clock;
use crate::config;
use crate::ffi::server;
use crate::keyspace;
use crate::stats;
use crate::tracking;
use lazy_static::lazy_static;
use redis_module::Context;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

/// Starts the timer (module load).
pub fn start(ctx: &Context) {
    arm(ctx, config::period_ms());
}

/// Before the event loop sleeps: a budgeted slice while behind; otherwise,
/// on a primary, the timer moves up to the earliest tracked deadline if a
/// write made one sooner than its next tick (one timer per burst of
/// writes, not one each).
pub fn before_sleep(ctx: &Context) {
    if BEHIND.load(Ordering::Relaxed) {
        guarded_cycle(ctx);
        return;
    }
    let Some(next) = tracking::with(|t| t.next_deadline()) else {
        return;
    };
    let c = Clock::of(ctx);
    let target = next.max(c.now_ms + 1);
    if c.primary && !c.paused && target < TIMER_FIRES_AT.load(Ordering::Relaxed) {
        arm(ctx, target - c.now_ms);
    }
}

fn arm(ctx: &Context, delay_ms: u64) {
    let generation = TIMER_GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    let now = Clock::of(ctx).now_ms;
    TIMER_FIRES_AT.store(now.saturating_add(delay_ms), Ordering::Relaxed);
    ctx.create_timer(Duration::from_millis(delay_ms), tick, generation);
}

fn tick(ctx: &Context, generation: u64) {
    if generation != TIMER_GENERATION.load(Ordering::Relaxed) {
        return;
    }
    TIMER_FIRES_AT.store(u64::MAX, Ordering::Relaxed);
    let next = guarded_cycle(ctx);
    // A command during the cycle may already have armed a sooner timer.
    if generation == TIMER_GENERATION.load(Ordering::Relaxed) {
        arm(ctx, next);
    }
}

/// [`cycle`], with a panic caught: it is logged, the backlog flag cleared
/// (so the next turns do not repeat it at once) and the next tick comes
/// after the period.
fn guarded_cycle(ctx: &Context) -> u64 {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cycle(ctx))) {
        Ok(next) => next,
        Err(_) => {
            BEHIND.store(false, Ordering::Relaxed);
            ctx.log_warning("xset: a bug was caught in the active expiry cycle");
            config::period_ms()
        }
    }
}

/// One budgeted pass over the due keys, databases taken round-robin.
/// Returns the delay until the next tick in milliseconds.
fn cycle(ctx: &Context) -> u64 {
    let period = config::period_ms();
    let c = Clock::of(ctx);
    if !config::active_expire() || !c.primary || c.paused {
        BEHIND.store(false, Ordering::Relaxed);
        return period;
    }
    let budget_us = config::budget_us();
    if BEHIND.load(Ordering::Relaxed)
        && micros_since_epoch() < LAST_SLICE_END_US.load(Ordering::Relaxed) + budget_us / 4
    {
        // Keep a gap after the last slice so clients are served in between,
        // even when the timer and a fast slice fall in the same loop turn.
        return 0;
    }
    let started = Instant::now();
    let budget = Duration::from_micros(budget_us);
    let now = c.now_ms;
    let dbs = tracking::with(|t| t.due_dbs(now));
    let mut expired = 0;
    if !dbs.is_empty() {
        let first = NEXT_DB_TURN.fetch_add(1, Ordering::Relaxed) as usize % dbs.len();
        'dbs: for i in 0..dbs.len() {
            let db = dbs[(first + i) % dbs.len()];
            server::select_db(ctx, db);
            loop {
                if started.elapsed() >= budget {
                    break 'dbs;
                }
                let Some(key) = tracking::with(|t| t.pop_due(db, now)) else {
                    continue 'dbs;
                };
                expired += keyspace::expire_due(ctx, &key, now, started, budget);
            }
        }
    }
    stats::record_cycle(expired, started.elapsed());
    LAST_SLICE_END_US.store(micros_since_epoch(), Ordering::Relaxed);
    let next = tracking::with(|t| t.next_deadline());
    BEHIND.store(next.is_some_and(|d| d <= now), Ordering::Relaxed);
    match next {
        // Behind: the fast slices before each sleep carry on, and the
        // timer comes back on the next loop turn (a timer of 0 ms keeps the
        // event loop from sleeping a whole millisecond between slices).
        Some(d) if d <= now => 0,
        Some(d) => (d - now).clamp(1, period),
        None => period,
    }
}
