//! xset: a Redis module adding a set whose members each expire on their own.
//!
//! This file only registers things, and only from their one declaration:
//! the data type ([`datatype`]), every command of [`commands::all`] with
//! its flags, arity, key specs, docs and ACL categories, the server hooks
//! ([`hooks`]) and the configuration ([`config`]).
//!
//! The layers, each importing only those below it:
//! `lib` → `hooks` → `commands`, `expiry` → `keyspace` → `datatype`,
//! `tracking` → `clock`, `config`, `stats`, `errors`, `faults` → `ffi`; all
//! of them may use the pure core, the `xset-core` crate (`core/`), which
//! sees none of them. `unsafe` is allowed in `ffi` only.

#![deny(unsafe_code)]

mod clock;
mod commands;
mod config;
mod datatype;
mod errors;
mod expiry;
mod faults;
mod ffi;
mod hooks;
mod keyspace;
mod stats;
mod tracking;

use datatype::XSET_TYPE;
use redis_module::{Context, InfoContext};
use std::ffi::{CStr, c_int};

/// Rust allocations go through the server's allocator so that `INFO
/// memory`, `MEMORY USAGE` and `maxmemory` see them; unit tests run
/// without a server and use the system allocator.
#[cfg(not(test))]
mod allocator {
    pub type Chosen = crate::ffi::alloc::ServerAlloc;
    pub const CHOSEN: Chosen = crate::ffi::alloc::ServerAlloc;
}
#[cfg(test)]
mod allocator {
    pub type Chosen = std::alloc::System;
    pub const CHOSEN: Chosen = std::alloc::System;
}

/// The module's own ACL category, `@xset`, where the server can add one.
const ACL_CATEGORY: &str = "xset";

/// Registers every command of [`commands::all`]: the command, its info and docs,
/// and its ACL categories where the server has them.
fn register_commands(ctx: &Context) -> Result<(), String> {
    use ffi::command::{self as c, has_acl_categories};
    let own_category = has_acl_categories() && c::add_acl_category(ctx, ACL_CATEGORY);
    for (index, spec) in commands::all().enumerate() {
        let callback = c::callback::<hooks::Commands>(index)
            .ok_or_else(|| format!("too many commands: {} has no callback", spec.name))?;
        // Counted or several keys reach cluster routing only through the
        // callback.
        let flags = if c::needs_keys_callback(spec.keys) {
            format!("{} getkeys-api", spec.flags)
        } else {
            spec.flags.to_string()
        };
        c::create_command(ctx, spec.name, &flags, spec.key_range(), callback)?;
        c::set_command_info(ctx, &spec.info())?;
        if has_acl_categories() {
            let categories = if own_category {
                format!("{} {ACL_CATEGORY}", spec.acl)
            } else {
                spec.acl.to_string()
            };
            c::set_acl_categories(ctx, spec.name, &categories)?;
        }
    }
    Ok(())
}

/// `Cargo.toml`'s version as `MODULE LIST` shows it: major·10000 +
/// minor·100 + patch, as Redis's own modules encode theirs.
const VERSION: c_int = number(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
    + number(env!("CARGO_PKG_VERSION_MINOR")) * 100
    + number(env!("CARGO_PKG_VERSION_PATCH"));

/// The decimal number `digits` spells (a version field).
const fn number(digits: &str) -> c_int {
    let bytes = digits.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < bytes.len() {
        n = n * 10 + (bytes[i] - b'0') as c_int;
        i += 1;
    }
    n
}

/// xset as the server loads it ([`ffi::load`] checks the server first).
struct Xset;

impl ffi::load::Module for Xset {
    const NAME: &'static CStr = c"xset";
    const VERSION: c_int = VERSION;

    fn load(ctx: &Context, args: &[&[u8]]) -> Result<(), String> {
        config::apply_module_args(args)?;
        XSET_TYPE
            .create_data_type(ctx.ctx)
            .map_err(|e| format!("cannot create the data type: {e}"))?;
        config::register(ctx);
        ffi::server::load_configs(ctx);
        ffi::server::set_module_options(ctx);
        // Subscriptions come last: nothing after them may refuse the load.
        ffi::defrag::register_global(ctx, datatype::defrag_globals);
        register_commands(ctx)?;
        ffi::propagate::create_add_words()?;
        ffi::server::subscribe::<hooks::Server>(ctx)?;
        expiry::start(ctx);
        Ok(())
    }

    fn info(ctx: &InfoContext, for_crash_report: bool) {
        hooks::info(ctx, for_crash_report);
    }
}

#[global_allocator]
static ALLOCATOR: allocator::Chosen = allocator::CHOSEN;

entry_point!(Xset);
