//! Counters users read in `INFO xset`: plain atomics, written only on the
//! main thread, read by the INFO handler (which must never block or panic).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

static LAZY_EXPIRED: AtomicU64 = AtomicU64::new(0);
static ACTIVE_EXPIRED: AtomicU64 = AtomicU64::new(0);
static CYCLES: AtomicU64 = AtomicU64::new(0);
static CYCLE_TIME_US: AtomicU64 = AtomicU64::new(0);
static COMMAND_PANICS: AtomicU64 = AtomicU64::new(0);
static DEFRAG_MOVED: AtomicU64 = AtomicU64::new(0);
static DEFRAG_WALKS: AtomicU64 = AtomicU64::new(0);
static DEFRAG_STOPS: AtomicU64 = AtomicU64::new(0);
static DELIVERED: AtomicU64 = AtomicU64::new(0);
static DELIVERY_FAILURES: AtomicU64 = AtomicU64::new(0);
static DELIVERY_DEFERRED: AtomicU64 = AtomicU64::new(0);
/// When a delivery failure was last logged, in whole seconds of the
/// process's monotonic clock (0: never).
static DELIVERY_LOGGED_S: AtomicU64 = AtomicU64::new(0);
/// Delivery failures are logged at most once in this many seconds.
const DELIVERY_LOG_EVERY_S: u64 = 10;

lazy_static::lazy_static! {
    static ref STARTED: Instant = Instant::now();
}

/// Counts members reclaimed because a command touched their key.
pub fn record_lazy(n: usize) {
    if n == 0 {
        return;
    }
    LAZY_EXPIRED.fetch_add(n as u64, Ordering::Relaxed);
}

/// Counts one active-expiry tick that reclaimed `expired` members in
/// `spent`.
pub fn record_cycle(expired: usize, spent: Duration) {
    ACTIVE_EXPIRED.fetch_add(expired as u64, Ordering::Relaxed);
    CYCLES.fetch_add(1, Ordering::Relaxed);
    CYCLE_TIME_US.fetch_add(spent.as_micros() as u64, Ordering::Relaxed);
}

/// Counts one command whose panic the guard caught (a bug).
pub fn record_command_panic() {
    COMMAND_PANICS.fetch_add(1, Ordering::Relaxed);
}

/// Counts buffers the server's active defrag moved in one call of a set's
/// defrag callback, and whether that call finished the set's walk or
/// paused it (a big set's walk, resumed from a cursor later).
pub fn record_defrag(moved: usize, finished: bool) {
    DEFRAG_MOVED.fetch_add(moved as u64, Ordering::Relaxed);
    let counter = if finished {
        &DEFRAG_WALKS
    } else {
        &DEFRAG_STOPS
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Counts expired members appended to their set's delivery stream.
pub fn record_delivered(n: usize) {
    DELIVERED.fetch_add(n as u64, Ordering::Relaxed);
}

/// Counts one reclaim put off because its set's stream is missing.
pub fn record_delivery_deferred() {
    DELIVERY_DEFERRED.fetch_add(1, Ordering::Relaxed);
}

/// Counts `n` expired members whose delivery failed; returns whether to
/// log it (the first failure, then at most one in ten seconds).
pub fn record_delivery_failed(n: usize) -> bool {
    DELIVERY_FAILURES.fetch_add(n as u64, Ordering::Relaxed);
    let now_s = STARTED.elapsed().as_secs() + 1;
    let last = DELIVERY_LOGGED_S.load(Ordering::Relaxed);
    if last != 0 && now_s < last + DELIVERY_LOG_EVERY_S {
        return false;
    }
    DELIVERY_LOGGED_S.store(now_s, Ordering::Relaxed);
    true
}

/// The counters as `INFO` fields, in order.
pub fn fields() -> [(&'static str, u64); 11] {
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    [
        ("expired_members_lazy", load(&LAZY_EXPIRED)),
        ("expired_members_active", load(&ACTIVE_EXPIRED)),
        ("active_expire_cycles", load(&CYCLES)),
        ("active_expire_time_us", load(&CYCLE_TIME_US)),
        ("command_panics_caught", load(&COMMAND_PANICS)),
        ("defrag_walks", load(&DEFRAG_WALKS)),
        ("defrag_walks_paused", load(&DEFRAG_STOPS)),
        ("defrag_moved", load(&DEFRAG_MOVED)),
        ("delivered", load(&DELIVERED)),
        ("delivery_failures", load(&DELIVERY_FAILURES)),
        ("delivery_deferred", load(&DELIVERY_DEFERRED)),
    ]
}
