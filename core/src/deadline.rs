//! The two deadlines every part of the core knows: "never" and the
//! largest one a command may set. A leaf: it imports nothing.

/// The deadline of a member that never expires (after `XSET.PERSIST`).
pub const NO_DEADLINE: u64 = u64::MAX;

/// The largest deadline a command may set: replies carry deadlines and TTLs
/// as signed 64-bit integers, so anything above this would overflow them.
pub const MAX_DEADLINE_MS: u64 = i64::MAX as u64;
