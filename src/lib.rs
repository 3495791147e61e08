//! xset: a Redis module adding a set whose members each expire on their own.
//!
//! This file only registers things, and only from their one declaration:
//! the data type ([`datatype`]), every command of [`commands::TABLE`] with
//! its flags, arity, key specs, docs and ACL categories, the server hooks
//! ([`hooks`]) and the configuration ([`config`]).
//!
//! The layers, each importing only those below it:
//! `lib` → `hooks` → `commands`, `expiry` → `keyspace` → `datatype`,
//! `tracking` → `clock`, `config`, `stats`, `errors`, `faults` → `ffi` →
//! `xset` (the pure core). `unsafe` is allowed in `ffi` only.

#![deny(unsafe_code)]

pub mod clock;
pub mod commands;
pub mod config;
pub mod datatype;
pub mod errors;
pub mod expiry;
pub mod faults;
pub mod ffi;
pub mod hooks;
pub mod keyspace;
pub mod stats;
pub mod tracking;
pub mod xset;

use datatype::XSET_TYPE;
use redis_module::configuration::ConfigurationFlags;
use redis_module::{Context, RedisString, Status, redis_module};

/// Rust allocations go through the server's allocator so that `INFO
/// memory`, `MEMORY USAGE` and `maxmemory` see them; unit tests and the
/// core's benchmarks run without a server and use the system allocator.
#[cfg(not(any(test, feature = "system-alloc")))]
mod allocator {
    pub type Chosen = crate::ffi::alloc::ServerAlloc;
    pub const CHOSEN: Chosen = crate::ffi::alloc::ServerAlloc;
}
#[cfg(any(test, feature = "system-alloc"))]
mod allocator {
    pub type Chosen = std::alloc::System;
    pub const CHOSEN: Chosen = std::alloc::System;
}

/// The module's own ACL category, `@xset`, where the server can add one.
const ACL_CATEGORY: &str = "xset";

/// Registers every command of the table: the command, its info and docs,
/// and its ACL categories where the server has them.
fn register_commands(ctx: &Context) -> Result<(), String> {
    use ffi::command::{self as c, has_acl_categories};
    let own_category = has_acl_categories() && c::add_acl_category(ctx, ACL_CATEGORY);
    for (index, spec) in commands::all().enumerate() {
        let callback = c::callback::<hooks::Commands>(index)
            .ok_or_else(|| format!("too many commands: {} has no callback", spec.name))?;
        // Counted keys reach cluster routing only through the callback.
        let flags = if c::has_counted_keys(spec.keys) {
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

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    let args: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    if let Err(e) = config::apply_module_args(&args) {
        ctx.log_warning(&format!("xset: refusing to load: {e}"));
        return Status::Err;
    }
    let missing = ffi::missing_apis();
    if !missing.is_empty() {
        ctx.log_warning(&format!(
            "xset needs Redis 7.0 or newer: this server lacks {}",
            missing.join(", ")
        ));
        return Status::Err;
    }
    ffi::server::set_module_options(ctx);
    // Subscriptions come last: nothing after them may refuse the load.
    let registered = register_commands(ctx)
        .and_then(|()| ffi::command::create_add_words())
        .and_then(|()| ffi::server::subscribe::<hooks::Server>(ctx));
    if let Err(e) = registered {
        ctx.log_warning(&format!("xset: {e}"));
        return Status::Err;
    }
    expiry::start(ctx);
    Status::Ok
}

redis_module! {
    name: "xset",
    version: 2,
    allocator: (allocator::Chosen, allocator::CHOSEN),
    data_types: [XSET_TYPE],
    init: init,
    configurations: [
        i64: [
            ["active-expire-period-ms", &*config::PERIOD_MS, config::PERIOD_MS_RANGE.0, config::PERIOD_MS_RANGE.1, config::PERIOD_MS_RANGE.2, ConfigurationFlags::DEFAULT, None],
            ["active-expire-budget-us", &*config::BUDGET_US, config::BUDGET_US_RANGE.0, config::BUDGET_US_RANGE.1, config::BUDGET_US_RANGE.2, ConfigurationFlags::DEFAULT, None],
            ["small-max-members", &*config::SMALL_MAX_MEMBERS, config::SMALL_MAX_MEMBERS_RANGE.0, config::SMALL_MAX_MEMBERS_RANGE.1, config::SMALL_MAX_MEMBERS_RANGE.2, ConfigurationFlags::DEFAULT, None],
            ["small-max-member-bytes", &*config::SMALL_MAX_MEMBER_BYTES, config::SMALL_MAX_MEMBER_BYTES_RANGE.0, config::SMALL_MAX_MEMBER_BYTES_RANGE.1, config::SMALL_MAX_MEMBER_BYTES_RANGE.2, ConfigurationFlags::DEFAULT, None],
        ],
        string: [],
        bool: [
            ["active-expire", &*config::ACTIVE_EXPIRE, true, ConfigurationFlags::DEFAULT, None],
            ["notify-expired-members", &*config::NOTIFY_EXPIRED_MEMBERS, false, ConfigurationFlags::DEFAULT, None],
        ],
        enum: [],
        // Module arguments are checked and applied by `init`, which
        // refuses a bad one with a clear line (the crate's own reading
        // accepts any word as `no` and any number, in range or not).
        module_args_as_configuration: false,
    ]
}
