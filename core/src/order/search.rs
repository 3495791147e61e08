//! Searches over sorted keys: galloping and interpolating ranks, for a
//! leaf's records and a chunk's leaf headers alike. Each takes its keys
//! through an accessor and answers as `partition_point` would.

use super::Key;

/// A pair packed into one integer that orders as the pair does.
pub(super) fn packed((deadline, slot): Key) -> u128 {
    (u128::from(deadline) << 32) | u128::from(slot)
}

/// Gallop steps (1, 2, 4, 8, 16 keys away) before bisecting the rest.
pub(super) const GALLOP: u32 = 5;

/// How many of the `n` strictly increasing keys `at(0)..at(n - 1)` are below
/// `t`. The position is guessed by interpolating between the end keys, the
/// guess is widened by galloping (a few steps) until it brackets the answer,
/// and the bracket is bisected. Deadlines arrive at a steady rate, so keys
/// are spread evenly and this probes a few neighbouring keys; on a skewed
/// spread (say, members without a deadline after expiring ones) the gallop
/// gives up early and it costs a binary search plus a few probes.
pub(super) fn rank_by(n: usize, at: impl Fn(usize) -> u128, t: u128) -> usize {
    /// Up to this many keys a plain bisection (five steps) beats the
    /// division an interpolated guess costs.
    const BISECT_UP_TO: usize = 32;
    if n <= BISECT_UP_TO {
        return partition(0, n, |i| at(i) < t);
    }
    if t <= at(0) {
        return 0;
    }
    let (first, last) = (at(0), at(n - 1));
    if t > last {
        return n;
    }
    // Here first < t <= last, so n >= 2 and the answer is in 1..n.
    let guess = interpolate(t - first, last - first, n - 1).clamp(1, n - 1);
    bracket(at, t, guess, 0, n - 1)
}

/// [`rank_by`] for keys whose bounds the caller knows without reading
/// them: `at(0) == first` and every key below `end`. The guess then costs
/// no probe of the end keys, which in a large index are cache misses of
/// their own (the first and last leaf headers of a chunk); only the keys
/// around the guess are read.
pub(super) fn rank_between(
    n: usize,
    at: impl Fn(usize) -> u128,
    t: u128,
    first: u128,
    end: u128,
) -> usize {
    if t <= first {
        return 0;
    }
    if t >= end || n == 1 {
        return n;
    }
    // Here first < t < end and n >= 2: the answer is in 1..=n, and a key
    // `end` at position n would keep the keys increasing.
    let guess = interpolate(t - first, end - first, n).clamp(1, n - 1);
    bracket(at, t, guess, 0, n)
}

/// `x / span` of `m` positions, `x <= span`: where an evenly spread key
/// `x` above the first would sit.
pub(super) fn interpolate(x: u128, span: u128, m: usize) -> usize {
    // Converting a u128 to a float is a library call: the offsets are
    // taken as u64, those of the keys' deadline halves when the span is
    // wider (deadlines over 2^32 ms apart); the guess is a guess either way.
    let fraction = match u64::try_from(span) {
        Ok(span) => x as u64 as f64 / span as f64,
        Err(_) => (x >> 32) as u64 as f64 / (span >> 32) as u64 as f64,
    };
    (fraction * m as f64) as usize
}

/// The rank of `t` among keys `at(..)`, given `lo < guess <= hi` with
/// `at(lo) < t <= at(hi)`: gallops from the guess, then bisects. Only
/// `at(guess)` and keys strictly between `lo` and `hi` are read, so `at(hi)`
/// may stand for a bound past the last key when the guess is below it.
pub(super) fn bracket(
    at: impl Fn(usize) -> u128,
    t: u128,
    guess: usize,
    lo: usize,
    hi: usize,
) -> usize {
    let (mut lo, mut hi) = (lo, hi);
    if at(guess) < t {
        lo = guess;
        for k in 0..GALLOP {
            let j = lo + (1 << k);
            if j >= hi {
                break;
            }
            if at(j) < t {
                lo = j;
            } else {
                hi = j;
                break;
            }
        }
    } else {
        let floor = lo;
        hi = guess;
        for k in 0..GALLOP {
            let Some(j) = hi.checked_sub(1 << k).filter(|&j| j > floor) else {
                break;
            };
            if at(j) < t {
                lo = j;
                break;
            }
            hi = j;
        }
    }
    partition(lo + 1, hi, |i| at(i) < t)
}

/// The first index in `lo..hi` where `below` is false (`hi` if none), for a
/// `below` that is true then false across the range: a binary search that
/// halves a window whose size depends only on the range, so the loop runs
/// a fixed number of times (the steps' comparisons are arithmetic, not
/// control flow, though the compiler may still branch on them).
pub(super) fn partition(lo: usize, hi: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut base, mut size) = (lo, hi.saturating_sub(lo));
    if size == 0 {
        return lo;
    }
    // The answer stays in base..=base + size.
    while size > 1 {
        let half = size / 2;
        // base + half when below, else base.
        base += half * usize::from(below(base + half));
        size -= half;
    }
    base + usize::from(below(base))
}
