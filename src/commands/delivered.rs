//! `XSET.DELIVERED`: what a primary propagates for one drain of a set
//! that delivers (`XSET.NOTIFY`), for a replica or an AOF replay to apply.
//! Internal: a client of the server gets an error and nothing changes.
//!
//! ```text
//! XSET.DELIVERED key stream first-id trimmed-to member deadline [member deadline ...]
//! ```
//! Each `member deadline` pair was appended to `stream` as one entry
//! (`key`, `member`, `deadline`), entry `i` with the ID `i` places after
//! `first-id`, then the stream was trimmed to exactly `trimmed-to` entries
//! (`-1`: not trimmed), and the members were removed from the set at
//! `key`.

use super::requests::parse_delivered;
use crate::clock::Clock;
use crate::errors::{self, err};
use crate::ffi::key::CmdArg;
use crate::ffi::server::ContextFlags;
use crate::keyspace::apply_delivered;
use redis_module::{Context, RedisResult};

/// `XSET.DELIVERED`: see the module docs. Replies `OK`. O(k log n) for k
/// members.
pub fn xset_delivered(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    if !ContextFlags::of(Some(ctx)).sent_by_primary_or_aof() {
        return Err(err(errors::DELIVERED_INTERNAL));
    }
    let req = parse_delivered(args)?;
    apply_delivered(
        ctx,
        (&args[1], &args[2]),
        clock,
        req.first_id,
        req.trimmed_to,
        req.entries,
    )
}
