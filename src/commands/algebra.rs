//! Set algebra: `XSET.INTER`, `XSET.UNION`, `XSET.DIFF` (with their
//! `*STORE` forms) and `XSET.INTERCARD`, over xsets, plain Redis sets and
//! missing keys. Each result member carries the deadline the core
//! aggregates ([`xset_core::algebra`]): the earliest of its deadlines in
//! an intersection, the latest in a union, the first key's in a
//! difference.
//!
//! Replies list members soonest deadline first (members without a deadline
//! last, equal deadlines by their bytes), as `XSET.MEMBERS` does, so a
//! reply is the same on every server and every call. A `*STORE` writes the
//! result with its absolute deadlines and propagates that, never the
//! recipe.

use super::reply::{WithTtl, bulk, int, pttl};
use super::requests::{
    AlgebraRequest, InterCardRequest, parse_algebra, parse_intercard, parse_store,
};
use crate::clock::Clock;
use crate::config;
use crate::ffi::key::CmdArg;
use crate::keyspace::{Kind, replace_with, with_operands};
use redis_module::{Context, RedisResult, RedisValue};
use std::ffi::CStr;
use xset_core::algebra::{self, Input};

/// Which operation a command runs.
#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

impl Op {
    fn run<'a>(self, inputs: &[Input<'a>], now_ms: u64) -> Vec<(&'a [u8], u64)> {
        match self {
            Op::Inter => algebra::inter(inputs, now_ms, usize::MAX),
            Op::Union => algebra::union(inputs, now_ms),
            Op::Diff => algebra::diff(inputs, now_ms),
        }
    }

    /// Whether plain-set operands must be copied for this operation: not
    /// when the result is empty whatever they hold (an intersection with a
    /// missing key, a difference from a missing first key).
    fn needs_plain_sets(self, kinds: &[Kind]) -> bool {
        match self {
            Op::Inter => !kinds.contains(&Kind::Missing),
            Op::Union => true,
            Op::Diff => kinds.first() != Some(&Kind::Missing),
        }
    }

    /// The keyspace event a `*STORE` emits on its destination.
    fn store_event(self) -> &'static CStr {
        match self {
            Op::Inter => c"xset.interstore",
            Op::Union => c"xset.unionstore",
            Op::Diff => c"xset.diffstore",
        }
    }
}

/// `XSET.INTER|UNION|DIFF numkeys key [key ...] [WITHTTL]`.
fn read(ctx: &Context, args: &[CmdArg], clock: Clock, op: Op) -> RedisResult {
    let AlgebraRequest { keys, with_ttl } = parse_algebra(args)?;
    let shape = WithTtl::for_client(ctx);
    with_operands(
        ctx,
        keys,
        |k| op.needs_plain_sets(k),
        |inputs| {
            let mut members = op.run(inputs, clock.now_ms);
            algebra::sort_by_deadline(&mut members);
            let mut out = Vec::with_capacity(members.len() * if with_ttl { 2 } else { 1 });
            // (Under RESP3 pairs take one entry each: the capacity is an upper
            // bound.)
            for (member, deadline_ms) in members {
                if with_ttl {
                    shape.push(&mut out, member, pttl(deadline_ms, clock.now_ms));
                } else {
                    out.push(bulk(member));
                }
            }
            RedisValue::Array(out)
        },
    )
}

/// `XSET.INTERSTORE|UNIONSTORE|DIFFSTORE destination numkeys key [key
/// ...]`: the stored cardinality.
fn store(ctx: &Context, args: &[CmdArg], clock: Clock, op: Op) -> RedisResult {
    let keys = parse_store(args)?;
    let limits = config::limits();
    // The result is copied out before the destination is opened: it may be
    // one of the inputs.
    let result = with_operands(
        ctx,
        keys,
        |k| op.needs_plain_sets(k),
        |inputs| algebra::collect(limits, op.run(inputs, clock.now_ms)),
    )?;
    Ok(int(replace_with(ctx, &args[1], result, op.store_event())?))
}

/// `XSET.INTER numkeys key [key ...] [WITHTTL]`: members live in every
/// key, each until the earliest of its deadlines.
pub fn xset_inter(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    read(ctx, args, clock, Op::Inter)
}

/// `XSET.UNION numkeys key [key ...] [WITHTTL]`: members live in any key,
/// each until the latest of its deadlines.
pub fn xset_union(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    read(ctx, args, clock, Op::Union)
}

/// `XSET.DIFF numkeys key [key ...] [WITHTTL]`: members of the first key in
/// no other, with their deadlines in the first.
pub fn xset_diff(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    read(ctx, args, clock, Op::Diff)
}

/// `XSET.INTERSTORE destination numkeys key [key ...]`.
pub fn xset_interstore(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    store(ctx, args, clock, Op::Inter)
}

/// `XSET.UNIONSTORE destination numkeys key [key ...]`.
pub fn xset_unionstore(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    store(ctx, args, clock, Op::Union)
}

/// `XSET.DIFFSTORE destination numkeys key [key ...]`.
pub fn xset_diffstore(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    store(ctx, args, clock, Op::Diff)
}

/// `XSET.INTERCARD numkeys key [key ...] [LIMIT limit]`: how many members
/// are live in every key, counting up to `limit` (0: no limit).
pub fn xset_intercard(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let InterCardRequest { keys, limit } = parse_intercard(args)?;
    with_operands(
        ctx,
        keys,
        |k| Op::Inter.needs_plain_sets(k),
        |inputs| int(algebra::inter(inputs, clock.now_ms, limit).len()),
    )
}
