//! The module's entry point, `RedisModule_OnLoad`, made by [`entry_point!`]
//! from a [`Module`].
//!
//! The invariant: nothing calls an optional module API before
//! [`missing_apis`](super::missing_apis) has found it present. The first
//! thing `on_load` does after `RedisModule_Init` is that check, so a server
//! too old for the module (Redis 6.2 lacks the 7.0 config API) gets one log
//! line naming what it lacks and a refused load, never a null call or an
//! abort. Everything else (the data type, commands, configs, hooks) is the
//! module's own `load`, which runs only after the check, under a panic
//! guard.

use redis_module::{Context, InfoContext, raw};
use std::ffi::{CStr, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a module does while the server loads it.
pub trait Module {
    /// The module's name, as `MODULE LIST` shows it.
    const NAME: &'static CStr;
    /// The module's version, as `MODULE LIST` shows it.
    const VERSION: c_int;
    /// Registers everything, given the module arguments; an error refuses
    /// the load and is logged. Runs only on a server that has every API of
    /// [`missing_apis`](super::missing_apis).
    fn load(ctx: &Context, args: &[&[u8]]) -> Result<(), String>;
    /// Fills the module's `INFO` section.
    fn info(ctx: &InfoContext, for_crash_report: bool);
}

/// The oldest server line the module supports, for the refusal message.
const OLDEST: &str = "Redis 7.0";

/// `RedisModule_OnLoad` for `M`: initialises the API, refuses a server that
/// lacks any API the module calls, then runs `M::load`.
///
/// # Safety
/// Called by the server only, with the load context and the module
/// arguments (`argv` holds `argc` strings alive for the call).
pub unsafe fn on_load<M: Module>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    const ERR: c_int = raw::Status::Err as c_int;
    // SAFETY: the server calls OnLoad with a live context; the name is a
    // NUL-terminated static string. Nothing is allocated before this: the
    // allocator goes through the API this fills in.
    let init = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            M::NAME.as_ptr(),
            M::VERSION,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    if init == ERR {
        return ERR;
    }
    let missing = super::missing_apis();
    if !missing.is_empty() {
        log_raw(
            ctx,
            &format!(
                "xset needs {OLDEST} or newer: this server lacks {}; the module is not loaded",
                missing.join(", ")
            ),
        );
        return ERR;
    }
    let context = Context::new(ctx);
    // Logging without a context (from type callbacks) goes through this.
    let _ = redis_module::MODULE_CONTEXT.set_context(&context);
    let ptrs: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        // SAFETY: `argv` holds `argc` strings alive for the call.
        Ok(n) if n > 0 && !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, n) },
        _ => &[],
    };
    let args: Vec<&[u8]> = ptrs.iter().map(|&p| super::string_bytes(p)).collect();
    let loaded = catch_unwind(AssertUnwindSafe(|| M::load(&context, &args)))
        .unwrap_or_else(|_| Err("a bug was caught while loading".into()));
    if let Err(e) = loaded {
        context.log_warning(&format!("xset: refusing to load: {e}"));
        return ERR;
    }
    if let Some(register) = api!(RedisModule_RegisterInfoFunc) {
        // SAFETY: the load context is live; the callback lives as long as
        // the library.
        unsafe { register(ctx, Some(info::<M>)) };
    }
    raw::Status::Ok as c_int
}

/// Logs through `RedisModule_Log`, the one logging API every server has
/// (used before the API check has passed).
fn log_raw(ctx: *mut raw::RedisModuleCtx, message: &str) {
    let Some(log) = api!(RedisModule_Log) else {
        return;
    };
    let Ok(message) = std::ffi::CString::new(message.replace('\0', " ")) else {
        return;
    };
    // SAFETY: a live context, NUL-terminated level, format and argument.
    unsafe { log(ctx, c"warning".as_ptr(), c"%s".as_ptr(), message.as_ptr()) };
}

extern "C" fn info<M: Module>(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    let context = InfoContext::new(ctx);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        M::info(&context, for_crash_report != 0)
    }));
}

/// Defines `RedisModule_OnLoad` for the [`Module`] `$module`.
#[macro_export]
macro_rules! entry_point {
    ($module:ty) => {
        /// The server's entry point into the module.
        ///
        /// # Safety
        /// Called by the server only, as `RedisModule_OnLoad`.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn RedisModule_OnLoad(
            ctx: *mut ::redis_module::raw::RedisModuleCtx,
            argv: *mut *mut ::redis_module::raw::RedisModuleString,
            argc: ::std::ffi::c_int,
        ) -> ::std::ffi::c_int {
            // SAFETY: the server calls this as documented for OnLoad.
            unsafe { $crate::ffi::load::on_load::<$module>(ctx, argv, argc) }
        }
    };
}
