//! The README and every page under `docs/` are executable: every fenced
//! block holding redis-cli prompt lines (`127.0.0.1:6379> ...`) runs
//! against a fresh server, line by line on one connection, and each printed
//! reply must equal what redis-cli prints for the real one. A block fenced
//! as ` ```resp3 ` runs on a RESP3 connection (`redis-cli -3`). All blocks
//! of one page under `docs/` also run in order on one server, as a reader
//! pasting them would. Lines are split as redis-cli splits them (quotes and
//! escapes), so a line that does not paste fails here too.
//!
//! The only values allowed to differ are those that depend on the clock:
//! non-negative integers in replies to the TTL and deadline commands
//! (`XSET.TTL`, `XSET.PEXPIRETIME`, `... WITHTTL`, `PTTL`, ...), the
//! numbers in `INFO`, and the cursor of a scan that has not finished (it
//! carries a random epoch).

use crate::harness::Server;
use redis::{Connection, Value};

/// One command line of a block, with what the README says it prints.
struct Step {
    line: String,
    in_transaction: bool,
    expected: Vec<String>,
}

/// Splits a line as redis-cli does (`sdssplitargs`): words separated by
/// spaces; `"..."` with `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\a` and `\xHH`
/// escapes; `'...'` with `\'`. A closing quote must end the word.
fn split_args(line: &str) -> Result<Vec<Vec<u8>>, String> {
    let b = line.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == b.len() {
            return Ok(out);
        }
        let mut word = Vec::new();
        let (mut dq, mut sq) = (false, false);
        loop {
            if dq {
                match b.get(i) {
                    None => return Err(format!("unbalanced quotes in {line}")),
                    Some(b'\\') if i + 3 < b.len() && b[i + 1] == b'x' => {
                        let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap_or("");
                        match u8::from_str_radix(hex, 16) {
                            Ok(v) => {
                                word.push(v);
                                i += 3;
                            }
                            Err(_) => word.push(b'\\'),
                        }
                    }
                    Some(b'\\') if i + 1 < b.len() => {
                        i += 1;
                        word.push(match b[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 8,
                            b'a' => 7,
                            c => c,
                        });
                    }
                    Some(b'"') => {
                        if b.get(i + 1).is_some_and(|c| !c.is_ascii_whitespace()) {
                            return Err(format!("closing quote not followed by space: {line}"));
                        }
                        i += 1;
                        break;
                    }
                    Some(&c) => word.push(c),
                }
            } else if sq {
                match b.get(i) {
                    None => return Err(format!("unbalanced quotes in {line}")),
                    Some(b'\\') if b.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        word.push(b'\'');
                    }
                    Some(b'\'') => {
                        if b.get(i + 1).is_some_and(|c| !c.is_ascii_whitespace()) {
                            return Err(format!("closing quote not followed by space: {line}"));
                        }
                        i += 1;
                        break;
                    }
                    Some(&c) => word.push(c),
                }
            } else {
                match b.get(i) {
                    None => break,
                    Some(c) if c.is_ascii_whitespace() => break,
                    Some(b'"') => dq = true,
                    Some(b'\'') => sq = true,
                    Some(&c) => word.push(c),
                }
            }
            i += 1;
        }
        out.push(word);
    }
}

/// A string as redis-cli quotes it (`sdscatrepr`).
fn repr(s: &[u8]) -> String {
    let mut out = String::from("\"");
    for &c in s {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            c if (0x20..0x7f).contains(&c) => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

/// A reply as redis-cli prints it on a terminal (`cliFormatReplyTTY`).
fn format_reply(v: &Value, prefix: &str) -> String {
    match v {
        Value::Nil => "(nil)\n".into(),
        Value::Int(i) => format!("(integer) {i}\n"),
        Value::BulkString(s) => format!("{}\n", repr(s)),
        Value::SimpleString(s) => format!("{s}\n"),
        Value::Okay => "OK\n".into(),
        Value::ServerError(e) => format!(
            "(error) {}{}\n",
            e.code(),
            e.details().map(|d| format!(" {d}")).unwrap_or_default()
        ),
        Value::Array(items) if items.is_empty() => "(empty array)\n".into(),
        Value::Array(items) => {
            let idxlen = items.len().to_string().len();
            let inner = format!("{prefix}{}", " ".repeat(idxlen + 2));
            let mut out = String::new();
            for (i, item) in items.iter().enumerate() {
                let lead = if i == 0 { "" } else { prefix };
                out.push_str(&format!("{lead}{:>idxlen$}) ", i + 1));
                out.push_str(&format_reply(item, &inner));
            }
            out
        }
        other => format!("{other:?}\n"),
    }
}

/// Commands whose non-negative integer replies depend on the clock.
const CLOCK_COMMANDS: [&str; 9] = [
    "XSET.TTL",
    "XSET.PTTL",
    "XSET.EXPIRETIME",
    "XSET.PEXPIRETIME",
    "TTL",
    "PTTL",
    "EXPIRETIME",
    "PEXPIRETIME",
    "TIME",
];

/// Stream reads: their entry IDs and the deadlines xset delivers are
/// times, different in every run.
const STREAM_READS: &[&str] = &["XRANGE", "XREVRANGE", "XREAD", "XREADGROUP"];

/// A reply line with a quoted stream ID (`"1795786426710-0"`) or a quoted
/// number (a deadline) written as `"#"`: what stays the same from run to
/// run.
fn time_shape(line: &str) -> String {
    let (Some(open), Some(close)) = (line.find('"'), line.rfind('"')) else {
        return line.to_string();
    };
    if close <= open + 1 {
        return line.to_string();
    }
    let inner = &line[open + 1..close];
    let mut parts = inner.splitn(2, '-');
    let numeric =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let first = parts.next();
    let rest = parts.next();
    if numeric(first) && (rest.is_none() || numeric(rest)) {
        format!("{}\"#\"{}", &line[..open], &line[close + 1..])
    } else {
        line.to_string()
    }
}

fn clock_dependent(args: &[Vec<u8>]) -> bool {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    CLOCK_COMMANDS.contains(&name.as_str())
        || args.iter().any(|a| a.eq_ignore_ascii_case(b"WITHTTL"))
}

fn integer_of(line: &str) -> Option<i64> {
    line.trim_start()
        .split_once("(integer) ")
        .and_then(|(_, n)| n.parse().ok())
}

/// Whether `got` may stand for `want` in the reply to `args`.
fn line_matches(args: &[Vec<u8>], want: &str, got: &str, index: usize) -> bool {
    if want == got {
        return true;
    }
    let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    let prefix = |s: &str| s.split("(integer)").next().unwrap_or("").to_string();
    if clock_dependent(args)
        && let (Some(w), Some(g)) = (integer_of(want), integer_of(got))
    {
        return w >= 0 && g >= 0 && prefix(want) == prefix(got);
    }
    if name == "INFO" {
        let digitless = |s: &str| s.replace(|c: char| c.is_ascii_digit(), "");
        return digitless(want) == digitless(got);
    }
    if STREAM_READS.contains(&name.as_str()) {
        return time_shape(want) == time_shape(got);
    }
    if name == "XSET.SCAN" && index == 0 {
        // An unfinished scan's cursor: any number but "0".
        let number = |s: &str| {
            s.trim_start_matches("1) ")
                .trim_matches('"')
                .parse::<u64>()
                .ok()
        };
        return matches!((number(want), number(got)), (Some(w), Some(g)) if w != 0 && g != 0);
    }
    false
}

/// One example block: the line it starts on, whether it runs under RESP3,
/// and its steps.
struct Block {
    at: usize,
    resp3: bool,
    steps: Vec<Step>,
}

/// The blocks of `readme` that hold prompt lines, with their line numbers.
fn blocks(readme: &str) -> Vec<Block> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].trim_start().starts_with("```") {
            i += 1;
            continue;
        }
        let fence_indent = lines[i].len() - lines[i].trim_start().len();
        let resp3 = lines[i].trim_start().trim_start_matches('`') == "resp3";
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].trim_start().starts_with("```") {
            end += 1;
        }
        let body = &lines[start..end.min(lines.len())];
        i = end + 1;
        if !body
            .iter()
            .any(|l| l.trim_start().starts_with("127.0.0.1:6379"))
        {
            continue;
        }
        let mut steps: Vec<Step> = Vec::new();
        for (n, raw) in body.iter().enumerate() {
            let line = raw.trim_start();
            let prompt = [("127.0.0.1:6379> ", false), ("127.0.0.1:6379(TX)> ", true)]
                .into_iter()
                .find_map(|(p, tx)| line.strip_prefix(p).map(|cmd| (cmd, tx)));
            if let Some((cmd, in_transaction)) = prompt {
                steps.push(Step {
                    line: cmd.to_string(),
                    in_transaction,
                    expected: Vec::new(),
                });
            } else if let Some(step) = steps.last_mut() {
                // The reply keeps its own indentation, less the fence's.
                let indent = (raw.len() - line.len()).min(fence_indent);
                step.expected.push(raw[indent..].to_string());
            } else if !line.is_empty() {
                panic!(
                    "line {}: text before the first prompt in an example block",
                    start + n + 1
                );
            }
        }
        out.push(Block {
            at: start,
            resp3,
            steps,
        });
    }
    out
}

/// Commands whose reply redis-cli prints raw (as `INFO`).
fn raw_output(args: &[Vec<u8>]) -> bool {
    args[0].eq_ignore_ascii_case(b"INFO")
}

/// A connection to `server` in the protocol `block` is written for.
fn connect(server: &Server, block: &Block) -> Connection {
    if !block.resp3 {
        return server.conn();
    }
    redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", server.port))
        .and_then(|c| c.get_connection())
        .expect("a RESP3 connection")
}

fn run_block(c: &mut Connection, at: &str, steps: &[Step], failures: &mut Vec<String>) {
    let mut in_multi = false;
    for step in steps {
        let args = match split_args(&step.line) {
            Ok(a) if !a.is_empty() => a,
            Ok(_) => {
                failures.push(format!("block at {at}: empty command line"));
                continue;
            }
            Err(e) => {
                failures.push(format!("block at {at}: {e}"));
                continue;
            }
        };
        if step.in_transaction != in_multi {
            failures.push(format!(
                "block at {at}: `{}` shows the wrong prompt for the transaction state",
                step.line
            ));
        }
        if args.iter().any(|a| a.as_slice() == b"#") {
            failures.push(format!(
                "block at {at}: `{}` has an inline comment",
                step.line
            ));
        }
        let mut cmd = redis::cmd(&String::from_utf8_lossy(&args[0]));
        for a in &args[1..] {
            cmd.arg(a.as_slice());
        }
        let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
        let printed = match cmd.query::<Value>(c) {
            Ok(reply) => {
                if name == "MULTI" && reply == Value::Okay {
                    in_multi = true;
                } else if name == "EXEC" || name == "DISCARD" {
                    in_multi = false;
                }
                match (&reply, raw_output(&args)) {
                    (Value::BulkString(s), true) => String::from_utf8_lossy(s).replace('\r', ""),
                    _ => format_reply(&reply, ""),
                }
            }
            Err(e) => {
                if name == "EXEC" || name == "DISCARD" {
                    in_multi = false;
                }
                match (e.code(), e.detail()) {
                    (Some(code), Some(detail)) => format!("(error) {code} {detail}\n"),
                    (Some(code), None) => format!("(error) {code}\n"),
                    _ => panic!("block at {at}: `{}`: {e}", step.line),
                }
            }
        };
        let got: Vec<&str> = printed.trim_end_matches('\n').lines().collect();
        let want: Vec<&str> = step
            .expected
            .iter()
            .map(String::as_str)
            .filter(|l| !l.trim().is_empty())
            .collect();
        let got: Vec<&str> = got.into_iter().filter(|l| !l.trim().is_empty()).collect();
        let same = want.len() == got.len()
            && want
                .iter()
                .zip(&got)
                .enumerate()
                .all(|(i, (w, g))| line_matches(&args, w, g, i));
        if !same {
            failures.push(format!(
                "block at {at}: `{}`\n  README:\n    {}\n  server:\n    {}",
                step.line,
                want.join("\n    "),
                got.join("\n    ")
            ));
        }
    }
}

#[test]
fn every_readme_example_runs_as_printed() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let blocks = blocks(&readme);
    assert!(
        blocks.len() >= 5,
        "found only {} example blocks",
        blocks.len()
    );
    let mut failures = Vec::new();
    let mut commands = 0;
    for block in &blocks {
        // A fresh server per block: no keys or configuration carried over.
        let server = Server::start(&[]);
        let mut c = connect(&server, block);
        commands += block.steps.len();
        let at = format!("README.md:{}", block.at);
        run_block(&mut c, &at, &block.steps, &mut failures);
    }
    assert!(commands >= 15, "only {commands} example commands");
    assert!(
        failures.is_empty(),
        "{} README example lines differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every Markdown page under `dir`, but the hand-written parts of the
/// command pages (`docs/commands/parts/`), which the pages hold whole.
fn pages(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("a docs directory")
        .map(|e| e.expect("an entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if !path.ends_with("commands/parts") {
                pages(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn every_docs_example_runs_as_printed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    pages(&root.join("docs"), &mut files);
    let mut failures = Vec::new();
    let mut commands = 0;
    let mut command_pages = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a page");
        let name = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let blocks = blocks(&text);
        if name.starts_with("docs/commands/xset.") {
            command_pages += 1;
            assert!(!blocks.is_empty(), "{name} has no example");
        }
        // Each block on a fresh server, then the whole page in order on
        // one server (a new connection per block, as a new redis-cli).
        for block in &blocks {
            let server = Server::start(&[]);
            let mut c = connect(&server, block);
            commands += block.steps.len();
            let at = format!("{name}:{}", block.at);
            run_block(&mut c, &at, &block.steps, &mut failures);
        }
        let server = Server::start(&[]);
        for block in &blocks {
            let mut c = connect(&server, block);
            let at = format!("{name}:{} (after the page's earlier blocks)", block.at);
            run_block(&mut c, &at, &block.steps, &mut failures);
        }
    }
    // A page per command: `pages_match_the_table` (src/commands/docs.rs)
    // checks that each command of the table has its part and its page.
    let table = std::fs::read_dir(root.join("docs/commands/parts"))
        .expect("docs/commands/parts")
        .count();
    assert_eq!(command_pages, table, "a page per hand-written part");
    assert!(commands >= 3 * table, "only {commands} example commands");
    assert!(
        failures.is_empty(),
        "{} docs example lines differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn stream_ids_and_deadlines_are_times_in_stream_reads() {
    assert_eq!(
        time_shape(r#"   2) 1) 1) "1795786426710-0""#),
        r##"   2) 1) 1) "#""##
    );
    assert_eq!(
        time_shape(r#"            6) "1795786426710""#),
        r##"            6) "#""##
    );
    assert_eq!(
        time_shape(r#"            4) "seat-14""#),
        r#"            4) "seat-14""#
    );
    assert_eq!(
        time_shape(r#"            4) "-14""#),
        r#"            4) "-14""#
    );
    let read = vec![b"XREADGROUP".to_vec()];
    assert!(line_matches(
        &read,
        r#"6) "1795786426710""#,
        r#"6) "1895786426711""#,
        0
    ));
    assert!(!line_matches(
        &read,
        r#"4) "seat-14""#,
        r#"4) "seat-15""#,
        0
    ));
}

#[test]
fn the_runner_reads_lines_as_redis_cli_does() {
    let args = split_args(r#"EVAL "return {'a\"b'}" 0 'it\'s' x\x41"#).expect("split");
    assert_eq!(
        args,
        [
            b"EVAL".to_vec(),
            b"return {'a\"b'}".to_vec(),
            b"0".to_vec(),
            b"it's".to_vec(),
            b"x\\x41".to_vec()
        ]
    );
    assert!(split_args(r#"SET k "v"x"#).is_err());
    let nested = Value::Array(vec![
        Value::BulkString(b"0".to_vec()),
        Value::Array((0..10).map(Value::Int).collect()),
    ]);
    let printed = format_reply(&nested, "");
    assert!(printed.starts_with("1) \"0\"\n2)  1) (integer) 0\n    2) (integer) 1\n"));
    assert!(printed.ends_with("   10) (integer) 9\n"), "{printed}");
}
