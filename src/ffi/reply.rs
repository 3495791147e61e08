//! Replies written straight into the client's output, element by element,
//! for a reply too large to build first (`XSET.RANDMEMBER` with a huge
//! count): the server copies each element into its output buffer as it is
//! written, as its own commands do, so the reply costs what the native
//! one costs and no more.
//!
//! The invariant: an array started here always gets exactly the elements
//! it announced, so the client's protocol stays in step whatever happens.
//! If the writer is dropped early (a panic while drawing), the missing
//! elements are written as errors; and the panic guard learns from
//! [`started`] that the command has replied already, so it must not
//! reply again.

use redis_module::{Context, RedisResult, RedisValue, raw};
use std::ffi::{CString, c_char, c_long, c_longlong};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the running command started a reply here.
static STARTED: AtomicBool = AtomicBool::new(false);

/// Forgets any reply an earlier command started: called as each command
/// begins.
pub fn forget_started() {
    STARTED.store(false, Ordering::Relaxed);
}

/// Whether the running command started a reply here: it has replied, and
/// nothing else may be.
pub fn started() -> bool {
    STARTED.load(Ordering::Relaxed)
}

/// An array reply being written, with its elements still to come.
pub struct Array<'a> {
    ctx: &'a Context,
    left: usize,
    /// The error each missing element becomes if the writer is dropped
    /// early.
    unfinished: &'static str,
}

impl<'a> Array<'a> {
    /// Starts an array of exactly `len` elements; if fewer are written,
    /// each missing one becomes the error `unfinished`.
    pub fn start(ctx: &'a Context, len: usize, unfinished: &'static str) -> Array<'a> {
        STARTED.store(true, Ordering::Relaxed);
        reply_array(ctx, len);
        Array {
            ctx,
            left: len,
            unfinished,
        }
    }

    /// Takes one element's place; false (write nothing) when all are
    /// written.
    fn take_place(&mut self) -> bool {
        let free = self.left > 0;
        self.left = self.left.saturating_sub(1);
        free
    }

    /// The next element: a bulk string.
    pub fn bulk(&mut self, bytes: &[u8]) {
        if self.take_place() {
            reply_bulk(self.ctx, bytes);
        }
    }

    /// The next element: an integer.
    pub fn integer(&mut self, n: i64) {
        if self.take_place() {
            reply_integer(self.ctx, n);
        }
    }

    /// The next element: a two-element array of a bulk string and an
    /// integer (a RESP3 pair).
    pub fn bulk_integer_pair(&mut self, bytes: &[u8], n: i64) {
        if self.take_place() {
            reply_array(self.ctx, 2);
            reply_bulk(self.ctx, bytes);
            reply_integer(self.ctx, n);
        }
    }
}

impl Drop for Array<'_> {
    fn drop(&mut self) {
        if self.left == 0 {
            return;
        }
        let (Some(f), Ok(msg)) = (
            api!(RedisModule_ReplyWithError),
            CString::new(self.unfinished),
        ) else {
            return;
        };
        for _ in 0..self.left {
            // SAFETY: `ctx` is the live context of the command; the message
            // is NUL-terminated and outlives the call, which copies it.
            unsafe { f(self.ctx.get_raw(), msg.as_ptr()) };
        }
    }
}

fn reply_array(ctx: &Context, len: usize) {
    if let Some(f) = api!(RedisModule_ReplyWithArray) {
        // SAFETY: `ctx` is the live context of the command.
        unsafe { f(ctx.get_raw(), c_long::try_from(len).unwrap_or(c_long::MAX)) };
    }
}

fn reply_bulk(ctx: &Context, bytes: &[u8]) {
    if let Some(f) = api!(RedisModule_ReplyWithStringBuffer) {
        // SAFETY: `ctx` is live; the server copies `bytes` during the call.
        unsafe { f(ctx.get_raw(), bytes.as_ptr().cast::<c_char>(), bytes.len()) };
    }
}

/// Writes a command's result as its reply. An integer, the reply of most
/// commands (`XSET.HAS`, `XSET.ADD`, `XSET.CARD`, ...), goes straight to
/// the server; anything else through the crate's general reply.
pub fn result(ctx: &Context, reply: RedisResult) -> raw::Status {
    if let Ok(RedisValue::Integer(n)) = reply {
        reply_integer(ctx, n);
        // An integer holds nothing to free: skip the result's drop.
        std::mem::forget(reply);
        return raw::Status::Ok;
    }
    ctx.reply(reply)
}

fn reply_integer(ctx: &Context, n: i64) {
    if let Some(f) = api!(RedisModule_ReplyWithLongLong) {
        // SAFETY: `ctx` is the live context of the command.
        unsafe { f(ctx.get_raw(), n as c_longlong) };
    }
}
