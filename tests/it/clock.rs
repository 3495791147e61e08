//! Time is frozen exactly as the server freezes it for its own key expiry:
//! one snapshot per top-level command, held for a whole `MULTI`/`EXEC`,
//! script or function. Each test writes an xset member and a native
//! `SET ... PX` key with the same TTL in the same transaction, makes slow
//! work happen, and checks that the two live and die together. None of them
//! waits for `TIME` to move inside a script (it is cached on 7.2+).

use crate::harness::*;
use redis::{Connection, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Slow work inside the transaction: the member and the key stay live until
/// `EXEC` ends, and the member's TTL reads as set.
#[test]
fn a_transaction_runs_at_one_instant() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("XSET.ADDEX")
        .arg("m")
        .arg("PX")
        .arg("MEMBERS")
        .arg(1)
        .arg("a")
        .arg(200)
        .cmd("SET")
        .arg("native")
        .arg("v")
        .arg("PX")
        .arg(200)
        .cmd("DEBUG")
        .arg("SLEEP")
        .arg("0.3")
        .cmd("XSET.HAS")
        .arg("m")
        .arg("a")
        .cmd("EXISTS")
        .arg("native")
        .cmd("XSET.PTTL")
        .arg("m")
        .arg("a")
        .query(&mut c)
        .expect("MULTI");
    assert_eq!(replies[3], Value::Int(1), "member live inside EXEC");
    assert_eq!(replies[4], Value::Int(1), "native key live inside EXEC");
    assert_eq!(replies[5], Value::Int(200), "TTL frozen inside EXEC");
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "m", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "native"]), 0);
}

/// Slow work before the transaction in the same event-loop pass (a
/// pipelined `DEBUG SLEEP`) must not shorten TTLs set inside it: the
/// transaction's time is its own start, not the loop's wake-up.
#[test]
fn earlier_work_in_the_same_loop_pass_does_not_shorten_ttls() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let replies: Vec<Value> = redis::pipe()
        .cmd("DEBUG")
        .arg("SLEEP")
        .arg("0.3")
        .cmd("MULTI")
        .cmd("XSET.ADDEX")
        .arg("m")
        .arg("PX")
        .arg("MEMBERS")
        .arg(1)
        .arg("a")
        .arg(200)
        .cmd("SET")
        .arg("native")
        .arg("v")
        .arg("PX")
        .arg(200)
        .cmd("EXEC")
        .cmd("XSET.HAS")
        .arg("m")
        .arg("a")
        .cmd("EXISTS")
        .arg("native")
        .cmd("XSET.PTTL")
        .arg("m")
        .arg("a")
        .cmd("PTTL")
        .arg("native")
        .query(&mut c)
        .expect("pipeline");
    let n = replies.len();
    assert_eq!(replies[n - 4], Value::Int(1), "member live after EXEC");
    assert_eq!(replies[n - 3], Value::Int(1), "native key live after EXEC");
    let (Value::Int(member), Value::Int(native)) = (&replies[n - 2], &replies[n - 1]) else {
        panic!("PTTL replies: {replies:?}");
    };
    assert!(*member > 100, "member TTL {member}");
    assert!(
        (member - native).abs() <= 20,
        "member {member} ms vs native {native} ms"
    );
}

/// How many iterations of a Lua counting loop take about `target`.
fn calibrate_loop(c: &mut Connection, target: Duration) -> u64 {
    let n: u64 = 2_000_000;
    let started = Instant::now();
    let _: i64 = redis::cmd("EVAL")
        .arg("local x = 0 for i = 1, tonumber(ARGV[1]) do x = x + 1 end return 1")
        .arg(0)
        .arg(n)
        .query(c)
        .expect("calibration");
    let took = started.elapsed().as_secs_f64().max(0.001);
    ((n as f64) * target.as_secs_f64() / took) as u64
}

const SCRIPT: &str = r#"
    redis.call('XSET.ADDEX', KEYS[1], 'PX', 'MEMBERS', 1, 'a', ARGV[1])
    redis.call('SET', KEYS[2], 'v', 'PX', ARGV[1])
    local x = 0
    for i = 1, tonumber(ARGV[2]) do x = x + 1 end
    return {redis.call('XSET.HAS', KEYS[1], 'a'), redis.call('EXISTS', KEYS[2]),
            redis.call('XSET.PTTL', KEYS[1], 'a')}
"#;

/// Runs `call(n)` (an EVAL or FCALL of [`SCRIPT`] with a loop of `n`) for
/// about 900 ms with a 300 ms TTL, past `busy-reply-threshold`, while
/// another client sends `EVAL`s until one arrives mid-way and is refused as
/// busy. Inside, the member and the key are both live and the TTL reads as
/// set; afterwards both are gone. A run the shared machine made too short
/// to prove anything is repeated with a longer loop.
fn check_script_time(s: &Server, c: &mut Connection, call: impl Fn(u64) -> redis::Cmd) {
    let mut n = calibrate_loop(c, Duration::from_millis(900));
    for _attempt in 0..4 {
        let mut c2 = s.conn();
        let running = Arc::new(AtomicBool::new(true));
        let other = {
            let running = Arc::clone(&running);
            // An EVAL sent before the script starts just runs; the first
            // one sent while it runs past the threshold is refused.
            std::thread::spawn(move || {
                while running.load(Ordering::Relaxed) {
                    match redis::cmd("EVAL")
                        .arg("return 1")
                        .arg(0)
                        .query::<i64>(&mut c2)
                    {
                        Ok(_) => std::thread::sleep(Duration::from_millis(5)),
                        Err(e) => return e.code().map(str::to_string),
                    }
                }
                None
            })
        };
        let started = Instant::now();
        let r: Vec<i64> = call(n).query(c).expect("script");
        let took = started.elapsed();
        running.store(false, Ordering::Relaxed);
        let refused = other.join().expect("second client thread");
        if took < Duration::from_millis(700) {
            n *= 2;
            continue;
        }
        assert_eq!(
            refused.as_deref(),
            Some("BUSY"),
            "the EVAL mid-way was refused"
        );
        assert_eq!(r, [1, 1, 300], "member live, key live, TTL as set");
        assert_eq!(q::<i64>(c, c!["XSET.HAS", "m", "a"]), 0);
        assert_eq!(q::<i64>(c, c!["EXISTS", "native"]), 0);
        return;
    }
    panic!("the script never ran long enough");
}

/// `verb what 2 m native 300 n`: the script (or function) on keys `m` and
/// `native`, a 300 ms TTL and a loop of `n`.
fn script_call(verb: &str, what: &str, n: u64) -> redis::Cmd {
    let mut call = redis::cmd(verb);
    call.arg(what).arg(2).arg("m").arg("native").arg(300).arg(n);
    call
}

#[test]
fn a_script_past_the_busy_threshold_keeps_its_start_time() {
    let s = Server::start(&["--busy-reply-threshold", "100"]);
    let mut c = s.conn();
    check_script_time(&s, &mut c, |n| script_call("EVAL", SCRIPT, n));
}

#[test]
fn a_function_past_the_busy_threshold_keeps_its_start_time() {
    let s = Server::start(&["--busy-reply-threshold", "100"]);
    let mut c = s.conn();
    let library = format!(
        "#!lua name=xsetclock\nredis.register_function('slow', function(KEYS, ARGV) {SCRIPT} end)"
    );
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(library)
        .query(&mut c)
        .expect("FUNCTION LOAD");
    check_script_time(&s, &mut c, |n| script_call("FCALL", "slow", n));
}

/// Outside transactions every command reads the clock anew: a member set
/// with a 50 ms TTL is gone 80 ms later, and `XSET.PTTL` counts down.
#[test]
fn plain_commands_read_the_clock() {
    let s = Server::start(&["--save", ""]);
    let mut c = s.conn();
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "m", "PX", "MEMBERS", "1", "a", "5000"],
    );
    let first: i64 = q(&mut c, c!["XSET.PTTL", "m", "a"]);
    let read_at = server_ms(&mut c);
    wait_past(&mut c, read_at);
    let second: i64 = q(&mut c, c!["XSET.PTTL", "m", "a"]);
    assert!(second < first, "{second} < {first}");
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "m", "PX", "MEMBERS", "1", "b", "50"],
    );
    wait_ttl_out(&mut c, 50);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "m", "b"]), 0);
}

/// An `EXEC` that arrives during `CLIENT PAUSE ... WRITE` waits and runs
/// when the pause ends (on 7.2+ without passing the command filter again):
/// its TTLs count from when it ran, as the native key's does.
#[test]
fn a_transaction_postponed_by_a_write_pause_runs_at_its_own_time() {
    let s = Server::start(&[]);
    let mut admin = s.conn();
    let mut c = s.conn();
    let _: String = q(&mut c, c!["MULTI"]);
    let queued: String = q(
        &mut c,
        c!["XSET.ADDEX", "m", "PX", "MEMBERS", "1", "a", "5000"],
    );
    assert_eq!(queued, "QUEUED");
    let _: String = q(&mut c, c!["SET", "native", "v", "PX", "5000"]);
    let _: String = q(&mut admin, c!["CLIENT", "PAUSE", "400", "WRITE"]);
    let started = Instant::now();
    let _: Vec<Value> = q(&mut c, c!["EXEC"]);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "the EXEC did not wait for the pause"
    );
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "native"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "m", "a"]), 1);
    // Absolute deadlines, so the machine's speed between the commands does
    // not matter: counted from the EXEC's arrival (400 ms early) the
    // member's would stand about 400 ms before the key's.
    let member: i64 = q(&mut c, c!["XSET.PEXPIRETIME", "m", "a"]);
    let native: i64 = q(&mut c, c!["PEXPIRETIME", "native"]);
    assert!(
        (member - native).abs() <= 20,
        "member's deadline {member} against the key's {native}"
    );
}

/// A transaction postponed by a write pause whose first xset command is a
/// read: that read takes the transaction's time, so members live then stay
/// live for the rest of it (`XSET.HAS`, `XSET.CARD` and `XSET.MHAS` read
/// the time without the context's flags only once it is known).
#[test]
fn a_postponed_transaction_runs_at_its_first_read() {
    let s = Server::start(&["--save", ""]);
    let mut admin = s.conn();
    let mut c = s.conn();
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "m", "PX", "MEMBERS", "1", "a", "300"],
    );
    let _: String = q(&mut c, c!["MULTI"]);
    for cmd in [
        c!["XSET.HAS", "m", "a"],
        c!["DEBUG", "SLEEP", "0.4"],
        c!["XSET.HAS", "m", "a"],
        c!["XSET.CARD", "m"],
        c!["XSET.MHAS", "m", "a"],
        c!["SET", "other", "v"],
    ] {
        let queued: String = q(&mut c, cmd);
        assert_eq!(queued, "QUEUED");
    }
    let _: String = q(&mut admin, c!["CLIENT", "PAUSE", "100", "WRITE"]);
    let replies: Vec<Value> = q(&mut c, c!["EXEC"]);
    assert_eq!(replies[0], Value::Int(1), "live when the transaction ran");
    assert_eq!(replies[2], Value::Int(1), "still live after the sleep");
    assert_eq!(replies[3], Value::Int(1), "still counted after the sleep");
    assert_eq!(
        replies[4],
        Value::Array(vec![Value::Int(1)]),
        "still live for MHAS"
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "m", "a"]), 0);
}

/// `INFO stats` `keyspace_hits` from a reply of `INFO`.
fn hits(v: &Value) -> i64 {
    let Value::BulkString(text) = v else {
        panic!("INFO reply: {v:?}");
    };
    info_text_i64(&String::from_utf8_lossy(text), "keyspace_hits").expect("keyspace_hits")
}

/// A read that cannot answer early (a member due by the wall clock but
/// not at the transaction's time) still looks its key up once, as a timed
/// read does: lookups count in `keyspace_hits` and touch the key's LRU/LFU.
#[test]
fn a_live_read_looks_its_key_up_once() {
    let s = Server::start_with_module_args(&["--save", ""], &["active-expire", "no"]);
    let mut c = s.conn();
    let _: String = q(&mut c, c!["MULTI"]);
    for cmd in [
        c!["XSET.ADDEX", "m", "PX", "MEMBERS", "1", "a", "5"],
        c!["DEBUG", "SLEEP", "0.05"],
        c!["INFO", "stats"],
        c!["XSET.PTTL", "m", "a"],
        c!["INFO", "stats"],
        c!["XSET.HAS", "m", "a"],
        c!["INFO", "stats"],
    ] {
        let queued: String = q(&mut c, cmd);
        assert_eq!(queued, "QUEUED");
    }
    let replies: Vec<Value> = q(&mut c, c!["EXEC"]);
    assert_eq!(
        replies[3],
        Value::Int(5),
        "TTL frozen at the transaction's start"
    );
    assert_eq!(replies[5], Value::Int(1), "live at the transaction's start");
    let (h0, h1, h2) = (hits(&replies[2]), hits(&replies[4]), hits(&replies[6]));
    assert_eq!(h1 - h0, 1, "XSET.PTTL: one lookup");
    assert_eq!(h2 - h1, 1, "XSET.HAS: one lookup");
}

/// On a primary, a read that reclaims a due member first counts the same
/// lookups whether it is timed (`XSET.PTTL`) or live (`XSET.HAS`,
/// `XSET.CARD`).
#[test]
fn a_live_read_that_reclaims_counts_as_a_timed_read() {
    let s = Server::start_with_module_args(&["--save", ""], &["active-expire", "no"]);
    let mut c = s.conn();
    let mut lookups = |cmd: &[&[u8]]| {
        q::<i64>(
            &mut c,
            c![
                "XSET.ADDEX",
                "m",
                "PX",
                "MEMBERS",
                "2",
                "a",
                "5",
                "b",
                "100000"
            ],
        );
        wait_ttl_out(&mut c, 5);
        let before = info_i64(&mut c, "stats", "keyspace_hits");
        let _: Value = q(&mut c, cmd);
        info_i64(&mut c, "stats", "keyspace_hits") - before
    };
    let timed = lookups(c!["XSET.PTTL", "m", "b"]);
    assert_eq!(lookups(c!["XSET.HAS", "m", "b"]), timed, "XSET.HAS");
    assert_eq!(lookups(c!["XSET.CARD", "m"]), timed, "XSET.CARD");
}
