//! The grammar of every command, from an argument vector to a parsed
//! request: no argument vector that fits a command's arity (the server
//! checks that before a command runs) makes its parser panic, every error
//! is one of the module's single-line replies, and what a parser accepts
//! holds together: counts match what follows them, windows are the bounds
//! as written in that order, deadlines lie within `MAX_DEADLINE_MS`,
//! options are what was written, and a request written out again with its
//! options in another order parses to the same request.
//!
//! The module's own files are compiled here unchanged (`#[path]`), beside a
//! stand-in for the server's argument strings. `XSET.HAS`, `XSET.MHAS`,
//! `XSET.CARD` and `XSET.REM` parse nothing beyond their arity (every
//! argument after the key is a member); the adds' round trip is the
//! `grammar` target's.
//!
//! Input: one byte choosing the command ([`COMMANDS`], modulo its length)
//! and, with what is left of it, whether the server is a primary and over
//! `maxmemory`; then the arguments after the name, key first, separated by
//! NUL bytes.

#![no_main]
#![allow(dead_code)]

use libfuzzer_sys::fuzz_target;
use redis_module::RedisError;
use xset_core::{ExpireCondition, MAX_DEADLINE_MS, Window};

/// Stand-in for the server's argument strings.
mod ffi {
    pub mod key {
        pub struct CmdArg(pub Vec<u8>);

        impl CmdArg {
            pub fn as_slice(&self) -> &[u8] {
                &self.0
            }
        }
    }
}

#[path = "../../src/errors.rs"]
mod errors;
#[path = "../../src/commands/grammar.rs"]
mod grammar;
#[path = "../../src/commands/parse.rs"]
mod parse;
#[path = "../../src/commands/requests.rs"]
mod requests;

use ffi::key::CmdArg;
use parse::{Target, TimeUnit, is, parse_bound, parse_i64, to_deadline};
use requests::NotifyRequest;

/// Every command of `TABLE` then `INTERNAL` (src/commands/mod.rs), in
/// their order, with its arity; the module's unit test
/// `the_fuzz_target_names_every_command` checks this list against them.
const COMMANDS: &[(&str, i32)] = &[
    ("xset.add", -4),
    ("xset.addex", -3),
    ("xset.has", 3),
    ("xset.mhas", -3),
    ("xset.members", -2),
    ("xset.rem", -3),
    ("xset.card", 2),
    ("xset.count", 4),
    ("xset.ttl", -3),
    ("xset.pttl", -3),
    ("xset.expiretime", -3),
    ("xset.pexpiretime", -3),
    ("xset.expire", -4),
    ("xset.pexpire", -4),
    ("xset.expireat", -4),
    ("xset.pexpireat", -4),
    ("xset.persist", -3),
    ("xset.scan", -3),
    ("xset.randmember", -2),
    ("xset.pop", -2),
    ("xset.inter", -3),
    ("xset.interstore", -4),
    ("xset.intercard", -3),
    ("xset.union", -3),
    ("xset.unionstore", -4),
    ("xset.diff", -3),
    ("xset.diffstore", -4),
    ("xset.notify", -2),
    ("xset.delivered", -7),
];

const NOW_MS: u64 = 1_800_000_000_000;

/// Whether `argc` arguments (the name included) fit `arity`, as the server
/// and `CommandSpec::fits` decide.
fn fits(arity: i32, argc: usize) -> bool {
    let least = arity.unsigned_abs() as usize;
    if arity > 0 {
        argc == least
    } else {
        argc >= least
    }
}

fn argv(words: &[&[u8]]) -> Vec<CmdArg> {
    words.iter().map(|w| CmdArg(w.to_vec())).collect()
}

fn same(a: &CmdArg, b: &CmdArg) -> bool {
    std::ptr::eq(a, b)
}

/// Every error a parser returns is a fixed or formatted reply of
/// `errors.rs`: one line, with Redis's prefix.
fn check_error(e: &RedisError) {
    let msg = match e {
        RedisError::Str(s) => *s,
        RedisError::String(s) => s.as_str(),
        other => panic!("a parser returned {other:?}"),
    };
    assert!(
        msg.starts_with("ERR ") || msg.starts_with("OOM "),
        "{msg:?}"
    );
    assert!(!msg.contains('\r') && !msg.contains('\n'), "{msg:?}");
}

/// A member target starting at `args[pos]`: the last argument alone, or a
/// `MEMBERS n` block whose count is what follows it, to the end.
fn check_target(target: &Target, args: &[CmdArg], pos: usize) {
    match target {
        Target::One(m) => {
            assert_eq!(args.len(), pos + 1);
            assert!(same(m, &args[pos]));
        }
        Target::Many(ms) => {
            assert!(is(&args[pos], "MEMBERS"));
            let n = parse_i64(args[pos + 1].as_slice()).expect("a count");
            assert!(n > 0);
            assert_eq!(ms.len() as i64, n);
            assert_eq!(ms.len(), args.len() - pos - 2);
            assert!(same(&ms[0], &args[pos + 2]));
        }
    }
    assert!(!target.members().is_empty());
}

/// The window of bounds `min` and `max`, parsed on their own.
fn window_of(min: &CmdArg, max: &CmdArg) -> Window {
    let min = parse_bound(min.as_slice()).expect("min parses alone");
    let max = parse_bound(max.as_slice()).expect("max parses alone");
    Window::new(min, max)
}

/// Arguments given as words, for a request written out again.
fn words(list: &[&[u8]]) -> Vec<CmdArg> {
    argv(list)
}

fn check_add(req: &grammar::AddRequest) {
    assert!(!req.pairs.is_empty(), "an add names a member");
    assert!(req.given >= req.pairs.len());
    let mut seen = std::collections::HashSet::new();
    for (m, d) in &req.pairs {
        assert!(seen.insert(m.0.clone()), "each member once");
        assert!(*d <= MAX_DEADLINE_MS, "deadline in range");
    }
}

fn check_members(args: &[CmdArg]) -> Result<(), RedisError> {
    let req = requests::parse_members(args)?;
    let by_deadline = args.len() > 2 && is(&args[2], "BYDEADLINE");
    if by_deadline {
        assert_eq!(req.window, window_of(&args[3], &args[4]));
    } else {
        assert_eq!(req.window, Window::ALL);
    }
    let options = &args[if by_deadline { 5 } else { 2 }..];
    assert_eq!(req.rev, options.iter().any(|a| is(a, "REV")));
    assert_eq!(req.with_ttl, options.iter().any(|a| is(a, "WITHTTL")));
    match options.iter().position(|a| is(a, "LIMIT")) {
        Some(at) => {
            assert_eq!(Some(req.offset), parse_i64(options[at + 1].as_slice()).ok());
            assert_eq!(Some(req.count), parse_i64(options[at + 2].as_slice()).ok());
        }
        None => assert_eq!((req.offset, req.count), (0, -1)),
    }
    // Written out again, options in another order.
    let (offset, count) = (req.offset.to_string(), req.count.to_string());
    let mut again: Vec<&[u8]> = vec![b"xset.members", b"key"];
    if by_deadline {
        again.extend([&b"bydeadline"[..], args[3].as_slice(), args[4].as_slice()]);
    }
    if req.with_ttl {
        again.push(b"WITHTTL");
    }
    again.extend([&b"LIMIT"[..], offset.as_bytes(), count.as_bytes()]);
    if req.rev {
        again.push(b"rev");
    }
    let again = words(&again);
    assert_eq!(requests::parse_members(&again).map_err(|_| ()), Ok(req));
    Ok(())
}

fn check_scan(args: &[CmdArg]) -> Result<(), RedisError> {
    let req = requests::parse_scan(args)?;
    assert_eq!(req.cursor.to_string().as_bytes(), args[2].as_slice());
    assert!(req.count >= 1);
    let options = &args[3..];
    if !options.iter().any(|a| is(a, "COUNT")) {
        assert_eq!(req.count, 10);
    }
    // (A pattern may spell `WITHTTL`.)
    assert!(!req.with_ttl || options.iter().any(|a| is(a, "WITHTTL")));
    if let Some(p) = req.pattern {
        let at = options.iter().position(|a| is(a, "MATCH")).expect("MATCH");
        assert_eq!(p, options[at + 1].as_slice());
    }
    let count = req.count.to_string();
    let mut again: Vec<&[u8]> = vec![b"xset.scan", b"key", args[2].as_slice()];
    if req.with_ttl {
        again.push(b"withttl");
    }
    again.extend([&b"COUNT"[..], count.as_bytes()]);
    if let Some(p) = req.pattern {
        again.extend([&b"match"[..], p]);
    }
    let again = words(&again);
    assert_eq!(requests::parse_scan(&again).map_err(|_| ()), Ok(req));
    Ok(())
}

fn check_expire(
    args: &[CmdArg],
    name: &str,
    unit: TimeUnit,
    over_memory: bool,
) -> Result<(), RedisError> {
    let asked = std::cell::Cell::new(false);
    let req = requests::parse_expire(args, name, unit, NOW_MS, || {
        asked.set(true);
        over_memory
    })?;
    let value = parse_i64(args[2].as_slice()).expect("the time");
    assert!(value >= 0);
    assert_eq!(Some(req.deadline_ms), to_deadline(value, unit, NOW_MS));
    assert!(req.deadline_ms <= MAX_DEADLINE_MS);
    // The server is asked only about a time that may grow the set.
    assert_eq!(asked.get(), req.deadline_ms > NOW_MS);
    assert!(!(over_memory && req.deadline_ms > NOW_MS));
    let word = match req.condition {
        ExpireCondition::Always => None,
        ExpireCondition::NoDeadline => Some("NX"),
        ExpireCondition::HasDeadline => Some("XX"),
        ExpireCondition::Greater => Some("GT"),
        ExpireCondition::Less => Some("LT"),
    };
    if let Some(word) = word {
        assert!(args.len() > 4 && is(&args[3], word));
    }
    check_target(&req.target, args, if word.is_some() { 4 } else { 3 });
    Ok(())
}

fn check_randmember(args: &[CmdArg]) -> Result<(), RedisError> {
    let req = requests::parse_randmember(args)?;
    match req.count {
        None => assert_eq!(args.len(), 2),
        Some(n) => {
            assert_eq!(Some(n), parse_i64(args[2].as_slice()).ok());
            assert!(n >= -(requests::MAX_REPEATED as i64));
        }
    }
    assert_eq!(req.with_ttl, args.len() == 4);
    Ok(())
}

fn check_pop(args: &[CmdArg]) -> Result<(), RedisError> {
    let req = requests::parse_pop(args)?;
    assert!(args.len() <= 4);
    assert_eq!(
        req.soonest,
        args.len() > 2 && is(&args[args.len() - 1], "SOONEST")
    );
    match req.count {
        Some(n) => assert_eq!(Some(n as i64), parse_i64(args[2].as_slice()).ok()),
        None => assert!(args.len() == 2 || (args.len() == 3 && req.soonest)),
    }
    Ok(())
}

/// Operands counted at `args[at]`, following it.
fn check_keys(keys: &[CmdArg], args: &[CmdArg], at: usize) {
    assert!(!keys.is_empty());
    assert_eq!(Some(keys.len() as i64), parse_i64(args[at].as_slice()).ok());
    assert!(same(&keys[0], &args[at + 1]));
}

fn check_notify(args: &[CmdArg]) -> Result<(), RedisError> {
    let req = requests::parse_notify(args)?;
    match &req {
        NotifyRequest::Query => assert_eq!(args.len(), 2),
        NotifyRequest::Off => assert!(args.len() == 3 && is(&args[2], "OFF")),
        NotifyRequest::Stream(d) => {
            assert!(is(&args[2], "STREAM"));
            assert_eq!(d.stream, args[3].as_slice());
            assert_ne!(d.stream, args[1].as_slice());
            assert!(d.maxlen.is_none_or(|n| n > 0 && n <= i64::MAX as u64));
            let maxlen = d.maxlen.map(|n| n.to_string());
            let mut again: Vec<&[u8]> = vec![b"xset.notify", args[1].as_slice(), b"stream"];
            again.push(&d.stream);
            if let Some(n) = &maxlen {
                again.extend([&b"maxlen"[..], b"~", n.as_bytes()]);
            }
            let again = words(&again);
            let reparsed = requests::parse_notify(&again).ok();
            assert_eq!(reparsed, Some(NotifyRequest::Stream(d.clone())));
        }
    }
    Ok(())
}

/// An `XSET.DELIVERED` accepted is what the primary writes: two keys, the
/// first ID as `ms-seq` after `0-0` with room for every entry after it,
/// the trim as `-1` or a length, and whole `member deadline` pairs with
/// deadlines in range.
fn check_delivered(args: &[CmdArg]) -> Result<(), RedisError> {
    let req = requests::parse_delivered(args)?;
    assert_ne!(args[1].as_slice(), args[2].as_slice());
    let id = format!("{}-{}", req.first_id.ms, req.first_id.seq);
    assert_eq!(id.as_bytes(), args[3].as_slice());
    assert_ne!((req.first_id.ms, req.first_id.seq), (0, 0));
    let trim = req.trimmed_to.map_or("-1".to_string(), |n| n.to_string());
    assert_eq!(trim.as_bytes(), args[4].as_slice());
    assert!(!req.entries.is_empty() && req.entries.len().is_multiple_of(2));
    assert_eq!(req.entries.len(), args.len() - 5);
    assert!(same(&req.entries[0], &args[5]));
    let n = req.entries.len() as u64 / 2;
    assert!(req.first_id.after(n - 1).is_some());
    for pair in req.entries.chunks(2) {
        let deadline = parse_i64(pair[1].as_slice()).expect("a deadline");
        assert!((0..=MAX_DEADLINE_MS as i64).contains(&deadline));
        assert_eq!(deadline.to_string().as_bytes(), pair[1].as_slice());
    }
    Ok(())
}

/// Parses `args` as command `name` and checks what it accepted.
fn check(name: &str, args: &[CmdArg], primary: bool, over_memory: bool) -> Result<(), RedisError> {
    match name {
        "xset.add" => check_add(&grammar::parse_add(args, primary, NOW_MS)?),
        "xset.addex" => check_add(&grammar::parse_addex(args, 2, NOW_MS)?),
        // Every argument after the key is a member.
        "xset.has" | "xset.mhas" | "xset.card" | "xset.rem" => {}
        "xset.members" => check_members(args)?,
        "xset.count" => {
            let window = requests::parse_count(args)?;
            assert_eq!(window, window_of(&args[2], &args[3]));
        }
        "xset.ttl" | "xset.pttl" | "xset.expiretime" | "xset.pexpiretime" | "xset.persist" => {
            check_target(&requests::parse_member_target(args)?, args, 2)
        }
        "xset.expire" => check_expire(args, name, TimeUnit::Seconds, over_memory)?,
        "xset.pexpire" => check_expire(args, name, TimeUnit::Millis, over_memory)?,
        "xset.expireat" => check_expire(args, name, TimeUnit::UnixSeconds, over_memory)?,
        "xset.pexpireat" => check_expire(args, name, TimeUnit::UnixMillis, over_memory)?,
        "xset.scan" => check_scan(args)?,
        "xset.randmember" => check_randmember(args)?,
        "xset.pop" => check_pop(args)?,
        "xset.inter" | "xset.union" | "xset.diff" => {
            let req = requests::parse_algebra(args)?;
            check_keys(req.keys, args, 1);
            assert_eq!(req.with_ttl, args.len() == req.keys.len() + 3);
        }
        "xset.interstore" | "xset.unionstore" | "xset.diffstore" => {
            let keys = requests::parse_store(args)?;
            check_keys(keys, args, 2);
            assert_eq!(keys.len(), args.len() - 3);
        }
        "xset.intercard" => {
            let req = requests::parse_intercard(args)?;
            check_keys(req.keys, args, 1);
            assert!(req.limit >= 1);
            let options = &args[req.keys.len() + 2..];
            match options {
                [] => assert_eq!(req.limit, usize::MAX),
                [_, n] => {
                    let n = parse_i64(n.as_slice()).expect("the limit");
                    assert_eq!(req.limit, if n == 0 { usize::MAX } else { n as usize });
                }
                _ => panic!("options left over"),
            }
        }
        "xset.notify" => check_notify(args)?,
        "xset.delivered" => check_delivered(args)?,
        _ => unreachable!("{name}"),
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (name, arity) = COMMANDS[pick as usize % COMMANDS.len()];
    let mode = pick as usize / COMMANDS.len();
    let (primary, over_memory) = (mode & 1 == 0, mode & 2 == 2);
    let mut words: Vec<&[u8]> = vec![name.as_bytes()];
    if !rest.is_empty() {
        words.extend(rest.split(|&b| b == 0));
    }
    if !fits(arity, words.len()) {
        return;
    }
    let args = argv(&words);
    if let Err(e) = check(name, &args, primary, over_memory) {
        check_error(&e);
    }
});
