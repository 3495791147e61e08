//! Key names and open keys, through the module API itself.
//!
//! A command's arguments are the server's own strings, alive for the whole
//! call: [`CmdArg`] borrows one without retaining it (no reference count is
//! touched, so nothing must be released), and reads its bytes with
//! `RedisModule_StringPtrLen`. [`Key`] opens a key by any [`KeyName`] (an
//! argument or a string the module holds) with `RedisModule_OpenKey`, which
//! keeps what it needs of the name, and closes it on drop.

use redis_module::native_types::RedisType;
use redis_module::{Context, KeyType, RedisError, RedisString, raw};
use std::ffi::{c_int, c_void};

/// Something that names a key: a server string.
pub trait KeyName {
    /// The server string; alive at least as long as `self`.
    fn raw(&self) -> *mut raw::RedisModuleString;
    /// Its bytes.
    fn as_slice(&self) -> &[u8] {
        super::string_bytes(self.raw())
    }
}

impl KeyName for RedisString {
    fn raw(&self) -> *mut raw::RedisModuleString {
        self.inner
    }
}

/// One argument of the running command: the server's string, borrowed for
/// the call (the server owns it and frees it after the call returns). Only
/// ever seen behind a reference into the call's argument slice ([`args`]),
/// which cannot outlive the call.
#[repr(transparent)]
pub struct CmdArg(*mut raw::RedisModuleString);

impl CmdArg {
    /// The argument's bytes, read through `RedisModule_StringPtrLen`.
    pub fn as_slice(&self) -> &[u8] {
        super::string_bytes(self.0)
    }
}

impl KeyName for CmdArg {
    fn raw(&self) -> *mut raw::RedisModuleString {
        self.0
    }
}

/// The arguments of a call as [`CmdArg`]s: the same pointers, not copied.
///
/// # Safety
/// `argv` must hold strings that stay alive and unchanged for `'a`: the
/// server's argument vector of the call that is running.
pub unsafe fn args(argv: &[*mut raw::RedisModuleString]) -> &[CmdArg] {
    // SAFETY: `CmdArg` is `repr(transparent)` over the pointer, so the two
    // slices have the same layout; the strings live as long as `argv` (the
    // caller's promise).
    unsafe { &*(std::ptr::from_ref(argv) as *const [CmdArg]) }
}

/// The error of a write the server refused on an open key (one opened for
/// reading, which the module never writes through).
const REFUSED: &str = "ERR xset: the server refused a write to the key";

/// An open key, closed on drop.
pub struct Key {
    handle: *mut raw::RedisModuleKey,
}

impl Key {
    /// Opens `name` in the context's selected database for reading, or for
    /// writing too; `flags` are `REDISMODULE_OPEN_KEY_*` flags.
    pub fn open(ctx: &Context, name: &impl KeyName, write: bool, flags: u32) -> Key {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        } | flags;
        let handle = match api!(RedisModule_OpenKey) {
            // SAFETY: a live context and a live key name; the server keeps
            // its own reference to the name while the key is open.
            Some(open) => unsafe { open(ctx.get_raw(), name.raw(), mode as c_int) }.cast(),
            None => std::ptr::null_mut(),
        };
        Key { handle }
    }

    /// The type of the key's value ([`KeyType::Empty`] for a missing key).
    pub fn key_type(&self) -> KeyType {
        match api!(RedisModule_KeyType) {
            // SAFETY: an open key (a null handle is a missing key, which
            // the server answers as empty).
            Some(f) if !self.handle.is_null() => unsafe { f(self.handle) }.into(),
            _ => KeyType::Empty,
        }
    }

    /// Whether the key is missing.
    pub fn is_empty(&self) -> bool {
        self.key_type() == KeyType::Empty
    }

    fn module_type(&self) -> *mut raw::RedisModuleType {
        match api!(RedisModule_ModuleTypeGetType) {
            // SAFETY: an open key.
            Some(f) if !self.handle.is_null() => unsafe { f(self.handle) },
            _ => std::ptr::null_mut(),
        }
    }

    /// The value of type `T` registered as `ty`; `None` for a missing key.
    ///
    /// # Errors
    /// `WRONGTYPE` when the key holds another type.
    pub fn get_value<T>(&self, ty: &RedisType) -> Result<Option<&T>, RedisError> {
        Ok(self.get_value_mut(ty)?.map(|v| &*v))
    }

    /// As [`Key::get_value`], to change the value in place (a key opened
    /// for writing).
    ///
    /// # Errors
    /// `WRONGTYPE` when the key holds another type.
    #[allow(clippy::mut_from_ref)]
    pub fn get_value_mut<T>(&self, ty: &RedisType) -> Result<Option<&mut T>, RedisError> {
        // The module type is null for a missing key and for any other type
        // than a module's: the key's type is asked only when it is not ours.
        let ours = *ty.raw_type.borrow();
        if ours.is_null() || self.module_type() != ours {
            return if self.is_empty() {
                Ok(None)
            } else {
                Err(RedisError::WrongType)
            };
        }
        let Some(get) = api!(RedisModule_ModuleTypeGetValue) else {
            return Ok(None);
        };
        // SAFETY: the key holds a value of `ty`, which this module made
        // from a `Box<T>`; it lives while the key is open and unchanged.
        let value = unsafe { get(self.handle) }.cast::<T>();
        // SAFETY: as above.
        Ok(unsafe { value.as_mut() })
    }

    /// Stores `value` as the key's value of type `ty`, replacing what it
    /// held.
    ///
    /// # Errors
    /// `WRONGTYPE` when the key holds another type; an error when the
    /// server refused the value (a key opened for reading).
    pub fn set_value<T>(&self, ty: &RedisType, value: T) -> Result<(), RedisError> {
        if !self.is_empty() && self.module_type() != *ty.raw_type.borrow() {
            return Err(RedisError::WrongType);
        }
        let Some(set) = api!(RedisModule_ModuleTypeSetValue) else {
            return Err(RedisError::Str(REFUSED));
        };
        let boxed = Box::into_raw(Box::new(value));
        // SAFETY: an open key and the module's registered type; the server
        // owns the value from here on, and frees it through the type.
        let status = unsafe { set(self.handle, *ty.raw_type.borrow(), boxed.cast::<c_void>()) };
        if status != raw::Status::Ok as c_int {
            // SAFETY: the server refused it, so the box is still ours.
            drop(unsafe { Box::from_raw(boxed) });
            return Err(RedisError::Str(REFUSED));
        }
        Ok(())
    }

    /// Deletes the key (its value is freed through its type).
    ///
    /// # Errors
    /// When the key is not open for writing.
    pub fn delete(&self) -> Result<(), RedisError> {
        let Some(f) = api!(RedisModule_DeleteKey) else {
            return Err(RedisError::Str(REFUSED));
        };
        // SAFETY: an open key (the server refuses a missing or read-only
        // one with an error status).
        if self.handle.is_null() || unsafe { f(self.handle) } != raw::Status::Ok as c_int {
            return Err(RedisError::Str(REFUSED));
        }
        Ok(())
    }
}

impl Key {
    /// The server's handle (null for a key the server would not open).
    pub(super) fn raw_handle(&self) -> *mut raw::RedisModuleKey {
        self.handle
    }

    /// Appends an entry of `fields` (name, value, ...) to the stream at
    /// this key, opened for writing, with an ID the server makes, and
    /// deletes it at once: the key then holds an empty stream (as `XGROUP
    /// CREATE ... MKSTREAM` makes one), whose last ID is returned as
    /// `(ms, seq)`. `None` if the key is not missing or the server refused.
    pub fn create_empty_stream(&self, fields: &[&[u8]]) -> Option<(u64, u64)> {
        let (Some(add), Some(create), Some(free)) = (
            api!(RedisModule_StreamAdd),
            api!(RedisModule_CreateString),
            api!(RedisModule_FreeString),
        ) else {
            return None;
        };
        if self.handle.is_null() || !self.is_empty() {
            return None;
        }
        let mut strings: Vec<*mut raw::RedisModuleString> = fields
            .iter()
            // SAFETY: a NULL context makes a string the caller frees; the
            // bytes are copied.
            .map(|f| unsafe { create(std::ptr::null_mut(), f.as_ptr().cast(), f.len()) })
            .collect();
        let mut id = raw::RedisModuleStreamID { ms: 0, seq: 0 };
        // SAFETY: an open key, `fields.len() / 2` pairs of live strings,
        // which the server copies into the stream.
        let status = unsafe {
            add(
                self.handle,
                raw::REDISMODULE_STREAM_ADD_AUTOID as c_int,
                &mut id,
                strings.as_mut_ptr(),
                (fields.len() / 2) as i64,
            )
        };
        for s in strings {
            // SAFETY: made above with a NULL context, freed once.
            unsafe { free(std::ptr::null_mut(), s) };
        }
        if status != raw::Status::Ok as c_int {
            return None;
        }
        self.stream_trim(0, false);
        Some((id.ms, id.seq))
    }

    /// Trims the stream at this key, opened for writing, to `maxlen`
    /// entries, or with `approx` to about that many as `XTRIM key MAXLEN ~
    /// maxlen` does (whole nodes only); returns its length after, if
    /// anything was trimmed.
    pub fn stream_trim(&self, maxlen: u64, approx: bool) -> Option<u64> {
        let (Some(trim), Some(length)) = (
            api!(RedisModule_StreamTrimByLength),
            api!(RedisModule_ValueLength),
        ) else {
            return None;
        };
        if self.handle.is_null() || self.key_type() != KeyType::Stream {
            return None;
        }
        let maxlen = i64::try_from(maxlen).unwrap_or(i64::MAX);
        let flags = if approx {
            raw::REDISMODULE_STREAM_TRIM_APPROX as c_int
        } else {
            0
        };
        // SAFETY: an open stream key.
        let trimmed = unsafe { trim(self.handle, flags, maxlen) };
        if trimmed <= 0 {
            return None;
        }
        // SAFETY: an open key.
        Some(unsafe { length(self.handle) } as u64)
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if let Some(close) = api!(RedisModule_CloseKey)
            && !self.handle.is_null()
        {
            // SAFETY: the key was opened here and is closed once.
            unsafe { close(self.handle) };
        }
    }
}
