//! Key-spec flags and ACL key permissions: every command declares the
//! key-spec flags of its native analogue (`SISMEMBER` for `XSET.HAS`,
//! `SPOP` for `XSET.POP`, ...), so a user whose selectors allow only
//! reading (`%R~`) or only writing (`%W~`) a key gets from each xset
//! command the answer the analogue gives: allowed, or `NOPERM`.
//!
//! The analogues are the server's own commands, asked on the same server.
//! The hash-field commands (`HTTL`, `HEXPIRE`, `HPERSIST`) exist from Redis
//! 7.4; where they are missing, the key-level `TTL`, `EXPIRE` and `PERSIST`
//! stand in, whose key specs carry the same flags.

use crate::harness::*;
use redis::{Connection, Value};

/// One xset command and its analogues: the first the server knows gives
/// the reference key-spec flags, and every one it knows the reference ACL
/// answers. With `each`, the command does what all its analogues do
/// together, one per key: the reference flags are theirs in order, and
/// the reference answer is allowed when every one is.
struct Pair {
    xset: &'static str,
    native: &'static [&'static str],
    each: bool,
}

const fn pair(xset: &'static str, native: &'static [&'static str]) -> Pair {
    Pair {
        xset,
        native,
        each: false,
    }
}

/// A command whose keys each have their own analogue.
const fn pair_each(xset: &'static str, native: &'static [&'static str]) -> Pair {
    Pair {
        xset,
        native,
        each: true,
    }
}

/// Every command of the table, with its analogue. Keys: `b:x` an xset,
/// `b:s` a set, `b:z` a sorted set, `b:h` a hash; `b:d*` and `d:*`
/// destinations. The `*STORE` forms take their flags from `ZINTERSTORE`
/// and friends: `SINTERSTORE`'s destination was `RW` before Redis 7.4
/// (redis#12917) and is `OW` since, as `ZINTERSTORE`'s always was (either
/// needs write permission only).
const PAIRS: &[Pair] = &[
    pair("XSET.ADD b:x m 100", &["ZADD b:z 1 m"]),
    pair("XSET.ADDEX b:x MEMBERS 1 m 100", &["ZADD b:z 1 m"]),
    pair("XSET.HAS b:x m", &["SISMEMBER b:s m"]),
    pair("XSET.MHAS b:x m", &["SMISMEMBER b:s m"]),
    pair("XSET.MEMBERS b:x", &["SMEMBERS b:s", "ZRANGE b:z 0 -1"]),
    pair("XSET.REM b:x none", &["SREM b:s none"]),
    pair("XSET.CARD b:x", &["SCARD b:s"]),
    pair("XSET.COUNT b:x -inf +inf", &["ZCOUNT b:z -inf +inf"]),
    pair("XSET.TTL b:x m", &["HTTL b:h FIELDS 1 f", "TTL b:h"]),
    pair("XSET.PTTL b:x m", &["HPTTL b:h FIELDS 1 f", "PTTL b:h"]),
    pair(
        "XSET.EXPIRETIME b:x m",
        &["HEXPIRETIME b:h FIELDS 1 f", "EXPIRETIME b:h"],
    ),
    pair(
        "XSET.PEXPIRETIME b:x m",
        &["HPEXPIRETIME b:h FIELDS 1 f", "PEXPIRETIME b:h"],
    ),
    pair(
        "XSET.EXPIRE b:x 1000 none",
        &["HEXPIRE b:h 1000 FIELDS 1 none", "EXPIRE b:h 100000"],
    ),
    pair(
        "XSET.PEXPIRE b:x 1000000 none",
        &[
            "HPEXPIRE b:h 1000000 FIELDS 1 none",
            "PEXPIRE b:h 100000000",
        ],
    ),
    pair(
        "XSET.EXPIREAT b:x 32503680000 none",
        &[
            "HEXPIREAT b:h 32503680000 FIELDS 1 none",
            "EXPIREAT b:h 32503680000",
        ],
    ),
    pair(
        "XSET.PEXPIREAT b:x 32503680000000 none",
        &[
            "HPEXPIREAT b:h 32503680000000 FIELDS 1 none",
            "PEXPIREAT b:h 32503680000000",
        ],
    ),
    pair(
        "XSET.PERSIST b:x none",
        &["HPERSIST b:h FIELDS 1 none", "PERSIST b:h"],
    ),
    pair("XSET.SCAN b:x 0", &["SSCAN b:s 0"]),
    pair("XSET.RANDMEMBER b:x", &["SRANDMEMBER b:s"]),
    pair("XSET.POP b:x 0 SOONEST", &["SPOP b:s 0", "ZPOPMIN b:z 0"]),
    pair("XSET.INTER 1 b:x", &["SINTER b:s"]),
    pair(
        "XSET.INTERSTORE d:1 1 b:x",
        &["ZINTERSTORE d:2 1 b:z", "SINTERSTORE d:2 b:s"],
    ),
    pair(
        "XSET.INTERSTORE b:d1 1 b:x",
        &["ZINTERSTORE b:d2 1 b:z", "SINTERSTORE b:d2 b:s"],
    ),
    pair("XSET.INTERCARD 1 b:x", &["SINTERCARD 1 b:s"]),
    pair("XSET.UNION 1 b:x", &["SUNION b:s"]),
    pair(
        "XSET.UNIONSTORE d:1 1 b:x",
        &["ZUNIONSTORE d:2 1 b:z", "SUNIONSTORE d:2 b:s"],
    ),
    pair(
        "XSET.UNIONSTORE b:d1 1 b:x",
        &["ZUNIONSTORE b:d2 1 b:z", "SUNIONSTORE b:d2 b:s"],
    ),
    pair("XSET.DIFF 1 b:x", &["SDIFF b:s"]),
    pair(
        "XSET.DIFFSTORE d:1 1 b:x",
        &["ZDIFFSTORE d:2 1 b:z", "SDIFFSTORE d:2 b:s"],
    ),
    pair(
        "XSET.DIFFSTORE b:d1 1 b:x",
        &["ZDIFFSTORE b:d2 1 b:z", "SDIFFSTORE b:d2 b:s"],
    ),
    // The set's setting changes as a ZADD changes a sorted set; the stream
    // is made and later appended to, as XADD does.
    pair_each(
        "XSET.NOTIFY b:x STREAM b:t",
        &["ZADD b:z 1 m", "XADD b:t * f v"],
    ),
    pair_each(
        "XSET.NOTIFY b:x STREAM d:t",
        &["ZADD b:z 1 m", "XADD d:t * f v"],
    ),
    // Internal (a client gets an error), but its keys are declared as
    // for the commands a primary used to propagate in its place: the set
    // loses members as with SREM, the stream gains entries and is trimmed
    // as with XADD ... MAXLEN.
    pair_each(
        "XSET.DELIVERED b:x b:t 1-1 -1 m 1",
        &["SREM b:s m", "XADD b:t * f v"],
    ),
];

fn words(form: &str) -> Vec<&[u8]> {
    form.split(' ').map(str::as_bytes).collect()
}

/// `None` when the server has no such command, else whether ACL let the
/// form run (any other error counts as allowed: the command ran).
fn allowed(c: &mut Connection, form: &str) -> Option<bool> {
    match try_q::<Value>(c, &words(form)) {
        Ok(_) => Some(true),
        Err(e) if e.code() == Some("NOPERM") => Some(false),
        Err(e) if e.to_string().contains("unknown command") => None,
        Err(_) => Some(true),
    }
}

/// The analogues of `p` the server knows, at least one.
fn analogues(c: &mut Connection, p: &Pair) -> Vec<&'static str> {
    let known: Vec<&str> = p
        .native
        .iter()
        .copied()
        .filter(|form| {
            let info: Vec<Value> = q(c, c!["COMMAND", "INFO", name(form)]);
            !matches!(info.first(), None | Some(Value::Nil))
        })
        .collect();
    assert!(!known.is_empty(), "the server has none of {:?}", p.native);
    known
}

/// The key-spec flags of `command` from `COMMAND INFO`, one sorted list
/// per key spec, in order.
fn key_spec_flags(c: &mut Connection, command: &str) -> Vec<Vec<String>> {
    let info: Vec<Value> = q(c, c!["COMMAND", "INFO", command]);
    let Some(Value::Array(fields)) = info.first() else {
        panic!("no COMMAND INFO for {command}");
    };
    let specs = match fields.get(8) {
        Some(Value::Array(specs)) => specs.clone(),
        other => panic!("{command}: no key specs in {other:?}"),
    };
    specs
        .iter()
        .map(|spec| {
            let kv: Vec<Value> = match spec {
                Value::Array(kv) => kv.clone(),
                Value::Map(m) => m.iter().flat_map(|(k, v)| [k.clone(), v.clone()]).collect(),
                other => panic!("{other:?}"),
            };
            let at = kv
                .chunks(2)
                .find(|p| matches!(&p[0], Value::BulkString(b) if b == b"flags"))
                .map(|p| p[1].clone());
            let mut flags: Vec<String> = match at {
                Some(Value::Array(f)) | Some(Value::Set(f)) => f
                    .iter()
                    .map(|v| match v {
                        Value::SimpleString(s) => s.to_ascii_uppercase(),
                        Value::BulkString(b) => String::from_utf8_lossy(b).to_ascii_uppercase(),
                        other => format!("{other:?}"),
                    })
                    .collect(),
                other => panic!("{command}: flags {other:?}"),
            };
            flags.sort();
            flags
        })
        .collect()
}

fn name(form: &str) -> &str {
    form.split(' ').next().unwrap_or(form)
}

#[test]
fn key_spec_flags_equal_the_native_analogues() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let mut wrong = Vec::new();
    for p in PAIRS {
        let known = analogues(&mut c, p);
        let natives = if p.each { known } else { vec![known[0]] };
        let native = natives
            .iter()
            .map(|n| name(n))
            .collect::<Vec<_>>()
            .join("+");
        let ours = key_spec_flags(&mut c, name(p.xset));
        let theirs: Vec<Vec<String>> = natives
            .iter()
            .flat_map(|n| key_spec_flags(&mut c, name(n)))
            .collect();
        if ours != theirs {
            wrong.push(format!("{}: {ours:?}, {native}: {theirs:?}", name(p.xset),));
        }
    }
    assert!(
        wrong.is_empty(),
        "key-spec flags differ:\n{}",
        wrong.join("\n")
    );
    // Every command of the module is covered.
    let listed: Vec<String> = q(&mut c, c!["COMMAND", "LIST", "FILTERBY", "MODULE", "xset"]);
    for command in listed {
        if command.starts_with("xset.debug-") {
            continue;
        }
        assert!(
            PAIRS
                .iter()
                .any(|p| name(p.xset).eq_ignore_ascii_case(&command)),
            "{command} has no analogue here"
        );
    }
}

fn as_user(s: &Server, user: &str) -> Connection {
    let mut c = s.conn();
    let _: String = q(&mut c, c!["AUTH", user, "pw"]);
    c
}

/// Keys of every kind for the forms of [`PAIRS`], each made anew (forms
/// that write may have changed them).
fn refill(c: &mut Connection) {
    let _: i64 = q(c, c!["DEL", "b:x", "b:s", "b:z", "b:h", "b:t", "d:t"]);
    q::<i64>(c, c!["XSET.ADD", "b:x", "m", "100", "n", "200"]);
    q::<i64>(c, c!["SADD", "b:s", "m", "n"]);
    q::<i64>(c, c!["ZADD", "b:z", "1", "m", "2", "n"]);
    q::<i64>(c, c!["HSET", "b:h", "f", "v"]);
}

#[test]
fn read_only_and_write_only_users_get_the_analogues_answer() {
    let s = Server::start(&[]);
    let mut admin = s.conn();
    for rule in [
        "ACL SETUSER w on >pw %W~b* +@all",
        "ACL SETUSER r on >pw %R~b* +@all",
        "ACL SETUSER split on >pw %R~b* %W~d* +@all",
    ] {
        assert_eq!(q::<String>(&mut admin, &words(rule)), "OK", "{rule}");
    }
    let mut wrong = Vec::new();
    for user in ["w", "r", "split"] {
        let mut c = as_user(&s, user);
        for p in PAIRS {
            refill(&mut admin);
            let ours = allowed(&mut c, p.xset);
            if p.each {
                let mut all = Some(true);
                for native in analogues(&mut admin, p) {
                    refill(&mut admin);
                    all = match (all, allowed(&mut c, native)) {
                        (Some(a), Some(b)) => Some(a && b),
                        _ => None,
                    };
                }
                if ours != all {
                    wrong.push(format!(
                        "user {user}: {} allowed {ours:?}, {:?} together allowed {all:?}",
                        p.xset, p.native
                    ));
                }
                continue;
            }
            for native in analogues(&mut admin, p) {
                refill(&mut admin);
                let theirs = allowed(&mut c, native);
                if ours != theirs {
                    wrong.push(format!(
                        "user {user}: {} allowed {ours:?}, {native} allowed {theirs:?}",
                        p.xset
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_write_only_user_cannot_read_members_through_pop() {
    let s = Server::start(&[]);
    let mut admin = s.conn();
    let _: String = q(
        &mut admin,
        c!["ACL", "SETUSER", "w", "on", ">pw", "%W~b*", "+@all"],
    );
    q::<i64>(&mut admin, c!["XSET.ADD", "b:1", "secret", "100"]);
    let mut w = as_user(&s, "w");
    assert!(err(&mut w, c!["XSET.POP", "b:1", "2", "SOONEST"]).starts_with("NOPERM"));
    assert!(err(&mut w, c!["XSET.RANDMEMBER", "b:1"]).starts_with("NOPERM"));
    // Removing without reading stays allowed, as SREM.
    assert_eq!(q::<i64>(&mut w, c!["XSET.REM", "b:1", "other"]), 0);
    assert_eq!(q::<i64>(&mut admin, c!["XSET.CARD", "b:1"]), 1);
}
