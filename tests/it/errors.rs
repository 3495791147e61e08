//! Every error path of every command against a real redis-server: the exact
//! error line, a server that still answers `PING` afterwards, and a keyspace
//! that the rejected command left exactly as it was (`DEBUG DIGEST` of the
//! whole database plus the snapshot of the xset key).

use crate::harness::*;
use redis::{Connection, Value};

const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";
const EXPIRE_CONDITIONS: &str =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
const NX_AND_XX: &str = "ERR XX and NX options at the same time are not compatible";
const GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
const COUNT_POSITIVE: &str = "ERR MEMBERS count must be a positive integer";
const COUNT_MISMATCH: &str = "ERR the MEMBERS count must match the number of members that follow";
const MAXLEN_POSITIVE: &str = "ERR MAXLEN must be a positive integer";
const INVALID_CURSOR: &str = "ERR invalid cursor";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The TTL and the EXPIRE families: each shares one parser.
const TTL_FAMILY: &str = "XSET.TTL XSET.PTTL XSET.EXPIRETIME XSET.PEXPIRETIME";
const EXPIRE_FAMILY: &str = "XSET.EXPIRE XSET.PEXPIRE XSET.EXPIREAT XSET.PEXPIREAT";

/// Integers Redis's `string2ll` refuses, separated by `|`.
const BAD_INTS: &str = "+1|01|1.5| 1|1 ||-|-0|abc|9223372036854775808|-9223372036854775809";

/// `ERR syntax error: unknown option 'w'`.
fn unknown(w: &str) -> String {
    format!("{SYNTAX}: unknown option '{w}'")
}

/// `ERR syntax error: 'w' given twice`.
fn twice(w: &str) -> String {
    format!("{SYNTAX}: '{w}' given twice")
}

/// `ERR syntax error: value missing after 'w'`.
fn missing(w: &str) -> String {
    format!("{SYNTAX}: value missing after '{w}'")
}

/// `ERR syntax error: MEMBERS expected before 'w'`.
fn members_before(w: &str) -> String {
    format!("{SYNTAX}: MEMBERS expected before '{w}'")
}

fn arity(cmd: &str) -> String {
    let cmd = cmd.to_lowercase();
    format!("ERR wrong number of arguments for '{cmd}' command")
}

fn invalid_expire(cmd: &str) -> String {
    format!(
        "ERR invalid expire time in '{}' command",
        cmd.to_lowercase()
    )
}

/// A command (words separated by single spaces, a `{}` word replaced by
/// `slot`) and the error line it must get.
type Case = (Vec<String>, String);

fn case_with(template: &str, slot: &str, want: impl Into<String>) -> Case {
    let args = template
        .split(' ')
        .map(|w| if w == "{}" { slot } else { w }.to_string())
        .collect();
    (args, want.into())
}

fn case(template: &str, want: impl Into<String>) -> Case {
    case_with(template, "", want)
}

/// Runs a command given as space-separated words and converts its reply.
fn run<T: redis::FromRedisValue>(c: &mut Connection, cmd: &str) -> T {
    q(c, &cmd.split(' ').map(str::as_bytes).collect::<Vec<_>>())
}

/// A server holding `k` (an xset: `a` and `b` with deadlines, `p` without),
/// `s` (a string) and `l` (a list).
fn fixture() -> (Server, Connection) {
    let s = Server::start(&[]);
    let mut c = s.conn();
    run::<i64>(&mut c, "XSET.ADD k a 1000 b 2000 p 3000");
    run::<Vec<i64>>(&mut c, "XSET.PERSIST k MEMBERS 1 p");
    run::<()>(&mut c, "SET s v");
    run::<i64>(&mut c, "RPUSH l x y");
    (s, c)
}

type State = (String, i64, Vec<(Vec<u8>, i64)>);

/// The whole keyspace: its digest, its size and the members of `k`.
fn state(c: &mut Connection) -> State {
    (run(c, "DEBUG DIGEST"), run(c, "DBSIZE"), snapshot(c, "k"))
}

/// The reply as one line: `CODE detail` for an error, else the value.
fn outcome(c: &mut Connection, args: &[String]) -> String {
    let refs: Vec<&[u8]> = args.iter().map(String::as_bytes).collect();
    match try_q::<Value>(c, &refs) {
        Ok(v) => format!("no error, replied {v:?}"),
        Err(e) => match (e.code(), e.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_string(),
            _ => e.to_string(),
        },
    }
}

/// Sends every case and checks its exact error, that the server still
/// answers and that nothing in the keyspace changed. All mismatches are
/// reported together.
fn expect_errors(c: &mut Connection, cases: &[Case]) {
    let mut before = state(c);
    let mut bad = Vec::new();
    for (args, want) in cases {
        let got = outcome(c, args);
        if got != *want {
            bad.push(format!("{args:?}\n  expected {want:?}\n  got      {got:?}"));
        }
        let pong = try_q::<String>(c, c!["PING"]);
        assert_eq!(pong.ok().as_deref(), Some("PONG"), "down after {args:?}");
        let after = state(c);
        if after != before {
            bad.push(format!(
                "{args:?} changed the keyspace\n  {before:?}\n  {after:?}"
            ));
            before = after;
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn wrong_type_from_every_command() {
    let (_s, mut c) = fixture();
    let mut templates: Vec<String> = [
        "XSET.ADD {} a 10",
        "XSET.ADDEX {} NX PX MEMBERS 1 a 10",
        "XSET.HAS {} a",
        "XSET.MHAS {} a b",
        "XSET.MEMBERS {}",
        "XSET.MEMBERS {} REV LIMIT 0 1 WITHTTL",
        "XSET.REM {} a",
        "XSET.CARD {}",
        "XSET.COUNT {} -inf +inf",
        "XSET.MEMBERS {} BYDEADLINE (0 +inf REV",
        "XSET.PERSIST {} MEMBERS 1 a",
        "XSET.PERSIST {} a",
        "XSET.SCAN {} 0",
        "XSET.SCAN {} 0 MATCH * COUNT 5 WITHTTL",
    ]
    .map(String::from)
    .into();
    for n in TTL_FAMILY.split(' ') {
        templates.push(format!("{n} {{}} a"));
        templates.push(format!("{n} {{}} MEMBERS 2 a b"));
    }
    for n in EXPIRE_FAMILY.split(' ') {
        templates.push(format!("{n} {{}} 10 MEMBERS 1 a"));
        templates.push(format!("{n} {{}} 0 GT MEMBERS 1 a"));
        templates.push(format!("{n} {{}} 10 a"));
        templates.push(format!("{n} {{}} 10 XX a"));
    }
    let cases: Vec<Case> = ["s", "l"]
        .iter()
        .flat_map(|key| templates.iter().map(|t| case_with(t, key, WRONGTYPE)))
        .collect();
    expect_errors(&mut c, &cases);
    assert_eq!(run::<String>(&mut c, "GET s"), "v");
    assert_eq!(run::<Vec<String>>(&mut c, "LRANGE l 0 -1"), ["x", "y"]);
    assert_eq!(run::<i64>(&mut c, "XSET.CARD k"), 3);
}

#[test]
fn arity_errors() {
    let (_s, mut c) = fixture();
    let mut cases: Vec<Case> = [
        "XSET.ADD",
        "XSET.ADD k",
        "XSET.ADD k a",
        // Pairs only: an odd count is an arity error, as for HSET.
        "XSET.ADD k a 10 b",
        "XSET.ADD new a 10 b 20 c",
        // XSET.ADDEX k MEMBERS ... gets the module's count errors
        // (`addex_without_members_says_members_is_expected`).
        "XSET.ADDEX",
        "XSET.ADDEX k",
        "XSET.HAS k",
        "XSET.HAS k a b",
        "XSET.MHAS k",
        "XSET.MEMBERS",
        "XSET.REM k",
        "XSET.CARD",
        "XSET.CARD k a",
        "XSET.COUNT",
        "XSET.COUNT k",
        "XSET.COUNT k 0",
        "XSET.COUNT k 0 1 2",
        "XSET.PERSIST k",
        "XSET.SCAN",
        "XSET.SCAN k",
    ]
    .iter()
    .map(|cmd| case(cmd, arity(cmd.split(' ').next().unwrap_or(cmd))))
    .collect();
    for n in TTL_FAMILY.split(' ') {
        cases.push(case(n, arity(n)));
        cases.push(case(&format!("{n} k"), arity(n)));
    }
    for n in EXPIRE_FAMILY.split(' ') {
        cases.push(case(&format!("{n} k"), arity(n)));
        cases.push(case(&format!("{n} k 10"), arity(n)));
    }
    expect_errors(&mut c, &cases);
}

#[test]
fn malformed_integers_are_rejected() {
    let (_s, mut c) = fixture();
    let mut templates: Vec<String> = [
        "XSET.ADD k a {}",
        "XSET.ADD new a 10 b {}",
        "XSET.ADDEX k PX MEMBERS 1 a {}",
        "XSET.ADDEX k EXAT MEMBERS 2 a 10 b {}",
        "XSET.ADDEX k MAXLEN {} MEMBERS 1 a 10",
        "XSET.MEMBERS k LIMIT {} 1",
        "XSET.MEMBERS k LIMIT 0 {}",
        "XSET.SCAN k 0 COUNT {}",
    ]
    .map(String::from)
    .into();
    for n in EXPIRE_FAMILY.split(' ') {
        templates.push(format!("{n} k {{}} MEMBERS 1 a"));
        templates.push(format!("{n} k {{}} a"));
    }
    // A MEMBERS count that is not a positive integer gets one error in every
    // command, whatever is wrong with it.
    let mut counts: Vec<String> = [
        "XSET.ADDEX k MEMBERS {} a 10",
        "XSET.PERSIST k MEMBERS {} a",
    ]
    .map(String::from)
    .into();
    for n in TTL_FAMILY.split(' ') {
        counts.push(format!("{n} k MEMBERS {{}} a"));
    }
    for n in EXPIRE_FAMILY.split(' ') {
        counts.push(format!("{n} k 10 NX MEMBERS {{}} a"));
    }
    let cases: Vec<Case> = templates
        .iter()
        .flat_map(|t| {
            BAD_INTS
                .split('|')
                .map(move |i| case_with(t, i, NOT_INTEGER))
        })
        .chain(counts.iter().flat_map(|t| {
            BAD_INTS
                .split('|')
                .map(move |i| case_with(t, i, COUNT_POSITIVE))
        }))
        .collect();
    expect_errors(&mut c, &cases);
}

#[test]
fn invalid_expire_times() {
    let (_s, mut c) = fixture();
    let mut cases: Vec<Case> = [
        "XSET.ADD k a 0",
        "XSET.ADD k a -1",
        "XSET.ADD k a -9223372036854775808",
        "XSET.ADD k a 9223372036854775807",
        "XSET.ADD k a 9223372036854776",
        "XSET.ADD k a 10 b 0",
        "XSET.ADD new a 10 b 0",
        "XSET.ADDEX k EX MEMBERS 1 a 0",
        "XSET.ADDEX k EX MEMBERS 1 a 9223372036854775807",
        "XSET.ADDEX k PX MEMBERS 1 a -5",
        "XSET.ADDEX k PX MEMBERS 1 a 9223372036854775807",
        "XSET.ADDEX k EXAT MEMBERS 1 a 0",
        "XSET.ADDEX k EXAT MEMBERS 1 a 9223372036854775807",
        "XSET.ADDEX k EXAT MEMBERS 1 a 9223372036854776",
        "XSET.ADDEX k PXAT MEMBERS 1 a 0",
        "XSET.ADDEX k PXAT MEMBERS 1 a -1",
        "XSET.ADDEX k XX GT PXAT MEMBERS 2 a 1 b -1",
    ]
    .iter()
    .map(|cmd| {
        let name = cmd.split(' ').next().unwrap_or(cmd);
        case(cmd, invalid_expire(name))
    })
    .collect();
    for n in EXPIRE_FAMILY.split(' ') {
        cases.push(case(&format!("{n} k -1 MEMBERS 1 a"), invalid_expire(n)));
        let min = format!("{n} k -9223372036854775808 XX MEMBERS 1 a");
        cases.push(case(&min, invalid_expire(n)));
    }
    // Overflow in every unit that can overflow: a PEXPIREAT of i64::MAX is
    // the largest deadline and is accepted (see below).
    for n in ["XSET.EXPIRE", "XSET.PEXPIRE", "XSET.EXPIREAT"] {
        let max = format!("{n} k 9223372036854775807 MEMBERS 1 a");
        cases.push(case(&max, invalid_expire(n)));
    }
    for cmd in [
        "XSET.EXPIRE k 9223372036854775 MEMBERS 1 a",
        "XSET.EXPIREAT k 9223372036854776 MEMBERS 1 a",
    ] {
        cases.push(case(cmd, invalid_expire(&cmd[..cmd.find(' ').unwrap()])));
    }
    expect_errors(&mut c, &cases);
}

#[test]
fn syntax_errors() {
    let (_s, mut c) = fixture();
    let mut cases = vec![
        // XSET.ADDEX: a misspelt or unknown option is an error, never data.
        case("XSET.ADDEX k NX FOO MEMBERS 1 a 10", unknown("FOO")),
        case("XSET.ADDEX k MAXLEN 5 BAR MEMBERS 1 a 10", unknown("BAR")),
        case("XSET.ADDEX t MAXLN 3 MEMBERS 1 /a 10", unknown("MAXLN")),
        case("XSET.ADDEX k NX a 10 b", members_before("a")),
        case("XSET.ADDEX k NX EX a 10", members_before("a")),
        case("XSET.ADDEX k a 10 b 20", members_before("a")),
        case(
            "XSET.ADDEX k EX PX MEMBERS 1 a 1",
            format!("{SYNTAX}: 'PX' conflicts with 'EX'"),
        ),
        case("XSET.ADDEX k NX EX MAXLEN 5 MEMBERS", COUNT_POSITIVE),
        // An option given twice is a syntax error, whatever it is.
        case("XSET.ADDEX k NX NX MEMBERS 1 a 10", twice("NX")),
        case("XSET.ADDEX k GT GT MEMBERS 1 a 10", twice("GT")),
        case(
            "XSET.ADDEX k MAXLEN 5 MAXLEN 6 MEMBERS 1 a 10",
            twice("MAXLEN"),
        ),
        case("XSET.ADDEX k CAP 2 CAP x MEMBERS 1 a 10", twice("CAP")),
        case("XSET.ADDEX k CAP x CAP 2 MEMBERS 1 a 10", NOT_INTEGER),
        case(
            "XSET.ADDEX k PX EXAT MEMBERS 1 a 10",
            format!("{SYNTAX}: 'EXAT' conflicts with 'PX'"),
        ),
        case("XSET.ADDEX k EX EX MEMBERS 1 a 10", twice("EX")),
        case(
            "XSET.ADDEX k PXAT px MEMBERS 1 a 10",
            format!("{SYNTAX}: 'px' conflicts with 'PXAT'"),
        ),
        case("XSET.ADDEX k NX XX MEMBERS 1 a 10", NX_AND_XX),
        case("XSET.ADDEX k xx GT nx MEMBERS 1 a 10", NX_AND_XX),
        case("XSET.ADDEX k GT LT MEMBERS 1 a 10", GT_LT_NX),
        case("XSET.ADDEX k lt XX gt MEMBERS 1 a 10", GT_LT_NX),
        case("XSET.ADDEX k NX GT MEMBERS 1 a 10", GT_LT_NX),
        case("XSET.ADDEX k LT EX NX MEMBERS 1 a 10", GT_LT_NX),
        case("XSET.ADDEX k MEMBERS 0 a 10", COUNT_POSITIVE),
        case("XSET.ADDEX k MEMBERS -1 a 10", COUNT_POSITIVE),
        case(
            "XSET.ADDEX k NX MEMBERS -9223372036854775808 a",
            COUNT_POSITIVE,
        ),
        case("XSET.ADDEX k MEMBERS 1 a 10 b", COUNT_MISMATCH),
        case("XSET.ADDEX k NX MEMBERS 1 a", COUNT_MISMATCH),
        // XSET.ADD reads pairs literally: NX is a member, PX its TTL.
        case("XSET.ADD k NX PX MEMBERS 1 a 10", NOT_INTEGER),
        case("XSET.ADDEX k MEMBERS 2 a 10", COUNT_MISMATCH),
        case("XSET.ADDEX k MEMBERS 1 a 10 b 20", COUNT_MISMATCH),
        case(
            "XSET.ADDEX k MEMBERS 9223372036854775807 a 1",
            COUNT_MISMATCH,
        ),
        case("XSET.ADDEX k MAXLEN 0 MEMBERS 1 a 10", MAXLEN_POSITIVE),
        case("XSET.ADDEX k MAXLEN -3 MEMBERS 1 a 10", MAXLEN_POSITIVE),
        case("XSET.ADDEX k NX NX NX MAXLEN", twice("NX")),
        case("XSET.ADDEX k MAXLEN MEMBERS 1 a 10", NOT_INTEGER),
        // XSET.MEMBERS.
        case("XSET.MEMBERS k FOO", unknown("FOO")),
        case("XSET.MEMBERS k REV BAR", unknown("BAR")),
        case("XSET.MEMBERS k LIMIT", missing("LIMIT")),
        case("XSET.MEMBERS k LIMIT 0", missing("LIMIT")),
        case("XSET.MEMBERS k WITHTTL LIMIT 1", missing("LIMIT")),
        case("XSET.MEMBERS k LIMIT 0 1 EXTRA", unknown("EXTRA")),
        // XSET.SCAN.
        case("XSET.SCAN k abc", INVALID_CURSOR),
        case("XSET.SCAN k -1", INVALID_CURSOR),
        case("XSET.SCAN k 1.5", INVALID_CURSOR),
        case("XSET.SCAN k 18446744073709551616", INVALID_CURSOR),
        case("XSET.SCAN k 0 COUNT 0", SYNTAX),
        case("XSET.SCAN k 0 COUNT -1", SYNTAX),
        case("XSET.SCAN k 0 COUNT", missing("COUNT")),
        case("XSET.SCAN k 0 MATCH", missing("MATCH")),
        case("XSET.SCAN k 0 WITHTTL FOO", unknown("FOO")),
        case("XSET.SCAN k 0 MATCH * COUNT 5 EXTRA", unknown("EXTRA")),
        // XSET.PERSIST.
        case("XSET.PERSIST k a b c", members_before("a")),
        case("XSET.PERSIST k FIELDS 1 a", members_before("FIELDS")),
        case("XSET.PERSIST k MEMBERS 0 a", COUNT_POSITIVE),
        case("XSET.PERSIST k MEMBERS -2 a b", COUNT_POSITIVE),
        case("XSET.PERSIST k MEMBERS 2 a", COUNT_MISMATCH),
        case("XSET.PERSIST k MEMBERS 1 a b", COUNT_MISMATCH),
        case("XSET.PERSIST k MEMBERS 1", COUNT_MISMATCH),
    ];
    for n in TTL_FAMILY.split(' ') {
        cases.extend([
            case(&format!("{n} k FOO 1 a"), members_before("FOO")),
            case(&format!("{n} k a b"), members_before("a")),
            case(&format!("{n} k MEMBERS 1"), COUNT_MISMATCH),
            case(&format!("{n} k MEMBERS 0 a"), COUNT_POSITIVE),
            case(&format!("{n} k MEMBERS 2 a"), COUNT_MISMATCH),
            case(&format!("{n} k MEMBERS 1 a b"), COUNT_MISMATCH),
        ]);
    }
    for n in EXPIRE_FAMILY.split(' ') {
        cases.extend([
            case(&format!("{n} k 10 a b c"), members_before("a")),
            case(&format!("{n} k 10 a b"), members_before("a")),
            case(&format!("{n} k 10 MEMBERS 1"), COUNT_MISMATCH),
            case(&format!("{n} k 10 FOO MEMBERS 1 a"), unknown("FOO")),
            case(&format!("{n} k 10 NX XX MEMBERS 1 a"), EXPIRE_CONDITIONS),
            case(&format!("{n} k 10 GT MEMBERS 1 a EXTRA"), COUNT_MISMATCH),
            case(&format!("{n} k 10 MEMBERS 0 a"), COUNT_POSITIVE),
            case(&format!("{n} k 10 LT MEMBERS -1 a"), COUNT_POSITIVE),
            case(&format!("{n} k 10 NX MEMBERS 1"), COUNT_MISMATCH),
            case(&format!("{n} k 0 MEMBERS 3 a b"), COUNT_MISMATCH),
        ]);
    }
    expect_errors(&mut c, &cases);
}

#[test]
fn rejected_writes_change_nothing() {
    let (_s, mut c) = fixture();
    // On a missing key: nothing is created.
    for cmd in [
        "XSET.ADD new a 10 b 0",
        "XSET.ADDEX new PX MEMBERS 2 a 10 b -1",
        "XSET.ADDEX new NX GT MEMBERS 1 a 10",
    ] {
        outcome(&mut c, &case(cmd, "").0);
        assert_eq!(run::<i64>(&mut c, "EXISTS new"), 0, "{cmd}");
    }
    // On an existing key: each command would change `k` had its valid part
    // been applied (a new deadline, a new member, a trim, a removal).
    let before = snapshot(&mut c, "k");
    let digest: Vec<String> = run(&mut c, "DEBUG DIGEST-VALUE k");
    for cmd in [
        "XSET.ADD k a 999 zz 0",
        "XSET.ADD k a 999 zz",
        "XSET.ADDEX k MAXLEN 1 MEMBERS 2 c 10 d 0",
        "XSET.ADDEX k XX MEMBERS 2 a 5 b 5 c",
        "XSET.EXPIRE k 0 MEMBERS 3 a b",
        "XSET.EXPIRE k 5 MEMBERS 1 a b",
        "XSET.PEXPIRE k 5 NX MEMBERS 0 p",
        "XSET.PERSIST k MEMBERS 3 a b",
        "XSET.PERSIST k a b c",
    ] {
        let got = outcome(&mut c, &case(cmd, "").0);
        assert!(got.starts_with("ERR "), "{cmd}: {got}");
        assert_eq!(snapshot(&mut c, "k"), before, "{cmd}");
        assert_eq!(run::<Vec<String>>(&mut c, "DEBUG DIGEST-VALUE k"), digest);
        assert_eq!(run::<String>(&mut c, "PING"), "PONG");
    }
    // The digest does see a new deadline, so the checks above bite.
    run::<i64>(&mut c, "XSET.ADD k a 999");
    assert_ne!(run::<Vec<String>>(&mut c, "DEBUG DIGEST-VALUE k"), digest);
}

#[test]
fn out_of_memory_rejects_adds_only() {
    let (_s, mut c) = fixture();
    run::<()>(&mut c, "CONFIG SET maxmemory 1");
    let oom = "OOM command not allowed when used memory > 'maxmemory'.";
    // Every command that can grow memory is refused: a new deadline can
    // convert a small set to the large encoding.
    let cases = [
        "XSET.ADD k a 10",
        "XSET.ADD new a 10",
        "XSET.ADDEX k PX MEMBERS 1 c 10",
        "XSET.EXPIRE k 50 MEMBERS 1 b",
        "XSET.PEXPIREAT k 1125899906842624 b",
        "XSET.PERSIST k MEMBERS 1 b",
    ];
    expect_errors(&mut c, &cases.map(|cmd| case(cmd, oom)));
    // Commands that cannot grow a set still run.
    assert_eq!(run::<i64>(&mut c, "XSET.REM k a"), 1);
    assert_eq!(run::<i64>(&mut c, "XSET.HAS k b"), 1);
    run::<()>(&mut c, "CONFIG SET maxmemory 0");
    assert_eq!(run::<i64>(&mut c, "XSET.ADD k a 10"), 1);
}

#[test]
fn out_of_memory_accepts_the_expire_forms_that_only_remove() {
    let (_s, mut c) = fixture();
    run::<i64>(&mut c, "XSET.ADD k c 1000 d 1000 e 1000 f 1000");
    run::<()>(&mut c, "SET plain v");
    run::<()>(&mut c, "CONFIG SET maxmemory 1");
    // As native EXPIRE, which is not deny-oom: a time not in the future
    // removes, and frees memory.
    assert_eq!(run::<i64>(&mut c, "EXPIRE plain 0"), 1);
    for (cmd, want) in [
        ("XSET.EXPIRE k 0 a", vec![2]),
        ("XSET.PEXPIRE k 0 MEMBERS 2 b nothing", vec![2, -2]),
        ("XSET.EXPIREAT k 1 c", vec![2]),
        ("XSET.PEXPIREAT k 1 MEMBERS 1 d", vec![2]),
        ("XSET.EXPIREAT k 1 NX MEMBERS 1 e", vec![0]),
        ("XSET.PEXPIREAT k 1 XX MEMBERS 1 e", vec![2]),
    ] {
        let args: Vec<&[u8]> = cmd.split(' ').map(str::as_bytes).collect();
        let got: Vec<i64> = match try_q::<redis::Value>(&mut c, &args) {
            Ok(redis::Value::Int(n)) => vec![n],
            Ok(v) => redis::FromRedisValue::from_redis_value(v).expect("codes"),
            Err(e) => panic!("{cmd} refused under maxmemory: {e}"),
        };
        assert_eq!(got, want, "{cmd}");
    }
    assert_eq!(run::<Vec<String>>(&mut c, "XSET.MEMBERS k"), ["f", "p"]);
    // A deadline in the future can grow the set: still refused, as is the
    // same form with a future time after a past one.
    let oom = "OOM command not allowed when used memory > 'maxmemory'.";
    let cases = [
        "XSET.EXPIRE k 100 f",
        "XSET.PEXPIREAT k 32503680000000 MEMBERS 1 f",
        "XSET.PERSIST k f",
    ];
    expect_errors(&mut c, &cases.map(|cmd| case(cmd, oom)));
    run::<()>(&mut c, "CONFIG SET maxmemory 0");
    assert_eq!(run::<i64>(&mut c, "XSET.EXPIRE k 100 f"), 1);
}

#[test]
fn limits_just_inside_are_accepted() {
    let (_s, mut c) = fixture();
    // Time 0 in the EXPIRE family is not an error: it removes (code 2).
    assert_eq!(
        run::<Vec<i64>>(&mut c, "XSET.EXPIRE k 0 MEMBERS 2 a zz"),
        [2, -2]
    );
    assert_eq!(
        run::<Vec<i64>>(&mut c, "XSET.PEXPIREAT k 0 MEMBERS 1 b"),
        [2]
    );
    assert_eq!(run::<i64>(&mut c, "XSET.CARD k"), 1);
    assert_eq!(
        run::<Vec<i64>>(&mut c, "XSET.EXPIRE new 0 MEMBERS 1 a"),
        [-2]
    );
    assert_eq!(run::<i64>(&mut c, "EXISTS new"), 0);
    // The largest deadline, i64::MAX ms, is accepted.
    let at_max = "XSET.PEXPIREAT k 9223372036854775807 MEMBERS 1 p";
    assert_eq!(run::<Vec<i64>>(&mut c, at_max), [1]);
    assert_eq!(run::<i64>(&mut c, "XSET.PEXPIRETIME k p"), i64::MAX);
    let add_max = "XSET.ADDEX k PXAT MEMBERS 1 m 9223372036854775807";
    assert_eq!(run::<i64>(&mut c, add_max), 1);
    let add_secs = "XSET.ADDEX k EXAT MEMBERS 1 s 9223372036854775";
    assert_eq!(run::<i64>(&mut c, add_secs), 1);
    assert_eq!(run::<i64>(&mut c, "XSET.CARD k"), 3);
    assert_eq!(run::<String>(&mut c, "PING"), "PONG");
}

/// Issue 31: a syntax error names the word that was wrong, in every command
/// that takes options, and the same mistake reads the same everywhere.
#[test]
fn syntax_errors_name_the_word_in_every_command() {
    let (_s, mut c) = fixture();
    let cases = vec![
        // Unknown options.
        case("XSET.ADDEX k MAXLN 3 MEMBERS 1 a 10", unknown("MAXLN")),
        case("XSET.MEMBERS k REVERSE", unknown("REVERSE")),
        case("XSET.SCAN k 0 MATCHES a*", unknown("MATCHES")),
        case("XSET.RANDMEMBER k 2 WITHTTLS", unknown("WITHTTLS")),
        case("XSET.POP k 2 SOONES", unknown("SOONES")),
        case("XSET.EXPIRE k 10 NXX MEMBERS 1 a", unknown("NXX")),
        case("XSET.INTER 1 k WITHSCORES", unknown("WITHSCORES")),
        case("XSET.UNIONSTORE d 1 k WITHTTL", unknown("WITHTTL")),
        case("XSET.INTERCARD 1 k LIMITS 1", unknown("LIMITS")),
        // Repeated options.
        case("XSET.ADDEX k NX NX MEMBERS 1 a 10", twice("NX")),
        case("XSET.ADDEX k CODES codes MEMBERS 1 a 10", twice("codes")),
        case("XSET.MEMBERS k REV REV", twice("REV")),
        case("XSET.MEMBERS k WITHTTL LIMIT 0 1 WITHTTL", twice("WITHTTL")),
        case("XSET.MEMBERS k LIMIT 0 1 LIMIT 0 2", twice("LIMIT")),
        case("XSET.SCAN k 0 COUNT 1 COUNT 2", twice("COUNT")),
        case("XSET.SCAN k 0 MATCH a MATCH b", twice("MATCH")),
        case("XSET.SCAN k 0 WITHTTL WITHTTL", twice("WITHTTL")),
        case("XSET.RANDMEMBER k 2 WITHTTL WITHTTL", twice("WITHTTL")),
        case("XSET.POP k SOONEST SOONEST", twice("SOONEST")),
        case("XSET.POP k 1 SOONEST SOONEST", twice("SOONEST")),
        case("XSET.EXPIRE k 10 NX NX MEMBERS 1 a", twice("NX")),
        case("XSET.PEXPIREAT k 10 gt GT MEMBERS 1 a", twice("GT")),
        case("XSET.DIFF 1 k WITHTTL WITHTTL", twice("WITHTTL")),
        case("XSET.INTERCARD 1 k LIMIT 1 LIMIT 2", twice("LIMIT")),
        // An option without its value.
        case("XSET.ADDEX k MAXLEN", missing("MAXLEN")),
        case("XSET.ADDEX k NX CAP", missing("CAP")),
        case("XSET.MEMBERS k BYDEADLINE 0", missing("BYDEADLINE")),
        case("XSET.SCAN k 0 MATCH", missing("MATCH")),
        case("XSET.INTERCARD 1 k LIMIT", missing("LIMIT")),
        // A known option out of its place.
        case(
            "XSET.MEMBERS k REV BYDEADLINE 0 1",
            format!("{SYNTAX}: 'BYDEADLINE' must come right after the key"),
        ),
        // Two conditions of the EXPIRE family: EXPIRE's own wording.
        case("XSET.EXPIRE k 10 GT LT MEMBERS 1 a", EXPIRE_CONDITIONS),
        // A word that cannot be shown as typed is escaped, on one line.
        case("XSET.MEMBERS k a\\b", unknown("a\\x5cb")),
    ];
    expect_errors(&mut c, &cases);
    // A newline in the word never reaches the reply as a newline.
    let e = err(&mut c, c!["XSET.MEMBERS", "k", "a\r\nb"]);
    assert_eq!(e, unknown("a\\x0d\\x0ab"));
}

/// Issue 31: `XSET.ADDEX` without its `MEMBERS` block says so, where the
/// block should have started, instead of the server's arity error.
#[test]
fn addex_without_members_says_members_is_expected() {
    let (_s, mut c) = fixture();
    let cases = vec![
        case("XSET.ADDEX k NX 60", members_before("60")),
        case("XSET.ADDEX k a 10", members_before("a")),
        case("XSET.ADDEX k EX a 10", members_before("a")),
        case(
            "XSET.ADDEX k NX",
            format!("{SYNTAX}: MEMBERS expected at the end"),
        ),
        case(
            "XSET.ADDEX k NX EX MAXLEN 3",
            format!("{SYNTAX}: MEMBERS expected at the end"),
        ),
        case("XSET.ADDEX k", arity("XSET.ADDEX")),
        // A short block gets the count errors every member block gives.
        case("XSET.ADDEX k MEMBERS", COUNT_POSITIVE),
        case("XSET.ADDEX k MEMBERS 1", COUNT_MISMATCH),
        case("XSET.ADDEX k MEMBERS 1 a", COUNT_MISMATCH),
    ];
    expect_errors(&mut c, &cases);
}

/// Issue 31: `MEMBERS 0`, a count with nothing after it, gets the module's
/// count error in every command with a member block, never the server's
/// arity error.
#[test]
fn members_zero_gets_the_same_error_everywhere() {
    let (_s, mut c) = fixture();
    let mut cases = vec![
        case("XSET.ADDEX k MEMBERS 0", COUNT_POSITIVE),
        case("XSET.ADDEX k NX MEMBERS 0", COUNT_POSITIVE),
        case("XSET.PERSIST k MEMBERS 0", COUNT_POSITIVE),
        case("XSET.ADDEX k MEMBERS", COUNT_POSITIVE),
        case("XSET.PERSIST k MEMBERS 0 a", COUNT_POSITIVE),
    ];
    for n in TTL_FAMILY.split(' ') {
        cases.push(case(&format!("{n} k MEMBERS 0"), COUNT_POSITIVE));
    }
    for n in EXPIRE_FAMILY.split(' ') {
        cases.push(case(&format!("{n} k 10 MEMBERS 0"), COUNT_POSITIVE));
        cases.push(case(&format!("{n} k 10 NX MEMBERS 0"), COUNT_POSITIVE));
    }
    expect_errors(&mut c, &cases);
}
