//! The grammar of `XSET.ADD` and `XSET.ADDEX`, from an argument vector to a
//! parsed add: it must never panic, and what it accepts must hold together
//! (each member once, deadlines in range, options consistent) and parse
//! again to the same add once written out in canonical form (`XSET.ADDEX
//! key [NX|XX] [GT|LT] PXAT [MAXLEN n] [CAP n] MEMBERS n member deadline
//! ...`), as a replica reads what the primary propagates.
//!
//! The module's own files are compiled here unchanged (`#[path]`), beside a
//! stand-in for the server's argument strings.
//!
//! Input: one byte choosing the command and the server's role, then the
//! arguments after the key, separated by NUL bytes.

#![no_main]
#![allow(dead_code)]

use libfuzzer_sys::fuzz_target;
use xset_core::{Compare, MAX_DEADLINE_MS, Presence};

/// Stand-in for the server's argument strings.
mod ffi {
    pub mod key {
        pub struct CmdArg(pub Vec<u8>);

        impl CmdArg {
            pub fn as_slice(&self) -> &[u8] {
                &self.0
            }
        }
    }
}

#[path = "../../src/errors.rs"]
mod errors;
#[path = "../../src/commands/grammar.rs"]
mod grammar;
#[path = "../../src/commands/parse.rs"]
mod parse;

use ffi::key::CmdArg;
use grammar::AddRequest;

const NOW_MS: u64 = 1_800_000_000_000;

fn args(words: &[&[u8]]) -> Vec<CmdArg> {
    words.iter().map(|w| CmdArg(w.to_vec())).collect()
}

/// What an add does, with its members as bytes.
#[derive(Debug, PartialEq)]
struct Parsed {
    presence: Presence,
    compare: Compare,
    max_len: Option<usize>,
    cap: Option<usize>,
    pairs: Vec<(Vec<u8>, u64)>,
}

fn parsed(req: &AddRequest) -> Parsed {
    Parsed {
        presence: req.presence,
        compare: req.compare,
        max_len: req.max_len,
        cap: req.cap,
        pairs: req.pairs.iter().map(|(m, d)| (m.0.clone(), *d)).collect(),
    }
}

fn check(req: &AddRequest) {
    assert!(!req.pairs.is_empty(), "an add names a member");
    assert!(req.given >= req.pairs.len());
    let mut seen = std::collections::HashSet::new();
    for (m, d) in &req.pairs {
        assert!(seen.insert(m.0.clone()), "each member once");
        assert!(*d <= MAX_DEADLINE_MS, "deadline in range");
    }
    assert!(!(req.presence == Presence::OnlyNew && req.compare != Compare::Any));
    assert!(req.max_len.is_none_or(|n| n > 0) && req.cap.is_none_or(|n| n > 0));
    if req.codes {
        assert_eq!(req.origin.len(), req.pairs.len());
        assert!(req.origin.windows(2).all(|w| w[0] < w[1]));
        assert!(req.origin.iter().all(|&i| i < req.given));
    }
}

/// The add written out as a primary propagates it (with `MAXLEN` and `CAP`
/// kept, which propagation applies instead).
fn canonical(p: &Parsed) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vec![b"XSET.ADDEX".to_vec(), b"key".to_vec()];
    match p.presence {
        Presence::Any => {}
        Presence::OnlyNew => out.push(b"NX".to_vec()),
        Presence::OnlyExisting => out.push(b"XX".to_vec()),
    }
    match p.compare {
        Compare::Any => {}
        Compare::Greater => out.push(b"GT".to_vec()),
        Compare::Less => out.push(b"LT".to_vec()),
    }
    out.push(b"PXAT".to_vec());
    for (word, n) in [(&b"MAXLEN"[..], p.max_len), (b"CAP", p.cap)] {
        if let Some(n) = n {
            out.push(word.to_vec());
            out.push(n.to_string().into_bytes());
        }
    }
    out.push(b"MEMBERS".to_vec());
    out.push(p.pairs.len().to_string().into_bytes());
    for (m, d) in &p.pairs {
        out.push(m.clone());
        out.push(d.to_string().into_bytes());
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let addex = mode & 1 == 1;
    let primary = mode & 2 == 2;
    let mut words: Vec<&[u8]> = vec![if addex { b"XSET.ADDEX" } else { b"XSET.ADD" }, b"key"];
    if !rest.is_empty() {
        words.extend(rest.split(|&b| b == 0));
    }
    let argv = args(&words);
    let result = if addex {
        grammar::parse_addex(&argv, 2, NOW_MS)
    } else {
        grammar::parse_add(&argv, primary, NOW_MS)
    };
    let Ok(req) = result else {
        return;
    };
    check(&req);
    let first = parsed(&req);
    // A deadline not after now is a removal, which a primary propagates as
    // XSET.REM, never as an add: the canonical form holds only the rest.
    if first.pairs.iter().any(|&(_, d)| d <= NOW_MS) {
        return;
    }
    let again_words = canonical(&first);
    let again_refs: Vec<&[u8]> = again_words.iter().map(Vec::as_slice).collect();
    let again_argv = args(&again_refs);
    let again = grammar::parse_addex(&again_argv, 2, NOW_MS)
        .unwrap_or_else(|e| panic!("canonical form refused: {e:?}"));
    check(&again);
    assert_eq!(parsed(&again), first);
});
