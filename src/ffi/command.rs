//! Commands, as the server sees them: registration, the callback the server
//! calls for each command, and what `COMMAND INFO`/`COMMAND DOCS`, cluster
//! routing and ACLs read (arity, key specs, argument tree, categories).
//!
//! The descriptions ([`Arg`], [`KeySpec`], [`CommandInfo`]) are plain data
//! with `'static` strings, so the command table above can be a `const`;
//! they are turned into the server's structures only while registering,
//! which copies them (nothing is leaked).

use super::key::{self, CmdArg};
use redis_module::{Context, RedisResult, raw};
use std::ffi::{CString, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs the commands of a table by their index in it. The server passes a
/// command callback no data of its own, so each index gets a callback of
/// its own ([`callback`]), which hands the index back here.
pub trait Dispatch {
    /// The error reply when a panic escapes [`Dispatch::run`].
    const PANIC_REPLY: &'static str;
    /// Runs command `index` on its arguments (the name first).
    fn run(index: usize, ctx: &Context, args: &[CmdArg]) -> RedisResult;
    /// Where command `index`'s keys are. Commands whose keys are counted
    /// (`numkeys key [key ...]`) are asked for their key positions through
    /// the callback as well (see [`report_key_positions`]).
    fn key_specs(index: usize) -> &'static [KeySpec];
}

type CommandFn =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// The most commands one table may register.
pub const MAX_COMMANDS: usize = 48;

/// The callback for command `I` of `D`. Unlike the crate's handlers it does
/// not copy the arguments into a vector of retained strings (an allocation,
/// and a retain and a release per argument, on every call): the command
/// borrows the server's own argument strings as [`CmdArg`]s, which outlive
/// the call. A panic that escapes `D::run` or its reply is caught and
/// answered with an error.
extern "C" fn trampoline<D: Dispatch, const I: usize>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let context = Context::new(ctx);
    let ptrs: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        // SAFETY: the server passes `argc` argument strings in `argv`, alive
        // for the whole call.
        Ok(n) if n > 0 && !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, n) },
        _ => &[],
    };
    let specs = D::key_specs(I);
    if needs_keys_callback(specs) && is_keys_position_request(ctx) {
        let _ = catch_unwind(AssertUnwindSafe(|| report_key_positions(ctx, specs, ptrs)));
        return raw::Status::Ok as c_int;
    }
    // SAFETY: the server's argument strings live for the whole call.
    let args = unsafe { key::args(ptrs) };
    // The reply is written inside the guard, so the result is handed
    // straight to it rather than moved out of the guard first.
    catch_unwind(AssertUnwindSafe(|| {
        super::reply::result(&context, D::run(I, &context, args))
    }))
    .unwrap_or_else(|_| {
        super::reply::result(&context, Err(redis_module::RedisError::Str(D::PANIC_REPLY)))
    }) as c_int
}

/// The callback of command `index` of `D`, `None` past [`MAX_COMMANDS`].
pub fn callback<D: Dispatch>(index: usize) -> Option<CommandFn> {
    macro_rules! each {
        ($($i:literal)*) => {
            [$(trampoline::<D, $i> as CommandFn),*]
        };
    }
    let all: [CommandFn; MAX_COMMANDS] = each!(
        0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23
        24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47
    );
    all.get(index).copied()
}

/// How a command touches one of its keys, as key-spec flags say it. ACL
/// reads them: `ACCESS` needs read permission on the key (`%R~`), `UPDATE`,
/// `INSERT` and `DELETE` write permission (`%W~`), and `RO` alone neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAccess {
    /// Reads the value and returns what it holds (`RO ACCESS`, what
    /// `SMEMBERS` declares).
    Read,
    /// Reads the value but returns none of its members, only whether one is
    /// there or how many (`RO`, what `SISMEMBER` and `SCARD` declare).
    Probe,
    /// Reads and changes the value, may create or delete it (`RW UPDATE`,
    /// what `ZADD` declares).
    Update,
    /// Removes parts of the value without returning them (`RW DELETE`,
    /// what `SREM` declares).
    Remove,
    /// Removes parts of the value and returns them (`RW ACCESS DELETE`,
    /// what `SPOP` declares).
    Take,
    /// Replaces the value without reading it (`OW UPDATE`, what
    /// `ZUNIONSTORE` declares for its destination).
    Overwrite,
}

impl KeyAccess {
    fn flags(self) -> u32 {
        use raw::{
            REDISMODULE_CMD_KEY_ACCESS as ACCESS, REDISMODULE_CMD_KEY_DELETE as DELETE,
            REDISMODULE_CMD_KEY_OW as OW, REDISMODULE_CMD_KEY_RO as RO,
            REDISMODULE_CMD_KEY_RW as RW, REDISMODULE_CMD_KEY_UPDATE as UPDATE,
        };
        match self {
            KeyAccess::Read => RO | ACCESS,
            KeyAccess::Probe => RO,
            KeyAccess::Update => RW | UPDATE,
            KeyAccess::Remove => RW | DELETE,
            KeyAccess::Take => RW | ACCESS | DELETE,
            KeyAccess::Overwrite => OW | UPDATE,
        }
    }
}

/// Where a command's keys are: a key spec of the server's.
#[derive(Clone, Copy, Debug)]
pub enum KeySpec {
    /// The one key at argument `pos` (the command name is argument 0).
    At { pos: i32, access: KeyAccess },
    /// `numkeys key [key ...]`: the count at argument `pos`, the keys right
    /// after it (`ZUNION`'s shape).
    Counted { pos: i32, access: KeyAccess },
}

/// Whether `specs` count their keys or name more than one: such commands
/// register with `getkeys-api` and answer key-position requests, because
/// Redis's cluster routing reads module commands' keys from the legacy
/// `(first, last, step)` range or that callback, never from key specs, and
/// a legacy range gives no key at all to a command shorter than its last
/// key (`XSET.NOTIFY key OFF`).
pub fn needs_keys_callback(specs: &[KeySpec]) -> bool {
    specs.len() > 1 || specs.iter().any(|s| matches!(s, KeySpec::Counted { .. }))
}

/// The positions of the keys `specs` describe in a command of `argc`
/// arguments, with their access; `count_at(pos)` reads the integer at
/// argument `pos`. A count that is not a positive integer or runs past the
/// arguments gives no keys for that spec (the command itself then replies
/// an error).
pub fn key_positions(
    specs: &[KeySpec],
    argc: usize,
    count_at: impl Fn(usize) -> Option<i64>,
) -> Vec<(usize, KeyAccess)> {
    let mut out = Vec::new();
    for spec in specs {
        match *spec {
            KeySpec::At { pos, access } => {
                if let Ok(pos) = usize::try_from(pos)
                    && pos < argc
                {
                    out.push((pos, access));
                }
            }
            KeySpec::Counted { pos, access } => {
                let Ok(pos) = usize::try_from(pos) else {
                    continue;
                };
                let n = count_at(pos).and_then(|n| usize::try_from(n).ok());
                if let Some(n) = n.filter(|&n| n > 0 && pos + n < argc) {
                    out.extend((pos + 1..=pos + n).map(|p| (p, access)));
                }
            }
        }
    }
    out
}

/// Whether the server called the command only to learn its keys.
fn is_keys_position_request(ctx: *mut raw::RedisModuleCtx) -> bool {
    // SAFETY: `ctx` is the live context of the current call.
    api!(RedisModule_IsKeysPositionRequest).is_some_and(|f| unsafe { f(ctx) } != 0)
}

/// Answers a key-position request from `specs` and the arguments.
fn report_key_positions(
    ctx: *mut raw::RedisModuleCtx,
    specs: &[KeySpec],
    argv: &[*mut raw::RedisModuleString],
) {
    let (Some(key_at), Some(to_ll)) = (
        api!(RedisModule_KeyAtPosWithFlags),
        api!(RedisModule_StringToLongLong),
    ) else {
        return;
    };
    let count_at = |pos: usize| {
        let mut n: std::ffi::c_longlong = 0;
        let arg = *argv.get(pos)?;
        // SAFETY: `arg` is one of the server's live argument strings.
        (unsafe { to_ll(arg, &mut n) } == raw::Status::Ok as c_int).then_some(n)
    };
    for (pos, access) in key_positions(specs, argv.len(), count_at) {
        let Ok(pos) = c_int::try_from(pos) else {
            continue;
        };
        // SAFETY: `ctx` is the live context of a key-position request.
        unsafe { key_at(ctx, pos, access.flags() as c_int) };
    }
}

/// The kind of one argument in `COMMAND DOCS`.
#[derive(Clone, Copy, Debug)]
pub enum ArgKind {
    /// A key; the number is the index of its [`KeySpec`].
    Key(i32),
    /// Any bytes.
    String,
    /// An integer.
    Integer,
    /// A glob-style pattern.
    Pattern,
    /// A Unix time.
    UnixTime,
    /// Just the token, no value.
    PureToken,
    /// Exactly one of the sub-arguments.
    OneOf(&'static [Arg]),
    /// The sub-arguments in sequence.
    Block(&'static [Arg]),
}

/// One argument in `COMMAND DOCS`, which is what redis-cli shows as hints
/// and under `HELP`.
#[derive(Clone, Copy, Debug)]
pub struct Arg {
    /// Its name (lower case, as the server's own docs).
    pub name: &'static str,
    /// What it is.
    pub kind: ArgKind,
    /// The keyword before its value, if any (`MAXLEN`, `MEMBERS`).
    pub token: Option<&'static str>,
    /// It may be left out.
    pub optional: bool,
    /// It may repeat.
    pub multiple: bool,
}

impl Arg {
    const fn of(name: &'static str, kind: ArgKind) -> Arg {
        Arg {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
        }
    }
    /// A key argument described by key spec `spec`.
    pub const fn key(name: &'static str, spec: i32) -> Arg {
        Arg::of(name, ArgKind::Key(spec))
    }
    /// A string argument.
    pub const fn string(name: &'static str) -> Arg {
        Arg::of(name, ArgKind::String)
    }
    /// An integer argument.
    pub const fn integer(name: &'static str) -> Arg {
        Arg::of(name, ArgKind::Integer)
    }
    /// A glob pattern argument.
    pub const fn pattern(name: &'static str) -> Arg {
        Arg::of(name, ArgKind::Pattern)
    }
    /// A Unix time argument.
    pub const fn unix_time(name: &'static str) -> Arg {
        Arg::of(name, ArgKind::UnixTime)
    }
    /// A bare keyword: `name` in docs, `token` on the wire.
    pub const fn word(name: &'static str, token: &'static str) -> Arg {
        Arg::of(name, ArgKind::PureToken).token(token)
    }
    /// Exactly one of `choices`.
    pub const fn one_of(name: &'static str, choices: &'static [Arg]) -> Arg {
        Arg::of(name, ArgKind::OneOf(choices))
    }
    /// `parts` in sequence.
    pub const fn block(name: &'static str, parts: &'static [Arg]) -> Arg {
        Arg::of(name, ArgKind::Block(parts))
    }
    /// This argument preceded by keyword `token`.
    pub const fn token(mut self, token: &'static str) -> Arg {
        self.token = Some(token);
        self
    }
    /// This argument, optional.
    pub const fn optional(mut self) -> Arg {
        self.optional = true;
        self
    }
    /// This argument, repeatable.
    pub const fn multiple(mut self) -> Arg {
        self.multiple = true;
        self
    }
}

/// What `COMMAND INFO` and `COMMAND DOCS` say about one command.
pub struct CommandInfo<'a> {
    /// Its name, lower case.
    pub name: &'a str,
    /// Redis's arity: the exact argument count (name included), or minus
    /// the least count.
    pub arity: i32,
    /// One line.
    pub summary: &'a str,
    /// Its time complexity.
    pub complexity: &'a str,
    /// The module version that added it.
    pub since: &'a str,
    /// Where its keys are.
    pub key_specs: &'a [KeySpec],
    /// Its arguments after the name.
    pub args: &'a [Arg],
}

/// Registers command `name`, run by `callback`, with `flags` (the server's
/// command flag words). Key positions come from the key specs set by
/// [`set_command_info`]; the legacy triple is `(first, last, step)`.
pub fn create_command(
    ctx: &Context,
    name: &str,
    flags: &str,
    keys: (i32, i32, i32),
    callback: CommandFn,
) -> Result<(), String> {
    let (c_name, c_flags) = CString::new(name)
        .and_then(|n| CString::new(flags).map(|f| (n, f)))
        .map_err(|e| e.to_string())?;
    let Some(create) = api!(RedisModule_CreateCommand) else {
        return Err("RedisModule_CreateCommand is missing".into());
    };
    // SAFETY: both strings outlive the call (the server copies the name and
    // parses the flags during it); the callback lives as long as the module.
    let status = unsafe {
        create(
            ctx.get_raw(),
            c_name.as_ptr(),
            Some(callback),
            c_flags.as_ptr(),
            keys.0,
            keys.1,
            keys.2,
        )
    };
    if status == raw::Status::Ok as c_int {
        Ok(())
    } else {
        Err(format!("cannot create command {name}"))
    }
}

fn command_ptr(ctx: &Context, name: &str) -> Result<*mut raw::RedisModuleCommand, String> {
    let c_name = CString::new(name).map_err(|e| e.to_string())?;
    let Some(get) = api!(RedisModule_GetCommand) else {
        return Err("RedisModule_GetCommand is missing".into());
    };
    // SAFETY: `ctx` is live; the name is NUL-terminated.
    let command = unsafe { get(ctx.get_raw(), c_name.as_ptr()) };
    if command.is_null() {
        return Err(format!("{name} was not registered"));
    }
    Ok(command)
}

/// C strings that must outlive one `SetCommandInfo` call (which copies
/// them).
#[derive(Default)]
struct Strings(Vec<CString>);

impl Strings {
    fn keep(&mut self, s: &str) -> *const c_char {
        match CString::new(s) {
            Ok(c) => {
                let p = c.as_ptr();
                self.0.push(c);
                p
            }
            Err(_) => std::ptr::null(),
        }
    }
    fn keep_opt(&mut self, s: Option<&str>) -> *const c_char {
        s.map_or(std::ptr::null(), |s| self.keep(s))
    }
}

/// Argument arrays (each ending in a zeroed entry) that must outlive one
/// `SetCommandInfo` call. Each `Vec`'s heap buffer stays where it is when
/// the outer vector grows, so pointers into it stay valid.
#[derive(Default)]
struct ArgArrays(Vec<Vec<raw::RedisModuleCommandArg>>);

impl ArgArrays {
    fn build(&mut self, strings: &mut Strings, args: &[Arg]) -> *mut raw::RedisModuleCommandArg {
        let mut out = Vec::with_capacity(args.len() + 1);
        for a in args {
            let (kind, key_spec_index, subargs) = match a.kind {
                ArgKind::Key(spec) => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
                    spec,
                    std::ptr::null_mut(),
                ),
                ArgKind::String => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
                    -1,
                    std::ptr::null_mut(),
                ),
                ArgKind::Integer => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
                    -1,
                    std::ptr::null_mut(),
                ),
                ArgKind::Pattern => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PATTERN,
                    -1,
                    std::ptr::null_mut(),
                ),
                ArgKind::UnixTime => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_UNIX_TIME,
                    -1,
                    std::ptr::null_mut(),
                ),
                ArgKind::PureToken => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
                    -1,
                    std::ptr::null_mut(),
                ),
                ArgKind::OneOf(sub) => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
                    -1,
                    self.build(strings, sub),
                ),
                ArgKind::Block(sub) => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
                    -1,
                    self.build(strings, sub),
                ),
            };
            let mut flags = raw::REDISMODULE_CMD_ARG_NONE;
            if a.optional {
                flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
            }
            if a.multiple {
                flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
            }
            out.push(raw::RedisModuleCommandArg {
                name: strings.keep(a.name),
                type_: kind,
                key_spec_index,
                token: strings.keep_opt(a.token),
                summary: std::ptr::null(),
                since: std::ptr::null(),
                flags: flags as c_int,
                deprecated_since: std::ptr::null(),
                subargs,
                display_text: std::ptr::null(),
            });
        }
        // SAFETY: an all-zero entry is the terminator the server expects.
        out.push(unsafe { std::mem::zeroed() });
        let p = out.as_mut_ptr();
        self.0.push(out);
        p
    }
}

fn raw_key_spec(spec: &KeySpec) -> raw::RedisModuleCommandKeySpec {
    let (pos, access, find_keys_type, fk) = match *spec {
        KeySpec::At { pos, access } => (
            pos,
            access,
            raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE,
            raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
                range: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 {
                    lastkey: 0,
                    keystep: 1,
                    limit: 0,
                },
            },
        ),
        KeySpec::Counted { pos, access } => (
            pos,
            access,
            raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM,
            raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
                keynum: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_2 {
                    keynumidx: 0,
                    firstkey: 1,
                    keystep: 1,
                },
            },
        ),
    };
    raw::RedisModuleCommandKeySpec {
        notes: std::ptr::null(),
        flags: u64::from(access.flags()),
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX,
        bs: raw::RedisModuleCommandKeySpec__bindgen_ty_1 {
            index: raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 { pos },
        },
        find_keys_type,
        fk,
    }
}

/// Sets what `COMMAND INFO`/`DOCS` report for an already created command:
/// arity (so the server answers arity errors in its own words), summary,
/// complexity, since, key specs and the argument tree. The server copies
/// all of it.
pub fn set_command_info(ctx: &Context, info: &CommandInfo) -> Result<(), String> {
    let Some(set) = api!(RedisModule_SetCommandInfo) else {
        return Err("RedisModule_SetCommandInfo is missing".into());
    };
    let command = command_ptr(ctx, info.name)?;
    let mut strings = Strings::default();
    let mut arrays = ArgArrays::default();
    let mut key_specs: Vec<raw::RedisModuleCommandKeySpec> =
        info.key_specs.iter().map(raw_key_spec).collect();
    // SAFETY: an all-zero key spec is the terminator the server expects.
    key_specs.push(unsafe { std::mem::zeroed() });
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let raw_info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: strings.keep(info.summary),
        complexity: strings.keep(info.complexity),
        since: strings.keep(info.since),
        history: std::ptr::null_mut(),
        tips: std::ptr::null(),
        arity: info.arity,
        key_specs: key_specs.as_mut_ptr(),
        args: arrays.build(&mut strings, info.args),
    };
    // SAFETY: every pointer in `raw_info` points into `version`,
    // `key_specs`, `strings` or `arrays`, all alive until after the call,
    // which copies what it keeps.
    if unsafe { set(command, &raw_info) } != raw::Status::Ok as c_int {
        return Err(format!("SetCommandInfo refused {}", info.name));
    }
    Ok(())
}

/// Whether the server can give module commands ACL categories (Redis 7.2+,
/// Valkey 8+).
pub fn has_acl_categories() -> bool {
    api!(RedisModule_SetCommandACLCategories).is_some()
}

/// Adds ACL category `@name` for this module's commands, where the server
/// can (Redis 7.4+, Valkey 8+); false where it cannot. Only while loading.
pub fn add_acl_category(ctx: &Context, name: &str) -> bool {
    let (Some(add), Ok(c_name)) = (api!(RedisModule_AddACLCategory), CString::new(name)) else {
        return false;
    };
    // SAFETY: `ctx` is the load context; the name is NUL-terminated.
    unsafe { add(ctx.get_raw(), c_name.as_ptr()) == raw::Status::Ok as c_int }
}

/// Gives command `name` the ACL categories `categories` (space-separated,
/// without `@`). Only while loading, on a server with
/// [`has_acl_categories`].
pub fn set_acl_categories(ctx: &Context, name: &str, categories: &str) -> Result<(), String> {
    let Some(set) = api!(RedisModule_SetCommandACLCategories) else {
        return Err("the server has no ACL categories for module commands".into());
    };
    let command = command_ptr(ctx, name)?;
    let c_categories = CString::new(categories).map_err(|e| e.to_string())?;
    // SAFETY: `command` was just looked up; the string is NUL-terminated.
    if unsafe { set(command, c_categories.as_ptr()) } != raw::Status::Ok as c_int {
        return Err(format!(
            "the server refused ACL categories '{categories}' for {name}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_positions_follow_single_and_counted_specs() {
        let store = [
            KeySpec::At {
                pos: 1,
                access: KeyAccess::Overwrite,
            },
            KeySpec::Counted {
                pos: 2,
                access: KeyAccess::Read,
            },
        ];
        // XSET.INTERSTORE dest 2 a b
        let count = |n: i64| move |pos: usize| (pos == 2).then_some(n);
        let got: Vec<usize> = key_positions(&store, 5, count(2))
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(got, [1, 3, 4]);
        // A count past the arguments, zero or negative: only the
        // destination.
        for n in [3, 0, -1] {
            assert_eq!(key_positions(&store, 5, count(n)).len(), 1, "{n}");
        }
        assert!(needs_keys_callback(&store));
        assert!(!needs_keys_callback(&store[..1]));
    }
}
