//! The one home of `unsafe` in xset: raw Redis module API calls that the
//! `redis-module` crate does not wrap (or wraps in ways that panic), each
//! behind a safe function. Nothing here knows what a command means.
//!
//! The invariant every function keeps: a raw API pointer is copied out of its
//! `static mut` and checked for presence before the call, so a server that
//! lacks a function gets a clean error at load, never a null call.

pub mod type_methods;

use redis_module::alloc::RedisAlloc;
use redis_module::{Context, RedisResult, RedisString, raw};
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::{CStr, CString, c_int};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Milliseconds stored at the start of each event-loop iteration: the frozen
/// clock for `MULTI`/`EXEC` and scripts on servers without
/// `RedisModule_CachedMicroseconds` (Redis 7.0).
static LOOP_START_MS: AtomicU64 = AtomicU64::new(0);

/// The time a command runs at, and whether this server may reclaim.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// The command's time in Unix milliseconds: frozen for a whole
    /// `MULTI`/`EXEC` or script, as Redis freezes it for key expiry.
    pub now_ms: u64,
    /// True on a primary that is not loading: only there may a command
    /// delete members on its own clock. Replicas and loaders apply writes as
    /// given and hide expired members on reads.
    pub primary: bool,
    /// True while clients are paused for writes (`CLIENT PAUSE`,
    /// `FAILOVER`, a shutdown waiting for replicas). Redis 7.0 aborts on any
    /// propagation then, so reads and the timer must not reclaim; a write
    /// command only runs during a pause inside the transaction that paused,
    /// where propagating is allowed.
    pub paused: bool,
}

fn milliseconds() -> u64 {
    // SAFETY: the pointer is checked for presence; the call has no
    // preconditions.
    let f = unsafe { raw::RedisModule_Milliseconds };
    f.map_or(0, |f| unsafe { f() }.max(0) as u64)
}

/// Whether clients are paused for writes (`CLIENT PAUSE`, `FAILOVER`, a
/// manual cluster failover, a shutdown waiting for replicas): while they
/// are, nothing may be propagated. `RedisModule_AvoidReplicaTraffic` is the
/// API that tells, on every version since 6.0.
pub fn writes_paused() -> bool {
    // SAFETY: presence checked; the call has no preconditions.
    let f = unsafe { raw::RedisModule_AvoidReplicaTraffic };
    f.is_some_and(|f| unsafe { f() } != 0)
}

/// The clock for the command running in `ctx`.
pub fn clock(ctx: &Context) -> Clock {
    // SAFETY: `ctx` is the live context of the running command.
    let flags_fn = unsafe { raw::RedisModule_GetContextFlags };
    let flags = flags_fn.map_or(0, |f| unsafe { f(ctx.get_raw()) } as u32);
    let primary =
        flags & (raw::REDISMODULE_CTX_FLAGS_SLAVE | raw::REDISMODULE_CTX_FLAGS_LOADING) == 0;
    // SAFETY: presence checked; no preconditions.
    let cached = unsafe { raw::RedisModule_CachedMicroseconds };
    let now_ms = if let Some(f) = cached {
        (unsafe { f() }.max(0) as u64) / 1000
    } else if flags & (raw::REDISMODULE_CTX_FLAGS_MULTI | raw::REDISMODULE_CTX_FLAGS_LUA) != 0 {
        match LOOP_START_MS.load(Ordering::Relaxed) {
            0 => milliseconds(),
            ms => ms,
        }
    } else {
        milliseconds()
    };
    Clock {
        now_ms,
        primary,
        paused: primary && writes_paused(),
    }
}

extern "C" fn on_event_loop(
    ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut std::ffi::c_void,
) {
    if subevent == raw::REDISMODULE_SUBEVENT_EVENTLOOP_AFTER_SLEEP {
        LOOP_START_MS.store(milliseconds(), Ordering::Relaxed);
    } else if crate::expiry::behind() {
        // As Redis runs a fast expire cycle before sleeping: while a backlog
        // remains, every event-loop turn gets a budgeted slice, not only the
        // (millisecond-granular) timer.
        let context = Context::new(ctx);
        crate::expiry::fast_cycle(&context);
    }
}

/// Checks that the server offers every API xset calls; the error names the
/// first one missing.
pub fn check_server_api() -> Result<(), String> {
    // SAFETY: only the presence of each pointer is read.
    let required: [(&str, bool); 6] = unsafe {
        [
            ("SetCommandInfo", {
                let f = raw::RedisModule_SetCommandInfo;
                f.is_some()
            }),
            ("GetCommand", {
                let f = raw::RedisModule_GetCommand;
                f.is_some()
            }),
            ("SubscribeToServerEvent", {
                let f = raw::RedisModule_SubscribeToServerEvent;
                f.is_some()
            }),
            ("Milliseconds", {
                let f = raw::RedisModule_Milliseconds;
                f.is_some()
            }),
            ("GetContextFlags", {
                let f = raw::RedisModule_GetContextFlags;
                f.is_some()
            }),
            ("IsIOError", {
                let f = raw::RedisModule_IsIOError;
                f.is_some()
            }),
        ]
    };
    match required.iter().find(|(_, present)| !present) {
        Some((name, _)) => Err(format!(
            "xset needs Redis 7.0 or newer: this server lacks RedisModule_{name}"
        )),
        None => Ok(()),
    }
}

/// Subscribes to the event loop: after sleeping it stores the frozen time
/// [`clock`] uses on 7.0; before sleeping it runs a fast expiry slice when
/// active expiry is behind.
pub fn subscribe_event_loop(ctx: &Context) -> Result<(), String> {
    // SAFETY: presence checked in `check_server_api`; the callback catches
    // panics in the expiry slice (`expiry::fast_cycle`).
    let subscribe = unsafe { raw::RedisModule_SubscribeToServerEvent };
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_EVENTLOOP,
        dataver: 1,
    };
    match subscribe.map(|f| unsafe { f(ctx.get_raw(), event, Some(on_event_loop)) }) {
        Some(0) => Ok(()),
        _ => Err("cannot subscribe to the event loop".into()),
    }
}

/// Asks Redis to hand IO errors to `rdb_load` instead of aborting, so a
/// corrupt payload is rejected cleanly.
pub fn handle_io_errors(ctx: &Context) {
    // SAFETY: presence checked; `ctx` is the module's load context.
    let set_options = unsafe { raw::RedisModule_SetModuleOptions };
    if let Some(f) = set_options {
        unsafe {
            f(
                ctx.get_raw(),
                raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS as c_int,
            )
        };
    }
}

/// How one command touches its single key (argument 1).
#[derive(Clone, Copy)]
pub enum KeyAccess {
    /// Reads the key.
    Read,
    /// Reads and updates or deletes members, may create the key.
    Write,
}

/// Documentation and key specs for one command, for `COMMAND INFO`,
/// `COMMAND DOCS`, `COMMAND GETKEYS`, cluster routing and ACL key patterns.
pub struct CommandDoc {
    pub name: &'static str,
    pub arity: i32,
    pub summary: &'static str,
    pub complexity: &'static str,
    pub access: KeyAccess,
}

fn leak_cstr(s: &str) -> *const std::ffi::c_char {
    // Strings without NUL only: every caller passes a literal.
    CString::new(s).map_or(std::ptr::null(), |c| c.into_raw().cast_const())
}

/// Registers `doc` with `RedisModule_SetCommandInfo`: arity (so Redis
/// answers arity errors in its own words), summary, complexity, and one key
/// spec: the key is argument 1.
pub fn set_command_info(ctx: &Context, doc: &CommandDoc) -> Result<(), String> {
    let flags = match doc.access {
        KeyAccess::Read => raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        KeyAccess::Write => {
            // Redis allows one of INSERT/UPDATE/DELETE; UPDATE is what
            // ZADD declares for the same mix of adds and removals.
            raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE
        }
    };
    let spec = raw::RedisModuleCommandKeySpec {
        notes: std::ptr::null(),
        flags: u64::from(flags),
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX,
        bs: raw::RedisModuleCommandKeySpec__bindgen_ty_1 {
            index: raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 { pos: 1 },
        },
        find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE,
        fk: raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
            range: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 {
                lastkey: 0,
                keystep: 1,
                limit: 0,
            },
        },
    };
    // SAFETY: an all-zero key spec is the array terminator Redis expects.
    let terminator: raw::RedisModuleCommandKeySpec = unsafe { std::mem::zeroed() };
    let key_specs = Box::leak(Box::new([spec, terminator]));
    let version = Box::leak(Box::new(raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    }));
    let info = raw::RedisModuleCommandInfo {
        version: version as *const _,
        summary: leak_cstr(doc.summary),
        complexity: leak_cstr(doc.complexity),
        since: leak_cstr("0.1.0"),
        history: std::ptr::null_mut(),
        tips: std::ptr::null(),
        arity: doc.arity,
        key_specs: key_specs.as_mut_ptr(),
        args: std::ptr::null_mut(),
    };
    let name = CString::new(doc.name).map_err(|e| e.to_string())?;
    // SAFETY: presence checked in `check_server_api`; every pointer in
    // `info` points at leaked, never-freed memory.
    let (get, set) = unsafe { (raw::RedisModule_GetCommand, raw::RedisModule_SetCommandInfo) };
    let (Some(get), Some(set)) = (get, set) else {
        return Err("SetCommandInfo missing".into());
    };
    let command = unsafe { get(ctx.get_raw(), name.as_ptr()) };
    if command.is_null() {
        return Err(format!("{} was not registered", doc.name));
    }
    if unsafe { set(command, &info) } != raw::Status::Ok as c_int {
        return Err(format!("SetCommandInfo refused {}", doc.name));
    }
    Ok(())
}

/// The global allocator outside tests: Rust's allocations go to Redis's
/// allocator, so `INFO memory`, `MEMORY USAGE` and `maxmemory` see them. It
/// is the crate's `RedisAlloc`, plus zeroed allocation and resizing through
/// `RedisModule_Calloc` and `RedisModule_Realloc`, which `RedisAlloc` leaves
/// to the defaults: a big zeroed array (a growing hash table) then gets
/// fresh zero pages instead of a memset, and a growing vector may grow in
/// place.
pub struct ServerAlloc;

/// `layout`'s size rounded up to its alignment: jemalloc aligns every size
/// class to the largest power of two dividing it (up to a page), which is
/// how `RedisAlloc` gets aligned blocks from a plain allocation.
fn padded(size: usize, align: usize) -> usize {
    (size + align - 1) & !(align - 1)
}

// SAFETY: every block comes from, and goes back to, Redis's allocator, with
// the size rounding `RedisAlloc` uses for alignment; calls whose API pointer
// is missing fall back to `RedisAlloc`'s own.
unsafe impl GlobalAlloc for ServerAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { RedisAlloc.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { RedisAlloc.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let calloc = unsafe { raw::RedisModule_Calloc };
        match calloc {
            Some(f) => unsafe { f(1, padded(layout.size(), layout.align())) }.cast(),
            None => unsafe { RedisAlloc.alloc_zeroed(layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let realloc = unsafe { raw::RedisModule_Realloc };
        match realloc {
            Some(f) => unsafe { f(ptr.cast(), padded(new_size, layout.align())) }.cast(),
            None => unsafe { RedisAlloc.realloc(ptr, layout, new_size) },
        }
    }
}

/// A command as xset implements it. Redis calls [`command_callback`] for
/// it, which hands [`Command::run`] the arguments and sends its reply.
pub trait Command {
    /// Runs the command on its arguments (the name first).
    fn run(ctx: &Context, args: &[RedisString]) -> RedisResult;
}

/// The callback Redis calls for command `C`. Unlike the crate's handlers it
/// does not copy the arguments into a vector of retained strings (an
/// allocation, and a retain and a release per argument, on every call):
/// `C::run` borrows views of Redis's own argument strings, which outlive the
/// call.
extern "C" fn command_callback<C: Command>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let context = Context::new(ctx);
    let ptrs: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        Ok(n) if n > 0 && !argv.is_null() => {
            // SAFETY: Redis passes `argc` argument strings in `argv`, alive
            // for the whole call.
            unsafe { std::slice::from_raw_parts(argv, n) }
        }
        _ => &[],
    };
    let reply = with_borrowed_args(ctx, ptrs, |args| C::run(&context, args));
    context.reply(reply) as c_int
}

/// Runs `f` on `RedisString` views of `ptrs` that are never released:
/// Redis owns the strings. Up to eight views live on the stack. This relies
/// on `RedisString::from_redis_module_string` not retaining the string (as
/// in redis-module 2.0.8, pinned by Cargo.lock), so that not dropping the
/// views leaves every reference count as Redis set it.
fn with_borrowed_args<R>(
    ctx: *mut raw::RedisModuleCtx,
    ptrs: &[*mut raw::RedisModuleString],
    f: impl FnOnce(&[RedisString]) -> R,
) -> R {
    const INLINE: usize = 8;
    let view = |p| ManuallyDrop::new(RedisString::from_redis_module_string(ctx, p));
    if ptrs.len() <= INLINE {
        let inline: [ManuallyDrop<RedisString>; INLINE] =
            std::array::from_fn(|i| view(ptrs.get(i).copied().unwrap_or(std::ptr::null_mut())));
        f(as_strings(&inline[..ptrs.len()]))
    } else {
        let heap: Vec<ManuallyDrop<RedisString>> = ptrs.iter().map(|&p| view(p)).collect();
        f(as_strings(&heap))
    }
}

fn as_strings(views: &[ManuallyDrop<RedisString>]) -> &[RedisString] {
    // SAFETY: `ManuallyDrop<T>` is `repr(transparent)` over `T`, so the two
    // slices have the same layout; the views are only read.
    unsafe { &*(std::ptr::from_ref(views) as *const [RedisString]) }
}

/// Registers command `name` (run by `C`) with `flags` and its key positions,
/// as `RedisModule_CreateCommand` takes them.
pub fn create_command<C: Command>(
    ctx: &Context,
    name: &str,
    flags: &str,
    keys: (c_int, c_int, c_int),
) -> Result<(), String> {
    let (c_name, c_flags) = CString::new(name)
        .and_then(|n| CString::new(flags).map(|f| (n, f)))
        .map_err(|e| e.to_string())?;
    // SAFETY: presence checked; both strings outlive the call (Redis copies
    // the name and parses the flags during it); the callback is a plain
    // function that lives as long as the module.
    let create = unsafe { raw::RedisModule_CreateCommand };
    let Some(create) = create else {
        return Err("CreateCommand missing".into());
    };
    let status = unsafe {
        create(
            ctx.get_raw(),
            c_name.as_ptr(),
            Some(command_callback::<C>),
            c_flags.as_ptr(),
            keys.0,
            keys.1,
            keys.2,
        )
    };
    if status == raw::Status::Ok as c_int {
        Ok(())
    } else {
        Err(format!("cannot create command {name}"))
    }
}

/// The database selected in `ctx`.
pub fn selected_db(ctx: &Context) -> i32 {
    // SAFETY: presence checked; `ctx` is live.
    let f = unsafe { raw::RedisModule_GetSelectedDb };
    f.map_or(0, |f| unsafe { f(ctx.get_raw()) })
}

/// Selects database `db` in `ctx` (timer contexts start in db 0).
pub fn select_db(ctx: &Context, db: i32) {
    // SAFETY: presence checked; `ctx` is live; an out-of-range db is
    // refused by Redis with an error status, which leaves the selection.
    let f = unsafe { raw::RedisModule_SelectDb };
    if let Some(f) = f {
        unsafe { f(ctx.get_raw(), db) };
    }
}

extern "C" fn on_flush_event(
    _ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut std::ffi::c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_START || data.is_null() {
        return;
    }
    // SAFETY: for this event Redis passes a RedisModuleFlushInfo.
    let dbnum = unsafe { (*data.cast::<raw::RedisModuleFlushInfo>()).dbnum };
    let _ = std::panic::catch_unwind(|| crate::expiry::on_flush(dbnum));
}

extern "C" fn on_swap_event(
    _ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut std::ffi::c_void,
) {
    if data.is_null() {
        return;
    }
    // SAFETY: for this event Redis passes a RedisModuleSwapDbInfo.
    let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
    let (a, b) = (info.dbnum_first, info.dbnum_second);
    let _ = std::panic::catch_unwind(|| crate::expiry::on_swap(a, b));
}

/// Subscribes to `FLUSHDB`/`FLUSHALL` and `SWAPDB`, which move or drop
/// keys without calling the type's unlink callback.
pub fn subscribe_keyspace_moves(ctx: &Context) -> Result<(), String> {
    // SAFETY: presence checked in `check_server_api`; the callbacks only
    // read the event data Redis documents for these events.
    let subscribe = unsafe { raw::RedisModule_SubscribeToServerEvent };
    let Some(subscribe) = subscribe else {
        return Err("SubscribeToServerEvent missing".into());
    };
    let events: [(u64, raw::RedisModuleEventCallback); 2] = [
        (raw::REDISMODULE_EVENT_FLUSHDB, Some(on_flush_event)),
        (raw::REDISMODULE_EVENT_SWAPDB, Some(on_swap_event)),
    ];
    for (id, callback) in events {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        if unsafe { subscribe(ctx.get_raw(), event, callback) } != raw::Status::Ok as c_int {
            return Err(format!("cannot subscribe to server event {id}"));
        }
    }
    Ok(())
}

/// Publishes `message` on Pub/Sub `channel` (cluster-wide in a cluster).
pub fn publish(ctx: &Context, channel: &[u8], message: &[u8]) {
    // SAFETY: presence checked; strings are created in `ctx` (auto-freed
    // with it) and only read by the call.
    let (publish, create) = unsafe {
        (
            raw::RedisModule_PublishMessage,
            raw::RedisModule_CreateString,
        )
    };
    let (Some(publish), Some(create)) = (publish, create) else {
        return;
    };
    unsafe {
        let ch = create(ctx.get_raw(), channel.as_ptr().cast(), channel.len());
        let msg = create(ctx.get_raw(), message.as_ptr().cast(), message.len());
        publish(ctx.get_raw(), ch, msg);
        if let Some(free) = raw::RedisModule_FreeString {
            free(ctx.get_raw(), ch);
            free(ctx.get_raw(), msg);
        }
    }
}

/// Emits keyspace event `event` of class `class` for `key`, without the
/// allocation the crate's wrapper makes for the event name.
pub fn notify(ctx: &Context, class: raw::NotifyEvent, event: &CStr, key: &RedisString) {
    // SAFETY: presence checked; `event` is NUL-terminated and `key` lives
    // for the call.
    let f = unsafe { raw::RedisModule_NotifyKeyspaceEvent };
    if let Some(f) = f {
        unsafe { f(ctx.get_raw(), class.bits(), event.as_ptr(), key.inner) };
    }
}

/// `PXAT`, `MEMBERS` and `1`, created once at load: a one-member add is the
/// hottest write, and passing these as retained strings saves Redis an
/// allocation and a free per word on every propagation.
static ADD_WORDS: [AtomicPtr<raw::RedisModuleString>; 3] = [
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
];

/// Creates the words of [`ADD_WORDS`]; they live as long as the module.
pub fn create_add_words() -> Result<(), String> {
    // SAFETY: presence checked; a NULL context creates a string that is
    // never freed automatically, which is what a module-lifetime word wants.
    let Some(create) = (unsafe { raw::RedisModule_CreateString }) else {
        return Err("RedisModule_CreateString is missing".into());
    };
    for (slot, word) in ADD_WORDS.iter().zip([&b"PXAT"[..], b"MEMBERS", b"1"]) {
        let s = unsafe {
            create(
                std::ptr::null_mut(),
                word.as_ptr().cast::<std::ffi::c_char>(),
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

/// Propagates `XSET.ADD key PXAT MEMBERS 1 member deadline` (the one-member
/// add, the common case) with a fixed format: no argument vector or
/// intermediate strings to build. False (nothing propagated) if the words
/// were not created, which a loaded module rules out.
pub fn replicate_add_one(
    ctx: &Context,
    key: &RedisString,
    member: &RedisString,
    deadline_ms: u64,
) -> bool {
    // SAFETY: copied out and checked for presence before any call.
    let f = unsafe { raw::RedisModule_Replicate };
    let words = [0, 1, 2].map(|i| ADD_WORDS[i].load(Ordering::Relaxed));
    let (Some(f), [pxat, members, one]) = (f, words) else {
        return false;
    };
    if pxat.is_null() || members.is_null() || one.is_null() {
        return false;
    }
    // SAFETY: the format matches the arguments: `s` live RedisModuleStrings
    // (the words live as long as the module), `l` a long long.
    unsafe {
        f(
            ctx.get_raw(),
            c"XSET.ADD".as_ptr(),
            c"sssssl".as_ptr(),
            key.inner,
            pxat,
            members,
            one,
            member.inner,
            deadline_ms as std::ffi::c_longlong,
        )
    };
    true
}
