//! The `xset-type` data type's callbacks: RDB save/load, AOF rewrite, free,
//! memory usage, digest, copy and free effort. Each callback catches panics:
//! a bug here logs and degrades (a load fails, a digest is partial), it never
//! aborts the server.

use crate::xset::encoding::{self, ENCODING_VERSION, Sink, Source};
use crate::xset::{MAX_DEADLINE_MS, NO_DEADLINE, XSet};
use redis_module::logging::{RedisLogLevel, log_io_error, log_warning};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::{CString, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The name Redis stores in RDB files; it must never change.
pub const TYPE_NAME: &str = "xset-type";

/// At most this many members per command in a rewritten AOF, as Redis does.
pub const AOF_BATCH: usize = 64;

pub static XSET_TYPE: RedisType = RedisType::new(
    TYPE_NAME,
    ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        mem_usage: Some(mem_usage),
        digest: Some(digest),
        free: Some(free),
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort),
        unlink: None,
        copy: Some(copy),
        defrag: None,
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: Some(unlink2),
    },
);

fn guarded<T>(what: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        log_warning(format!(
            "xset: a bug was caught in {what}; the server keeps running"
        ));
        fallback
    })
}

/// # Safety
/// `value` must be a pointer produced by `Box::into_raw(Box<XSet>)` that
/// Redis still owns.
unsafe fn set_ref<'a>(value: *const c_void) -> &'a XSet {
    unsafe { &*value.cast::<XSet>() }
}

struct RdbIo(*mut raw::RedisModuleIO);

impl Sink for RdbIo {
    fn put_u64(&mut self, v: u64) {
        raw::save_unsigned(self.0, v);
    }
    fn put_bytes(&mut self, b: &[u8]) {
        raw::save_slice(self.0, b);
    }
}

impl Source for RdbIo {
    type Bytes = redis_module::RedisBuffer;
    fn get_u64(&mut self) -> Option<u64> {
        raw::load_unsigned(self.0).ok()
    }
    fn get_bytes(&mut self) -> Option<redis_module::RedisBuffer> {
        raw::load_string_buffer(self.0).ok()
    }
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: i32) -> *mut c_void {
    guarded("rdb_load", std::ptr::null_mut(), || match encoding::decode(
        encver,
        &mut RdbIo(rdb),
        crate::commands::limits(),
    ) {
        Ok(set) => Box::into_raw(Box::new(set)).cast::<c_void>(),
        Err(e) => {
            log_io_error(rdb, RedisLogLevel::Warning, &format!("xset: {e}"));
            std::ptr::null_mut()
        }
    })
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes a value of this type.
    let set = unsafe { set_ref(value) };
    guarded("rdb_save", (), || encoding::encode(set, &mut RdbIo(rdb)));
}

/// Emits one command; every argument becomes a RedisModuleString that is
/// freed right after.
fn emit(aof: *mut raw::RedisModuleIO, cmd: &str, key: *mut raw::RedisModuleString, args: &[&[u8]]) {
    // SAFETY: presence of each pointer is checked; strings created with a
    // NULL context are freed with a NULL context after the call.
    let (create, free_str, emit_aof) = unsafe {
        (
            raw::RedisModule_CreateString,
            raw::RedisModule_FreeString,
            raw::RedisModule_EmitAOF,
        )
    };
    let (Some(create), Some(free_str), Some(emit_aof), Ok(cmd)) =
        (create, free_str, emit_aof, CString::new(cmd))
    else {
        return;
    };
    let mut argv: Vec<*mut raw::RedisModuleString> = args
        .iter()
        .map(|a| unsafe { create(std::ptr::null_mut(), a.as_ptr().cast(), a.len()) })
        .collect();
    unsafe {
        emit_aof(
            aof,
            cmd.as_ptr(),
            c"sv".as_ptr(),
            key,
            argv.as_mut_ptr(),
            argv.len(),
        );
    }
    for s in argv {
        unsafe { free_str(std::ptr::null_mut(), s) };
    }
}

/// Rewrites a set as `XSET.ADD key PXAT MEMBERS n member deadline ...` in
/// batches of [`AOF_BATCH`], plus `XSET.PERSIST` for members without a
/// deadline (added first with the largest deadline, then persisted).
unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis passes a value of this type.
    let set = unsafe { set_ref(value) };
    guarded("aof_rewrite", (), || {
        let entries: Vec<(&[u8], u64)> = set.iter_all().collect();
        for batch in entries.chunks(AOF_BATCH) {
            let numbers: Vec<Vec<u8>> = batch
                .iter()
                .map(|&(_, d)| d.min(MAX_DEADLINE_MS).to_string().into_bytes())
                .collect();
            let count = batch.len().to_string();
            let mut args: Vec<&[u8]> = vec![b"PXAT", b"MEMBERS", count.as_bytes()];
            for (&(m, _), d) in batch.iter().zip(&numbers) {
                args.push(m);
                args.push(d);
            }
            emit(aof, "XSET.ADD", key, &args);
            let persistent: Vec<&[u8]> = batch
                .iter()
                .filter(|&&(_, d)| d == NO_DEADLINE)
                .map(|&(m, _)| m)
                .collect();
            if !persistent.is_empty() {
                let count = persistent.len().to_string();
                let mut args: Vec<&[u8]> = vec![b"MEMBERS", count.as_bytes()];
                args.extend(persistent);
                emit(aof, "XSET.PERSIST", key, &args);
            }
        }
    });
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // SAFETY: Redis passes a value of this type.
    let set = unsafe { set_ref(value) };
    guarded("mem_usage", 0, || {
        std::mem::size_of::<XSet>() + set.heap_bytes()
    })
}

/// Feeds each member and its deadline as one sequence, so the digest does
/// not depend on the order in which members are stored.
unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: Redis passes a value of this type and a live digest context.
    let set = unsafe { set_ref(value) };
    let fns = unsafe {
        (
            raw::RedisModule_DigestAddStringBuffer,
            raw::RedisModule_DigestAddLongLong,
            raw::RedisModule_DigestEndSequence,
        )
    };
    let (Some(add_buf), Some(add_ll), Some(end)) = fns else {
        return;
    };
    guarded("digest", (), || {
        for (member, deadline_ms) in set.iter_all() {
            unsafe {
                add_buf(md, member.as_ptr().cast(), member.len());
                add_ll(md, deadline_ms as i64);
                end(md);
            }
        }
    });
}

unsafe extern "C" fn free(value: *mut c_void) {
    if value.is_null() {
        return;
    }
    // SAFETY: Redis hands back ownership of a value this module created.
    let set = unsafe { Box::from_raw(value.cast::<XSet>()) };
    guarded("free", (), move || drop(set));
}

unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: Redis passes a value of this type.
    let set = unsafe { set_ref(value) };
    guarded("copy", std::ptr::null_mut(), || {
        Box::into_raw(Box::new(set.clone())).cast::<c_void>()
    })
}

unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    // SAFETY: Redis passes a value of this type.
    let set = unsafe { set_ref(value) };
    guarded("free_effort", 0, || set.len())
}

/// Called on the main thread when a value leaves its key (DEL, UNLINK,
/// overwrite, key expiry, eviction, the source of RENAME and MOVE): the
/// active-expiry index forgets the key. Not called on FLUSHDB.
unsafe extern "C" fn unlink2(ctx: *mut raw::RedisModuleKeyOptCtx, value: *const c_void) {
    // SAFETY: Redis passes a value of this type.
    let set = unsafe { set_ref(value) };
    // SAFETY: presence checked; Redis passes a live option context whose key
    // name string outlives this call.
    let fns = unsafe {
        (
            raw::RedisModule_GetKeyNameFromOptCtx,
            raw::RedisModule_GetDbIdFromOptCtx,
        )
    };
    let (Some(key_name), Some(db_id)) = fns else {
        return;
    };
    let (key, db) = unsafe { (key_name(ctx), db_id(ctx)) };
    if key.is_null() {
        return;
    }
    let key = redis_module::RedisString::string_as_slice(key);
    guarded("unlink", (), || {
        crate::expiry::forget(db, key, set.next_deadline())
    });
}
