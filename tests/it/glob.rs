//! `XSET.SCAN ... MATCH` against the server's own `SSCAN ... MATCH`: the
//! same awkward members in a native set and in two xsets (one in the small
//! encoding, one in the large), then thousands of random patterns built
//! from glob syntax and the members' bytes; every pattern must select the
//! same members from all three.
//!
//! Redis 7.0, Redis 8.2, Valkey 8.0 and Valkey 9.1 agreed with each other on
//! every pattern tried (also 300,000 patterns of up to 12 bytes, once), so
//! the patterns are unrestricted.

use crate::harness::*;
use redis::{Connection, Value};
use std::time::Instant;

/// Members chosen to sit on every edge of the glob syntax.
const MEMBERS: &[&[u8]] = &[
    b"",
    b"*",
    b"?",
    b"[",
    b"]",
    b"-",
    b"^",
    b"\\",
    b"\0",
    b"\x7f",
    b"\x80",
    b"\xff",
    b"a",
    b"b",
    b"c",
    b"z",
    b"A",
    b"_",
    b"`",
    b"0",
    b"9",
    b"12",
    b"-1",
    b"ab",
    b"ba",
    b"aa",
    b"abc",
    b"a-b",
    b"[a]",
    b"[]",
    b"a]b",
    b"]^",
    b"^-",
    b"a*",
    b"*a",
    b"**",
    b"??",
    b"\\a",
    b"a\\",
    b"\\\\",
    b"\x80a",
    b"a\xff",
    b"\xff\x80",
    b"\0a",
    b"a\0",
    b"\x7f\x80",
];

/// The pattern alphabet, weighted by repetition towards glob syntax.
const ALPHABET: &[u8] = b"****???[[[[]]]]----^^^\\\\\\aaabbcz_`A09\0\x7f\x80\xff\x80\xff";

const PATTERNS: usize = 20_000;
const BATCH: usize = 250;
const KEYS: [&str; 3] = ["native", "small", "large"];

/// xorshift64: deterministic and tiny.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn pattern(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(9);
    (0..len)
        .map(|_| ALPHABET[rng.below(ALPHABET.len())])
        .collect()
}

/// The command that scans `key` from `cursor` with `pattern`.
fn scan_cmd(key: &str, cursor: &[u8], pattern: &[u8]) -> redis::Cmd {
    let name = if key == "native" {
        "SSCAN"
    } else {
        "XSET.SCAN"
    };
    let mut cmd = redis::cmd(name);
    cmd.arg(key)
        .arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(1000);
    cmd
}

fn parse(reply: Value) -> (Vec<u8>, Vec<Vec<u8>>) {
    redis::from_redis_value(reply).expect("a [cursor, members] reply")
}

/// The sorted members of `key` matching `pattern`, given the first scan
/// call's reply: follows the cursor to 0.
fn finish_scan(c: &mut Connection, key: &str, pattern: &[u8], first: Value) -> Vec<Vec<u8>> {
    let (mut cursor, mut found) = parse(first);
    while cursor != b"0" {
        let (next, more) = parse(
            scan_cmd(key, &cursor, pattern)
                .query(c)
                .expect("a scan call"),
        );
        found.extend(more);
        cursor = next;
    }
    found.sort();
    found
}

fn show(bytes: &[u8]) -> String {
    format!("\"{}\"", bytes.escape_ascii())
}

fn show_all(members: &[Vec<u8>]) -> String {
    let all: Vec<String> = members.iter().map(|m| show(m)).collect();
    format!("[{}]", all.join(", "))
}

#[test]
fn scan_match_agrees_with_the_servers_sscan() {
    let started = Instant::now();
    let s = Server::start(&[]);
    let mut c = s.conn();

    let mut adds = redis::pipe();
    let sadd = adds.cmd("SADD").arg("native");
    for m in MEMBERS {
        sadd.arg(*m);
    }
    // "small" is created under the default limits (46 members, none longer
    // than 64 bytes: the small encoding); "large" after the limit drops to
    // 0, so it is born in the large encoding.
    let small = adds.cmd("XSET.ADD").arg("small");
    for m in MEMBERS {
        small.arg(*m).arg(3600);
    }
    adds.cmd("CONFIG")
        .arg("SET")
        .arg("xset.small-max-members")
        .arg(0);
    let large = adds.cmd("XSET.ADD").arg("large");
    for m in MEMBERS {
        large.arg(*m).arg(3600);
    }
    let (n_native, n_small, _, n_large): (usize, usize, String, usize) =
        adds.query(&mut c).expect("the members are added");
    assert_eq!(
        (n_native, n_small, n_large),
        (MEMBERS.len(), MEMBERS.len(), MEMBERS.len())
    );

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut patterns: Vec<Vec<u8>> = (0..PATTERNS).map(|_| pattern(&mut rng)).collect();
    // Fixed ones first: every member as its own pattern, and the patterns
    // that once differed.
    let fixed: &[&[u8]] = &[
        b"",
        b"*",
        b"**",
        b"[b-]",
        b"[a-]",
        b"[a-]x]",
        b"[a-\x80]",
        b"[\x80-a]",
        b"[\x7f-\x80]",
        b"[^\x80-a]",
        b"[",
        b"[^",
        b"[\\",
        b"\\",
        b"[]",
        b"[^]",
        b"[]]",
        b"[a-\\]",
    ];
    patterns.splice(0..0, fixed.iter().map(|p| p.to_vec()));
    patterns.splice(0..0, MEMBERS.iter().map(|m| m.to_vec()));

    let mut mismatches = Vec::new();
    let mut matched_any = 0;
    for batch in patterns.chunks(BATCH) {
        let mut pipe = redis::pipe();
        for p in batch {
            for key in KEYS {
                pipe.add_command(scan_cmd(key, b"0", p));
            }
        }
        let replies: Vec<Value> = pipe.query(&mut c).expect("a batch of scans");
        let mut replies = replies.into_iter();
        for p in batch {
            let [native, small, large] = KEYS.map(|key| {
                let first = replies.next().expect("a reply per scan");
                finish_scan(&mut c, key, p, first)
            });
            matched_any += usize::from(!native.is_empty());
            for (key, got) in [("small", &small), ("large", &large)] {
                if *got != native {
                    let only = |a: &[Vec<u8>], b: &[Vec<u8>]| -> Vec<Vec<u8>> {
                        a.iter().filter(|m| !b.contains(m)).cloned().collect()
                    };
                    mismatches.push(format!(
                        "MATCH {} on {key}: only SSCAN has {}, only XSET.SCAN has {}",
                        show(p),
                        show_all(&only(&native, got)),
                        show_all(&only(got, &native))
                    ));
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} differences over {} patterns on {}:\n{}",
        mismatches.len(),
        patterns.len(),
        server_bin(),
        mismatches.join("\n")
    );
    // The patterns are not all trivially empty.
    assert!(matched_any > patterns.len() / 4, "{matched_any}");
    eprintln!(
        "{} patterns agree on {} in {:?}",
        patterns.len(),
        server_bin(),
        started.elapsed()
    );
}
