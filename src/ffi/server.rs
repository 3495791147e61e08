//! Calls out to the server that are about neither commands nor the data
//! type: the clock and context flags, database selection, Pub/Sub and
//! keyspace events, module options, and the subscriptions through which the server calls back in
//! ([`ServerHooks`]).

use super::key::KeyName;
use redis_module::{Context, RedisString, raw};
use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The server's wall clock in Unix milliseconds (not cached: the time of
/// the call).
pub fn milliseconds() -> u64 {
    api!(RedisModule_Milliseconds).map_or(0, |f| {
        // SAFETY: no preconditions.
        unsafe { f() }.max(0) as u64
    })
}

/// The kernel's coarse wall clock (`CLOCK_REALTIME_COARSE`) in Unix
/// milliseconds: the wall clock as of the last timer tick, read without
/// the clock source (about 5 ns against 22 for `gettimeofday` on the
/// bench's machines). Never later than [`milliseconds`] and, while the
/// kernel's ticks run, less than a few ticks behind it. `None` where the
/// kernel has no such clock.
pub fn coarse_milliseconds() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write; the call has no other
        // preconditions.
        let status = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
        let (Ok(s), Ok(ns)) = (u64::try_from(ts.tv_sec), u64::try_from(ts.tv_nsec)) else {
            return None;
        };
        (status == 0).then(|| s * 1000 + ns / 1_000_000)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// What the server says about the context a callback runs in.
#[derive(Clone, Copy, Debug)]
pub struct ContextFlags(u32);

impl ContextFlags {
    /// The flags of `ctx`, or the server-wide ones (scripts, transactions,
    /// loading, replication role) when `ctx` is `None`.
    pub fn of(ctx: Option<&Context>) -> ContextFlags {
        let raw_ctx = ctx.map_or(std::ptr::null_mut(), Context::get_raw);
        ContextFlags(api!(RedisModule_GetContextFlags).map_or(0, |f| {
            // SAFETY: a live context or NULL, which the API accepts.
            unsafe { f(raw_ctx) as u32 }
        }))
    }

    /// Inside `EXEC` or a script or function.
    pub fn in_transaction(self) -> bool {
        self.0 & (raw::REDISMODULE_CTX_FLAGS_MULTI | raw::REDISMODULE_CTX_FLAGS_LUA) != 0
    }

    /// The client speaks RESP3 (`HELLO 3`).
    pub fn resp3(self) -> bool {
        self.0 & raw::REDISMODULE_CTX_FLAGS_RESP3 != 0
    }

    /// Used memory is over `maxmemory` (the server's own reckoning, without
    /// replication and AOF buffers, as for refusing `deny-oom` commands).
    pub fn out_of_memory(self) -> bool {
        self.0 & raw::REDISMODULE_CTX_FLAGS_OOM != 0
    }

    /// The server is loading its data (RDB, AOF), also on a replica that
    /// loads what its primary sent.
    pub fn loading(self) -> bool {
        self.0 & (raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING)
            != 0
    }

    /// Cluster mode is on.
    pub fn cluster(self) -> bool {
        self.0 & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0
    }

    /// The command came from the primary's replication stream, or from the
    /// AOF the server is loading (only that loader runs commands while it
    /// loads): not from a client of this server.
    pub fn sent_by_primary_or_aof(self) -> bool {
        self.0 & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING) != 0
    }

    /// The flags alone say a propagation may be received, or that the
    /// server decides by more than its replicas and backlog: an AOF is on
    /// (or being started), this is a replica (which feeds its own AOF and
    /// passes its primary's stream on), it loads, or it is a cluster node
    /// (slot migrations may stream writes to another node).
    pub fn may_propagate_anyway(self) -> bool {
        self.0
            & (raw::REDISMODULE_CTX_FLAGS_AOF
                | raw::REDISMODULE_CTX_FLAGS_SLAVE
                | raw::REDISMODULE_CTX_FLAGS_REPLICATED
                | raw::REDISMODULE_CTX_FLAGS_CLUSTER
                | raw::REDISMODULE_CTX_FLAGS_LOADING
                | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING)
            != 0
    }

    /// A replica, or a server loading its data (RDB, AOF): it applies what
    /// it is given and never deletes on its own clock.
    pub fn replica_or_loading(self) -> bool {
        self.0
            & (raw::REDISMODULE_CTX_FLAGS_SLAVE
                | raw::REDISMODULE_CTX_FLAGS_LOADING
                | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING)
            != 0
    }
}

/// Whether clients are paused for writes (`CLIENT PAUSE`, `FAILOVER`, a
/// manual cluster failover, a shutdown waiting for replicas): while they
/// are, nothing may be propagated.
pub fn writes_paused() -> bool {
    // SAFETY: no preconditions.
    api!(RedisModule_AvoidReplicaTraffic).is_some_and(|f| unsafe { f() } != 0)
}

/// The database selected in `ctx`.
pub fn selected_db(ctx: &Context) -> i32 {
    // SAFETY: `ctx` is live.
    api!(RedisModule_GetSelectedDb).map_or(0, |f| unsafe { f(ctx.get_raw()) })
}

/// Selects database `db` in `ctx` (timer contexts start in db 0). An
/// out-of-range db is refused by the server and leaves the selection.
pub fn select_db(ctx: &Context, db: i32) {
    if let Some(f) = api!(RedisModule_SelectDb) {
        // SAFETY: `ctx` is live.
        unsafe { f(ctx.get_raw(), db) };
    }
}

/// Publishes `message` on Pub/Sub `channel` (cluster-wide in a cluster).
pub fn publish(ctx: &Context, channel: &[u8], message: &[u8]) {
    let (Some(publish), Some(create), Some(free)) = (
        api!(RedisModule_PublishMessage),
        api!(RedisModule_CreateString),
        api!(RedisModule_FreeString),
    ) else {
        return;
    };
    // SAFETY: both strings are created here, only read by the call, then
    // freed in the same context.
    unsafe {
        let ch = create(ctx.get_raw(), channel.as_ptr().cast(), channel.len());
        let msg = create(ctx.get_raw(), message.as_ptr().cast(), message.len());
        publish(ctx.get_raw(), ch, msg);
        free(ctx.get_raw(), ch);
        free(ctx.get_raw(), msg);
    }
}

/// Emits keyspace event `event` of class `class` for `key`, without the
/// allocation the crate's wrapper makes for the event name.
pub fn notify(ctx: &Context, class: raw::NotifyEvent, event: &CStr, key: &impl KeyName) {
    if let Some(f) = api!(RedisModule_NotifyKeyspaceEvent) {
        // SAFETY: `event` is NUL-terminated; `key` lives for the call.
        unsafe { f(ctx.get_raw(), class.bits(), event.as_ptr(), key.raw()) };
    }
}

/// Sets the module's options: IO errors are handed to `rdb_load` instead
/// of aborting (a corrupt payload is refused cleanly), and closing a key
/// opened for writing does not by itself tell the server the key changed:
/// the module says so with [`signal_modified`] only when it did, so a write
/// that changes nothing aborts no `WATCH` and invalidates no client cache.
pub fn set_module_options(ctx: &Context) {
    if let Some(f) = api!(RedisModule_SetModuleOptions) {
        let options = raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
            | raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED;
        // SAFETY: `ctx` is the module's load context.
        unsafe { f(ctx.get_raw(), options as c_int) };
    }
}

/// Applies the config file's values (and the defaults) to the configs
/// registered so far (`RedisModule_LoadConfigs`).
pub fn load_configs(ctx: &Context) {
    if let Some(f) = api!(RedisModule_LoadConfigs) {
        // SAFETY: `ctx` is the module's load context.
        unsafe { f(ctx.get_raw()) };
    }
}

/// Tells the server that `key` in the selected database changed (`WATCH`,
/// client-side caching).
pub fn signal_modified(ctx: &Context, key: &impl KeyName) {
    if let Some(f) = api!(RedisModule_SignalModifiedKey) {
        // SAFETY: `ctx` is a live command, timer or event context (each has
        // a client); `key` lives for the call.
        unsafe { f(ctx.get_raw(), key.raw()) };
    }
}

/// The key's own expiry as an absolute Unix time in milliseconds; `None`
/// when it has none or is missing. Does not touch the key's LRU/LFU.
pub fn key_expires_at(ctx: &Context, key: &impl KeyName) -> Option<u64> {
    let (Some(open), Some(abs), Some(close)) = (
        api!(RedisModule_OpenKey),
        api!(RedisModule_GetAbsExpire),
        api!(RedisModule_CloseKey),
    ) else {
        return None;
    };
    let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_OPEN_KEY_NOTOUCH) as c_int;
    // SAFETY: `ctx` and `key` are live for the call; the handle is closed
    // before returning and used only in between.
    let at = unsafe {
        let handle = open(ctx.get_raw(), key.raw(), mode).cast::<raw::RedisModuleKey>();
        if handle.is_null() {
            return None;
        }
        let at = abs(handle);
        close(handle);
        at
    };
    u64::try_from(at).ok()
}

/// What the server calls the module for, besides commands and the data
/// type. Every method runs on the main thread; a panic in one is caught and
/// logged here, never crosses into the server.
pub trait ServerHooks {
    /// The event loop is about to sleep (after serving a batch of
    /// clients).
    fn before_sleep(ctx: &Context);
    /// `FLUSHDB` of `db` or `FLUSHALL` (`db` = -1) is starting.
    fn flushing(db: i32);
    /// `SWAPDB a b` happened.
    fn swapped(a: i32, b: i32);
    /// A client command named `name` is about to run (the server's command
    /// filter: called for commands from clients and from scripts, before
    /// they are looked up, queued or refused).
    fn command_arrives(name: &[u8]);
    /// A generic keyspace event (`rename_to`, `del`, ...) for `key`.
    fn keyspace_event(ctx: &Context, event: &[u8], key: &[u8]);
}

fn caught(what: &str, f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        redis_module::logging::log_warning(format!(
            "xset: a bug was caught in {what}; the server keeps running"
        ));
    }
}

/// Set while the command that runs is one that serializes a value into its
/// reply (`DUMP`, `MIGRATE`, `DEBUG OBJECT`, or an `EXEC` that may run
/// them): set or cleared by the command filter for each command, cleared
/// before the event loop sleeps and when the server starts writing an RDB
/// or AOF (a `SAVE`, `SHUTDOWN`, `DEBUG RELOAD`, `FLUSHALL`, or a save that
/// `serverCron` starts after the commands of a loop).
static SAVING_FOR_A_REPLY: AtomicBool = AtomicBool::new(false);

/// The server's process id, taken at load: a forked child (`BGSAVE`,
/// `BGREWRITEAOF`, a full sync) has another one.
static SERVER_PID: AtomicU32 = AtomicU32::new(0);

/// Whether a value being saved to an RDB stream goes into a command's reply
/// (`DUMP`, `MIGRATE`, `DEBUG OBJECT`) rather than into a file: in the
/// server's own process, while such a command runs and no RDB or AOF save
/// has started since. When unsure it answers false, which treats the save
/// as a file's.
pub fn saving_for_a_reply() -> bool {
    SAVING_FOR_A_REPLY.load(Ordering::Relaxed)
        && SERVER_PID.load(Ordering::Relaxed) == std::process::id()
}

/// Whether command `name` (with `sub`, its first argument) may serialize a
/// value into its reply. `EXEC` may: it runs the commands it queued without
/// passing them through the filter again. A file written inside it
/// (`FLUSHALL`, `DEBUG RELOAD`) still starts with a persistence event,
/// which clears the flag first; a `DUMP` after such a save in the same
/// transaction is then treated as a file's save.
fn serializes_into_reply<'a>(name: &[u8], sub: impl FnOnce() -> &'a [u8]) -> bool {
    name.eq_ignore_ascii_case(b"exec")
        || name.eq_ignore_ascii_case(b"dump")
        || name.eq_ignore_ascii_case(b"migrate")
        || (name.eq_ignore_ascii_case(b"debug") && sub().eq_ignore_ascii_case(b"object"))
}

extern "C" fn on_persistence(
    _ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    SAVING_FOR_A_REPLY.store(false, Ordering::Relaxed);
}

extern "C" fn on_event_loop<H: ServerHooks>(
    ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent == raw::REDISMODULE_SUBEVENT_EVENTLOOP_BEFORE_SLEEP {
        SAVING_FOR_A_REPLY.store(false, Ordering::Relaxed);
        SLEPT_SINCE_LOAD.store(true, Ordering::Relaxed);
        let context = Context::new(ctx);
        caught("the before-sleep hook", || H::before_sleep(&context));
    }
}

extern "C" fn on_flush<H: ServerHooks>(
    _ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_START || data.is_null() {
        return;
    }
    // SAFETY: for this event the server passes a RedisModuleFlushInfo.
    let db = unsafe { (*data.cast::<raw::RedisModuleFlushInfo>()).dbnum };
    caught("the flush hook", || H::flushing(db));
}

extern "C" fn on_swap<H: ServerHooks>(
    _ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut c_void,
) {
    if data.is_null() {
        return;
    }
    // SAFETY: for this event the server passes a RedisModuleSwapDbInfo.
    let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
    let (a, b) = (info.dbnum_first, info.dbnum_second);
    caught("the swapdb hook", || H::swapped(a, b));
}

extern "C" fn on_command<H: ServerHooks>(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    let Some(get) = api!(RedisModule_CommandFilterArgGet) else {
        return;
    };
    let arg = |i| {
        // SAFETY: `fctx` is live for this call; its arguments (null past
        // the last) outlive the call.
        super::string_bytes(unsafe { get(fctx, i) })
    };
    let name = arg(0);
    if name.eq_ignore_ascii_case(b"psync") || name.eq_ignore_ascii_case(b"sync") {
        LISTENER_SEEN.store(true, Ordering::Relaxed);
    }
    // The first argument is read only for the one command it matters to:
    // this runs before every command of the server.
    SAVING_FOR_A_REPLY.store(serializes_into_reply(name, || arg(1)), Ordering::Relaxed);
    if !name.is_empty() {
        caught("the command filter", || H::command_arrives(name));
    }
}

extern "C" fn on_role_change(
    _ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    LISTENER_SEEN.store(true, Ordering::Relaxed);
}

/// Set for good when a replica asks to sync (`SYNC`, `PSYNC`, seen by the
/// command filter as they arrive, before the server runs or postpones
/// them) or the replication role changes (a server event).
static LISTENER_SEEN: AtomicBool = AtomicBool::new(false);

/// Whether, since the module loaded, a replica asked to sync or the server
/// changed its replication role: the only ways a primary that had neither
/// gets a replica or a replication backlog.
pub fn listener_seen() -> bool {
    LISTENER_SEEN.load(Ordering::Relaxed)
}

/// Set at the first time the event loop goes to sleep after the module
/// loaded.
static SLEPT_SINCE_LOAD: AtomicBool = AtomicBool::new(false);

/// Whether the event loop has gone to sleep since the module loaded: every
/// command that arrived before the module did has run since. Before that,
/// a command held back by a pause (`CLIENT PAUSE`) may still run after the
/// module's own `MODULE LOAD`, without passing the command filter, which
/// 7.2 and later call only when a command first arrives; at startup the
/// loop sleeps before any command.
pub fn slept_since_load() -> bool {
    SLEPT_SINCE_LOAD.load(Ordering::Relaxed)
}

extern "C" fn on_keyspace_event<H: ServerHooks>(
    ctx: *mut raw::RedisModuleCtx,
    _class: c_int,
    event: *const std::ffi::c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    if event.is_null() || key.is_null() {
        return 0;
    }
    // SAFETY: the server passes a NUL-terminated event name and a live key
    // string for the duration of the call.
    let event = unsafe { CStr::from_ptr(event) }.to_bytes();
    let key = RedisString::string_as_slice(key);
    let context = Context::new(ctx);
    caught("a keyspace event handler", || {
        H::keyspace_event(&context, event, key)
    });
    0
}

/// Subscribes `H` to the event loop, `FLUSHDB`/`FLUSHALL`, `SWAPDB`, generic
/// keyspace events and the command filter. Called last while loading, after
/// every step that can refuse the load: a refused load must leave no
/// subscription behind (servers before 7.2.4 keep keyspace subscriptions of
/// a module whose load failed, and would call into the unloaded library).
pub fn subscribe<H: ServerHooks>(ctx: &Context) -> Result<(), String> {
    let (Some(subscribe), Some(filter)) = (
        api!(RedisModule_SubscribeToServerEvent),
        api!(RedisModule_RegisterCommandFilter),
    ) else {
        return Err("the server has no server events or command filters".into());
    };
    SERVER_PID.store(std::process::id(), Ordering::Relaxed);
    let events: [(u64, raw::RedisModuleEventCallback); 5] = [
        (raw::REDISMODULE_EVENT_EVENTLOOP, Some(on_event_loop::<H>)),
        (
            raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
            Some(on_role_change),
        ),
        (raw::REDISMODULE_EVENT_FLUSHDB, Some(on_flush::<H>)),
        (raw::REDISMODULE_EVENT_SWAPDB, Some(on_swap::<H>)),
        (raw::REDISMODULE_EVENT_PERSISTENCE, Some(on_persistence)),
    ];
    for (id, callback) in events {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        // SAFETY: `ctx` is the load context; the callbacks read only the
        // event data the server documents for each event.
        if unsafe { subscribe(ctx.get_raw(), event, callback) } != raw::Status::Ok as c_int {
            return Err(format!("cannot subscribe to server event {id}"));
        }
    }
    let Some(keyspace) = api!(RedisModule_SubscribeToKeyspaceEvents) else {
        return Err("the server has no keyspace event subscriptions".into());
    };
    // SAFETY: as above; the callback reads only the event name and key the
    // server passes.
    let status = unsafe {
        keyspace(
            ctx.get_raw(),
            raw::REDISMODULE_NOTIFY_GENERIC,
            Some(on_keyspace_event::<H>),
        )
    };
    if status != raw::Status::Ok as c_int {
        return Err("cannot subscribe to keyspace events".into());
    }
    // SAFETY: as above; NOSELF skips commands this module runs itself.
    let registered = unsafe {
        filter(
            ctx.get_raw(),
            Some(on_command::<H>),
            raw::REDISMODULE_CMDFILTER_NOSELF as c_int,
        )
    };
    if registered.is_null() {
        return Err("cannot register the command filter".into());
    }
    Ok(())
}

/// Calls `f` with the bytes of each member of the plain (native) set at
/// `key`, each once; nothing when `key` holds no set. Reads through
/// `RedisModule_ScanKey` on a read-only handle of its own, which sees the
/// whole set in one pass when nothing changes it meanwhile (a command
/// runs alone).
pub fn for_each_set_member<F: FnMut(&[u8])>(ctx: &Context, key: &impl KeyName, mut f: F) {
    let (Some(open), Some(close), Some(key_type), Some(create), Some(destroy), Some(scan)) = (
        api!(RedisModule_OpenKey),
        api!(RedisModule_CloseKey),
        api!(RedisModule_KeyType),
        api!(RedisModule_ScanCursorCreate),
        api!(RedisModule_ScanCursorDestroy),
        api!(RedisModule_ScanKey),
    ) else {
        return;
    };
    /// The scan callback: hands each member's bytes to the closure.
    unsafe extern "C" fn each<F: FnMut(&[u8])>(
        _key: *mut raw::RedisModuleKey,
        member: *mut raw::RedisModuleString,
        _value: *mut raw::RedisModuleString,
        data: *mut c_void,
    ) {
        let Some(ptr_len) = api!(RedisModule_StringPtrLen) else {
            return;
        };
        let mut len = 0usize;
        // SAFETY: `member` is a live string the server passes for this
        // call; `data` is the `&mut F` given to ScanKey below, used by no
        // one else while ScanKey runs.
        unsafe {
            let p = ptr_len(member, &mut len);
            if p.is_null() {
                return;
            }
            let f = &mut *data.cast::<F>();
            let _ = catch_unwind(AssertUnwindSafe(|| {
                f(std::slice::from_raw_parts(p.cast::<u8>(), len));
            }));
        }
    }
    // SAFETY: `ctx` and `key` are live for the call; the handle and the
    // cursor are closed and destroyed before returning; `f` outlives every
    // ScanKey call that points at it.
    unsafe {
        let handle = open(ctx.get_raw(), key.raw(), raw::REDISMODULE_READ as c_int);
        if handle.is_null() {
            return;
        }
        if key_type(handle) == raw::REDISMODULE_KEYTYPE_SET as c_int {
            let cursor = create();
            let data = std::ptr::from_mut(&mut f).cast::<c_void>();
            while scan(handle, cursor, Some(each::<F>), data) != 0 {}
            destroy(cursor);
        }
        close(handle);
    }
}
