//! The `xset-type` data type: what a set does when the server saves, loads,
//! rewrites, copies, measures, digests or unlinks it. The encoding itself is
//! the core's ([`xset_core::encoding`]); the trampolines are in `ffi`.

use crate::config;
use crate::faults::{self, Fault};
use crate::ffi::defrag::Defrag;
use crate::ffi::types::{self, Aof, Digest, Rdb, ValueType};
use crate::stats;
use crate::tracking;
use redis_module::native_types::RedisType;
use std::ffi::CStr;
use xset_core::encoding::{self, ENCODING_VERSION, Sink, Source};
use xset_core::relocate::Relocate;
use xset_core::{MAX_DEADLINE_MS, NO_DEADLINE, XSet};

/// The name the server stores in RDB files; it must never change.
pub const TYPE_NAME: &str = "xset-type";

/// At most this many members per command in a rewritten AOF, as Redis does.
pub const AOF_BATCH: usize = 64;

/// The data type, registered by `lib.rs`.
pub static XSET_TYPE: RedisType =
    RedisType::new(TYPE_NAME, ENCODING_VERSION, types::methods::<XSet>());

impl Sink for Rdb {
    fn put_u64(&mut self, v: u64) {
        Rdb::put_u64(self, v);
    }
    fn put_bytes(&mut self, b: &[u8]) {
        if faults::hit(Fault::RdbSave) {
            panic!("fault injected in rdb_save");
        }
        Rdb::put_bytes(self, b);
    }
}

/// Calls `emit(command, args)` (args after the key) for commands that build
/// `set` from nothing, with its exact deadlines: `XSET.ADDEX key PXAT
/// MEMBERS n member deadline ...` in batches of [`AOF_BATCH`], plus
/// `XSET.PERSIST` for members without a deadline (added first with the
/// largest deadline, then persisted), after `XSET.NOTIFY key STREAM ...`
/// for a set with a delivery (which alone rebuilds an empty one). What an
/// AOF rewrite writes, and what re-sends a key whole to replicas.
pub fn rebuild_commands(set: &XSet, mut emit: impl FnMut(&CStr, &[&[u8]])) {
    if let Some(d) = set.delivery() {
        let maxlen = d.maxlen.map(|n| n.to_string());
        let mut args: Vec<&[u8]> = vec![b"STREAM", &d.stream];
        if let Some(n) = &maxlen {
            args.extend([&b"MAXLEN"[..], n.as_bytes()]);
        }
        emit(c"XSET.NOTIFY", &args);
    }
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
        emit(c"XSET.ADDEX", &args);
        let persistent: Vec<&[u8]> = batch
            .iter()
            .filter(|&&(_, d)| d == NO_DEADLINE)
            .map(|&(m, _)| m)
            .collect();
        if !persistent.is_empty() {
            let count = persistent.len().to_string();
            let mut args: Vec<&[u8]> = vec![b"MEMBERS", count.as_bytes()];
            args.extend(persistent);
            emit(c"XSET.PERSIST", &args);
        }
    }
}

impl Source for Rdb {
    type Bytes = redis_module::RedisBuffer;
    fn get_u64(&mut self) -> Option<u64> {
        Rdb::get_u64(self)
    }
    fn get_bytes(&mut self) -> Option<redis_module::RedisBuffer> {
        Rdb::get_bytes(self)
    }
}

impl ValueType for XSet {
    /// Loads a set and tracks its key for active expiry: keys arriving
    /// through RDB loading, `DEBUG RELOAD`, a full sync or `RESTORE` are
    /// tracked here, so the module need not follow every loaded key of
    /// every type (a key the server then drops, such as one already
    /// expired, leaves a stale entry, re-checked and dropped when due).
    fn rdb_load(io: &mut Rdb, encver: i32) -> Result<XSet, String> {
        let set = encoding::decode(encver, io, config::limits()).map_err(|e| e.to_string())?;
        if let Some((key, db)) = io.key_and_db() {
            let deadline_ms = set.next_deadline();
            tracking::with(|t| t.relocate(db, key, None, deadline_ms));
        }
        Ok(set)
    }

    fn rdb_save(&self, io: &mut Rdb) {
        encoding::encode(self, io);
    }

    fn rdb_save_unloadable(io: &mut Rdb) {
        encoding::encode_unloadable(io);
    }

    /// Rewrites a set with [`rebuild_commands`].
    fn aof_rewrite(&self, out: &mut Aof) {
        rebuild_commands(self, |cmd, args| {
            out.emit(cmd, args);
            if faults::hit(Fault::AofRewrite) {
                panic!("fault injected in aof_rewrite");
            }
        });
    }

    fn mem_usage(&self) -> usize {
        std::mem::size_of::<XSet>() + self.heap_bytes()
    }

    /// Feeds each member and its deadline as one element, so the digest
    /// does not depend on the order in which members are stored; a
    /// delivery is one element more.
    fn digest(&self, digest: &mut Digest) {
        if let Some(d) = self.delivery() {
            digest.add_bytes(b"\0delivery");
            digest.add_bytes(&d.stream);
            digest.add_i64(d.maxlen.map_or(-1, |n| n as i64));
            digest.end_element();
        }
        for (member, deadline_ms) in self.iter_all() {
            digest.add_bytes(member);
            digest.add_i64(deadline_ms as i64);
            digest.end_element();
        }
    }

    fn free_effort(&self) -> usize {
        self.len()
    }

    fn copy(&self) -> XSet {
        self.clone()
    }

    /// The active-expiry index forgets the key.
    fn unlinked(&self, db: i32, key: &[u8]) {
        let deadline_ms = self.next_deadline();
        tracking::with(|t| t.relocate(db, key, deadline_ms, None));
    }

    /// The core walks its buffers; `INFO xset` counts what moved.
    fn defrag(&mut self, d: &mut Defrag, cursor: u64) -> Option<u64> {
        let before = d.moved();
        let next = self.relocate(d, cursor);
        stats::record_defrag(d.moved() - before, next.is_none());
        next
    }
}

/// The module's global defrag pass: a slice of the active-expiry index
/// moves to fresh nodes (the sets themselves move through their type's
/// callback).
pub fn defrag_globals(d: &mut Defrag) {
    tracking::with(|t| t.relocate_some(d));
}

impl Relocate for Defrag {
    fn vec<T>(&mut self, v: &mut Vec<T>) {
        Defrag::vec(self, v);
    }
    fn slice<T>(&mut self, b: &mut Box<[T]>) {
        Defrag::slice(self, b);
    }
    fn boxed<T>(&mut self, b: &mut Box<T>) {
        Defrag::boxed(self, b);
    }
    fn should_stop(&mut self) -> bool {
        Defrag::should_stop(self)
    }
}
