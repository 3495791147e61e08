//! One version: `Cargo.toml`'s is what `MODULE LIST` reports (major·10000 +
//! minor·100 + patch), `CHANGELOG.md` has a section for it, and every
//! command's `since` in `COMMAND DOCS` is a release the changelog lists.

use crate::harness::*;
use redis::Value;

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

/// The value after `key` in a flat RESP2 map (`[k, v, k, v, ...]`).
fn field<'a>(items: &'a [Value], key: &str) -> Option<&'a Value> {
    items
        .chunks(2)
        .find(|kv| text(&kv[0]).as_deref() == Some(key))
        .and_then(|kv| kv.get(1))
}

fn changelog_releases() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("CHANGELOG.md");
    let log = std::fs::read_to_string(path).expect("CHANGELOG.md");
    let sections: Vec<String> = log
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect();
    // Work merged since the last release waits in an "Unreleased" section
    // at the top; the releases are the sections after it.
    assert!(
        !sections.iter().skip(1).any(|s| s == "Unreleased"),
        "only the newest section of CHANGELOG.md may be Unreleased"
    );
    sections.into_iter().filter(|s| s != "Unreleased").collect()
}

#[test]
fn module_list_cargo_and_changelog_agree() {
    let want: i64 = env!("CARGO_PKG_VERSION")
        .split('.')
        .map(|p| p.parse::<i64>().expect("a numeric version field"))
        .fold(0, |n, p| n * 100 + p);
    let s = Server::start(&[]);
    let mut c = s.conn();
    let Value::Array(modules) = q::<Value>(&mut c, c!["MODULE", "LIST"]) else {
        panic!("MODULE LIST is not an array");
    };
    let ver = modules
        .iter()
        .filter_map(|m| match m {
            Value::Array(items) => Some(items),
            _ => None,
        })
        .find(|items| field(items, "name").and_then(text).as_deref() == Some("xset"))
        .and_then(|items| field(items, "ver").cloned());
    assert_eq!(ver, Some(Value::Int(want)), "MODULE LIST's ver of xset");
    let releases = changelog_releases();
    assert_eq!(
        releases.first().map(String::as_str),
        Some(env!("CARGO_PKG_VERSION")),
        "CHANGELOG.md's newest section is Cargo.toml's version"
    );
}

#[test]
fn every_since_is_a_release() {
    let releases = changelog_releases();
    let s = Server::start(&[]);
    let mut c = s.conn();
    let Value::Array(docs) = q::<Value>(&mut c, c!["COMMAND", "DOCS"]) else {
        panic!("COMMAND DOCS is not an array");
    };
    let mut seen = 0;
    for kv in docs.chunks(2) {
        let name = text(&kv[0]).unwrap_or_default();
        if !name.starts_with("xset.") {
            continue;
        }
        let Some(Value::Array(doc)) = kv.get(1) else {
            panic!("{name}: no docs");
        };
        let since = field(doc, "since").and_then(text);
        assert!(
            since.as_ref().is_some_and(|v| releases.contains(v)),
            "{name}: since {since:?} is not a release of CHANGELOG.md ({releases:?})"
        );
        seen += 1;
    }
    assert!(seen > 20, "only {seen} xset commands documented");
}
