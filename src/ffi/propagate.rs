//! Propagation's fast path for the hottest write, the one-member add: the
//! words it sends are made once, and nothing is built when nothing would
//! receive it.
//!
//! A server propagates a write to its AOF and to its replicas through the
//! replication backlog. With no AOF, no replica and no backlog, the
//! server's own commands skip propagation entirely (its `shouldPropagate`);
//! a module's `RedisModule_Replicate` still looks its command up by name
//! and builds the argument vector before the server drops it unread. So
//! when this module knows that nothing listens, a one-member add only
//! counts its change (`RedisModule_ReplicateVerbatim`, which the server
//! drops unread as well, and which adds one to the changes since the last
//! save as `RedisModule_Replicate` does).
//!
//! What it knows, and when it looks:
//! - on every add, the context flags: an AOF, a replica of a primary, a
//!   load or a cluster node (whose slot migrations may stream writes)
//!   always propagate;
//! - nothing is skipped before the event loop has gone to sleep once since
//!   the module loaded: until then, a `SYNC` or `PSYNC` that a pause held
//!   back before a `MODULE LOAD` may still run unseen;
//! - once, at the first add after that, `INFO replication`: any connected
//!   replica, replica waiting to sync, or backlog (which a restarted
//!   primary restores from its RDB) means something listens, and so does a
//!   server where `SYNC` or `PSYNC` goes by another name (`rename-command`:
//!   the filter below looks for the usual names);
//! - for good, from then on: a `SYNC` or `PSYNC` arriving (the command
//!   filter sees it before the server runs or postpones it, and the server
//!   creates its backlog and registers a replica only in those commands),
//!   or a change of replication role (a promoted replica keeps its
//!   backlog).

use super::key::KeyName;
use super::server::{self, ContextFlags};
use redis_module::{Context, raw};
use std::ffi::{CStr, c_char, c_int};
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, Ordering};

/// What `INFO replication` said at the first add that asked it:
/// [`NOT_ASKED`], [`NOBODY`] or [`SOMEBODY`].
static REPLICATION: AtomicU8 = AtomicU8::new(NOT_ASKED);
const NOT_ASKED: u8 = 0;
const NOBODY: u8 = 1;
const SOMEBODY: u8 = 2;

/// Whether anything may receive what a write in `ctx`, whose context flags
/// are `flags`, propagates (see the module's documentation); true whenever
/// this module cannot tell.
fn heard(ctx: &Context, flags: ContextFlags) -> bool {
    if flags.may_propagate_anyway() || server::listener_seen() || !server::slept_since_load() {
        return true;
    }
    match REPLICATION.load(Ordering::Relaxed) {
        NOBODY => false,
        SOMEBODY => true,
        _ => {
            let heard = replication_heard() || !sync_commands_named_as_usual(ctx);
            REPLICATION.store(if heard { SOMEBODY } else { NOBODY }, Ordering::Relaxed);
            heard
        }
    }
}

/// Whether `INFO replication` shows a replica (connected or waiting to
/// sync) or a backlog; true if it cannot be read.
fn replication_heard() -> bool {
    let (Some(get), Some(field), Some(free)) = (
        api!(RedisModule_GetServerInfo),
        api!(RedisModule_ServerInfoGetFieldUnsigned),
        api!(RedisModule_FreeServerInfo),
    ) else {
        return true;
    };
    // SAFETY: a NULL context is allowed for both calls (the data is freed
    // here, not by automatic memory); the field names are NUL-terminated;
    // `info` is used only between the two calls.
    unsafe {
        let info = get(std::ptr::null_mut(), c"replication".as_ptr());
        if info.is_null() {
            return true;
        }
        let count = |name: &CStr, when_missing: u64| {
            let mut err = raw::REDISMODULE_ERR as c_int;
            let n = field(info, name.as_ptr(), &mut err);
            if err == raw::REDISMODULE_OK as c_int {
                n
            } else {
                when_missing
            }
        };
        // Redis has no `replicas_waiting_psync`.
        let heard = count(c"connected_slaves", 1) != 0
            || count(c"repl_backlog_active", 1) != 0
            || count(c"replicas_waiting_psync", 0) != 0;
        free(std::ptr::null_mut(), info);
        heard
    }
}

/// Whether `SYNC` and `PSYNC` are both known by those names (`COMMAND
/// INFO`), as the command filter looks for them; false if they cannot be
/// asked about.
fn sync_commands_named_as_usual(ctx: &Context) -> bool {
    let (Some(call), Some(kind), Some(len), Some(at), Some(free)) = (
        api!(RedisModule_Call),
        api!(RedisModule_CallReplyType),
        api!(RedisModule_CallReplyLength),
        api!(RedisModule_CallReplyArrayElement),
        api!(RedisModule_FreeCallReply),
    ) else {
        return false;
    };
    // SAFETY: `ctx` is the running command's context; the format's three
    // `c`s match the three C strings; the reply and its elements are read
    // only before the reply is freed.
    unsafe {
        let reply = call(
            ctx.get_raw(),
            c"COMMAND".as_ptr(),
            c"ccc".as_ptr(),
            c"INFO".as_ptr(),
            c"SYNC".as_ptr(),
            c"PSYNC".as_ptr(),
        );
        if reply.is_null() {
            return false;
        }
        let array = raw::REDISMODULE_REPLY_ARRAY as c_int;
        let known = kind(reply) == array
            && len(reply) == 2
            && (0..2).all(|i| {
                let e = at(reply, i);
                !e.is_null() && kind(e) == array
            });
        free(reply);
        known
    }
}

/// Counts a change that nothing would receive: the server adds one to its
/// changes since the last save, and its propagation of the command as the
/// client sent it stops at once, because nothing listens.
fn count_unheard_change(ctx: &Context) -> bool {
    let Some(f) = api!(RedisModule_ReplicateVerbatim) else {
        return false;
    };
    // SAFETY: `ctx` is the running command's context.
    unsafe { f(ctx.get_raw()) };
    true
}

/// `PXAT`, `MEMBERS` and `1`, created once at load: a one-member add is the
/// hottest write, and passing these as retained strings saves the server an
/// allocation and a free per word on every propagation.
static ADD_WORDS: [AtomicPtr<raw::RedisModuleString>; 3] = [
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
];

/// Creates the words [`replicate_one_member_add`] uses; they live as long
/// as the module.
pub fn create_add_words() -> Result<(), String> {
    let Some(create) = api!(RedisModule_CreateString) else {
        return Err("RedisModule_CreateString is missing".into());
    };
    for (slot, word) in ADD_WORDS.iter().zip([&b"PXAT"[..], b"MEMBERS", b"1"]) {
        // SAFETY: a NULL context creates a string that is never freed
        // automatically, which is what a module-lifetime word wants.
        let s = unsafe {
            create(
                std::ptr::null_mut(),
                word.as_ptr().cast::<c_char>(),
                word.len(),
            )
        };
        if s.is_null() {
            return Err("could not create the propagation words".into());
        }
        slot.store(s, Ordering::Relaxed);
    }
    Ok(())
}

/// The deadline of the last one-member add propagated, and that deadline
/// as a string the module holds (null before the first): adds with one TTL
/// share their deadline for a whole millisecond, hundreds of them under
/// load, and each passes the same string where the server would otherwise
/// format the number into a new one and free it after propagating.
static LAST_DEADLINE_MS: AtomicU64 = AtomicU64::new(0);
static LAST_DEADLINE: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(std::ptr::null_mut());

/// `deadline_ms` as a string the module holds: the last one if it has
/// that value, else a new one that replaces it (the server keeps its own
/// reference to the old one for as long as a propagation still needs it).
/// Null if the server could not create one. Commands run one at a time,
/// so the two statics change together.
fn deadline_word(deadline_ms: u64) -> *mut raw::RedisModuleString {
    let last = LAST_DEADLINE.load(Ordering::Relaxed);
    if !last.is_null() && LAST_DEADLINE_MS.load(Ordering::Relaxed) == deadline_ms {
        return last;
    }
    let (Some(create), Some(free)) = (
        api!(RedisModule_CreateStringFromLongLong),
        api!(RedisModule_FreeString),
    ) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a NULL context creates a string that is never freed
    // automatically; the module frees it when the next deadline replaces it.
    let word = unsafe { create(std::ptr::null_mut(), deadline_ms as std::ffi::c_longlong) };
    if word.is_null() {
        return word;
    }
    if !last.is_null() {
        // SAFETY: `last` was created above by an earlier call, with a NULL
        // context, and this drops the module's only reference to it.
        unsafe { free(std::ptr::null_mut(), last) };
    }
    LAST_DEADLINE.store(word, Ordering::Relaxed);
    LAST_DEADLINE_MS.store(deadline_ms, Ordering::Relaxed);
    word
}

/// Propagates `XSET.ADDEX key PXAT MEMBERS 1 member deadline` (the
/// one-member add, the common case) with a fixed format: no argument vector
/// to build, and no string but the command name's made for it when the
/// deadline is the last one's ([`deadline_word`]); only counts the change
/// when nothing would receive it ([`heard`]; `flags` are the command's
/// context flags). False (nothing propagated) if the words were not
/// created, which a loaded module rules out.
pub fn replicate_one_member_add(
    ctx: &Context,
    flags: ContextFlags,
    key: &impl KeyName,
    member: &impl KeyName,
    deadline_ms: u64,
) -> bool {
    if !heard(ctx, flags) && count_unheard_change(ctx) {
        return true;
    }
    let words = [0, 1, 2].map(|i| ADD_WORDS[i].load(Ordering::Relaxed));
    let (Some(f), [pxat, members, one]) = (api!(RedisModule_Replicate), words) else {
        return false;
    };
    if pxat.is_null() || members.is_null() || one.is_null() {
        return false;
    }
    let deadline = deadline_word(deadline_ms);
    // SAFETY: the format matches the arguments: `s` live RedisModuleStrings
    // (the words live as long as the module, the deadline's at least until
    // the next call), `l` a long long.
    unsafe {
        if deadline.is_null() {
            f(
                ctx.get_raw(),
                c"XSET.ADDEX".as_ptr(),
                c"sssssl".as_ptr(),
                key.raw(),
                pxat,
                members,
                one,
                member.raw(),
                deadline_ms as std::ffi::c_longlong,
            )
        } else {
            f(
                ctx.get_raw(),
                c"XSET.ADDEX".as_ptr(),
                c"ssssss".as_ptr(),
                key.raw(),
                pxat,
                members,
                one,
                member.raw(),
                deadline,
            )
        }
    };
    true
}
