//! The time a command runs at, frozen as the server freezes it for its own
//! key expiry: one snapshot per top-level command, held for a whole
//! `MULTI`/`EXEC`, script or function.
//!
//! A command outside a transaction reads the wall clock when it starts.
//! Inside `EXEC` or a script it uses the time at which that `EXEC`,
//! `EVAL*` or `FCALL*` arrived, taken by the server's command filter
//! ([`command_arrives`], through `hooks`). The filter sees every command
//! before it runs, also those a script calls, but a script cannot call
//! `EXEC`, `EVAL*` or `FCALL*`, and a client's `EVAL` or `EXEC` that arrives
//! while a script or transaction is running (it will be refused as busy) is
//! not taken: so the snapshot is exactly the transaction's start, even for a
//! script that runs past `busy-reply-threshold`, on every server version.
//! One that arrives while writes are paused may be postponed and rerun
//! without the filter: its time is taken by its first xset command. The server's own
//! cached time (`RedisModule_CachedMicroseconds`, 7.2+) is not used: it
//! moves inside long scripts.
//!
//! Reads that depend on time only through which members are live
//! (`XSET.HAS`, `XSET.MHAS`, `XSET.CARD`) first try [`live_bound_ms`], a
//! time no earlier than the command's that needs neither the context flags
//! (about 130 instructions a command) nor the clock source (a
//! `gettimeofday`, about 22 ns): the kernel's coarse clock plus a margin
//! far wider than its lag. If no member of the set is due by then, the
//! answer is the same at the command's own time; else the read takes the
//! command's exact time.

use crate::ffi::server::{self, ContextFlags};
use redis_module::Context;
use std::sync::atomic::{AtomicU64, Ordering};

/// The time the current transaction, script or function started, in Unix
/// milliseconds; [`UNSET`] or [`NONE_YET`] when not known.
static TRANSACTION_START_MS: AtomicU64 = AtomicU64::new(NONE_YET);

/// The commands whose arrival starts a frozen time: everything that runs
/// other commands inside one top-level command.
const TRANSACTIONS: [&[u8]; 7] = [
    b"exec",
    b"eval",
    b"evalsha",
    b"eval_ro",
    b"evalsha_ro",
    b"fcall",
    b"fcall_ro",
];

/// Called by the command filter for each command about to run: a
/// transaction or script starting at top level freezes the time for the
/// commands it runs.
pub fn command_arrives(name: &[u8]) {
    if !(4..=10).contains(&name.len()) || !TRANSACTIONS.iter().any(|t| name.eq_ignore_ascii_case(t))
    {
        return;
    }
    if ContextFlags::of(None).in_transaction() {
        // Another client's EVAL or EXEC while a script or transaction runs
        // (a busy script, a module yielding): refused as busy, and it must
        // not move the running one's time.
        return;
    }
    // While clients are paused for writes, the transaction may be postponed
    // and run later without passing the filter again (7.2+ skips filters
    // for reprocessed commands): leave the time to be taken when its first
    // xset command runs.
    let start = if server::writes_paused() {
        UNSET
    } else {
        server::milliseconds()
    };
    TRANSACTION_START_MS.store(start, Ordering::Relaxed);
}

/// A time no earlier than the one the running command runs at, without
/// asking the server for the context's flags or reading the clock source:
/// the kernel's coarse wall clock plus [`COARSE_LAG_MS`] (the wall clock
/// where there is no coarse one), or the latest transaction's start if
/// that is later (the wall clock stepped back). `None` while a
/// transaction's time is still to be taken by its first xset command (one
/// postponed by a write pause): a read must not answer for a time that
/// command may not take.
///
/// A read whose answer depends on time only through which members are
/// live may run at this bound when no member of its set is due by it: then
/// every member is live at any earlier time too, so the answer is the one
/// the command's own time gives.
pub fn live_bound_ms() -> Option<u64> {
    let bound = || coarse_bound_ms(server::coarse_milliseconds(), server::milliseconds);
    match TRANSACTION_START_MS.load(Ordering::Relaxed) {
        UNSET => None,
        NONE_YET => Some(bound()),
        start => Some(bound().max(start)),
    }
}

/// How far past the kernel's coarse wall clock [`live_bound_ms`] puts its
/// bound. The coarse clock is the wall clock as of the last timer tick (1
/// to 10 ms apart); Linux updates it even when the CPU that keeps time
/// stalls (a virtual machine's CPU held back by its host) within a few
/// ticks. A second is two orders of magnitude past that, and costs a set
/// only that a read whose set has a member due within the second takes the
/// exact clock (about 22 ns more).
const COARSE_LAG_MS: u64 = 1000;

/// The bound from a coarse reading `coarse_ms`, or from `exact` when there
/// is none.
fn coarse_bound_ms(coarse_ms: Option<u64>, exact: impl FnOnce() -> u64) -> u64 {
    match coarse_ms {
        Some(ms) => ms.saturating_add(COARSE_LAG_MS),
        None => exact(),
    }
}

/// [`TRANSACTION_START_MS`] of a transaction that arrived while writes
/// were paused: its first xset command takes the time.
const UNSET: u64 = 0;

/// [`TRANSACTION_START_MS`] before any transaction arrived since the
/// module loaded. [`Clock::of`] reads it as [`UNSET`]: a transaction the
/// filter did not see takes the time at its first xset command.
/// [`live_bound_ms`] reads it as no transaction at all, so a live read
/// that came first in such a transaction would not fix the time for the
/// rest; the only such transactions are an AOF's, which hold no reads.
const NONE_YET: u64 = u64::MAX;

/// The time a command runs at, and whether this server may reclaim.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// The command's time in Unix milliseconds: frozen for a whole
    /// `MULTI`/`EXEC` or script, as the server freezes it for key expiry.
    pub now_ms: u64,
    /// True on a primary that is not loading: only there may a command
    /// delete members on its own clock. Replicas and loaders apply writes
    /// as given and hide expired members on reads.
    pub primary: bool,
    /// True while clients are paused for writes (`CLIENT PAUSE`,
    /// `FAILOVER`, a shutdown waiting for replicas). The server aborts on
    /// any propagation then, so reads and the timer must not reclaim; a
    /// write command only runs during a pause inside the transaction that
    /// paused, where propagating is allowed.
    pub paused: bool,
    /// The context's flags, as read for this clock: what else the command
    /// asks of them (whether a propagation may be received) reads them
    /// here, not from the server again.
    pub flags: ContextFlags,
}

impl Clock {
    /// The clock for the command or callback running in `ctx`.
    pub fn of(ctx: &Context) -> Clock {
        let flags = ContextFlags::of(Some(ctx));
        let now_ms = if flags.in_transaction() {
            match TRANSACTION_START_MS.load(Ordering::Relaxed) {
                UNSET | NONE_YET => {
                    // The first xset command of a transaction whose start
                    // was not taken: its time stands for the rest.
                    let now = server::milliseconds();
                    TRANSACTION_START_MS.store(now, Ordering::Relaxed);
                    now
                }
                ms => ms,
            }
        } else {
            server::milliseconds()
        };
        let primary = !flags.replica_or_loading();
        Clock {
            now_ms,
            primary,
            paused: primary && server::writes_paused(),
            flags,
        }
    }

    /// The time writes are applied at: the command's on a primary; zero on
    /// a replica or loader, which apply what the primary decided and so
    /// never find a member due.
    pub fn write_ms(self) -> u64 {
        if self.primary { self.now_ms } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    fn wall_ms() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    /// The bound a live read answers at is never before the wall clock
    /// read just before it, and the coarse clock never runs ahead of the
    /// wall clock read just after it: a read at the bound gives the answer
    /// the command's own time gives.
    #[test]
    fn the_coarse_bound_is_never_before_the_wall_clock() {
        let coarse = server::coarse_milliseconds();
        assert_eq!(coarse.is_some(), cfg!(target_os = "linux"));
        let Some(first) = coarse else {
            return;
        };
        let mut last = first;
        for _ in 0..300_000 {
            let before = wall_ms();
            let coarse = server::coarse_milliseconds().expect("a coarse clock");
            let after = wall_ms();
            let bound = coarse_bound_ms(Some(coarse), || panic!("coarse clock present"));
            assert!(
                bound >= before,
                "bound {bound} before the wall clock {before}"
            );
            assert!(
                coarse <= after,
                "coarse clock {coarse} after the wall clock {after}"
            );
            last = coarse;
        }
        assert!(last >= first, "the coarse clock went back");
    }

    #[test]
    fn without_a_coarse_clock_the_bound_is_the_exact_time() {
        assert_eq!(coarse_bound_ms(None, || 1_234), 1_234);
        assert_eq!(coarse_bound_ms(Some(5), || 0), 5 + COARSE_LAG_MS);
        assert_eq!(coarse_bound_ms(Some(u64::MAX), || 0), u64::MAX);
    }
}
