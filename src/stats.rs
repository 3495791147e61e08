//! Counters users read in `INFO xset`: plain atomics, written only on the
//! main thread, read by the INFO handler.

use redis_module::{InfoContext, RedisResult};
use redis_module_macros::info_command_handler;
use std::sync::atomic::{AtomicU64, Ordering};

static LAZY_EXPIRED: AtomicU64 = AtomicU64::new(0);

/// Counts members reclaimed because a command touched their key.
pub fn record_lazy(n: usize) {
    LAZY_EXPIRED.fetch_add(n as u64, Ordering::Relaxed);
}

#[info_command_handler]
fn info(ctx: &InfoContext, _for_crash_report: bool) -> RedisResult<()> {
    ctx.builder()
        .add_section("stats")
        .field(
            "expired_members_lazy",
            LAZY_EXPIRED.load(Ordering::Relaxed).to_string(),
        )?
        .build_section()?
        .build_info()?;
    Ok(())
}
