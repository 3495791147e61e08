//! The one home of `unsafe` in xset: calls out to the server's module API
//! that the `redis-module` crate does not wrap (or wraps at a cost), and the
//! `extern "C"` trampolines Redis calls in through, each behind a safe
//! function or trait. Nothing here knows what a command means, and nothing
//! here imports from the rest of the crate: the layers above hand in their
//! behaviour through the traits [`command::Dispatch`],
//! [`server::ServerHooks`] and [`types::ValueType`].
//!
//! The invariant every call keeps: an API pointer is copied out of its
//! `static mut` by [`api!`] and checked for presence before the call, so a
//! server that lacks a function gets a clean refusal at load
//! ([`missing_apis`]), never a null call.

#![allow(unsafe_code)]

/// Copies the module API pointer `RedisModule_<name>` out of the crate's
/// `static mut` (`None` when the server does not offer it).
macro_rules! api {
    ($name:ident) => {{
        // SAFETY: the pointers are written once, while the module loads,
        // before anything here runs; reading a copy is then race-free.
        unsafe { ::redis_module::raw::$name }
    }};
}

#[cfg(not(test))]
pub mod alloc;
pub mod command;
pub mod defrag;
pub mod key;
pub mod load;
pub mod propagate;
pub mod reply;
pub mod server;
pub mod stream;
pub mod types;

/// The module API functions xset calls (directly or through the
/// `redis-module` crate's wrappers) that every supported server offers; the
/// names of those this server lacks. An empty list means the module can
/// load; anything else must refuse the load, never degrade into a no-op.
pub fn missing_apis() -> Vec<&'static str> {
    macro_rules! required {
        ($($name:ident),* $(,)?) => {{
            let mut missing = Vec::new();
            $(
                if api!($name).is_none() {
                    missing.push(stringify!($name));
                }
            )*
            missing
        }};
    }
    required![
        RedisModule_Alloc,
        RedisModule_Calloc,
        RedisModule_Realloc,
        RedisModule_Free,
        RedisModule_CreateCommand,
        RedisModule_GetCommand,
        RedisModule_IsKeysPositionRequest,
        RedisModule_KeyAtPosWithFlags,
        RedisModule_StringToLongLong,
        RedisModule_ScanKey,
        RedisModule_ScanCursorCreate,
        RedisModule_ScanCursorDestroy,
        RedisModule_SetCommandInfo,
        RedisModule_SubscribeToServerEvent,
        RedisModule_SubscribeToKeyspaceEvents,
        RedisModule_RegisterCommandFilter,
        RedisModule_CommandFilterArgGet,
        RedisModule_StringPtrLen,
        RedisModule_Milliseconds,
        RedisModule_GetContextFlags,
        RedisModule_AvoidReplicaTraffic,
        RedisModule_GetSelectedDb,
        RedisModule_SelectDb,
        RedisModule_OpenKey,
        RedisModule_CloseKey,
        RedisModule_KeyType,
        RedisModule_DeleteKey,
        RedisModule_ModuleTypeGetType,
        RedisModule_ModuleTypeGetValue,
        RedisModule_ModuleTypeSetValue,
        RedisModule_CreateDataType,
        RedisModule_CreateString,
        RedisModule_CreateStringFromLongLong,
        RedisModule_FreeString,
        RedisModule_Replicate,
        RedisModule_ReplicateVerbatim,
        RedisModule_GetServerInfo,
        RedisModule_ServerInfoGetFieldUnsigned,
        RedisModule_FreeServerInfo,
        RedisModule_Call,
        RedisModule_CallReplyType,
        RedisModule_CallReplyLength,
        RedisModule_CallReplyArrayElement,
        RedisModule_FreeCallReply,
        RedisModule_NotifyKeyspaceEvent,
        RedisModule_PublishMessage,
        RedisModule_CreateTimer,
        RedisModule_Log,
        RedisModule_LogIOError,
        RedisModule_IsIOError,
        RedisModule_SetModuleOptions,
        RedisModule_SignalModifiedKey,
        RedisModule_SaveUnsigned,
        RedisModule_LoadUnsigned,
        RedisModule_SaveStringBuffer,
        RedisModule_LoadStringBuffer,
        RedisModule_EmitAOF,
        RedisModule_DigestAddStringBuffer,
        RedisModule_DigestAddLongLong,
        RedisModule_DigestEndSequence,
        RedisModule_GetKeyNameFromOptCtx,
        RedisModule_GetKeyNameFromIO,
        RedisModule_GetDbIdFromIO,
        RedisModule_GetDbIdFromOptCtx,
        RedisModule_ReplyWithArray,
        RedisModule_ReplyWithLongLong,
        RedisModule_ReplyWithStringBuffer,
        RedisModule_ReplyWithError,
        RedisModule_ReplyWithNull,
        RedisModule_RegisterBoolConfig,
        RedisModule_RegisterNumericConfig,
        RedisModule_LoadConfigs,
        RedisModule_InfoAddSection,
        RedisModule_InfoAddFieldCString,
        RedisModule_RegisterInfoFunc,
        RedisModule_GetDetachedThreadSafeContext,
    ]
}

/// The bytes of a server string, read through `RedisModule_StringPtrLen`;
/// empty for a null string or a server without that API (which
/// [`missing_apis`] refuses at load).
///
/// The slice borrows the string's buffer: the caller keeps `s` alive and
/// unchanged while it uses the slice (the server's own argument vector of a
/// call, or a string the caller holds).
pub fn string_bytes<'a>(s: *const redis_module::raw::RedisModuleString) -> &'a [u8] {
    let Some(ptr_len) = api!(RedisModule_StringPtrLen) else {
        return &[];
    };
    if s.is_null() {
        return &[];
    }
    let mut len = 0usize;
    // SAFETY: `s` is a live server string (the caller's promise above).
    let p = unsafe { ptr_len(s.cast_mut(), &mut len) };
    if p.is_null() {
        return &[];
    }
    // SAFETY: the server's buffer holds `len` bytes while `s` lives.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
}
