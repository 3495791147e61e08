//! Glob matching for `XSET.SCAN ... MATCH`, giving the answers of Redis's
//! `SSCAN ... MATCH` (its `stringmatchlen` in `src/util.c`, case-sensitive,
//! as in Redis 7.0 to 8.2 and Valkey 8.0 to 9.1) for every pattern and
//! subject, on raw bytes:
//!
//! - `*` matches any run of bytes, `?` any one byte, `\x` the byte `x`; a
//!   trailing `\` matches a backslash.
//! - `[...]` matches one byte: `[^...]` negates, `\x` inside is the byte
//!   `x`, `a-z` is a range (either way round) compared as *signed* bytes, as
//!   C's `char` on x86, so `[a-\x80]` holds `\x80..=\xff` and `\0..=a`. A
//!   `-` takes the byte after it as the range's end even when that is `]`:
//!   `[a-]` is the range `]`..=`a`, and the class, with no `]` left, runs
//!   to the end of the pattern. `[]` is the empty class (matches nothing,
//!   `[^]` any byte) and an unclosed `[` runs to the end of the pattern.
//! - The empty subject matches only the empty pattern, and `*` (SCAN skips
//!   matching for exactly `*`); `**` does not match it.
//! - Redis gives up (no match) when its recursion would pass the 1001st
//!   group of `*` that is not the pattern's last element while bytes of the
//!   subject remain; so does this.
//!
//! Matching backtracks only to the last `*`, which gives the same answers
//! as Redis's recursion (each other element matches exactly one byte), in
//! O(pattern × subject) at worst, never exponentially.

/// The deepest `*` nesting Redis's `stringmatchlen` recurses to: reaching a
/// further non-final group of `*` with subject left fails the whole match.
const MAX_STAR_GROUPS: usize = 1000;

/// Whether `subject` matches the glob `pattern`, as `SSCAN ... MATCH`.
pub fn glob_match(pattern: &[u8], subject: &[u8]) -> bool {
    if pattern == b"*" {
        return true;
    }
    if subject.is_empty() {
        return pattern.is_empty();
    }
    let (mut p, mut s) = (0, 0);
    // The pattern index after the last group of `*`, and the subject index
    // the rest of the pattern is being tried at.
    let mut star: Option<(usize, usize)> = None;
    let mut star_groups = 0usize;
    while s < subject.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            while p < pattern.len() && pattern[p] == b'*' {
                p += 1;
            }
            if p == pattern.len() {
                return true;
            }
            star_groups += 1;
            if star_groups > MAX_STAR_GROUPS {
                return false;
            }
            star = Some((p, s));
            continue;
        }
        if p < pattern.len()
            && let Some(next_p) = match_one(pattern, p, subject[s])
        {
            p = next_p;
            s += 1;
            continue;
        }
        match star {
            Some((sp, ss)) => {
                p = sp;
                s = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches the one-byte pattern element at `p` (not `*`) against byte `c`;
/// returns the index after the element on success.
fn match_one(pattern: &[u8], p: usize, c: u8) -> Option<usize> {
    match pattern[p] {
        b'?' => Some(p + 1),
        b'\\' if p + 1 < pattern.len() => (pattern[p + 1] == c).then_some(p + 2),
        b'[' => match_class(pattern, p + 1, c),
        other => (other == c).then_some(p + 1),
    }
}

/// Matches a `[...]` class whose body starts at `p` against byte `c`;
/// returns the index after the class (after its `]`, or the pattern's end).
fn match_class(pattern: &[u8], mut p: usize, c: u8) -> Option<usize> {
    let len = pattern.len();
    let negate = pattern.get(p) == Some(&b'^');
    if negate {
        p += 1;
    }
    let mut matched = false;
    loop {
        if p + 1 < len && pattern[p] == b'\\' {
            matched |= pattern[p + 1] == c;
            p += 2;
        } else if p == len {
            break;
        } else if pattern[p] == b']' {
            p += 1;
            break;
        } else if p + 2 < len && pattern[p + 1] == b'-' {
            // Signed, as C's `char`; the end may be `]` or `\`, taken as is.
            let (a, b) = (pattern[p] as i8, pattern[p + 2] as i8);
            matched |= (a.min(b)..=a.max(b)).contains(&(c as i8));
            p += 3;
        } else {
            matched |= pattern[p] == c;
            p += 1;
        }
    }
    (matched != negate).then_some(p)
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    fn check(cases: &[(&[u8], &[u8], bool)]) {
        for &(p, s, want) in cases {
            assert_eq!(
                glob_match(p, s),
                want,
                "{:?} ~ {:?}",
                p.escape_ascii().to_string(),
                s.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn matches_like_redis() {
        check(&[
            (b"*", b"abc", true),
            (b"a*", b"abc", true),
            (b"a*c", b"abbbc", true),
            (b"a*c", b"abbb", false),
            (b"?", b"", false),
            (b"?b", b"ab", true),
            (b"h[ae]llo", b"hallo", true),
            (b"h[ae]llo", b"hillo", false),
            (b"h[^e]llo", b"hallo", true),
            (b"h[^e]llo", b"hello", false),
            (b"h[a-c]llo", b"hbllo", true),
            (b"h[c-a]llo", b"hbllo", true),
            (b"h\\*llo", b"h*llo", true),
            (b"h\\*llo", b"hello", false),
            (b"*a*a*a*a*a*a*b", b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
            (b"user:*:x", b"user:1:2:x", true),
            (b"a**", b"a", true),
            (b"*a*", b"a", true),
            (b"a*b*", b"ab", true),
            (b"a?*", b"a", false),
        ]);
    }

    #[test]
    fn empty_subject_matches_only_the_empty_pattern_and_a_lone_star() {
        check(&[
            (b"", b"", true),
            (b"*", b"", true),
            (b"**", b"", false),
            (b"***", b"", false),
            (b"[^a]", b"", false),
            (b"\\", b"", false),
            (b"", b"a", false),
            (b"**", b"a", true),
        ]);
    }

    #[test]
    fn a_dash_before_the_closing_bracket_makes_a_range_ending_in_it() {
        // `[a-]` is the range `]`..=`a` and leaves the class unclosed.
        check(&[
            (b"[a-]", b"a", true),
            (b"[a-]", b"]", true),
            (b"[a-]", b"^", true),
            (b"[a-]", b"`", true),
            (b"[a-]", b"-", false),
            (b"[a-]", b"b", false),
            (b"[b-]", b"b", true),
            (b"[b-]", b"a", true),
            (b"[b-]", b"-", false),
            // The class runs to the end: `x]` are class members, not literals.
            (b"[a-]x]", b"x", true),
            (b"[a-]x]", b"]", true),
            (b"[a-]x]", b"ax]", false),
            (b"[a-]x", b"x", true),
            (b"[^a-]", b"-", true),
            (b"[^a-]", b"a", false),
            // A `-` first, last with nothing after, or after a range is a
            // literal.
            (b"[-a]", b"-", true),
            (b"[a-", b"-", true),
            (b"[a-", b"a", true),
            (b"[a-c-]", b"-", true),
            (b"[a-c-e]", b"d", false),
        ]);
    }

    #[test]
    fn ranges_compare_signed_bytes() {
        check(&[
            (b"[\x80-\xff]", b"\x80", true),
            (b"[\x80-\xff]", b"\xff", true),
            (b"[\x80-\xff]", b"\x7f", false),
            // 0x80 is -128: `[a-\x80]` holds -128..=97, all high bytes and
            // 0x00..=`a`, not `b`.
            (b"[a-\x80]", b"\x80", true),
            (b"[a-\x80]", b"\xff", true),
            (b"[a-\x80]", b"\0", true),
            (b"[a-\x80]", b"a", true),
            (b"[a-\x80]", b"b", false),
            (b"[\x80-a]", b"0", true),
            (b"[\x7f-\x80]", b"b", true),
            (b"[\x7f-\x80]", b"\x7f", true),
            (b"[\x00-\x7f]", b"\x80", false),
            (b"[^\x80-a]", b"b", true),
            (b"[^\x80-a]", b"\xff", false),
            (b"[\xff-\x01]", b"\0", true),
            (b"[\xff-\x01]", b"\x02", false),
        ]);
    }

    #[test]
    fn classes_edge_cases() {
        check(&[
            // `[]` is empty: nothing matches; `]` after it is a literal.
            (b"[]", b"]", false),
            (b"[]]", b"]", false),
            (b"[]a]", b"a", false),
            (b"[^]", b"x", true),
            (b"[^]", b"]", true),
            (b"[^]]", b"x]", true),
            // Escapes inside a class.
            (b"[\\]]", b"]", true),
            (b"[\\]]", b"\\", false),
            (b"[\\^a]", b"^", true),
            (b"[\\-]", b"-", true),
            (b"[\\a-c]", b"b", false),
            (b"[\\a-c]", b"-", true),
            // `\` as a range's end is taken as is.
            (b"[a-\\]", b"\\", true),
            (b"[a-\\]", b"_", true),
            (b"[a-\\]", b"b", false),
            // `^` only negates first.
            (b"[a^]", b"^", true),
            (b"[^^]", b"^", false),
            // Unclosed classes run to the end of the pattern.
            (b"[", b"[", false),
            (b"[", b"a", false),
            (b"[^", b"a", true),
            (b"[^", b"", false),
            (b"[ab", b"b", true),
            (b"[ab", b"ab", false),
            (b"[\\", b"\\", true),
            (b"[a\\", b"\\", true),
            (b"[^\\", b"\\", false),
            (b"[*", b"*", true),
            (b"[*", b"ab", false),
            (b"a[", b"a", false),
        ]);
    }

    #[test]
    fn escapes_and_trailing_backslash() {
        check(&[
            (b"\\", b"\\", true),
            (b"\\", b"a", false),
            (b"a\\", b"a\\", true),
            (b"\\\\", b"\\", true),
            (b"\\?", b"?", true),
            (b"\\?", b"a", false),
            (b"\\[a]", b"[a]", true),
            (b"*\\", b"ab\\", true),
            (b"\\a", b"a", true),
            (b"\0", b"\0", true),
            (b"\0*", b"\0ab", true),
        ]);
    }

    #[test]
    fn star_groups_nest_up_to_1000() {
        let subject = vec![b'a'; 1200];
        // The 1001st non-final group of `*` fails; a final one still matches.
        for (groups, want) in [(999, true), (1000, true), (1001, false), (1002, false)] {
            assert_eq!(
                glob_match(&b"*a".repeat(groups), &subject),
                want,
                "{groups}"
            );
        }
        for (groups, want) in [(1000, true), (1001, true), (1002, false)] {
            assert_eq!(
                glob_match(&b"a*".repeat(groups), &subject),
                want,
                "{groups}"
            );
        }
        // A run of `*` counts once.
        assert!(glob_match(&b"**a".repeat(1000), &subject));
        assert!(!glob_match(&b"**a".repeat(1001), &subject));
        assert!(!glob_match(&b"a*".repeat(1200), &subject));
    }

    #[test]
    fn no_exponential_backtracking() {
        let subject = vec![b'a'; 10_000];
        let mut pattern = b"*a".repeat(500);
        pattern.push(b'b');
        assert!(!glob_match(&pattern, &subject));
    }

    /// One byte-consuming pattern element, parsed independently of the
    /// matcher: the bytes it accepts.
    fn elements(pattern: &[u8]) -> Vec<Option<[bool; 256]>> {
        let mut out = Vec::new();
        let mut p = 0;
        while p < pattern.len() {
            let mut set = [false; 256];
            match pattern[p] {
                b'*' => {
                    out.push(None);
                    p += 1;
                    continue;
                }
                b'?' => set = [true; 256],
                b'\\' if p + 1 < pattern.len() => {
                    p += 1;
                    set[pattern[p] as usize] = true;
                }
                b'[' => {
                    p += 1;
                    let negate = pattern.get(p) == Some(&b'^');
                    p += usize::from(negate);
                    while p < pattern.len() && pattern[p] != b']' {
                        if pattern[p] == b'\\' && p + 1 < pattern.len() {
                            set[pattern[p + 1] as usize] = true;
                            p += 2;
                        } else if pattern.get(p + 1) == Some(&b'-') && p + 2 < pattern.len() {
                            let (a, b) = (pattern[p] as i8 as i32, pattern[p + 2] as i8 as i32);
                            for x in a.min(b)..=a.max(b) {
                                set[x as i8 as u8 as usize] = true;
                            }
                            p += 3;
                        } else {
                            set[pattern[p] as usize] = true;
                            p += 1;
                        }
                    }
                    if negate {
                        set.iter_mut().for_each(|b| *b = !*b);
                    }
                    if p == pattern.len() {
                        out.push(Some(set));
                        break;
                    }
                }
                c => set[c as usize] = true,
            }
            out.push(Some(set));
            p += 1;
        }
        out
    }

    /// The textbook glob semantics over `els`, the elements of `pattern`,
    /// by dynamic programming, with SCAN's rules for the empty subject.
    fn reference(pattern: &[u8], els: &[Option<[bool; 256]>], subject: &[u8]) -> bool {
        if pattern == b"*" || subject.is_empty() {
            return pattern == b"*" || pattern.is_empty();
        }
        // ok[j]: the elements so far match subject[..j].
        let mut ok = vec![false; subject.len() + 1];
        ok[0] = true;
        for el in els {
            let mut next = vec![false; subject.len() + 1];
            for j in 0..=subject.len() {
                next[j] = match el {
                    None => ok[j] || (j > 0 && next[j - 1]),
                    Some(set) => j > 0 && ok[j - 1] && set[subject[j - 1] as usize],
                };
            }
            ok = next;
        }
        ok[subject.len()]
    }

    #[test]
    fn agrees_with_a_reference_on_every_short_pattern() {
        let alphabet = b"ab*?[]-^\\\x80";
        let subjects_alphabet = b"ab]-\\\x80\xff";
        let strings = |alpha: &[u8], max: usize| {
            let mut all = vec![Vec::new()];
            let mut last = vec![Vec::new()];
            for _ in 0..max {
                last = last
                    .iter()
                    .flat_map(|s: &Vec<u8>| {
                        alpha.iter().map(move |&c| {
                            let mut t = s.clone();
                            t.push(c);
                            t
                        })
                    })
                    .collect();
                all.extend(last.iter().cloned());
            }
            all
        };
        let subjects = strings(subjects_alphabet, 3);
        for pattern in strings(alphabet, 4) {
            let els = elements(&pattern);
            for subject in &subjects {
                assert_eq!(
                    glob_match(&pattern, subject),
                    reference(&pattern, &els, subject),
                    "{:?} ~ {:?}",
                    pattern.escape_ascii().to_string(),
                    subject.escape_ascii().to_string()
                );
            }
        }
    }
}
