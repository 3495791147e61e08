//! Glob matching for `XSET.SCAN ... MATCH`, with the rules of Redis's
//! `stringmatchlen`: `*`, `?`, `[abc]`, `[^abc]`, `[a-z]` and `\` escapes, on
//! raw bytes. Matching backtracks only to the last `*`, so it runs in
//! O(pattern × subject) at worst, never exponentially.

/// Whether `subject` matches the glob `pattern`.
pub fn glob_match(pattern: &[u8], subject: &[u8]) -> bool {
    let (mut p, mut s) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while s < subject.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, s));
                    continue;
                }
                _ => {
                    if let Some(next_p) = match_one(pattern, p, subject[s]) {
                        p = next_p;
                        s += 1;
                        continue;
                    }
                }
            }
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

/// Matches one pattern element at `p` against byte `c`; returns the index
/// after the element on success.
fn match_one(pattern: &[u8], p: usize, c: u8) -> Option<usize> {
    match pattern[p] {
        b'?' => Some(p + 1),
        b'\\' if p + 1 < pattern.len() => (pattern[p + 1] == c).then_some(p + 2),
        b'[' => match_class(pattern, p + 1, c),
        other => (other == c).then_some(p + 1),
    }
}

/// Matches a `[...]` class whose body starts at `p`; an unclosed class runs
/// to the end of the pattern, as in Redis.
fn match_class(pattern: &[u8], mut p: usize, c: u8) -> Option<usize> {
    let negate = pattern.get(p) == Some(&b'^');
    if negate {
        p += 1;
    }
    let mut matched = false;
    while p < pattern.len() && pattern[p] != b']' {
        if pattern[p] == b'\\' && p + 1 < pattern.len() {
            matched |= pattern[p + 1] == c;
            p += 2;
        } else if p + 2 < pattern.len() && pattern[p + 1] == b'-' && pattern[p + 2] != b']' {
            let (lo, hi) = (
                pattern[p].min(pattern[p + 2]),
                pattern[p].max(pattern[p + 2]),
            );
            matched |= (lo..=hi).contains(&c);
            p += 3;
        } else {
            matched |= pattern[p] == c;
            p += 1;
        }
    }
    let after = if p < pattern.len() { p + 1 } else { p };
    (matched != negate).then_some(after)
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn matches_like_redis() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("*", "abc", true),
            ("a*", "abc", true),
            ("a*c", "abbbc", true),
            ("a*c", "abbb", false),
            ("?", "", false),
            ("?b", "ab", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-c]llo", "hbllo", true),
            ("h[c-a]llo", "hbllo", true),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
            ("user:*:x", "user:1:2:x", true),
        ];
        for &(p, s, want) in cases {
            assert_eq!(glob_match(p.as_bytes(), s.as_bytes()), want, "{p} ~ {s}");
        }
    }
}
