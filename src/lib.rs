//! xset: a Redis module adding a set whose members each expire on their own.
//!
//! This file only registers things: the data type, the commands with their
//! flags and key specs, and the server hooks. The pure core lives in
//! [`xset`], command parsing and replies in [`commands`], and every `unsafe`
//! line in [`ffi`].

pub mod commands;
pub mod errors;
pub mod expiry;
pub mod ffi;
pub mod stats;
pub mod xset;

use commands::{add, read, write};
use ffi::type_methods::XSET_TYPE;
use ffi::{CommandDoc, KeyAccess};
use redis_module::configuration::ConfigurationFlags;
use redis_module::{Context, RedisResult, RedisString, Status, redis_module};

/// Rust allocations go through Redis's allocator so that `INFO memory`,
/// `MEMORY USAGE` and `maxmemory` see them; unit tests and the core's
/// benchmarks run without a server and use the system allocator.
#[cfg(not(any(test, feature = "system-alloc")))]
mod allocator {
    pub type Chosen = crate::ffi::ServerAlloc;
    pub const CHOSEN: Chosen = crate::ffi::ServerAlloc;
}
#[cfg(any(test, feature = "system-alloc"))]
mod allocator {
    pub type Chosen = std::alloc::System;
    pub const CHOSEN: Chosen = std::alloc::System;
}

const fn doc(
    name: &'static str,
    arity: i32,
    access: KeyAccess,
    summary: &'static str,
    complexity: &'static str,
) -> CommandDoc {
    CommandDoc {
        name,
        arity,
        summary,
        complexity,
        access,
    }
}

/// What `COMMAND INFO`/`DOCS` report; the handlers and flags are in the
/// `commands!` list below and must name the same commands.
const DOCS: [CommandDoc; 15] = [
    doc(
        "xset.add",
        -4,
        KeyAccess::Write,
        "Adds members, each with its own TTL",
        "O(k log n) for k members",
    ),
    doc(
        "xset.has",
        3,
        KeyAccess::Read,
        "Tells whether a member is live",
        "O(1)",
    ),
    doc(
        "xset.mhas",
        -3,
        KeyAccess::Read,
        "Tells whether each member is live",
        "O(k)",
    ),
    doc(
        "xset.members",
        -2,
        KeyAccess::Read,
        "Lists live members by deadline",
        "O(log n + offset + count)",
    ),
    doc(
        "xset.rem",
        -3,
        KeyAccess::Write,
        "Removes members",
        "O(k log n)",
    ),
    doc(
        "xset.card",
        2,
        KeyAccess::Read,
        "Counts live members",
        "O(1)",
    ),
    doc(
        "xset.ttl",
        -3,
        KeyAccess::Read,
        "Seconds left for members",
        "O(k)",
    ),
    doc(
        "xset.pttl",
        -3,
        KeyAccess::Read,
        "Milliseconds left for members",
        "O(k)",
    ),
    doc(
        "xset.expiretime",
        -3,
        KeyAccess::Read,
        "Deadlines of members in Unix seconds",
        "O(k)",
    ),
    doc(
        "xset.pexpiretime",
        -3,
        KeyAccess::Read,
        "Deadlines of members in Unix milliseconds",
        "O(k)",
    ),
    doc(
        "xset.expire",
        -6,
        KeyAccess::Write,
        "Sets members' TTL in seconds",
        "O(k log n)",
    ),
    doc(
        "xset.pexpire",
        -6,
        KeyAccess::Write,
        "Sets members' TTL in milliseconds",
        "O(k log n)",
    ),
    doc(
        "xset.expireat",
        -6,
        KeyAccess::Write,
        "Sets members' deadline in Unix seconds",
        "O(k log n)",
    ),
    doc(
        "xset.pexpireat",
        -6,
        KeyAccess::Write,
        "Sets members' deadline in Unix milliseconds",
        "O(k log n)",
    ),
    doc(
        "xset.persist",
        -5,
        KeyAccess::Write,
        "Removes members' deadlines",
        "O(k log n)",
    ),
];

const SCAN_DOC: CommandDoc = doc(
    "xset.scan",
    -3,
    KeyAccess::Read,
    "Iterates live members with a cursor",
    "O(1) per call, O(n) for a full iteration",
);

/// Declares each command: a type that runs its body under
/// [`commands::guard`], and its registration with Redis.
macro_rules! commands {
    ($(($name:literal, $ty:ident, $body:path, $flags:literal)),* $(,)?) => {
        $(
            struct $ty;
            impl ffi::Command for $ty {
                fn run(ctx: &Context, args: &[RedisString]) -> RedisResult {
                    commands::guard(ctx, args, $body)
                }
            }
        )*
        /// Registers every command; the key is always argument 1.
        fn register_commands(ctx: &Context) -> Result<(), String> {
            $(ffi::create_command::<$ty>(ctx, $name, $flags, (1, 1, 1))?;)*
            Ok(())
        }
    };
}

commands! {
    ("xset.add", Add, add::xset_add, "write deny-oom"),
    ("xset.has", Has, read::xset_has, "readonly fast"),
    ("xset.mhas", MHas, read::xset_mhas, "readonly fast"),
    ("xset.members", Members, read::xset_members, "readonly"),
    ("xset.rem", Rem, write::xset_rem, "write fast"),
    ("xset.card", Card, read::xset_card, "readonly fast"),
    ("xset.ttl", Ttl, read::xset_ttl, "readonly fast"),
    ("xset.pttl", PTtl, read::xset_pttl, "readonly fast"),
    ("xset.expiretime", ExpireTime, read::xset_expiretime, "readonly fast"),
    ("xset.pexpiretime", PExpireTime, read::xset_pexpiretime, "readonly fast"),
    ("xset.expire", Expire, write::xset_expire, "write fast"),
    ("xset.pexpire", PExpire, write::xset_pexpire, "write fast"),
    ("xset.expireat", ExpireAt, write::xset_expireat, "write fast"),
    ("xset.pexpireat", PExpireAt, write::xset_pexpireat, "write fast"),
    ("xset.persist", Persist, write::xset_persist, "write fast"),
    ("xset.scan", Scan, read::xset_scan, "readonly"),
}

/// `XSET.DEBUG-PANIC` (test builds only): its body panics, so the tests can
/// prove that no panic crosses into Redis.
#[cfg(feature = "fault-injection")]
struct DebugPanic;
#[cfg(feature = "fault-injection")]
impl ffi::Command for DebugPanic {
    fn run(ctx: &Context, args: &[RedisString]) -> RedisResult {
        commands::guard(ctx, args, commands::debug_panic)
    }
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    if let Err(e) = ffi::check_server_api() {
        ctx.log_warning(&e);
        return Status::Err;
    }
    ffi::handle_io_errors(ctx);
    if let Err(e) = register_commands(ctx) {
        ctx.log_warning(&format!("xset: {e}"));
        return Status::Err;
    }
    #[cfg(feature = "fault-injection")]
    if let Err(e) =
        ffi::create_command::<DebugPanic>(ctx, "xset.debug-panic", "readonly", (0, 0, 0))
    {
        ctx.log_warning(&format!("xset: {e}"));
        return Status::Err;
    }
    for d in DOCS.iter().chain([&SCAN_DOC]) {
        if let Err(e) = ffi::set_command_info(ctx, d) {
            ctx.log_warning(&format!("xset: {e}"));
            return Status::Err;
        }
    }
    if let Err(e) = ffi::subscribe_event_loop(ctx).and_then(|()| ffi::subscribe_keyspace_moves(ctx))
    {
        ctx.log_warning(&format!("xset: {e}"));
        return Status::Err;
    }
    if let Err(e) = ffi::create_add_words() {
        ctx.log_warning(&format!("xset: {e}"));
        return Status::Err;
    }
    expiry::start(ctx);
    Status::Ok
}

redis_module! {
    name: "xset",
    version: 1,
    allocator: (allocator::Chosen, allocator::CHOSEN),
    data_types: [XSET_TYPE],
    init: init,
    event_handlers: [
        [@GENERIC @LOADED: expiry::on_keyspace_event],
    ],
    configurations: [
        i64: [
            ["active-expire-period-ms", &*expiry::PERIOD_MS, 100, 1, 60_000, ConfigurationFlags::DEFAULT, None],
            ["active-expire-budget-us", &*expiry::BUDGET_US, 1000, 10, 1_000_000, ConfigurationFlags::DEFAULT, None],
            ["small-max-members", &*commands::SMALL_MAX_MEMBERS, 128, 0, 4096, ConfigurationFlags::DEFAULT, None],
            ["small-max-member-bytes", &*commands::SMALL_MAX_MEMBER_BYTES, 64, 0, 255, ConfigurationFlags::DEFAULT, None],
        ],
        string: [],
        bool: [
            ["active-expire", &*expiry::ACTIVE_EXPIRE, true, ConfigurationFlags::DEFAULT, None],
            ["notify-expired-members", &*commands::NOTIFY_EXPIRED_MEMBERS, false, ConfigurationFlags::DEFAULT, None],
        ],
        enum: [],
        module_args_as_configuration: true,
    ]
}
