//! The command pages of `docs/commands/`, rendered from [`TABLE`]: one page
//! per command, whose syntax, summary, complexity, version, ACL
//! categories, flags, arity, key specs and argument tree are the table's,
//! followed by the hand-written part of the page (its reply, errors and
//! examples) kept in `docs/commands/parts/<name>.md`. A page on disk that
//! differs from [`page`] fails `pages_match_the_table` (below), which
//! rewrites them all when `XSET_BLESS=1` is set.
//!
//! [`TABLE`]: super::TABLE

use super::CommandSpec;
use crate::ffi::command::{Arg, ArgKind, KeyAccess, KeySpec};
use std::fmt::Write;

/// Where a page lives, relative to the repository root.
pub fn page_path(spec: &CommandSpec) -> String {
    format!("docs/commands/{}.md", spec.name)
}

/// Where a page's hand-written part lives, relative to the repository root.
pub fn part_path(spec: &CommandSpec) -> String {
    format!("docs/commands/parts/{}.md", spec.name)
}

/// The page of `spec`: the table's part, then `hand_written` (its reply,
/// errors and examples) as it is.
pub fn page(spec: &CommandSpec, hand_written: &str) -> String {
    let mut out = String::new();
    let name = spec.name.to_ascii_uppercase();
    let _ = writeln!(
        out,
        "<!-- Generated from the command table (src/commands/mod.rs) and {}\n     \
         by src/commands/docs.rs: edit those, then run\n     \
         XSET_BLESS=1 cargo test --release --features fault-injection --lib pages -->\n",
        part_path(spec)
    );
    let _ = writeln!(out, "# {name}\n");
    let _ = writeln!(out, "{}.\n", spec.summary);
    let _ = writeln!(out, "```\n{}\n```\n", syntax(spec));
    let _ = writeln!(out, "| | |\n|---|---|");
    let _ = writeln!(out, "| Available since | {} |", spec.since);
    let _ = writeln!(out, "| Time complexity | {} |", spec.complexity);
    let _ = writeln!(out, "| ACL categories | {} |", acl(spec));
    let _ = writeln!(out, "| Flags | {} |", words(spec.flags));
    let _ = writeln!(out, "| Arity | {} |", arity(spec.arity));
    let _ = writeln!(out, "| Keys | {} |\n", keys(spec));
    let _ = writeln!(out, "## Arguments\n");
    for a in spec.args {
        argument(&mut out, a, 0);
    }
    out.push('\n');
    out.push_str(hand_written.trim_end());
    out.push('\n');
    out
}

/// Where the index of the pages lives, relative to the repository root.
pub const INDEX_PATH: &str = "docs/commands/README.md";

/// The index of the pages: every command of `specs` with its syntax,
/// summary, complexity and ACL categories, linked to its page.
pub fn index(specs: &[CommandSpec]) -> String {
    let mut out = String::from(
        "<!-- Generated from the command table (src/commands/mod.rs) by\n     \
         src/commands/docs.rs: edit the table, then run\n     \
         XSET_BLESS=1 cargo test --release --features fault-injection --lib pages -->\n\n\
         # xset commands\n\n\
         One page per command, each generated from the command table that also\n\
         registers the command with the server, so `COMMAND DOCS` says the same.\n\
         Every example on every page runs in `tests/it/readme.rs`.\n\n\
         Notation, as in Redis's docs: `[x]` optional, `<a|b>` exactly one of them,\n\
         `x [x ...]` one or more. In complexities n is the set's size and k the\n\
         number of members named. On a primary, any command that finds due members\n\
         in its key first reclaims up to 1024 of them, O(log n) each. ACL\n\
         categories apply on servers that give module commands categories (Redis\n\
         7.2 and later, Valkey 8 and later), which also add `@xset` where a module\n\
         may add a category of its own.\n\n\
         | Command | Summary | Complexity | ACL categories |\n|---|---|---|---|\n",
    );
    for spec in specs {
        let _ = writeln!(
            out,
            "| [`{}`]({}.md) | {} | {} | {} |",
            syntax(spec).replace('|', "\\|"),
            spec.name,
            spec.summary,
            spec.complexity,
            spec.acl
                .split(' ')
                .map(|c| format!("@{c}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    out
}

fn words(list: &str) -> String {
    list.split(' ')
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn acl(spec: &CommandSpec) -> String {
    let own: String = spec.acl.split(' ').map(|c| format!("`@{c}` ")).collect();
    format!("{own}and `@xset` (on servers that let a module add categories: 7.2 and later)")
}

fn arity(arity: i32) -> String {
    let n = arity.unsigned_abs();
    if arity > 0 {
        format!("{arity}: exactly {n} words, the name included")
    } else {
        format!("{arity}: at least {n} words, the name included")
    }
}

/// What a command does with a key, in words, and the key spec's flags.
fn access(a: KeyAccess) -> &'static str {
    match a {
        KeyAccess::Read => "read, and its members returned (`RO ACCESS`)",
        KeyAccess::Probe => "read, but none of its members returned (`RO`)",
        KeyAccess::Update => "read and changed; created or deleted as needed (`RW UPDATE`)",
        KeyAccess::Remove => {
            "members removed without being returned; deleted when emptied (`RW DELETE`)"
        }
        KeyAccess::Take => {
            "members removed and returned; deleted when emptied (`RW ACCESS DELETE`)"
        }
        KeyAccess::Overwrite => "replaced without being read (`OW UPDATE`)",
    }
}

fn keys(spec: &CommandSpec) -> String {
    if spec.keys.is_empty() {
        return "none".into();
    }
    spec.keys
        .iter()
        .map(|k| match *k {
            KeySpec::At { pos, access: a } => format!("argument {pos}: {}", access(a)),
            KeySpec::Counted { pos, access: a } => format!(
                "the `numkeys` keys after argument {pos} (which counts them): {}",
                access(a)
            ),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// One argument of the tree as a list item, its sub-arguments nested.
fn argument(out: &mut String, a: &Arg, depth: usize) {
    let kind = match a.kind {
        ArgKind::Key(_) => "a key".to_string(),
        ArgKind::String => "a string (any bytes)".into(),
        ArgKind::Integer => "an integer".into(),
        ArgKind::Pattern => "a glob-style pattern".into(),
        ArgKind::UnixTime => "a Unix time".into(),
        ArgKind::PureToken => format!("the word `{}`", a.token.unwrap_or(a.name)),
        ArgKind::OneOf(_) => "one of".into(),
        ArgKind::Block(_) => "in this order".into(),
    };
    let mut notes = vec![kind];
    if let (Some(token), false) = (a.token, matches!(a.kind, ArgKind::PureToken)) {
        notes.push(format!("after the word `{token}`"));
    }
    if a.optional {
        notes.push("optional".into());
    }
    if a.multiple {
        notes.push("repeatable".into());
    }
    let _ = writeln!(
        out,
        "{}- `{}`: {}",
        "  ".repeat(depth),
        a.name,
        notes.join(", ")
    );
    if let ArgKind::OneOf(sub) | ArgKind::Block(sub) = a.kind {
        for s in sub {
            argument(out, s, depth + 1);
        }
    }
}

/// The command's syntax line as the README's reference shows it: its name
/// in upper case, then its arguments (`[...]` optional, `<a|b>` one of,
/// `x [x ...]` repeatable). For the pages of `docs/commands/`, which the
/// docs tests write and check.
pub fn syntax(spec: &CommandSpec) -> String {
    let mut out = spec.name.to_ascii_uppercase();
    for a in spec.args {
        out.push(' ');
        out.push_str(&render(a));
    }
    out
}

fn render(a: &Arg) -> String {
    use crate::ffi::command::ArgKind;
    let mut s = match a.kind {
        ArgKind::PureToken => a.token.unwrap_or(a.name).to_string(),
        ArgKind::OneOf(sub) => sub.iter().map(render).collect::<Vec<_>>().join("|"),
        ArgKind::Block(sub) => sub.iter().map(render).collect::<Vec<_>>().join(" "),
        _ => a.name.to_string(),
    };
    if let (Some(token), false) = (a.token, matches!(a.kind, ArgKind::PureToken)) {
        s = format!("{token} {s}");
    }
    if a.multiple {
        s = format!("{s} [{s} ...]");
    }
    if a.optional {
        format!("[{s}]")
    } else if matches!(a.kind, ArgKind::OneOf(_)) {
        format!("<{s}>")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::TABLE;
    use super::*;
    use std::path::Path;

    /// Every command has a page, every page is what the table and its
    /// hand-written part render, and no page is left for a command the
    /// table no longer has. `XSET_BLESS=1` rewrites the pages instead.
    #[test]
    fn pages_match_the_table() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let bless = std::env::var_os("XSET_BLESS").is_some_and(|v| v == "1");
        let mut stale = Vec::new();
        for spec in TABLE {
            let part = std::fs::read_to_string(root.join(part_path(spec)))
                .unwrap_or_else(|e| panic!("{}: {e}", part_path(spec)));
            for section in ["## Reply", "## Errors", "## Examples"] {
                assert!(
                    part.lines().any(|l| l == section),
                    "{} lacks {section}",
                    part_path(spec)
                );
            }
            let want = page(spec, &part);
            let path = root.join(page_path(spec));
            if bless {
                std::fs::write(&path, &want).expect("write a page");
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(&want) {
                stale.push(page_path(spec));
            }
        }
        let index_path = root.join(INDEX_PATH);
        let want = index(TABLE);
        if bless {
            std::fs::write(&index_path, &want).expect("write the index");
        } else if std::fs::read_to_string(&index_path).ok().as_deref() != Some(&want) {
            stale.push(INDEX_PATH.to_string());
        }
        assert!(
            stale.is_empty(),
            "pages differ from the table (run with XSET_BLESS=1 and review): {stale:?}"
        );
        for dir in ["docs/commands", "docs/commands/parts"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("docs/commands") {
                let name = entry.expect("entry").file_name();
                let name = name.to_string_lossy();
                let Some(cmd) = name.strip_suffix(".md") else {
                    continue;
                };
                if dir == "docs/commands" && cmd == "README" {
                    continue;
                }
                assert!(
                    TABLE.iter().any(|s| s.name == cmd),
                    "{dir}/{name} names no command"
                );
            }
        }
    }

    #[test]
    fn a_page_renders_the_argument_tree() {
        let spec = TABLE.iter().find(|s| s.name == "xset.ttl").expect("ttl");
        let p = page(spec, "## Reply\n");
        assert!(p.contains("XSET.TTL key <member|MEMBERS count member [member ...]>"));
        assert!(p.contains("- `target`: one of\n  - `member`: a string (any bytes)\n"));
        assert!(p.contains("    - `count`: an integer, after the word `MEMBERS`\n"));
        assert!(p.contains("| Keys | argument 1: read, and its members returned (`RO ACCESS`) |"));
        assert!(p.ends_with("## Reply\n"));
    }

    #[test]
    fn syntax_renders_every_shape() {
        let by_name = |n: &str| TABLE.iter().find(|c| c.name == n).map(syntax);
        assert_eq!(
            by_name("xset.add").as_deref(),
            Some("XSET.ADD key member ttl [member ttl ...]")
        );
        assert_eq!(
            by_name("xset.ttl").as_deref(),
            Some("XSET.TTL key <member|MEMBERS count member [member ...]>")
        );
        assert_eq!(
            by_name("xset.members").as_deref(),
            Some("XSET.MEMBERS key [BYDEADLINE min max] [REV] [LIMIT offset count] [WITHTTL]")
        );
        assert_eq!(
            by_name("xset.count").as_deref(),
            Some("XSET.COUNT key min max")
        );
        assert_eq!(
            by_name("xset.scan").as_deref(),
            Some("XSET.SCAN key cursor [MATCH pattern] [COUNT count] [WITHTTL]")
        );
        assert_eq!(
            by_name("xset.randmember").as_deref(),
            Some("XSET.RANDMEMBER key [count [WITHTTL]]")
        );
        assert_eq!(
            by_name("xset.pop").as_deref(),
            Some("XSET.POP key [count] [SOONEST]")
        );
    }
}
