//! What the server reports about xset's commands is the one table, and the
//! command reference (`docs/commands/README.md`) says the same: `COMMAND
//! DOCS` of every command (summary, complexity, the full argument tree
//! rendered as a syntax line) and `COMMAND INFO` (arity, key specs, ACL
//! categories where the server has them) are compared with the reference's
//! rows. ACL rules by
//! category and by command name are checked against real users. What the
//! server offers for ACL categories is probed, never read from its version.

use crate::harness::*;
use redis::{Connection, Value};
use std::collections::BTreeMap;
use std::io::Write;

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

/// A flat `[k1, v1, k2, v2, ...]` reply (or a RESP3 map) as a map.
fn pairs(v: &Value) -> BTreeMap<String, Value> {
    match v {
        Value::Array(items) => items
            .chunks(2)
            .filter_map(|kv| match kv {
                [k, v] => Some((text(k), v.clone())),
                _ => None,
            })
            .collect(),
        Value::Map(items) => items.iter().map(|(k, v)| (text(k), v.clone())).collect(),
        _ => BTreeMap::new(),
    }
}

fn list(v: Option<&Value>) -> Vec<Value> {
    match v {
        Some(Value::Array(items)) | Some(Value::Set(items)) => items.clone(),
        _ => Vec::new(),
    }
}

/// One argument of `COMMAND DOCS`, rendered as the command reference writes syntax.
fn render(arg: &Value) -> String {
    let a = pairs(arg);
    let kind = a.get("type").map(text).unwrap_or_default();
    let name = a.get("name").map(text).unwrap_or_default();
    let token = a.get("token").map(text);
    let flags: Vec<String> = list(a.get("flags")).iter().map(text).collect();
    let sub: Vec<String> = list(a.get("arguments")).iter().map(render).collect();
    let mut s = match kind.as_str() {
        "pure-token" => token.clone().unwrap_or(name),
        "oneof" => sub.join("|"),
        "block" => sub.join(" "),
        _ => name,
    };
    if let (Some(t), false) = (&token, kind == "pure-token") {
        s = format!("{t} {s}");
    }
    if flags.iter().any(|f| f == "multiple") {
        s = format!("{s} [{s} ...]");
    }
    if flags.iter().any(|f| f == "optional") {
        format!("[{s}]")
    } else if kind == "oneof" {
        format!("<{s}>")
    } else {
        s
    }
}

/// The command reference's rows (`docs/commands/README.md`): syntax ->
/// (summary, complexity, ACL).
fn readme_rows() -> BTreeMap<String, (String, String, String)> {
    let index = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/commands/README.md"
    ))
    .expect("docs/commands/README.md");
    index
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("| [`XSET.")?;
            let (syntax, cells) = rest.split_once("`](")?;
            let (_, cells) = cells.split_once(") | ")?;
            if !syntax.contains(' ') {
                return None;
            }
            let cells: Vec<&str> = cells.trim_end_matches(" |").split(" | ").collect();
            let [summary, complexity, acl] = cells[..] else {
                return None;
            };
            Some((
                format!("XSET.{}", syntax.replace("\\|", "|")),
                (summary.into(), complexity.into(), acl.into()),
            ))
        })
        .collect()
}

fn xset_commands(c: &mut Connection) -> Vec<String> {
    let mut names: Vec<String> = q(c, c!["COMMAND", "LIST", "FILTERBY", "MODULE", "xset"]);
    names.retain(|n| in_reference(n));
    names.sort();
    names
}

/// What the server lets a module do with ACL categories, probed from the
/// server itself rather than read from its name or version (Redis 7.0 gives
/// module commands no categories; Redis 7.2 and Valkey 7.2 give them the
/// built-in ones but no category of the module's own; Redis 7.4+ and
/// Valkey 8.0+ both; Redis 7.4 and Valkey before 8.1 leave module commands
/// out of `ACL CAT <category>`, though rules by category apply to them).
#[derive(Debug)]
struct AclSupport {
    /// `COMMAND INFO` shows categories for xset's commands: the module sets
    /// them wherever the server has `RedisModule_SetCommandACLCategories`
    /// (or refuses to load).
    categories: bool,
    /// `ACL CAT` lists `xset`: the server added the module's own category.
    own_category: bool,
    /// `ACL CAT read` lists a module command.
    listed_by_category: bool,
}

fn acl_support(c: &mut Connection) -> AclSupport {
    let info: Vec<Value> = q(c, c!["COMMAND", "INFO", "xset.has"]);
    let Some(Value::Array(fields)) = info.first() else {
        panic!("no COMMAND INFO for xset.has");
    };
    let categories = !list(fields.get(6)).is_empty();
    let all: Vec<String> = q(c, c!["ACL", "CAT"]);
    let own_category = all.iter().any(|c| c == "xset");
    let readers: Vec<String> = q(c, c!["ACL", "CAT", "read"]);
    let listed_by_category = readers.iter().any(|n| n == "xset.has");
    let support = AclSupport {
        categories,
        own_category,
        listed_by_category,
    };
    assert!(
        categories || !(own_category || listed_by_category),
        "{support:?}: a category without COMMAND INFO showing it"
    );
    // Straight to stderr (libtest captures eprintln!): which checks ran.
    let _ = writeln!(std::io::stderr(), "docs: server ACL support {support:?}");
    support
}

#[test]
fn command_docs_match_the_command_reference() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let rows = readme_rows();
    let names = xset_commands(&mut c);
    assert_eq!(names.len(), rows.len(), "registered {names:?}");
    for name in &names {
        let reply: Value = q(&mut c, c!["COMMAND", "DOCS", name.as_str()]);
        let docs = pairs(&reply);
        let doc = pairs(docs.get(name.as_str()).expect("docs for the command"));
        let mut syntax = name.to_uppercase();
        for arg in list(doc.get("arguments")) {
            syntax.push(' ');
            syntax.push_str(&render(&arg));
        }
        let row = rows
            .get(&syntax)
            .unwrap_or_else(|| panic!("the command reference has no row for `{syntax}`"));
        assert_eq!(
            doc.get("summary").map(text).as_deref(),
            Some(row.0.as_str())
        );
        assert_eq!(
            doc.get("complexity").map(text).as_deref(),
            Some(row.1.as_str())
        );
        assert_eq!(doc.get("module").map(text).as_deref(), Some("xset"));
        assert!(doc.contains_key("since"), "{name} has no since");
    }
}

#[test]
fn command_info_arity_keys_and_categories() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let rows = readme_rows();
    let support = acl_support(&mut c);
    let mut by_category: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (syntax, (_, _, acl)) in &rows {
        let name = syntax.split(' ').next().unwrap_or_default().to_lowercase();
        let info: Vec<Value> = q(&mut c, c!["COMMAND", "INFO", name.as_str()]);
        let Some(Value::Array(fields)) = info.first() else {
            panic!("no COMMAND INFO for {name}");
        };
        // Arity: the shortest form in the reference's syntax (required words).
        let arity = match &fields[1] {
            Value::Int(a) => *a,
            other => panic!("{other:?}"),
        };
        assert!(arity != 0, "{name}");
        // The key is argument 1 for every command but the set algebra,
        // whose counted keys only key specs (and the key-position callback)
        // describe: the legacy range holds just a `*STORE` destination; and
        // `XSET.NOTIFY`, whose second key the callback reports (the server
        // makes the legacy range from the first of its two key specs).
        let words: Vec<&str> = syntax.split(' ').collect();
        let (legacy, getkeys_args, want_keys): ([i64; 3], Vec<&str>, Vec<&str>) =
            match words.get(1..3) {
                Some(["numkeys", _]) => ([0, 0, 0], vec!["2", "k1", "k2"], vec!["k1", "k2"]),
                Some(["destination", "numkeys"]) => (
                    [1, 1, 1],
                    vec!["dest", "2", "k1", "k2"],
                    vec!["dest", "k1", "k2"],
                ),
                Some(["key", "[STREAM"]) => (
                    [1, 1, 1],
                    vec!["k", "STREAM", "s", "MAXLEN", "5"],
                    vec!["k", "s"],
                ),
                _ => ([1, 1, 1], Vec::new(), Vec::new()),
            };
        let keys: Vec<i64> = fields[3..6]
            .iter()
            .map(|v| match v {
                Value::Int(i) => *i,
                _ => -99,
            })
            .collect();
        assert_eq!(keys, legacy, "{name} key positions");
        let flags: Vec<String> = list(fields.get(2)).iter().map(text).collect();
        assert_eq!(
            flags.iter().any(|f| f == "movablekeys"),
            !getkeys_args.is_empty(),
            "{name} flags {flags:?}"
        );
        if !getkeys_args.is_empty() {
            let mut args: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYS", name.as_bytes()];
            args.extend(getkeys_args.iter().map(|a| a.as_bytes()));
            let got: Vec<String> = q(&mut c, &args);
            assert_eq!(got, want_keys, "{name} GETKEYS");
        }
        let got: Vec<String> = list(fields.get(6)).iter().map(text).collect();
        if support.categories {
            let mut want: Vec<String> = acl.split(' ').map(String::from).collect();
            if support.own_category {
                want.push("@xset".into());
            }
            let mut got_sorted = got.clone();
            got_sorted.sort();
            want.sort();
            assert_eq!(got_sorted, want, "{name} ACL categories");
            for category in want {
                by_category.entry(category).or_default().push(name.clone());
            }
        } else {
            assert!(
                got.is_empty(),
                "{name}: {got:?} on a server without categories"
            );
        }
        if !getkeys_args.is_empty() {
            continue;
        }
        // GETKEYS on the shortest argument list the arity allows.
        let mut args: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYS", name.as_bytes(), b"somekey"];
        args.resize(3 + arity.unsigned_abs() as usize - 1, b"1");
        let key_count: Vec<String> = q(&mut c, &args);
        assert_eq!(key_count, ["somekey"], "{name} GETKEYS");
    }
    // Where `ACL CAT <category>` lists module commands, it lists each
    // command under exactly the categories COMMAND INFO shows.
    if support.listed_by_category {
        for (category, mut want) in by_category {
            let category = category.trim_start_matches('@');
            let mut got: Vec<String> = q(&mut c, c!["ACL", "CAT", category]);
            got.retain(|n| n.starts_with("xset.") && in_reference(n));
            got.sort();
            want.sort();
            assert_eq!(got, want, "ACL CAT {category}");
        }
    }
}

/// A fresh connection authenticated as `user`.
fn as_user(s: &Server, user: &str) -> Connection {
    let mut c = s.conn();
    let _: String = redis::cmd("AUTH")
        .arg(user)
        .arg("pw")
        .query(&mut c)
        .expect("AUTH");
    c
}

fn allowed(c: &mut Connection, args: &[&str]) -> bool {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    match try_q::<Value>(c, &bytes) {
        Ok(_) => true,
        Err(e) if e.code() == Some("NOPERM") => false,
        Err(e) => panic!("{args:?}: {e}"),
    }
}

/// Runs an `ACL SETUSER ...` rule given as space-separated words.
fn acl(c: &mut Connection, rule: &str) {
    let words: Vec<&[u8]> = rule.split(' ').map(str::as_bytes).collect();
    assert_eq!(q::<String>(c, &words), "OK", "{rule}");
}

#[test]
fn acl_rules_by_category_and_by_command_name() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    let support = acl_support(&mut c);
    // By command name, on every server (the rules docs/operations.md shows for 7.0).
    for rule in [
        "ACL SETUSER reader on >pw ~* +get +xset.has +xset.mhas +xset.members +xset.card +xset.ttl",
        "ACL SETUSER writer on >pw ~* +@all -xset.add -xset.addex",
    ] {
        acl(&mut c, rule);
    }
    let mut reader = as_user(&s, "reader");
    assert!(allowed(&mut reader, &["XSET.HAS", "k", "a"]));
    assert!(!allowed(&mut reader, &["XSET.ADD", "k", "b", "10"]));
    let mut writer = as_user(&s, "writer");
    assert!(!allowed(&mut writer, &["XSET.ADD", "k", "b", "10"]));
    assert!(allowed(&mut writer, &["XSET.REM", "k", "zz"]));
    if !support.categories {
        return;
    }
    // By category, where the server gives module commands categories.
    for rule in [
        "ACL SETUSER cat-reader on >pw ~* +@read",
        "ACL SETUSER no-writes on >pw ~* +@all -@write",
    ] {
        acl(&mut c, rule);
    }
    let mut r = as_user(&s, "cat-reader");
    assert!(allowed(&mut r, &["XSET.HAS", "k", "a"]));
    assert!(allowed(&mut r, &["XSET.MEMBERS", "k"]));
    assert!(!allowed(&mut r, &["XSET.ADD", "k", "b", "10"]));
    let mut w = as_user(&s, "no-writes");
    assert!(!allowed(&mut w, &["XSET.ADD", "k", "b", "10"]));
    assert!(!allowed(
        &mut w,
        &["XSET.ADDEX", "k", "MEMBERS", "1", "b", "10"]
    ));
    assert!(allowed(&mut w, &["XSET.CARD", "k"]));
    if support.own_category {
        let rule = ["ACL", "SETUSER", "mod", "on", ">pw", "~*", "+@xset"];
        assert_eq!(q::<String>(&mut c, &rule.map(str::as_bytes)), "OK");
        let mut m = as_user(&s, "mod");
        assert!(allowed(&mut m, &["XSET.ADD", "k", "b", "10"]));
        assert!(allowed(&mut m, &["XSET.SCAN", "k", "0"]));
        assert!(!allowed(&mut m, &["GET", "k"]));
    }
}
