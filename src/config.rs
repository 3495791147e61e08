//! The module's configuration (`CONFIG GET/SET xset.<name>`, and module
//! arguments at load): every setting, its default and its range, in one
//! place. `lib.rs` registers them; everything else reads them here.

use crate::xset::Limits;
use lazy_static::lazy_static;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

lazy_static! {
    /// `xset.active-expire`: whether the timer reclaims anything.
    pub static ref ACTIVE_EXPIRE: AtomicBool = AtomicBool::new(true);
    /// `xset.active-expire-period-ms`: the longest sleep between ticks.
    pub static ref PERIOD_MS: AtomicI64 = AtomicI64::new(PERIOD_MS_RANGE.0);
    /// `xset.active-expire-budget-us`: the most time one tick may spend.
    pub static ref BUDGET_US: AtomicI64 = AtomicI64::new(BUDGET_US_RANGE.0);
    /// `xset.small-max-members`: the most members a set keeps in the small
    /// encoding.
    pub static ref SMALL_MAX_MEMBERS: AtomicI64 = AtomicI64::new(SMALL_MAX_MEMBERS_RANGE.0);
    /// `xset.small-max-member-bytes`: the longest member a small set holds.
    pub static ref SMALL_MAX_MEMBER_BYTES: AtomicI64 =
        AtomicI64::new(SMALL_MAX_MEMBER_BYTES_RANGE.0);
    /// `xset.notify-expired-members`: publish the members that expire.
    pub static ref NOTIFY_EXPIRED_MEMBERS: AtomicBool = AtomicBool::new(false);
}

/// Default, least and greatest value of each numeric setting.
pub const PERIOD_MS_RANGE: (i64, i64, i64) = (100, 1, 60_000);
/// See [`PERIOD_MS_RANGE`].
pub const BUDGET_US_RANGE: (i64, i64, i64) = (1000, 10, 1_000_000);
/// See [`PERIOD_MS_RANGE`].
pub const SMALL_MAX_MEMBERS_RANGE: (i64, i64, i64) = (128, 0, 4096);
/// See [`PERIOD_MS_RANGE`].
pub const SMALL_MAX_MEMBER_BYTES_RANGE: (i64, i64, i64) = (64, 0, 255);

fn read(setting: &AtomicI64, range: (i64, i64, i64)) -> i64 {
    setting.load(Ordering::Relaxed).clamp(range.1, range.2)
}

/// The encoding limits new sets get.
pub fn limits() -> Limits {
    Limits {
        max_small_members: read(&SMALL_MAX_MEMBERS, SMALL_MAX_MEMBERS_RANGE) as u16,
        max_small_member_bytes: read(&SMALL_MAX_MEMBER_BYTES, SMALL_MAX_MEMBER_BYTES_RANGE) as u8,
    }
}

/// Whether active expiry is on.
pub fn active_expire() -> bool {
    ACTIVE_EXPIRE.load(Ordering::Relaxed)
}

/// The longest sleep between active-expiry ticks, in milliseconds.
pub fn period_ms() -> u64 {
    read(&PERIOD_MS, PERIOD_MS_RANGE) as u64
}

/// The most time one active-expiry tick may spend, in microseconds.
pub fn budget_us() -> u64 {
    read(&BUDGET_US, BUDGET_US_RANGE) as u64
}

/// Whether expired members are published by name.
pub fn notify_expired_members() -> bool {
    NOTIFY_EXPIRED_MEMBERS.load(Ordering::Relaxed)
}
