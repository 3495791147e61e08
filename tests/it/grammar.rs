//! The grammar never depends on what a member spells: members named like
//! every keyword, numbers, the empty string, binary bytes and a 1 MiB
//! member go through every command that names members, in their single and
//! counted forms, and come back intact; the single forms reply one integer,
//! the counted forms an array with the same values.

use crate::harness::*;
use redis::{Connection, Value};

/// Every word any xset command gives a meaning to, and other awkward names.
fn odd_members() -> Vec<Vec<u8>> {
    let words = [
        "NX",
        "XX",
        "GT",
        "LT",
        "EX",
        "PX",
        "EXAT",
        "PXAT",
        "MAXLEN",
        "MEMBERS",
        "REV",
        "LIMIT",
        "WITHTTL",
        "MATCH",
        "COUNT",
        "BYDEADLINE",
        "-inf",
        "+inf",
        "(1",
        "nx",
        "members",
        "Members",
    ];
    let mut out: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
    out.extend(
        [
            "100",
            "0",
            "-1",
            "1.5",
            "9223372036854775808",
            "*",
            "[a-",
            "\\",
        ]
        .iter()
        .map(|w| w.as_bytes().to_vec()),
    );
    out.push(Vec::new());
    out.push(b"\x00\xff\r\n\"".to_vec());
    out.push(vec![0u8; 3]);
    out
}

fn run(c: &mut Connection, args: &[&[u8]]) -> Value {
    q(c, args)
}

#[test]
fn every_member_name_is_data_in_every_command() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let members = odd_members();
    for m in &members {
        // XSET.ADD: the pair is literal.
        assert_eq!(
            q::<i64>(&mut c, &[b"XSET.ADD", b"k", m, b"100"]),
            1,
            "{m:?}"
        );
        assert_eq!(q::<i64>(&mut c, &[b"XSET.HAS", b"k", m]), 1, "{m:?}");
        // Single forms reply one integer.
        let ttl = q::<i64>(&mut c, &[b"XSET.TTL", b"k", m]);
        assert!((99..=100).contains(&ttl), "{m:?}: {ttl}");
        assert_eq!(
            run(&mut c, &[b"XSET.EXPIRE", b"k", b"200", m]),
            Value::Int(1),
            "{m:?}"
        );
        assert_eq!(
            run(&mut c, &[b"XSET.EXPIRE", b"k", b"300", b"GT", m]),
            Value::Int(1),
            "{m:?}"
        );
        assert_eq!(
            run(&mut c, &[b"XSET.PERSIST", b"k", m]),
            Value::Int(1),
            "{m:?}"
        );
        assert_eq!(run(&mut c, &[b"XSET.PTTL", b"k", m]), Value::Int(-1));
        // Counted forms reply arrays with the same codes.
        assert_eq!(
            run(
                &mut c,
                &[b"XSET.PEXPIRE", b"k", b"400000", b"MEMBERS", b"1", m]
            ),
            Value::Array(vec![Value::Int(1)]),
            "{m:?}"
        );
        let many = q::<Vec<i64>>(&mut c, &[b"XSET.EXPIRETIME", b"k", b"MEMBERS", b"2", m, m]);
        assert_eq!(many.len(), 2);
        assert_eq!(many[0], many[1]);
        assert_eq!(q::<i64>(&mut c, &[b"XSET.EXPIRETIME", b"k", m]), many[0]);
        // XSET.ADDEX: everything after MEMBERS count is data.
        assert_eq!(
            q::<i64>(
                &mut c,
                &[b"XSET.ADDEX", b"x", b"NX", b"MEMBERS", b"1", m, b"100"]
            ),
            1,
            "{m:?}"
        );
    }
    // All of them are there, once, in both sets.
    let mut listed: Vec<Vec<u8>> = q(&mut c, c!["XSET.MEMBERS", "k"]);
    listed.sort();
    let mut want = members.clone();
    want.sort();
    assert_eq!(listed, want);
    assert_eq!(q::<usize>(&mut c, c!["XSET.CARD", "x"]), members.len());
    let mut scanned: Vec<Vec<u8>> = snapshot(&mut c, "x").into_iter().map(|(m, _)| m).collect();
    scanned.sort();
    assert_eq!(scanned, want);
    // MHAS and REM take them all literally too.
    let mut args: Vec<&[u8]> = vec![b"XSET.MHAS", b"k"];
    args.extend(members.iter().map(Vec::as_slice));
    assert_eq!(q::<Vec<i64>>(&mut c, &args), vec![1; members.len()]);
    args[0] = b"XSET.REM";
    assert_eq!(q::<usize>(&mut c, &args), members.len());
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0);
}

#[test]
fn a_one_mebibyte_member_round_trips() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let big: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    assert_eq!(q::<i64>(&mut c, &[b"XSET.ADD", b"k", &big, b"100"]), 1);
    assert_eq!(q::<i64>(&mut c, &[b"XSET.HAS", b"k", &big]), 1);
    assert_eq!(
        run(&mut c, &[b"XSET.EXPIRE", b"k", b"50", b"LT", &big]),
        Value::Int(1)
    );
    let listed: Vec<Vec<u8>> = q(&mut c, c!["XSET.MEMBERS", "k"]);
    assert_eq!(listed, vec![big.clone()]);
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "RELOAD"]), "OK");
    assert_eq!(q::<i64>(&mut c, &[b"XSET.HAS", b"k", &big]), 1);
    let ttl: i64 = q(&mut c, &[b"XSET.TTL", b"k", &big]);
    assert!((49..=50).contains(&ttl), "{ttl}");
    assert_eq!(q::<i64>(&mut c, &[b"XSET.REM", b"k", &big]), 1);
}

/// What decides a form is the count of arguments: the same words mean a
/// member in one position and an option in another.
#[test]
fn forms_are_decided_by_arity() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "NX", "100", "MEMBERS", "100"]);
    // Four arguments after the name: the last is the member `NX`.
    assert_eq!(
        run(&mut c, &[b"XSET.EXPIRE", b"k", b"50", b"NX"]),
        Value::Int(1)
    );
    // Five: a condition, then the member `MEMBERS`; NX fails (it has a
    // deadline), XX applies.
    assert_eq!(
        run(&mut c, &[b"XSET.EXPIRE", b"k", b"60", b"NX", b"MEMBERS"]),
        Value::Int(0)
    );
    assert_eq!(
        run(&mut c, &[b"XSET.EXPIRE", b"k", b"60", b"XX", b"MEMBERS"]),
        Value::Int(1)
    );
    // Six or more: a MEMBERS block.
    assert_eq!(
        run(
            &mut c,
            &[b"XSET.EXPIRE", b"k", b"70", b"MEMBERS", b"1", b"NX"]
        ),
        Value::Array(vec![Value::Int(1)])
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.TTL", "k", "NX"]), 70);
    assert_eq!(q::<i64>(&mut c, c!["XSET.TTL", "k", "MEMBERS"]), 60);
    // XSET.TTL with three arguments: the member `MEMBERS`; with more, a block.
    assert_eq!(
        q::<Vec<i64>>(&mut c, c!["XSET.TTL", "k", "MEMBERS", "1", "MEMBERS"]),
        [60]
    );
    // XSET.PERSIST likewise.
    assert_eq!(
        run(&mut c, &[b"XSET.PERSIST", b"k", b"MEMBERS"]),
        Value::Int(1)
    );
    assert_eq!(
        run(
            &mut c,
            &[b"XSET.PERSIST", b"k", b"MEMBERS", b"2", b"NX", b"gone"]
        ),
        Value::Array(vec![Value::Int(1), Value::Int(-2)])
    );
    // XSET.ADD: `NX 100` is a pair, so is `MEMBERS 100`.
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.ADD", "k2", "MEMBERS", "1", "x", "5"]),
        2
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, c!["XSET.MHAS", "k2", "MEMBERS", "x", "1", "5"]),
        [1, 1, 0, 0]
    );
}
