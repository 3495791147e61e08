//! Fail closed: a fault (an injected panic, standing for a bug) while
//! writing an RDB or an AOF never yields a file that reports success and
//! does not load, and a fault inside a write command never leaves primary
//! and replica apart or a broken set behind. Faults are armed with
//! `XSET.DEBUG-FAULT` (test builds only).

use crate::harness::*;
use redis::{Connection, RedisResult};
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, Instant};

fn info_field(c: &mut Connection, section: &str, field: &str) -> String {
    let info: String = q(c, c!["INFO", section]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn wait_for(c: &mut Connection, section: &str, field: &str, value: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while info_field(c, section, field) != value {
        assert!(Instant::now() < deadline, "{field} never became {value}");
        sleep(Duration::from_millis(20));
    }
}

fn fill(c: &mut Connection) {
    for i in 0..300 {
        add_at(c, "k", &format!("m{i}"), 4_102_444_800_000 + i);
    }
    q::<i64>(c, c!["XSET.PERSIST", "k", "m7"]);
}

/// Stops `s` and checks that a server started on `dir`'s files holds
/// exactly `want` in `k`.
fn assert_restart_loads(s: Server, dir: &Path, want: &[(Vec<u8>, i64)]) {
    s.shutdown("NOSAVE");
    let again = start_in(dir, &[]);
    let got = snapshot(&mut again.conn(), "k");
    assert!(
        got == want,
        "after the restart: {} of {} members",
        got.len(),
        want.len()
    );
}

/// A server on a scratch directory whose `dump.rdb` holds `want` (the set
/// as saved), with a later write not saved and the `rdb-save` fault armed.
fn saved_then_armed(name: &str) -> (PathBuf, Server, Connection, Vec<(Vec<u8>, i64)>) {
    let dir = scratch(name);
    let s = start_in(&dir, &[]);
    let mut c = s.conn();
    fill(&mut c);
    let want = snapshot(&mut c, "k");
    assert_eq!(q::<String>(&mut c, c!["SAVE"]), "OK");
    q::<i64>(&mut c, c!["XSET.ADD", "k", "later", "100"]);
    arm_rdb_save(&mut c);
    (dir, s, c, want)
}

#[test]
fn a_fault_in_bgsave_fails_the_save_not_the_server() {
    let dir = scratch("bgsave");
    let s = start_in(&dir, &[]);
    let mut c = s.conn();
    fill(&mut c);
    let want = snapshot(&mut c, "k");
    arm_rdb_save(&mut c);
    let _: String = q(&mut c, c!["BGSAVE"]);
    wait_for(&mut c, "persistence", "rdb_bgsave_in_progress", "0");
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_bgsave_status"),
        "err"
    );
    assert_eq!(q::<String>(&mut c, c!["PING"]), "PONG");
    assert!(!dir.join("dump.rdb").exists(), "a failed save left a file");
    assert!(s.log().contains("stopping process"), "no log line");
    // Disarmed, the next save succeeds and loads whole.
    assert_eq!(q::<String>(&mut c, c!["XSET.DEBUG-FAULT", "off"]), "OK");
    let _: String = q(&mut c, c!["BGSAVE"]);
    wait_for(&mut c, "persistence", "rdb_bgsave_in_progress", "0");
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
    drop(c);
    assert_restart_loads(s, &dir, &want);
}

#[test]
fn a_fault_in_a_foreground_save_keeps_the_last_good_file() {
    let (dir, s, mut c, want) = saved_then_armed("save");
    // The server stops rather than write a file that cannot load.
    assert!(try_q::<String>(&mut c, c!["SAVE"]).is_err());
    let log = s.log();
    assert!(log.contains("stopping process"), "no log line:\n{log}");
    drop(c);
    // The last good file loads.
    assert_restart_loads(s, &dir, &want);
}

#[test]
fn a_fault_in_an_aof_rewrite_fails_the_rewrite_not_the_server() {
    let dir = scratch("aofrw");
    let s = start_in(
        &dir,
        &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
    );
    let mut c = s.conn();
    wait_for(&mut c, "persistence", "aof_rewrite_in_progress", "0");
    fill(&mut c);
    let want = snapshot(&mut c, "k");
    assert_eq!(
        q::<String>(&mut c, c!["XSET.DEBUG-FAULT", "aof-rewrite"]),
        "OK"
    );
    let _: String = q(&mut c, c!["BGREWRITEAOF"]);
    wait_for(&mut c, "persistence", "aof_rewrite_in_progress", "0");
    wait_for(&mut c, "persistence", "aof_rewrite_scheduled", "0");
    assert_eq!(
        info_field(&mut c, "persistence", "aof_last_bgrewrite_status"),
        "err"
    );
    assert_eq!(q::<String>(&mut c, c!["PING"]), "PONG");
    // The AOF in use still holds every write: reloading it gives the set.
    assert_eq!(q::<String>(&mut c, c!["XSET.DEBUG-FAULT", "off"]), "OK");
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "LOADAOF"]), "OK");
    assert_eq!(snapshot(&mut c, "k"), want);
    let _: String = q(&mut c, c!["BGREWRITEAOF"]);
    wait_for(&mut c, "persistence", "aof_rewrite_in_progress", "0");
    wait_for(&mut c, "persistence", "aof_rewrite_scheduled", "0");
    assert_eq!(
        info_field(&mut c, "persistence", "aof_last_bgrewrite_status"),
        "ok"
    );
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "LOADAOF"]), "OK");
    assert_eq!(snapshot(&mut c, "k"), want);
}

#[test]
fn a_fault_midway_through_a_write_resends_the_key_whole() {
    let (p, _r, mut pc, mut rc) = primary_and_replica();
    q::<i64>(&mut pc, c!["XSET.ADD", "k", "a", "100", "b", "200"]);
    // The key's own TTL goes along with the re-sent set.
    q::<i64>(&mut pc, c!["PEXPIREAT", "k", "32503680000000"]);
    assert_eq!(
        q::<String>(&mut pc, c!["XSET.DEBUG-FAULT", "write-midway"]),
        "OK"
    );
    let e = err(
        &mut pc,
        c![
            "XSET.ADDEX",
            "k",
            "MEMBERS",
            "3",
            "x",
            "100",
            "y",
            "100",
            "z",
            "100"
        ],
    );
    assert!(e.contains("internal error"), "{e}");
    // The client learns that part of the command may stand, and where it
    // went.
    assert!(
        e.contains("may have been applied in part") && e.contains("re-sent whole"),
        "{e}"
    );
    assert_eq!(q::<String>(&mut pc, c!["XSET.DEBUG-FAULT", "off"]), "OK");
    // The primary kept what the command did before the fault...
    assert_eq!(q::<i64>(&mut pc, c!["XSET.HAS", "k", "x"]), 1);
    // ...and the replica holds exactly the same, deadlines included.
    wait_replicated(&mut pc);
    assert_eq!(snapshot(&mut rc, "k"), snapshot(&mut pc, "k"));
    let digest = |c: &mut Connection| q::<Vec<String>>(c, c!["DEBUG", "DIGEST-VALUE", "k"]);
    assert_eq!(digest(&mut rc), digest(&mut pc));
    let expires = |c: &mut Connection| q::<i64>(c, c!["PEXPIRETIME", "k"]);
    assert_eq!(expires(&mut pc), 32503680000000);
    assert_eq!(expires(&mut rc), 32503680000000);
    assert!(p.log().contains("re-sent whole"), "no log line");
}

#[test]
fn a_write_that_leaves_a_broken_set_deletes_it_everywhere() {
    let (p, _r, mut pc, mut rc) = primary_and_replica();
    q::<i64>(&mut pc, c!["XSET.ADD", "k", "a", "100"]);
    wait_replicated(&mut pc);
    assert_eq!(q::<i64>(&mut rc, c!["EXISTS", "k"]), 1);
    for point in ["write-midway", "unrepairable"] {
        assert_eq!(q::<String>(&mut pc, c!["XSET.DEBUG-FAULT", point]), "OK");
    }
    let e = err(&mut pc, c!["XSET.ADD", "k", "x", "100"]);
    assert!(e.contains("internal error"), "{e}");
    assert!(e.contains("was deleted"), "{e}");
    assert_eq!(q::<String>(&mut pc, c!["XSET.DEBUG-FAULT", "off"]), "OK");
    assert_eq!(q::<i64>(&mut pc, c!["EXISTS", "k"]), 0);
    wait_replicated(&mut pc);
    assert_eq!(q::<i64>(&mut rc, c!["EXISTS", "k"]), 0);
    assert!(p.log().contains("was deleted"), "no log line");
    // The key works again.
    assert_eq!(q::<i64>(&mut pc, c!["XSET.ADD", "k", "x", "100"]), 1);
}

#[test]
fn a_fault_while_dumping_fails_that_command_not_the_server() {
    let s = Server::start(&[]);
    let target = Server::start(&[]);
    let mut c = s.conn();
    fill(&mut c);
    let want = snapshot(&mut c, "k");
    let good: Vec<u8> = q(&mut c, c!["DUMP", "k"]);
    arm_rdb_save(&mut c);
    // DUMP answers, with a payload that RESTORE refuses...
    let bad: Vec<u8> = q(&mut c, c!["DUMP", "k"]);
    let e = err(&mut c, c!["RESTORE", "copy", "0", bad]);
    assert!(e.contains("Bad data format"), "{e}");
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "copy"]), 0);
    // ...DEBUG OBJECT answers, and MIGRATE fails and keeps its key.
    let object: String = q(&mut c, c!["DEBUG", "OBJECT", "k"]);
    assert!(object.contains("serializedlength"), "{object}");
    let port = target.port.to_string();
    let e = err(&mut c, c!["MIGRATE", "127.0.0.1", port, "k", "0", "5000"]);
    assert!(e.contains("Bad data format"), "{e}");
    assert_failed_alone(&s, &mut c, &target, &want);
    // Disarmed, the earlier payload restores whole, and a new one too.
    assert_eq!(q::<String>(&mut c, c!["XSET.DEBUG-FAULT", "off"]), "OK");
    assert_eq!(q::<String>(&mut c, c!["RESTORE", "copy", "0", good]), "OK");
    assert_eq!(snapshot(&mut c, "copy"), want);
    let again: Vec<u8> = q(&mut c, c!["DUMP", "k"]);
    assert_eq!(
        q::<String>(&mut c, c!["RESTORE", "copy2", "0", again]),
        "OK"
    );
    assert_eq!(snapshot(&mut c, "copy2"), want);
}

#[test]
fn a_save_right_after_a_dump_is_still_a_file_that_loads() {
    // DUMP and SAVE in one pipeline: the SAVE must not take the DUMP's
    // forgiving path, so a fault stops the server and no file is written.
    a_save_after_a_dump_stops_the_server("dump-then-save", false, &["SAVE"]);
}

#[test]
fn a_fault_while_dumping_inside_a_transaction_fails_that_command_not_the_server() {
    // EXEC runs the commands it queued without passing them through the
    // command filter again: DUMP, DEBUG OBJECT and MIGRATE there must
    // still fail alone.
    let s = Server::start(&[]);
    let mut c = s.conn();
    fill(&mut c);
    let want = snapshot(&mut c, "k");
    arm_rdb_save(&mut c);
    let (bad, object): (Vec<u8>, String) = redis::pipe()
        .atomic()
        .cmd("DUMP")
        .arg("k")
        .cmd("DEBUG")
        .arg("OBJECT")
        .arg("k")
        .query(&mut c)
        .expect("EXEC answers");
    assert!(object.contains("serializedlength"), "{object}");
    let e = err(&mut c, c!["RESTORE", "copy", "0", bad]);
    assert!(e.contains("Bad data format"), "{e}");
    // MIGRATE inside EXEC: its element of EXEC's reply is the target's
    // error, and the key stays. (Read raw: the client's query would turn
    // the error inside into one for the whole transaction.)
    let target = Server::start(&[]);
    let packed = redis::pipe()
        .atomic()
        .cmd("MIGRATE")
        .arg("127.0.0.1")
        .arg(target.port)
        .arg("k")
        .arg(0)
        .arg(5000)
        .get_packed_pipeline();
    c.send_packed_command(&packed).expect("send");
    for _ in 0..2 {
        c.recv_response().expect("OK, then QUEUED");
    }
    match c.recv_response().expect("EXEC's reply") {
        redis::Value::Array(items) => match items.as_slice() {
            [redis::Value::ServerError(e)] => {
                let e = format!("{e:?}");
                assert!(e.contains("Bad data format"), "{e}");
            }
            other => panic!("MIGRATE inside EXEC answered {other:?}"),
        },
        other => panic!("EXEC answered {other:?}"),
    }
    assert_failed_alone(&s, &mut c, &target, &want);
}

#[test]
fn a_fault_in_the_save_of_a_shutdown_keeps_the_last_good_file() {
    // SHUTDOWN SAVE writes the RDB in the server's process, right after a
    // DUMP in the same pipeline: it stops the server, and no file is
    // written over the last good one.
    a_save_after_a_dump_stops_the_server("shutdown", false, &["SHUTDOWN", "SAVE"]);
}

#[test]
fn a_file_save_in_a_transaction_after_a_dump_still_keeps_the_last_good_file() {
    // DEBUG RELOAD writes the RDB file inside the same EXEC as the DUMP:
    // that save must not take the DUMP's forgiving path.
    a_save_after_a_dump_stops_the_server("dump-then-reload", true, &["DEBUG", "RELOAD"]);
}

/// Sends `DUMP k` then `save` (a command that writes the RDB file in the
/// server's process) in one pipeline, in `MULTI`/`EXEC` if `atomic`, with
/// the save's fault armed: the save must not take the DUMP's forgiving
/// path, so the server stops without answering it, and a restart loads the
/// last good file.
fn a_save_after_a_dump_stops_the_server(name: &str, atomic: bool, save: &[&str]) {
    let (dir, s, mut c, want) = saved_then_armed(name);
    let mut pipe = redis::pipe();
    if atomic {
        pipe.atomic();
    }
    pipe.cmd("DUMP").arg("k").cmd(save[0]).arg(&save[1..]);
    let replies: RedisResult<(Vec<u8>, String)> = pipe.query(&mut c);
    assert!(
        replies.is_err(),
        "{} should not have answered",
        save.join(" ")
    );
    assert!(s.log().contains("stopping process"), "no log line");
    drop(c);
    assert_restart_loads(s, &dir, &want);
}

#[test]
fn a_fault_halfway_through_a_streamed_reply_keeps_the_client_in_step() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100", "b", "200"]);
    assert_eq!(
        q::<String>(&mut c, c!["XSET.DEBUG-FAULT", "reply-midway"]),
        "OK"
    );
    // The array has the length it announced: the members drawn before the
    // fault, then one error in the place of each missing one.
    // (Read raw: the client's query would turn the errors inside into one.)
    let packed = redis::cmd("XSET.RANDMEMBER")
        .arg("k")
        .arg("-10")
        .get_packed_command();
    c.send_packed_command(&packed).expect("send");
    let got = match c.recv_response().expect("a reply") {
        redis::Value::Array(items) => items,
        other => panic!("not an array: {other:?}"),
    };
    assert_eq!(q::<String>(&mut c, c!["XSET.DEBUG-FAULT", "off"]), "OK");
    assert_eq!(got.len(), 10);
    let members = got
        .iter()
        .filter(|v| matches!(v, redis::Value::BulkString(_)))
        .count();
    let errors = got
        .iter()
        .filter(|v| matches!(v, redis::Value::ServerError(_)))
        .count();
    assert_eq!((members, errors), (5, 5), "{got:?}");
    // Nothing else was replied: the next reply is the next command's.
    assert_eq!(q::<String>(&mut c, c!["PING"]), "PONG");
    assert_eq!(info_i64(&mut c, "xset", "xset_command_panics_caught"), 1);
    assert!(s.log().contains("a bug was caught in xset.randmember"));
}

/// `args` as a RESP command, as an AOF holds it.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Checks that `log` holds one caught panic, whose key was kept and said
/// not to be propagated, for a reason naming `why`.
fn assert_kept_unpropagated(log: &str, why: &str) {
    let caught: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("a bug was caught"))
        .collect();
    assert_eq!(caught.len(), 1, "{log}");
    let line = caught[0];
    assert!(
        !line.contains("re-sent") && line.contains("kept as the command left it"),
        "{line}"
    );
    assert!(line.contains(why), "{line}");
}

#[test]
fn a_fault_while_loading_an_aof_is_not_said_to_propagate() {
    let dir = scratch("loading");
    let far = "32503680000000";
    let mut aof = resp(&["XSET.ADDEX", "k", "PXAT", "MEMBERS", "1", "x", far]);
    aof.extend(resp(&["XSET.DEBUG-FAULT", "write-midway"]));
    let add = format!("XSET.ADDEX k PXAT MEMBERS 2 a {far} b {far}");
    aof.extend(resp(&add.split(' ').collect::<Vec<_>>()));
    aof.extend(resp(&["XSET.DEBUG-FAULT", "off"]));
    aof.extend(resp(&["SET", "done", "1"]));
    std::fs::write(dir.join("appendonly.aof"), aof).expect("write the AOF");
    let s = start_in(&dir, &["--appendonly", "yes"]);
    let mut c = s.conn();
    assert_eq!(q::<String>(&mut c, c!["GET", "done"]), "1");
    // The add stopped after its first member, and that stays (equal
    // deadlines are listed in byte order).
    assert_eq!(
        q::<Vec<String>>(&mut c, c!["XSET.MEMBERS", "k"]),
        ["a", "x"]
    );
    assert_kept_unpropagated(&s.log(), "loading");
}

#[test]
fn a_fault_on_a_replica_is_not_said_to_propagate() {
    let (_p, r, mut pc, mut rc) = primary_and_replica();
    q::<i64>(&mut pc, c!["XSET.ADD", "k", "x", "100"]);
    wait_replicated(&mut pc);
    assert_eq!(
        q::<String>(&mut rc, c!["XSET.DEBUG-FAULT", "write-midway"]),
        "OK"
    );
    q::<i64>(&mut pc, c!["XSET.ADD", "k", "a", "100", "b", "100"]);
    wait_replicated(&mut pc);
    assert_eq!(q::<String>(&mut rc, c!["XSET.DEBUG-FAULT", "off"]), "OK");
    assert_kept_unpropagated(&r.log(), "replica");
}

#[test]
fn a_panic_in_a_read_without_a_key_says_nothing_changed() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let e = err(&mut c, c!["XSET.DEBUG-PANIC"]);
    assert!(e.contains("the command changed nothing"), "{e}");
    assert_eq!(info_i64(&mut c, "xset", "xset_command_panics_caught"), 1);
}

/// Arms the fault point of a value's serialization (RDB, `DUMP`, AOF
/// rewrite): the next value written faults.
fn arm_rdb_save(c: &mut redis::Connection) {
    assert_eq!(q::<String>(c, c!["XSET.DEBUG-FAULT", "rdb-save"]), "OK");
}

/// After a fault in a serialization for a reply: the migration moved
/// nothing to `target`, the server answers, `k` is intact, and the log says
/// the command failed without stopping the server.
fn assert_failed_alone(
    s: &Server,
    c: &mut redis::Connection,
    target: &Server,
    want: &[(Vec<u8>, i64)],
) {
    assert_eq!(q::<i64>(&mut target.conn(), c!["EXISTS", "k"]), 0);
    assert_eq!(q::<String>(c, c!["PING"]), "PONG");
    assert_eq!(snapshot(c, "k"), want);
    let log = s.log();
    assert!(log.contains("DUMP, MIGRATE or DEBUG OBJECT"), "{log}");
    assert!(!log.contains("stopping process"), "{log}");
}
