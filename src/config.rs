//! The module's configuration (`CONFIG GET/SET xset.<name>`, and module
//! arguments at load): every setting, its default and its range, in one
//! place. `lib.rs` registers them; everything else reads them here.

use lazy_static::lazy_static;
use redis_module::Context;
use redis_module::configuration::{
    ConfigurationFlags, register_bool_configuration, register_i64_configuration,
};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use xset_core::{Limits, string2ll};

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
pub const BUDGET_US_RANGE: (i64, i64, i64) = (750, 10, 1_000_000);
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

/// What a module argument may set.
enum Setting {
    Bool(&'static AtomicBool),
    Int(&'static AtomicI64, (i64, i64, i64)),
}

/// Every setting by name (without the `xset.` prefix).
fn settings() -> [(&'static str, Setting); 6] {
    [
        ("active-expire", Setting::Bool(&ACTIVE_EXPIRE)),
        (
            "active-expire-period-ms",
            Setting::Int(&PERIOD_MS, PERIOD_MS_RANGE),
        ),
        (
            "active-expire-budget-us",
            Setting::Int(&BUDGET_US, BUDGET_US_RANGE),
        ),
        (
            "small-max-members",
            Setting::Int(&SMALL_MAX_MEMBERS, SMALL_MAX_MEMBERS_RANGE),
        ),
        (
            "small-max-member-bytes",
            Setting::Int(&SMALL_MAX_MEMBER_BYTES, SMALL_MAX_MEMBER_BYTES_RANGE),
        ),
        (
            "notify-expired-members",
            Setting::Bool(&NOTIFY_EXPIRED_MEMBERS),
        ),
    ]
}

/// A parsed module argument, ready to store.
enum Value {
    Bool(&'static AtomicBool, bool),
    Int(&'static AtomicI64, i64),
}

fn parse_arg(name: &[u8], value: &[u8]) -> Result<Value, String> {
    let shown = String::from_utf8_lossy(name);
    let shown_value = String::from_utf8_lossy(value);
    let all = settings();
    let Some((_, setting)) = all
        .into_iter()
        .find(|(n, _)| name.eq_ignore_ascii_case(n.as_bytes()))
    else {
        let known: Vec<&str> = settings().iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "unknown module argument '{shown}' (known: {})",
            known.join(", ")
        ));
    };
    match setting {
        Setting::Bool(target) => {
            let v = if value.eq_ignore_ascii_case(b"yes") {
                true
            } else if value.eq_ignore_ascii_case(b"no") {
                false
            } else {
                return Err(format!(
                    "module argument {shown} takes yes or no, not '{shown_value}'"
                ));
            };
            Ok(Value::Bool(target, v))
        }
        Setting::Int(target, (_, min, max)) => {
            // Read as CONFIG SET reads a number (`string2ll`): no `+`, no
            // leading zero, no space.
            let v = string2ll(value)
                .filter(|v| (min..=max).contains(v))
                .ok_or_else(|| {
                    format!(
                        "module argument {shown} takes an integer from {min} to {max}, not '{shown_value}'"
                    )
                })?;
            Ok(Value::Int(target, v))
        }
    }
}

/// Registers every setting as a server config (`CONFIG GET/SET
/// xset.<name>`), each with its current value (the module arguments
/// applied) as its default, so that loading the configs keeps them unless
/// the config file names the setting.
pub fn register(ctx: &Context) {
    for (name, setting) in settings() {
        match setting {
            Setting::Bool(v) => register_bool_configuration(
                ctx,
                name,
                v,
                v.load(Ordering::Relaxed),
                ConfigurationFlags::DEFAULT,
                None,
            ),
            Setting::Int(v, (_, min, max)) => register_i64_configuration(
                ctx,
                name,
                v,
                v.load(Ordering::Relaxed),
                min,
                max,
                ConfigurationFlags::DEFAULT,
                None,
            ),
        }
    }
}

/// Applies module arguments given as `name value` pairs (`loadmodule
/// libxset.so active-expire no`), each value read as `CONFIG SET` reads it
/// (`yes`/`no` in any case; an integer in Redis's grammar, within range):
/// every pair is checked before any is applied, so a refused load changes
/// nothing. The error names the
/// argument and what it takes; the caller refuses the load with it.
pub fn apply_module_args(args: &[&[u8]]) -> Result<(), String> {
    if !args.len().is_multiple_of(2) {
        return Err(format!(
            "module arguments come in name value pairs; '{}' has no value",
            String::from_utf8_lossy(args[args.len() - 1])
        ));
    }
    let parsed = args
        .chunks_exact(2)
        .map(|pair| parse_arg(pair[0], pair[1]))
        .collect::<Result<Vec<Value>, String>>()?;
    for v in parsed {
        match v {
            Value::Bool(target, b) => target.store(b, Ordering::Relaxed),
            Value::Int(target, i) => target.store(i, Ordering::Relaxed),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_args_are_checked_before_any_is_applied() {
        let before = SMALL_MAX_MEMBERS.load(Ordering::Relaxed);
        for bad in [
            &[&b"active-expire"[..], b"maybe"][..],
            &[b"bogus-option", b"1"],
            &[b"small-max-members", b"99999"],
            &[b"small-max-members", b"-1"],
            &[b"small-max-members", b"12abc"],
            &[b"small-max-members", b"+5"],
            &[b"small-max-members", b"05"],
            &[b"small-max-members", b"-0"],
            &[b"small-max-members", b" 5"],
            &[b"small-max-members", b"5", b"active-expire"],
            &[b"small-max-members", b"5", b"active-expire", b"on"],
        ] {
            assert!(apply_module_args(bad).is_err(), "{bad:?}");
            assert_eq!(SMALL_MAX_MEMBERS.load(Ordering::Relaxed), before);
        }
        let e = apply_module_args(&[b"small-max-members", b"99999"]).unwrap_err();
        assert!(
            e.contains("small-max-members") && e.contains("0 to 4096"),
            "{e}"
        );
    }
}
