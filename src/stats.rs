//! Counters users read in `INFO xset`: plain atomics, written only on the
//! main thread, read by the INFO handler.

use redis_module::{InfoContext, RedisResult};
use redis_module_macros::info_command_handler;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

static LAZY_EXPIRED: AtomicU64 = AtomicU64::new(0);
static ACTIVE_EXPIRED: AtomicU64 = AtomicU64::new(0);
static CYCLES: AtomicU64 = AtomicU64::new(0);
static CYCLE_TIME_US: AtomicU64 = AtomicU64::new(0);

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

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[info_command_handler]
fn info(ctx: &InfoContext, _for_crash_report: bool) -> RedisResult<()> {
    let (tracked, due) = crate::expiry::index_sizes(now_ms());
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed).to_string();
    ctx.builder()
        .add_section("stats")
        .field("expired_members_lazy", load(&LAZY_EXPIRED))?
        .field("expired_members_active", load(&ACTIVE_EXPIRED))?
        .field("active_expire_cycles", load(&CYCLES))?
        .field("active_expire_time_us", load(&CYCLE_TIME_US))?
        .field("keys_tracked", tracked.to_string())?
        .field("keys_due", due.to_string())?
        .build_section()?
        .build_info()?;
    Ok(())
}
