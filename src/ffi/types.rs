//! A module data type as the server sees it: the table of type methods, the
//! `extern "C"` callbacks in it, and safe handles on what they are given
//! (an RDB stream, an AOF emitter, a digest). The layer above says what a
//! value does through [`ValueType`]; each callback catches panics, so a bug
//! there logs and degrades (a load fails, a digest is partial), it never
//! aborts the server.

use super::defrag::Defrag;
use super::server;
use redis_module::logging::{RedisLogLevel, log_io_error, log_warning};
use redis_module::{RedisBuffer, raw};
use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a value of a module data type does when the server calls it.
pub trait ValueType: Sized {
    /// Reads a value written by [`ValueType::rdb_save`] with encoding
    /// version `encver`; the error is logged and fails the load.
    fn rdb_load(io: &mut Rdb, encver: i32) -> Result<Self, String>;
    /// Writes the value to an RDB stream.
    fn rdb_save(&self, io: &mut Rdb);
    /// Writes, in place of a value that could not be written, what
    /// [`ValueType::rdb_load`] always refuses: a `DUMP` payload that
    /// `RESTORE` rejects.
    fn rdb_save_unloadable(io: &mut Rdb);
    /// Writes commands that rebuild the value into a rewritten AOF.
    fn aof_rewrite(&self, out: &mut Aof);
    /// Bytes the value uses, for `MEMORY USAGE`.
    fn mem_usage(&self) -> usize;
    /// Feeds the value to `DEBUG DIGEST`.
    fn digest(&self, digest: &mut Digest);
    /// How much work freeing it is (the server frees big values lazily).
    fn free_effort(&self) -> usize;
    /// A deep copy, for `COPY`.
    fn copy(&self) -> Self;
    /// The value leaves key `key` of database `db` (`DEL`, `UNLINK`,
    /// overwrite, key expiry, eviction, the source of `RENAME`/`MOVE`; not
    /// `FLUSHDB`). Main thread only.
    fn unlinked(&self, db: i32, key: &[u8]);
    /// Hands the value's buffers to `d` (active defrag), from `cursor` (0
    /// to start) until `d` says stop; returns where to resume, or `None`
    /// when done.
    fn defrag(&mut self, d: &mut Defrag, cursor: u64) -> Option<u64>;
}

fn guarded<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        log_warning(format!(
            "xset: a bug was caught in {what}; the server keeps running"
        ));
        fallback
    })
}

/// # Safety
/// `value` must be a pointer made by `Box::into_raw(Box<T>)` in this file
/// that the server still owns.
unsafe fn value_ref<'a, T>(value: *const c_void) -> &'a T {
    unsafe { &*value.cast::<T>() }
}

/// An RDB stream being written or read. While a value is saved for a
/// reply (see [`rdb_save`]) the writes are held in `held` and reach the
/// stream only once the whole value is written.
pub struct Rdb(*mut raw::RedisModuleIO, Option<Vec<Held>>);

/// A write held back from the stream.
enum Held {
    U64(u64),
    Bytes(Vec<u8>),
}

impl Rdb {
    /// Writes an unsigned 64-bit integer.
    pub fn put_u64(&mut self, v: u64) {
        match &mut self.1 {
            Some(held) => held.push(Held::U64(v)),
            None => raw::save_unsigned(self.0, v),
        }
    }
    /// Writes a byte string.
    pub fn put_bytes(&mut self, b: &[u8]) {
        match &mut self.1 {
            Some(held) => held.push(Held::Bytes(b.to_vec())),
            None => raw::save_slice(self.0, b),
        }
    }
    /// Writes what was held back to the stream.
    fn release(self) {
        let mut out = Rdb(self.0, None);
        for w in self.1.into_iter().flatten() {
            match w {
                Held::U64(v) => out.put_u64(v),
                Held::Bytes(b) => out.put_bytes(&b),
            }
        }
    }
    /// Reads an unsigned 64-bit integer; `None` on an IO error.
    pub fn get_u64(&mut self) -> Option<u64> {
        raw::load_unsigned(self.0).ok()
    }
    /// Reads a byte string; `None` on an IO error.
    pub fn get_bytes(&mut self) -> Option<RedisBuffer> {
        raw::load_string_buffer(self.0).ok()
    }

    /// While loading: the name and database of the key the value is read
    /// for (RDB loading, `DEBUG RELOAD`, a replica's full sync, `RESTORE`);
    /// `None` where the server does not say.
    pub fn key_and_db(&self) -> Option<(&[u8], i32)> {
        let (Some(name), Some(db)) = (
            api!(RedisModule_GetKeyNameFromIO),
            api!(RedisModule_GetDbIdFromIO),
        ) else {
            return None;
        };
        // SAFETY: the IO context is live for the callback, and so is the
        // key name string it holds.
        let (key, db) = unsafe { (name(self.0), db(self.0)) };
        if key.is_null() || db < 0 {
            return None;
        }
        Some((redis_module::RedisString::string_as_slice(key), db))
    }
}

/// The AOF emitter of one key during a rewrite.
pub struct Aof {
    io: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
}

impl Aof {
    /// Emits `cmd key args...`.
    pub fn emit(&mut self, cmd: &CStr, args: &[&[u8]]) {
        let (Some(create), Some(free), Some(emit)) = (
            api!(RedisModule_CreateString),
            api!(RedisModule_FreeString),
            api!(RedisModule_EmitAOF),
        ) else {
            return;
        };
        // SAFETY: strings created with a NULL context are freed with a NULL
        // context after the call; the format `sv` matches the key string
        // and the (array, length) pair.
        unsafe {
            let mut argv: Vec<*mut raw::RedisModuleString> = args
                .iter()
                .map(|a| create(std::ptr::null_mut(), a.as_ptr().cast(), a.len()))
                .collect();
            emit(
                self.io,
                cmd.as_ptr(),
                c"sv".as_ptr(),
                self.key,
                argv.as_mut_ptr(),
                argv.len(),
            );
            for s in argv {
                free(std::ptr::null_mut(), s);
            }
        }
    }
}

/// The `DEBUG DIGEST` accumulator.
pub struct Digest(*mut raw::RedisModuleDigest);

impl Digest {
    /// Adds `bytes` to the current element.
    pub fn add_bytes(&mut self, bytes: &[u8]) {
        if let Some(f) = api!(RedisModule_DigestAddStringBuffer) {
            // SAFETY: the digest is live for the callback; bytes are read.
            unsafe { f(self.0, bytes.as_ptr().cast(), bytes.len()) };
        }
    }
    /// Adds `v` to the current element.
    pub fn add_i64(&mut self, v: i64) {
        if let Some(f) = api!(RedisModule_DigestAddLongLong) {
            // SAFETY: the digest is live for the callback.
            unsafe { f(self.0, v) };
        }
    }
    /// Ends the current element: elements are unordered.
    pub fn end_element(&mut self) {
        if let Some(f) = api!(RedisModule_DigestEndSequence) {
            // SAFETY: the digest is live for the callback.
            unsafe { f(self.0) };
        }
    }
}

unsafe extern "C" fn rdb_load<T: ValueType>(
    rdb: *mut raw::RedisModuleIO,
    encver: i32,
) -> *mut c_void {
    guarded("rdb_load", std::ptr::null_mut(), || {
        match T::rdb_load(&mut Rdb(rdb, None), encver) {
            Ok(v) => Box::into_raw(Box::new(v)).cast::<c_void>(),
            Err(e) => {
                log_io_error(rdb, RedisLogLevel::Warning, &format!("xset: {e}"));
                std::ptr::null_mut()
            }
        }
    })
}

/// Runs a callback that writes a stream (RDB, AOF) whose reader must find
/// every value whole. A panic there has left a value half written, and the
/// server has no way to be told the save failed: so the process stops
/// before the stream is used. In the forked child that saves (`BGSAVE`,
/// `BGREWRITEAOF`, a full sync) this fails that save and the server goes
/// on; in the server itself (`SAVE`, `SHUTDOWN`, `DEBUG RELOAD`) the
/// half-written temporary file is never renamed over the last good one.
fn whole_or_abort(what: &str, f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        log_warning(format!(
            "xset: a bug was caught in {what} after part of a value was written; \
             stopping process {} so that no file that cannot load is written",
            std::process::id()
        ));
        std::process::abort();
    }
}

/// Writes a value to an RDB stream. A value saved for a reply (`DUMP`,
/// `MIGRATE`, `DEBUG OBJECT`: see [`server::saving_for_a_reply`]) is
/// written whole into memory first: a panic there fails that one command
/// (its payload is one `RESTORE` refuses, the key stays as it was) and the
/// server goes on. Any other save writes a file, and a panic stops the
/// process ([`whole_or_abort`]).
unsafe extern "C" fn rdb_save<T: ValueType>(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: the server passes a value of this type.
    let v = unsafe { value_ref::<T>(value) };
    if !server::saving_for_a_reply() {
        whole_or_abort("rdb_save", || v.rdb_save(&mut Rdb(rdb, None)));
        return;
    }
    let mut held = Rdb(rdb, Some(Vec::new()));
    match catch_unwind(AssertUnwindSafe(|| v.rdb_save(&mut held))) {
        Ok(()) => held.release(),
        Err(_) => {
            log_warning(
                "xset: a bug was caught while serializing a value for DUMP, MIGRATE or \
                 DEBUG OBJECT; that command's payload is one RESTORE refuses, the key is \
                 unchanged and the server keeps running",
            );
            T::rdb_save_unloadable(&mut Rdb(rdb, None));
        }
    }
}

unsafe extern "C" fn aof_rewrite<T: ValueType>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: the server passes a value of this type.
    let v = unsafe { value_ref::<T>(value) };
    whole_or_abort("aof_rewrite", || v.aof_rewrite(&mut Aof { io: aof, key }));
}

unsafe extern "C" fn mem_usage<T: ValueType>(value: *const c_void) -> usize {
    // SAFETY: the server passes a value of this type.
    let v = unsafe { value_ref::<T>(value) };
    guarded("mem_usage", 0, || v.mem_usage())
}

unsafe extern "C" fn digest<T: ValueType>(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: the server passes a value of this type.
    let v = unsafe { value_ref::<T>(value) };
    guarded("digest", (), || v.digest(&mut Digest(md)));
}

unsafe extern "C" fn free<T: ValueType>(value: *mut c_void) {
    if value.is_null() {
        return;
    }
    // SAFETY: the server hands back ownership of a value made here.
    let v = unsafe { Box::from_raw(value.cast::<T>()) };
    guarded("free", (), move || drop(v));
}

unsafe extern "C" fn copy<T: ValueType>(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: the server passes a value of this type.
    let v = unsafe { value_ref::<T>(value) };
    guarded("copy", std::ptr::null_mut(), || {
        Box::into_raw(Box::new(v.copy())).cast::<c_void>()
    })
}

/// The server's defrag callback: moves the value's own block, then walks
/// its buffers. A big value (its `free_effort` above the server's
/// `active-defrag-max-scan-fields`) is walked in time slices: a walk that
/// stops leaves its cursor and returns 1, and the server calls again.
unsafe extern "C" fn defrag<T: ValueType>(
    ctx: *mut raw::RedisModuleDefragCtx,
    _key: *mut raw::RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    // SAFETY: the server passes its context and its pointer to a value of
    // this type, a block of its allocator that the key owns.
    let mut d = unsafe { Defrag::new(ctx) };
    unsafe { d.value(value) };
    let cursor = d.cursor();
    // SAFETY: `*value` is the (possibly moved) value, borrowed only here.
    let v = unsafe { &mut *(*value).cast::<T>() };
    let next = guarded("defrag", None, || v.defrag(&mut d, cursor.unwrap_or(0)));
    match next {
        Some(c) if cursor.is_some() => c_int::from(d.set_cursor(c)),
        _ => 0,
    }
}

unsafe extern "C" fn free_effort<T: ValueType>(
    _key: *mut raw::RedisModuleString,
    value: *const c_void,
) -> usize {
    // SAFETY: the server passes a value of this type.
    let v = unsafe { value_ref::<T>(value) };
    guarded("free_effort", 0, || v.free_effort())
}

unsafe extern "C" fn unlink2<T: ValueType>(
    ctx: *mut raw::RedisModuleKeyOptCtx,
    value: *const c_void,
) {
    // SAFETY: the server passes a value of this type.
    let v = unsafe { value_ref::<T>(value) };
    let (Some(key_name), Some(db_id)) = (
        api!(RedisModule_GetKeyNameFromOptCtx),
        api!(RedisModule_GetDbIdFromOptCtx),
    ) else {
        return;
    };
    // SAFETY: the option context is live; its key name outlives the call.
    let (key, db) = unsafe { (key_name(ctx), db_id(ctx)) };
    if key.is_null() {
        return;
    }
    let key = redis_module::RedisString::string_as_slice(key);
    guarded("unlink", (), || v.unlinked(db, key));
}

/// The type-method table for `T`.
pub const fn methods<T: ValueType>() -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load::<T>),
        rdb_save: Some(rdb_save::<T>),
        aof_rewrite: Some(aof_rewrite::<T>),
        mem_usage: Some(mem_usage::<T>),
        digest: Some(digest::<T>),
        free: Some(free::<T>),
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort::<T>),
        unlink: None,
        copy: Some(copy::<T>),
        defrag: Some(defrag::<T>),
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: Some(unlink2::<T>),
    }
}
