//! Nothing is lost: RDB (including a committed encver-1 fixture), AOF with
//! and without the RDB preamble, restarts, DUMP/RESTORE (and corrupt
//! payloads), COPY, and the digest.

use crate::harness::*;
use redis::{Connection, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Far-future absolute deadlines, so nothing expires during a test.
const T0: u64 = 4_102_444_800_000;

/// Fills `key` with members of every kind: many deadlines, shared
/// deadlines, an empty and a binary member, and a member without deadline.
fn fill(c: &mut Connection, key: &str, n: usize) {
    let mut args: Vec<Vec<u8>> = vec![
        b"XSET.ADDEX".to_vec(),
        key.as_bytes().to_vec(),
        b"PXAT".to_vec(),
    ];
    args.push(b"MEMBERS".to_vec());
    args.push((n + 2).to_string().into_bytes());
    for i in 0..n {
        args.push(format!("m{i}").into_bytes());
        args.push((T0 + (i as u64 % 50) * 7).to_string().into_bytes());
    }
    args.extend([b"".to_vec(), (T0 + 1).to_string().into_bytes()]);
    args.extend([b"\x00bin\xff".to_vec(), (T0 + 2).to_string().into_bytes()]);
    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    q::<i64>(c, &refs);
    q::<Vec<i64>>(c, c!["XSET.PERSIST", key, "MEMBERS", "1", "m0"]);
}

#[test]
fn rdb_restart_and_debug_reload_keep_exact_deadlines() {
    let dir = scratch("rdb");
    let s = start_in(&dir, &[]);
    let mut c = s.conn();
    fill(&mut c, "k", 500);
    let before = snapshot(&mut c, "k");
    assert_eq!(before.len(), 502);
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "RELOAD"]), "OK");
    assert_eq!(snapshot(&mut c, "k"), before);
    assert_eq!(q::<String>(&mut c, c!["SAVE"]), "OK");
    s.shutdown("NOSAVE");
    let s = start_in(&dir, &[]);
    let mut c = s.conn();
    assert_eq!(snapshot(&mut c, "k"), before, "restart from RDB");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An RDB file an earlier release wrote (`tests/fixtures/<file>`), with the
/// same sets (version 0.1.0 wrote encoding version 1, 0.3.0 version 2),
/// loads with every member at its exact deadline.
fn committed_fixture_loads(file: &str) {
    let dir = scratch(file);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(file);
    std::fs::copy(&fixture, dir.join("dump.rdb")).expect("copy fixture");
    let s = start_in(&dir, &[]);
    let mut c = s.conn();
    let small = snapshot(&mut c, "fixture:small");
    let want: Vec<(Vec<u8>, i64)> = vec![
        (b"".to_vec(), 4_102_444_899_999),
        (b"alpha".to_vec(), 4_102_444_800_000),
        (b"beta".to_vec(), 4_102_444_800_001),
        (b"forever".to_vec(), -1),
    ];
    assert_eq!(small, want);
    let big = snapshot(&mut c, "fixture:big");
    assert_eq!(big.len(), 300);
    for (m, at) in big {
        let i: u64 = String::from_utf8(m[1..].to_vec())
            .expect("utf-8")
            .parse()
            .expect("index");
        assert_eq!(at as u64, 4_102_444_800_000 + i * 1000);
    }
    assert_eq!(
        q::<Value>(&mut c, c!["XSET.NOTIFY", "fixture:big"]),
        Value::Nil
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn committed_encver1_fixture_still_loads() {
    committed_fixture_loads("xset-encver1.rdb");
}

#[test]
fn committed_encver2_fixture_still_loads() {
    committed_fixture_loads("xset-encver2.rdb");
}

fn aof_round_trip(preamble: &str) {
    let dir = scratch(&format!("aof-{preamble}"));
    let extra = ["--appendonly", "yes", "--aof-use-rdb-preamble", preamble];
    let s = start_in(&dir, &extra);
    let mut c = s.conn();
    fill(&mut c, "k", 300);
    fill(&mut c, "other", 3);
    let before = (snapshot(&mut c, "k"), snapshot(&mut c, "other"));
    // Replaying the incremental AOF (absolute deadlines) keeps them.
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "LOADAOF"]), "OK");
    assert_eq!((snapshot(&mut c, "k"), snapshot(&mut c, "other")), before);
    q::<String>(&mut c, c!["BGREWRITEAOF"]);
    wait_rewrite_done(&mut c);
    if preamble == "no" {
        let text = aof_part(&dir, ".base.aof");
        assert!(
            text.contains("XSET.ADDEX") && text.contains("PXAT"),
            "rewritten as commands"
        );
        assert!(
            text.contains("XSET.PERSIST"),
            "members without deadline persisted"
        );
        let adds = text.matches("XSET.ADD").count();
        assert!(adds >= 300 / 64, "batched by at most 64: {adds} commands");
    }
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "LOADAOF"]), "OK");
    assert_eq!((snapshot(&mut c, "k"), snapshot(&mut c, "other")), before);
    s.shutdown("NOSAVE");
    let s = start_in(&dir, &extra);
    let mut c = s.conn();
    assert_eq!(
        (snapshot(&mut c, "k"), snapshot(&mut c, "other")),
        before,
        "restart from AOF"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn aof_without_rdb_preamble_keeps_exact_deadlines() {
    aof_round_trip("no");
}

#[test]
fn aof_with_rdb_preamble_keeps_exact_deadlines() {
    aof_round_trip("yes");
}

#[test]
fn dump_restore_copy_and_digest() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    fill(&mut c, "k", 100);
    let before = snapshot(&mut c, "k");
    let dump: Vec<u8> = q(&mut c, c!["DUMP", "k"]);
    assert_eq!(
        q::<String>(&mut c, c!["RESTORE", "k2", "0", dump.as_slice()]),
        "OK"
    );
    assert_eq!(snapshot(&mut c, "k2"), before);
    assert_eq!(q::<i64>(&mut c, c!["COPY", "k", "k3"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["COPY", "k", "k4", "DB", "1"]), 1);
    assert_eq!(snapshot(&mut c, "k3"), before);
    q::<i64>(&mut c, c!["XSET.REM", "k3", "m5"]);
    assert_eq!(
        snapshot(&mut c, "k").len(),
        before.len(),
        "a copy is independent"
    );
    let d1: Vec<String> = q(&mut c, c!["DEBUG", "DIGEST-VALUE", "k"]);
    let d2: Vec<String> = q(&mut c, c!["DEBUG", "DIGEST-VALUE", "k2"]);
    let d3: Vec<String> = q(&mut c, c!["DEBUG", "DIGEST-VALUE", "k3"]);
    assert_eq!(d1, d2);
    assert_ne!(d1, d3);
    assert_ne!(d1, vec!["0".repeat(40)]);
    q::<String>(&mut c, c!["SELECT", "1"]);
    assert_eq!(snapshot(&mut c, "k4"), before);
}

/// CRC-64/Jones as Redis computes it for DUMP payloads.
fn crc64(data: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// Re-signs a DUMP payload after its body was edited.
fn resign(mut payload: Vec<u8>) -> Vec<u8> {
    let n = payload.len() - 8;
    let crc = crc64(&payload[..n]);
    payload[n..].copy_from_slice(&crc.to_le_bytes());
    payload
}

#[test]
fn corrupt_restore_payloads_are_rejected_cleanly() {
    let mut s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "PXAT",
            "MEMBERS",
            "2",
            "aa",
            T0.to_string(),
            "bb",
            (T0 + 5).to_string()
        ],
    );
    let dump: Vec<u8> = q(&mut c, c!["DUMP", "k"]);
    let n = dump.len() - 8;
    assert_eq!(resign(dump.clone()), dump, "our CRC matches Redis's");
    // Layout: type 7 (module, opcodes), 0x81 + 8-byte module id, then the
    // value as opcodes: 2 = unsigned (encoding version 3's delivery
    // setting, 0 for none), 2 = unsigned (the count), 5 = string (one chunk:
    // k, width + 1, deadline deltas, the members).
    assert_eq!(
        (
            dump[0], dump[1], dump[10], dump[11], dump[12], dump[13], dump[14]
        ),
        (7, 0x81, 2, 0, 2, 2, 5),
        "{dump:?}"
    );
    let chunk_len = usize::from(dump[15]);
    assert_eq!(&dump[16..18], &[2, 3], "two members of two bytes");
    assert_eq!(&dump[16 + chunk_len - 4..16 + chunk_len], b"aabb");
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut setting = dump.clone();
    setting[11] = 3;
    cases.push(("unknown delivery setting", setting));
    let mut no_stream = dump.clone();
    no_stream[11] = 1;
    cases.push(("delivery without its stream", no_stream));
    let mut lie_more = dump.clone();
    lie_more[13] = 3;
    cases.push(("count larger than the members", lie_more));
    let mut lie_less = dump.clone();
    lie_less[13] = 1;
    cases.push(("count smaller than the chunk", lie_less));
    let mut lie_zero = dump.clone();
    lie_zero[13] = 0;
    cases.push(("count of zero", lie_zero));
    let mut huge = dump.clone();
    huge.splice(
        13..14,
        [0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    );
    cases.push(("count of 2^64-1", huge));
    let mut width = dump.clone();
    width[17] = 2;
    cases.push(("member width that disagrees with the chunk", width));
    let mut k_zero = dump.clone();
    k_zero[16] = 0;
    cases.push(("chunk of zero members", k_zero));
    let bb = dump
        .windows(2)
        .position(|w| w == b"bb")
        .expect("member bytes");
    let mut dup = dump.clone();
    dup[bb..bb + 2].copy_from_slice(b"aa");
    cases.push(("duplicate member", dup));
    let mut varint = dump.clone();
    for b in &mut varint[18..bb - 2] {
        *b = 0xff;
    }
    cases.push(("deadline bytes overwritten", varint));
    let mut truncated = dump[..n - 2 - 6].to_vec();
    truncated.extend_from_slice(&dump[n - 2..]);
    cases.push(("truncated body", truncated));
    let mut garbage = dump.clone();
    for b in &mut garbage[12..n - 2] {
        *b = 0xee;
    }
    cases.push(("garbage body", garbage));
    let mut long_string = dump.clone();
    long_string.splice(15..16, [0x80, 0x7f, 0xff, 0xff, 0xff]);
    cases.push(("string length of 2 GiB", long_string));
    for (what, payload) in cases {
        let payload = resign(payload);
        let e = err(&mut c, c!["RESTORE", "bad", "0", payload.as_slice()]);
        assert!(
            e.contains("Bad data format") || e.starts_with("ERR"),
            "{what}: {e}"
        );
        assert_eq!(
            q::<i64>(&mut c, c!["EXISTS", "bad"]),
            0,
            "{what}: nothing half-built"
        );
        assert!(s.alive(), "{what}: server crashed\n{}", s.log());
    }
    let ok: Value = q(&mut c, c!["XSET.CARD", "k"]);
    assert_eq!(ok, Value::Int(2));
}

/// `MEMORY USAGE` agrees with what `INFO memory` sees the set cost, for
/// short (inline) and long (heap) members, within 20%.
#[test]
fn memory_usage_is_honest() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    for (key, width) in [("short", 16usize), ("long", 40)] {
        let used = |c: &mut Connection| info_i64(c, "memory", "used_memory");
        let before = used(&mut c);
        for chunk in 0..200 {
            let mut args: Vec<Vec<u8>> = vec![b"XSET.ADD".to_vec(), key.as_bytes().to_vec()];
            for i in 0..1000 {
                args.push(format!("{:0width$}", chunk * 1000 + i).into_bytes());
                args.push((3600 + i % 100).to_string().into_bytes());
            }
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            q::<i64>(&mut c, &refs);
        }
        let delta = used(&mut c) - before;
        let reported: i64 = q(&mut c, c!["MEMORY", "USAGE", key, "SAMPLES", "0"]);
        let ratio = reported as f64 / delta as f64;
        eprintln!(
            "{key}: MEMORY USAGE {reported}, used_memory delta {delta}, {:.1} B/member",
            delta as f64 / 200_000.0
        );
        assert!(
            (0.8..1.2).contains(&ratio),
            "{key}: MEMORY USAGE {reported} vs used_memory delta {delta}"
        );
    }
}

/// `UNLINK` of a big set frees it on the lazy-free thread (the type reports
/// its free effort), and the server stays consistent.
#[test]
fn unlink_frees_a_big_set_lazily() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    fill(&mut c, "big", 20_000);
    let lazyfreed = |c: &mut Connection| info_i64(c, "memory", "lazyfreed_objects");
    let before = lazyfreed(&mut c);
    assert_eq!(q::<i64>(&mut c, c!["UNLINK", "big"]), 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while lazyfreed(&mut c) == before {
        assert!(Instant::now() < deadline, "the set was not freed lazily");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A small set is freed at once, not handed to the thread.
    q::<i64>(&mut c, c!["XSET.ADD", "small", "a", "100"]);
    let mid = lazyfreed(&mut c);
    q::<i64>(&mut c, c!["UNLINK", "small"]);
    assert_eq!(lazyfreed(&mut c), mid);
}

/// An AOF written by version 0.1 holds adds as `XSET.ADD key PXAT MEMBERS n
/// ...` (an odd argument count, never a valid pair list): it still loads,
/// with exact deadlines, while a client's odd `XSET.ADD` stays an error.
#[test]
fn an_aof_from_version_0_1_still_loads() {
    let dir = scratch("legacy-aof");
    let resp = |args: &[&str]| {
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        out
    };
    let far = T0 + 1000;
    let (d1, d2) = (far.to_string(), (far + 1).to_string());
    let aof = [
        resp(&["SELECT", "0"]),
        resp(&[
            "XSET.ADD", "old", "PXAT", "MEMBERS", "2", "a", &d1, "MEMBERS", &d2,
        ]),
        resp(&["XSET.PERSIST", "old", "MEMBERS", "1", "MEMBERS"]),
    ]
    .concat();
    std::fs::write(dir.join("appendonly.aof"), aof).expect("write the AOF");
    let s = start_in(&dir, &["--appendonly", "yes"]);
    let mut c = s.conn();
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            c!["XSET.PEXPIRETIME", "old", "MEMBERS", "2", "a", "MEMBERS"]
        ),
        [far as i64, -1],
        "log: {}",
        s.log()
    );
    let odd = try_q::<i64>(
        &mut c,
        c!["XSET.ADD", "old", "PXAT", "MEMBERS", "1", "b", &d1],
    );
    assert!(
        odd.is_err_and(|e| e.to_string().contains("wrong number of arguments")),
        "a client's odd XSET.ADD is an arity error"
    );
}
