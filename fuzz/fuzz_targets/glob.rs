//! The glob matcher of `XSET.SCAN ... MATCH` against a reference: a line
//! by line port of Redis's recursive `stringmatchlen` (`src/util.c`, 7.0
//! and later, case-sensitive), which reads its NUL-terminated buffers past
//! their length where the C does.
//!
//! Input: one byte splitting the rest into pattern and subject.

#![no_main]

use libfuzzer_sys::fuzz_target;
use xset_core::glob_match;

/// `stringmatchlen_impl`, with `nesting` and `skip_longer` as in Redis.
fn reference(p: &[u8], s: &[u8], skip_longer: &mut bool, nesting: usize) -> bool {
    // The C strings end in a NUL the loops may read.
    let pat = |i: usize| p.get(i).copied().unwrap_or(0);
    if nesting > 1000 {
        return false;
    }
    let (mut pi, mut plen) = (0usize, p.len() as isize);
    let (mut si, mut slen) = (0usize, s.len() as isize);
    while plen > 0 && slen > 0 {
        match pat(pi) {
            b'*' => {
                while plen > 0 && pat(pi + 1) == b'*' {
                    pi += 1;
                    plen -= 1;
                }
                if plen == 1 {
                    return true;
                }
                while slen > 0 {
                    if reference(&p[pi + 1..], &s[si..], skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    si += 1;
                    slen -= 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => {
                si += 1;
                slen -= 1;
            }
            b'[' => {
                pi += 1;
                plen -= 1;
                let not = pat(pi) == b'^';
                if not {
                    pi += 1;
                    plen -= 1;
                }
                let mut matched = false;
                loop {
                    if pat(pi) == b'\\' && plen >= 2 {
                        pi += 1;
                        plen -= 1;
                        if pat(pi) == s[si] {
                            matched = true;
                        }
                    } else if pat(pi) == b']' {
                        break;
                    } else if plen == 0 {
                        pi -= 1;
                        plen += 1;
                        break;
                    } else if plen >= 3 && pat(pi + 1) == b'-' {
                        // C's `char` is signed on x86.
                        let (mut start, mut end) = (pat(pi) as i8, pat(pi + 2) as i8);
                        let c = s[si] as i8;
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        pi += 2;
                        plen -= 2;
                        if c >= start && c <= end {
                            matched = true;
                        }
                    } else if pat(pi) == s[si] {
                        matched = true;
                    }
                    pi += 1;
                    plen -= 1;
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                si += 1;
                slen -= 1;
            }
            c => {
                let c = if c == b'\\' && plen >= 2 {
                    pi += 1;
                    plen -= 1;
                    pat(pi)
                } else {
                    c
                };
                if c != s[si] {
                    return false;
                }
                si += 1;
                slen -= 1;
            }
        }
        pi += 1;
        plen -= 1;
        if slen == 0 {
            while pat(pi) == b'*' {
                pi += 1;
                plen -= 1;
            }
            break;
        }
    }
    plen == 0 && slen == 0
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let at = usize::from(split).min(rest.len());
    let (pattern, subject) = rest.split_at(at);
    // SCAN skips matching for exactly `*`: the empty subject matches it.
    let want = pattern == b"*" || reference(pattern, subject, &mut false, 0);
    assert_eq!(
        glob_match(pattern, subject),
        want,
        "pattern {:?} subject {:?}",
        pattern.escape_ascii().to_string(),
        subject.escape_ascii().to_string()
    );
});
