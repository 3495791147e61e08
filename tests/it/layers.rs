//! The house rules of `src/` that a reader can check by grep, checked here,
//! no server needed:
//! - every import between the crate's top-level modules is an edge of
//!   [`ALLOWED`], the layering drawn in `src/lib.rs`;
//! - the file-level import graph has no cycle (no file imports one that
//!   imports it back, directly or through others);
//! - `unsafe` appears only under `src/ffi/`.
//!
//! Imports are read from `use` declarations, grouped and nested ones
//! included (`use crate::{a, b::{c, d}}`, `use super::*`, `self`, `as`),
//! and from paths written inline (`crate::a::f()`, `super::b::T`, or a
//! child module's name, `ffi::server::f()`). The pure core is another crate
//! (`core/`): the crate boundary keeps it from seeing this one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which top-level modules each top-level module imports: exactly these
/// (an edge no file uses any more must go too, so the table stays the
/// drawing of what is). `lib.rs`, the crate root, may import any. Every
/// module may use the core crate.
const ALLOWED: &[(&str, &[&str])] = &[
    (
        "hooks",
        &[
            "commands", "expiry", "keyspace", "tracking", "clock", "stats", "errors", "ffi",
        ],
    ),
    (
        "commands",
        &["keyspace", "clock", "config", "errors", "faults", "ffi"],
    ),
    (
        "expiry",
        &["keyspace", "tracking", "clock", "config", "stats", "ffi"],
    ),
    (
        "keyspace",
        &[
            "datatype", "tracking", "clock", "config", "stats", "errors", "faults", "ffi",
        ],
    ),
    (
        "datatype",
        &["tracking", "config", "stats", "faults", "ffi"],
    ),
    ("tracking", &[]),
    ("clock", &["ffi"]),
    ("config", &[]),
    ("stats", &[]),
    ("errors", &[]),
    ("faults", &[]),
    ("ffi", &[]),
];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The file that holds the longest prefix of module path `path`.
fn file_of(path: &[String], files: &BTreeMap<Vec<String>, PathBuf>) -> Option<Vec<String>> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| files.contains_key(prefix))
}

/// Code without comments, string literals' insides, or the trailing
/// `#[cfg(test)] mod tests` (whose `super` is the file itself).
fn code(text: &str) -> String {
    let body = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    // Character literals that would open or close a string.
    let body = body.replace("'\"'", "' '").replace("'\\\"'", "' '");
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '"' => {
                out.push('"');
                let mut escaped = false;
                for c in chars.by_ref() {
                    if !escaped && c == '"' {
                        break;
                    }
                    escaped = !escaped && c == '\\';
                }
                out.push('"');
            }
            c => out.push(c),
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The tokens of a `use` tree: identifiers, `::`, `{`, `}`, `,`, `*`.
fn tokens(tree: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = tree.chars().peekable();
    while let Some(&c) = chars.peek() {
        if is_ident(c) {
            let mut word = String::new();
            while let Some(&c) = chars.peek().filter(|&&c| is_ident(c)) {
                word.push(c);
                chars.next();
            }
            out.push(word);
        } else if c == ':' {
            chars.next();
            if chars.peek() == Some(&':') {
                chars.next();
            }
            out.push("::".to_string());
        } else {
            chars.next();
            if "{},*".contains(c) {
                out.push(c.to_string());
            }
        }
    }
    out
}

/// Expands one `use` tree into the paths it names: `a::{b, c::{d, self}}`
/// gives `a::b`, `a::c::d` and `a::c`; a glob names its module.
fn expand(tokens: &[String], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    while *at < tokens.len() {
        match tokens[*at].as_str() {
            "::" => *at += 1,
            "{" => {
                *at += 1;
                while *at < tokens.len() && tokens[*at] != "}" {
                    expand(tokens, at, &path, out);
                    if *at < tokens.len() && tokens[*at] == "," {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            "*" => {
                *at += 1;
                out.push(path);
                return;
            }
            "," | "}" => break,
            "as" => {
                // `as name`: the name is local, the path is what counts.
                *at += 2;
                break;
            }
            "self" if !path.is_empty() => *at += 1,
            word => {
                path.push(word.to_string());
                *at += 1;
            }
        }
    }
    out.push(path);
}

/// Every path named by a `use` declaration in `code`, grouped imports
/// expanded, as written (before resolving `crate`, `super` and `self`).
fn use_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("use ") {
        let at = from + i;
        from = at + 4;
        if at > 0 && is_ident(code[..at].chars().next_back().unwrap_or(' ')) {
            continue;
        }
        let Some(end) = code[from..].find(';') else {
            break;
        };
        let toks = tokens(&code[from..from + end]);
        let mut pos = 0;
        while pos < toks.len() {
            expand(&toks, &mut pos, &[], &mut out);
            pos += 1;
        }
        from += end;
    }
    out
}

/// Paths written inline, outside `use`: those that start with `crate::`,
/// `super::` or one of `roots` (the file's child modules) followed by `::`,
/// not themselves after a `::`.
fn inline_paths(code: &str, roots: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) || (i > 0 && is_ident(chars[i - 1])) {
            i += 1;
            continue;
        }
        let after_colons = i >= 2 && chars[i - 1] == ':' && chars[i - 2] == ':';
        let mut j = i;
        let mut path = Vec::new();
        loop {
            let start = j;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            path.push(chars[start..j].iter().collect::<String>());
            if j + 2 < chars.len()
                && chars[j] == ':'
                && chars[j + 1] == ':'
                && is_ident(chars[j + 2])
            {
                j += 2;
            } else {
                break;
            }
        }
        let first = path[0].as_str();
        if !after_colons
            && path.len() > 1
            && (first == "crate" || first == "super" || roots.contains(first))
        {
            out.push(path);
        }
        i = j.max(i + 1);
    }
    out
}

/// `path` as written in module `module` made absolute within the crate, or
/// `None` for a path into another crate.
fn resolve(path: &[String], module: &[String], children: &BTreeSet<String>) -> Option<Vec<String>> {
    let mut base: Vec<String>;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &path[1..];
        }
        Some("super") | Some("self") => {
            base = module.to_vec();
            while let Some(word) = rest.first().map(String::as_str) {
                match word {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        Some(first) if children.contains(first) => base = module.to_vec(),
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Each module's file.
type Files = BTreeMap<Vec<String>, PathBuf>;
/// Each module's imports (the modules of the files it imports).
type Edges = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

/// The module-level import graph of `src/`: for each file's module, the
/// modules (files) it imports.
fn graph() -> (Files, Edges) {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let files: Files = paths.iter().map(|p| (module_of(p), p.clone())).collect();
    let mut edges = Edges::new();
    for (module, file) in &files {
        let children: BTreeSet<String> = files
            .keys()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
            .map(|m| m[module.len()].clone())
            .collect();
        let code = code(&std::fs::read_to_string(file).expect("read source"));
        let targets = edges.entry(module.clone()).or_default();
        let written = use_paths(&code)
            .into_iter()
            .chain(inline_paths(&code, &children));
        for path in written {
            if let Some(abs) = resolve(&path, module, &children)
                && let Some(target) = file_of(&abs, &files)
                && &target != module
                && !target.is_empty()
            {
                targets.insert(target);
            }
        }
    }
    (files, edges)
}

#[test]
fn grouped_and_nested_imports_are_read() {
    let code = "use crate::{a, b::{c, d::{self, e}}};\nuse super::*;\npub use self::f as g;\nfn x() { crate::h::i(); j::k(); }";
    let uses = use_paths(code);
    let words = |s: &str| -> Vec<String> { s.split("::").map(str::to_string).collect() };
    for want in [
        "crate::a",
        "crate::b::c",
        "crate::b::d",
        "crate::b::d::e",
        "super",
        "self::f",
    ] {
        assert!(uses.contains(&words(want)), "{want} in {uses:?}");
    }
    let roots = BTreeSet::from(["j".to_string()]);
    let inline = inline_paths(code, &roots);
    assert!(inline.contains(&words("crate::h::i")), "{inline:?}");
    assert!(inline.contains(&words("j::k")), "{inline:?}");
    let module = words("m::n");
    assert_eq!(
        resolve(&words("super::p"), &module, &roots),
        Some(words("m::p"))
    );
    assert_eq!(
        resolve(&words("j::k"), &module, &roots),
        Some(words("m::n::j::k"))
    );
    assert_eq!(resolve(&words("std::mem"), &module, &roots), None);
}

#[test]
fn imports_between_top_level_modules_follow_the_table() {
    let (files, edges) = graph();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    for top in files.keys().filter(|m| m.len() == 1) {
        assert!(
            allowed.contains_key(top[0].as_str()),
            "src/{}: a top-level module missing from ALLOWED",
            top[0]
        );
    }
    let mut wrong = Vec::new();
    for (from, tos) in &edges {
        let Some(from_top) = from.first() else {
            continue; // lib.rs registers everything
        };
        for to in tos {
            if to[0] != *from_top && !allowed[from_top.as_str()].contains(&to[0].as_str()) {
                wrong.push(format!(
                    "{} imports {}",
                    files[from].display(),
                    files[to].display()
                ));
            }
        }
    }
    let used: BTreeSet<(&str, &str)> = edges
        .iter()
        .filter(|(from, _)| !from.is_empty())
        .flat_map(|(from, tos)| tos.iter().map(move |to| (from[0].as_str(), to[0].as_str())))
        .collect();
    for &(from, tos) in ALLOWED {
        for &to in tos {
            if !used.contains(&(from, to)) {
                wrong.push(format!(
                    "ALLOWED lists {from} -> {to}, which no file imports"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "edges outside ALLOWED:\n{}",
        wrong.join("\n")
    );
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 40,
        "graph too small to trust"
    );
}

#[test]
fn the_import_graph_has_no_cycle() {
    let (files, edges) = graph();
    let name = |m: &Vec<String>| files[m].display().to_string();
    // Depth-first search for a cycle.
    fn visit(
        m: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let i = stack.iter().position(|s| s == m).unwrap_or(0);
                let mut cycle = stack[i..].to_vec();
                cycle.push(m.clone());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(m.clone(), 1);
        stack.push(m.clone());
        for to in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(to, edges, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(m.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in files.keys() {
        if let Some(cycle) = visit(m, &edges, &mut state, &mut Vec::new()) {
            let shown: Vec<String> = cycle.iter().map(name).collect();
            panic!("import cycle: {}", shown.join(" -> "));
        }
    }
}

#[test]
fn unsafe_only_in_ffi() {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    for p in paths {
        if p.starts_with(src().join("ffi")) {
            continue;
        }
        let text = code(&std::fs::read_to_string(&p).expect("read source"));
        let has_unsafe = text.split(|c: char| !is_ident(c)).any(|w| w == "unsafe");
        assert!(!has_unsafe, "{} uses unsafe", p.display());
    }
}
