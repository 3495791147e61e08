//! The module arguments (`loadmodule libxset.so name value ...`), read by
//! `src/config.rs` (compiled here unchanged, `#[path]`), against a
//! reference written from the documented grammar: a switch takes `yes` or
//! `no` in any case, a number takes the integer as Rust writes it (no `+`,
//! no leading zero, no `-0`, no space) within its range, names in any case,
//! in name value pairs. The module must never panic, accept exactly what the
//! reference accepts, then hold the last value given for each setting; a
//! refused list changes nothing, and its error names the word at fault.
//!
//! Input: the arguments, separated by NUL bytes.

#![no_main]
#![allow(dead_code)]

use libfuzzer_sys::fuzz_target;
use std::sync::atomic::Ordering;

#[path = "../../src/config.rs"]
mod config;

/// What a setting takes, in the reference: a switch, or a number in
/// `(least, greatest)`.
enum Takes {
    Switch,
    Number(i64, i64),
}

/// The settings, by name, as the documentation lists them.
fn reference_settings() -> [(&'static str, Takes); 6] {
    let number = |(_, least, greatest): (i64, i64, i64)| Takes::Number(least, greatest);
    [
        ("active-expire", Takes::Switch),
        ("active-expire-period-ms", number(config::PERIOD_MS_RANGE)),
        ("active-expire-budget-us", number(config::BUDGET_US_RANGE)),
        ("small-max-members", number(config::SMALL_MAX_MEMBERS_RANGE)),
        (
            "small-max-member-bytes",
            number(config::SMALL_MAX_MEMBER_BYTES_RANGE),
        ),
        ("notify-expired-members", Takes::Switch),
    ]
}

/// Every setting's stored value, switches as 0 or 1, in the reference's
/// order.
fn stored() -> [i64; 6] {
    [
        i64::from(config::ACTIVE_EXPIRE.load(Ordering::Relaxed)),
        config::PERIOD_MS.load(Ordering::Relaxed),
        config::BUDGET_US.load(Ordering::Relaxed),
        config::SMALL_MAX_MEMBERS.load(Ordering::Relaxed),
        config::SMALL_MAX_MEMBER_BYTES.load(Ordering::Relaxed),
        i64::from(config::NOTIFY_EXPIRED_MEMBERS.load(Ordering::Relaxed)),
    ]
}

/// The value the reference reads for one pair, with its setting's
/// position; `Err` names the word at fault.
fn reference_pair(name: &[u8], value: &[u8]) -> Result<(usize, i64), Vec<u8>> {
    let settings = reference_settings();
    let Some(at) = settings
        .iter()
        .position(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
    else {
        return Err(name.to_vec());
    };
    let read = match settings[at].1 {
        Takes::Switch if value.eq_ignore_ascii_case(b"yes") => Some(1),
        Takes::Switch if value.eq_ignore_ascii_case(b"no") => Some(0),
        Takes::Switch => None,
        Takes::Number(least, greatest) => std::str::from_utf8(value)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|v| v.to_string().as_bytes() == value && (least..=greatest).contains(v)),
    };
    read.map(|v| (at, v)).ok_or_else(|| name.to_vec())
}

fuzz_target!(|data: &[u8]| {
    let words: Vec<&[u8]> = if data.is_empty() {
        Vec::new()
    } else {
        data.split(|&b| b == 0).collect()
    };
    let shown: Vec<_> = words.iter().map(|w| String::from_utf8_lossy(w)).collect();
    let before = stored();
    let want: Result<[i64; 6], Vec<u8>> = if !words.len().is_multiple_of(2) {
        Err(words[words.len() - 1].to_vec())
    } else {
        words.chunks_exact(2).try_fold(before, |mut after, pair| {
            let (at, v) = reference_pair(pair[0], pair[1])?;
            after[at] = v;
            Ok(after)
        })
    };
    match (config::apply_module_args(&words), want) {
        (Ok(()), Ok(after)) => assert_eq!(stored(), after, "{shown:?}"),
        (Err(e), Err(word)) => {
            assert_eq!(
                stored(),
                before,
                "a refused list changed a setting: {shown:?}"
            );
            let word = String::from_utf8_lossy(&word);
            assert!(e.contains(word.as_ref()), "{e:?} does not name {word:?}");
        }
        (got, want) => panic!("{shown:?}: the module says {got:?}, the reference {want:?}"),
    }
});
