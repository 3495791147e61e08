//! The command layer: [`TABLE`], the one list of xset's commands for
//! clients, and [`INTERNAL`], what only a primary or an AOF sends, from
//! which `lib.rs` registers each command with its flags, arity, key specs,
//! `COMMAND DOCS` (summary, complexity, since, the full argument tree that
//! redis-cli shows as hints) and ACL categories; and one file per command
//! family, each parsing its arguments (with the pure parsers of `grammar`,
//! for the adds, and `requests`, for the rest, which the fuzz targets
//! compile), running the core through `keyspace` and building the reply.
//!
//! Rules every command keeps:
//! - everything is parsed and validated before a key is opened, so a
//!   rejected command changes nothing;
//! - the grammar is decided by the argument count or by a counted
//!   `MEMBERS n` block, never by what a member spells: any bytes are a
//!   member, and a misspelt option is an error, never data.

pub mod add;
pub mod algebra;
pub mod delivered;
#[cfg(test)]
mod docs;
pub mod grammar;
pub mod notify;
pub mod parse;
pub mod random;
pub mod read;
pub mod reply;
pub mod requests;
pub mod write;

use crate::clock::Clock;
use crate::ffi::command::{Arg, CommandInfo, KeyAccess, KeySpec};
use crate::ffi::key::CmdArg;
use redis_module::{Context, RedisResult};

/// A command body: the context, all arguments (name first) and, for most,
/// the clock.
#[derive(Clone, Copy)]
pub enum Body {
    /// Runs at the command's time (`Clock::of`, frozen in a transaction).
    Timed(fn(&Context, &[CmdArg], Clock) -> RedisResult),
    /// A read whose reply depends on time only through which members are
    /// live: it takes the time itself, and asks the server for the
    /// context's flags only when a member of its set is due
    /// ([`crate::keyspace::with_live_read`]).
    Live(fn(&Context, &[CmdArg]) -> RedisResult),
}

/// One command: everything the server and its users learn about it.
pub struct CommandSpec {
    /// Lower case, `xset.<verb>`.
    pub name: &'static str,
    /// What runs it.
    pub run: Body,
    /// The server's command flags (`write deny-oom fast`, ...).
    pub flags: &'static str,
    /// ACL categories without `@` (`read fast`), on servers that have them
    /// for module commands; `lib.rs` adds the module's own `xset`.
    pub acl: &'static str,
    /// Redis's arity: exact count (name included), or minus the least.
    pub arity: i32,
    /// Where its keys are.
    pub keys: &'static [KeySpec],
    /// One line, for `COMMAND DOCS` and the command reference.
    pub summary: &'static str,
    /// Time complexity, for `COMMAND DOCS` and the command reference.
    pub complexity: &'static str,
    /// The module version that added it.
    pub since: &'static str,
    /// Its arguments after the name.
    pub args: &'static [Arg],
}

impl CommandSpec {
    /// What `COMMAND INFO`/`DOCS` report.
    pub fn info(&self) -> CommandInfo<'_> {
        CommandInfo {
            name: self.name,
            arity: self.arity,
            summary: self.summary,
            complexity: self.complexity,
            since: self.since,
            key_specs: self.keys,
            args: self.args,
        }
    }

    /// Whether `argc` arguments (the name included) fit the arity: exactly
    /// it when positive, at least its magnitude when negative. The server
    /// checks this for a client's command, but not for one it loads from
    /// an AOF, which reaches the handler as written.
    pub fn fits(&self, argc: usize) -> bool {
        let least = self.arity.unsigned_abs() as usize;
        if self.arity > 0 {
            argc == least
        } else {
            argc >= least
        }
    }

    /// The legacy `(first, last, step)` key positions: the one key's, or
    /// none for commands whose keys only key specs can describe.
    pub fn key_range(&self) -> (i32, i32, i32) {
        match self.keys {
            [KeySpec::At { pos, .. }] => (*pos, *pos, 1),
            _ => (0, 0, 0),
        }
    }

    /// Whether the server's flags make it a read (`readonly`): it changes
    /// nothing a client can see.
    pub fn is_read_only(&self) -> bool {
        self.flags.split(' ').any(|f| f == "readonly")
    }

    /// The argument holding the key a panic may have left half-changed
    /// (its first single key: the one key, or a `*STORE` destination),
    /// which the panic guard repairs; `None` for commands without one.
    pub fn repairable_key(&self) -> Option<usize> {
        self.keys.iter().find_map(|k| match *k {
            KeySpec::At { pos, .. } => usize::try_from(pos).ok(),
            KeySpec::Counted { .. } => None,
        })
    }
}

/// The one key at argument 1, touched as `access` says. Each command's
/// access is its native analogue's, so ACL answers a user with `%R~`/`%W~`
/// selectors as it answers for the analogue.
const fn key(access: KeyAccess) -> [KeySpec; 1] {
    [KeySpec::At { pos: 1, access }]
}
/// `SMEMBERS`, `ZCOUNT`, `HTTL`, `SSCAN`, `SRANDMEMBER`: `RO ACCESS`.
const KEY_READ: &[KeySpec] = &key(KeyAccess::Read);
/// `SISMEMBER`, `SCARD`: `RO`, returning no member.
const KEY_PROBE: &[KeySpec] = &key(KeyAccess::Probe);
/// `ZADD`, `HEXPIRE`, `HPERSIST`: `RW UPDATE`.
const KEY_UPDATE: &[KeySpec] = &key(KeyAccess::Update);
/// `SREM`: `RW DELETE`.
const KEY_REMOVE: &[KeySpec] = &key(KeyAccess::Remove);
/// `SPOP`, `ZPOPMIN`: `RW ACCESS DELETE`.
const KEY_TAKE: &[KeySpec] = &key(KeyAccess::Take);

const KEY: Arg = Arg::key("key", 0);
const MEMBER: Arg = Arg::string("member");
/// `member` or `MEMBERS count member [member ...]`: the single form replies
/// one integer, the counted form an array.
const TARGET: Arg = Arg::one_of(
    "target",
    &[
        MEMBER,
        Arg::block(
            "members",
            &[Arg::integer("count").token("MEMBERS"), MEMBER.multiple()],
        ),
    ],
);
const EXPIRE_CONDITION: Arg = Arg::one_of(
    "condition",
    &[
        Arg::word("nx", "NX"),
        Arg::word("xx", "XX"),
        Arg::word("gt", "GT"),
        Arg::word("lt", "LT"),
    ],
)
.optional();
const WITHTTL: Arg = Arg::word("withttl", "WITHTTL").optional();

const TTL_ARGS: &[Arg] = &[KEY, TARGET];
const PERSIST_ARGS: &[Arg] = &[KEY, TARGET];

const fn expire_args(time: &'static str) -> [Arg; 4] {
    [KEY, Arg::integer(time), EXPIRE_CONDITION, TARGET]
}
const EXPIRE_ARGS: &[Arg] = &expire_args("seconds");
const PEXPIRE_ARGS: &[Arg] = &expire_args("milliseconds");
const EXPIREAT_ARGS: &[Arg] = &[
    KEY,
    Arg::unix_time("unix-time-seconds"),
    EXPIRE_CONDITION,
    TARGET,
];
const PEXPIREAT_ARGS: &[Arg] = &[
    KEY,
    Arg::unix_time("unix-time-milliseconds"),
    EXPIRE_CONDITION,
    TARGET,
];

const ADD_ARGS: &[Arg] = &[
    KEY,
    Arg::block("data", &[MEMBER, Arg::integer("ttl")]).multiple(),
];
const ADDEX_ARGS: &[Arg] = &[
    KEY,
    Arg::one_of("condition", &[Arg::word("nx", "NX"), Arg::word("xx", "XX")]).optional(),
    Arg::one_of(
        "comparison",
        &[Arg::word("gt", "GT"), Arg::word("lt", "LT")],
    )
    .optional(),
    Arg::one_of(
        "unit",
        &[
            Arg::word("ex", "EX"),
            Arg::word("px", "PX"),
            Arg::word("exat", "EXAT"),
            Arg::word("pxat", "PXAT"),
        ],
    )
    .optional(),
    Arg::integer("maxlen").token("MAXLEN").optional(),
    Arg::integer("cap").token("CAP").optional(),
    Arg::word("codes", "CODES").optional(),
    Arg::integer("count").token("MEMBERS"),
    Arg::block("data", &[MEMBER, Arg::integer("time")]).multiple(),
];
/// A deadline window's bounds: integers, `(` for exclusive, `-inf`, `+inf`.
const WINDOW: [Arg; 2] = [Arg::integer("min"), Arg::integer("max")];
const MEMBERS_ARGS: &[Arg] = &[
    KEY,
    Arg::block("bydeadline", &WINDOW)
        .token("BYDEADLINE")
        .optional(),
    Arg::word("rev", "REV").optional(),
    Arg::block("limit", &[Arg::integer("offset"), Arg::integer("count")])
        .token("LIMIT")
        .optional(),
    WITHTTL,
];
const SCAN_ARGS: &[Arg] = &[
    KEY,
    Arg::integer("cursor"),
    Arg::pattern("pattern").token("MATCH").optional(),
    Arg::integer("count").token("COUNT").optional(),
    WITHTTL,
];

const RANDMEMBER_ARGS: &[Arg] = &[
    KEY,
    Arg::block("options", &[Arg::integer("count"), WITHTTL]).optional(),
];
const POP_ARGS: &[Arg] = &[
    KEY,
    Arg::integer("count").optional(),
    Arg::word("soonest", "SOONEST").optional(),
];
/// Random picks draw slab slots; they read the live list instead for a
/// count above a third of the set, or after 32 draws in a row found vacant
/// or expired slots.
const RANDOM_COMPLEXITY: &str = "O(1) without count, O(count) with one; O(n) in a small set, for a \
                                 count over n/3 or a set mostly expired";
const POP_COMPLEXITY: &str = "O(log n) for each member popped; at random, O(n) for a count over \
                              n/3 or a set mostly expired";

/// Algebra operands: `numkeys key [key ...]`, read.
const OPERANDS_READ: &[KeySpec] = &[KeySpec::Counted {
    pos: 1,
    access: KeyAccess::Read,
}];
/// `destination numkeys key [key ...]`: the destination overwritten, the
/// operands read.
const STORE_KEYS: &[KeySpec] = &[
    KeySpec::At {
        pos: 1,
        access: KeyAccess::Overwrite,
    },
    KeySpec::Counted {
        pos: 2,
        access: KeyAccess::Read,
    },
];
const NUMKEYS: Arg = Arg::integer("numkeys");
const ALGEBRA_ARGS: &[Arg] = &[NUMKEYS, Arg::key("key", 0).multiple(), WITHTTL];
const STORE_ARGS: &[Arg] = &[
    Arg::key("destination", 0),
    NUMKEYS,
    Arg::key("key", 1).multiple(),
];
const INTERCARD_ARGS: &[Arg] = &[
    NUMKEYS,
    Arg::key("key", 0).multiple(),
    Arg::integer("limit").token("LIMIT").optional(),
];
/// Plain-set operands are copied out of the server's set: O(size) each,
/// on top of the operation's own cost.
const INTER_COMPLEXITY: &str = "O(N * K + m log m) for N members in the smallest key, K keys and m results, plus the size of each plain set";
const UNION_COMPLEXITY: &str = "O(N + m log m) for N members over all keys and m results";
const DIFF_COMPLEXITY: &str = "O(N * K + m log m) for N members in the first key, K keys and m results, plus the size of each plain set";
const INTERCARD_COMPLEXITY: &str =
    "O(N * K) for N members in the smallest key and K keys, plus the size of each plain set";

/// What every command of the first release declares as `since`.
const FIRST: &str = "0.1.0";
/// The release that split `XSET.ADD`'s two forms, added the single-member
/// forms of the `EXPIRE` family and `PERSIST`, deadline windows
/// (`XSET.COUNT`, `XSET.MEMBERS ... BYDEADLINE`), `XSET.RANDMEMBER`,
/// `XSET.POP` and the set algebra.
const SECOND: &str = "0.2.0";

/// The release that added expiry delivery (`XSET.NOTIFY`).
const THIRD: &str = "0.4.0";

/// `XSET.NOTIFY key STREAM stream`: the set and its stream, both changed
/// (`XADD`'s `RW UPDATE` for the stream), so ACL needs write access to
/// both and a cluster refuses them in different slots.
const NOTIFY_KEYS: &[KeySpec] = &[
    KeySpec::At {
        pos: 1,
        access: KeyAccess::Update,
    },
    KeySpec::At {
        pos: 3,
        access: KeyAccess::Update,
    },
];
const NOTIFY_ARGS: &[Arg] = &[
    KEY,
    Arg::one_of(
        "delivery",
        &[
            Arg::block(
                "stream",
                &[
                    Arg::key("stream", 1).token("STREAM"),
                    Arg::block(
                        "trim",
                        &[
                            Arg::word("approximately", "~").optional(),
                            Arg::integer("count"),
                        ],
                    )
                    .token("MAXLEN")
                    .optional(),
                ],
            ),
            Arg::word("off", "OFF"),
        ],
    )
    .optional(),
];

/// Every command xset offers, in the order of the command reference.
pub const TABLE: &[CommandSpec] = &[
    CommandSpec {
        name: "xset.add",
        run: Body::Timed(add::xset_add),
        flags: "write deny-oom fast",
        acl: "write fast",
        arity: -4,
        keys: KEY_UPDATE,
        summary: "Adds members, each with its own TTL in seconds",
        complexity: "O(k log n) for k members",
        since: FIRST,
        args: ADD_ARGS,
    },
    CommandSpec {
        name: "xset.addex",
        run: Body::Timed(add::xset_addex),
        flags: "write deny-oom fast",
        acl: "write fast",
        // The key and one word: a shorter add without its `MEMBERS` block
        // gets the module's error naming what is missing, not the server's.
        arity: -3,
        keys: KEY_UPDATE,
        summary: "Adds members with conditions, a time unit, a length cap or limit, and per-member codes",
        complexity: "O(k log n) for k members",
        since: SECOND,
        args: ADDEX_ARGS,
    },
    CommandSpec {
        name: "xset.has",
        run: Body::Live(read::xset_has),
        flags: "readonly fast",
        acl: "read fast",
        arity: 3,
        keys: KEY_PROBE,
        summary: "Tells whether a member is live",
        complexity: "O(1)",
        since: FIRST,
        args: &[KEY, MEMBER],
    },
    CommandSpec {
        name: "xset.mhas",
        run: Body::Live(read::xset_mhas),
        flags: "readonly fast",
        acl: "read fast",
        arity: -3,
        keys: KEY_READ,
        summary: "Tells whether each member is live",
        complexity: "O(k) for k members",
        since: FIRST,
        args: &[KEY, MEMBER.multiple()],
    },
    CommandSpec {
        name: "xset.members",
        run: Body::Timed(read::xset_members),
        flags: "readonly",
        acl: "read slow",
        arity: -2,
        keys: KEY_READ,
        summary: "Lists live members, soonest deadline first",
        complexity: "O(log n + offset + count)",
        since: FIRST,
        args: MEMBERS_ARGS,
    },
    CommandSpec {
        name: "xset.rem",
        run: Body::Timed(write::xset_rem),
        flags: "write fast",
        acl: "write fast",
        arity: -3,
        keys: KEY_REMOVE,
        summary: "Removes members",
        complexity: "O(k log n) for k members",
        since: FIRST,
        args: &[KEY, MEMBER.multiple()],
    },
    CommandSpec {
        name: "xset.card",
        run: Body::Live(read::xset_card),
        flags: "readonly fast",
        acl: "read fast",
        arity: 2,
        keys: KEY_PROBE,
        summary: "Counts live members",
        complexity: "O(log n) in a large set (plus up to 127 member lookups on a replica), O(n) in a small one",
        since: FIRST,
        args: &[KEY],
    },
    CommandSpec {
        name: "xset.count",
        run: Body::Timed(read::xset_count),
        flags: "readonly fast",
        acl: "read fast",
        arity: 4,
        keys: KEY_READ,
        summary: "Counts live members whose deadline is in a window",
        complexity: "O(log n + min(m, n - m)/127) in a large set with m members in the window (plus up to 254 member lookups), O(n) in a small one",
        since: SECOND,
        args: &[KEY, WINDOW[0], WINDOW[1]],
    },
    CommandSpec {
        name: "xset.ttl",
        run: Body::Timed(read::xset_ttl),
        flags: "readonly fast",
        acl: "read fast",
        arity: -3,
        keys: KEY_READ,
        summary: "Seconds left before members expire",
        complexity: "O(1) for each member",
        since: FIRST,
        args: TTL_ARGS,
    },
    CommandSpec {
        name: "xset.pttl",
        run: Body::Timed(read::xset_pttl),
        flags: "readonly fast",
        acl: "read fast",
        arity: -3,
        keys: KEY_READ,
        summary: "Milliseconds left before members expire",
        complexity: "O(1) for each member",
        since: FIRST,
        args: TTL_ARGS,
    },
    CommandSpec {
        name: "xset.expiretime",
        run: Body::Timed(read::xset_expiretime),
        flags: "readonly fast",
        acl: "read fast",
        arity: -3,
        keys: KEY_READ,
        summary: "Members' deadlines as Unix times in seconds",
        complexity: "O(1) for each member",
        since: FIRST,
        args: TTL_ARGS,
    },
    CommandSpec {
        name: "xset.pexpiretime",
        run: Body::Timed(read::xset_pexpiretime),
        flags: "readonly fast",
        acl: "read fast",
        arity: -3,
        keys: KEY_READ,
        summary: "Members' deadlines as Unix times in milliseconds",
        complexity: "O(1) for each member",
        since: FIRST,
        args: TTL_ARGS,
    },
    CommandSpec {
        name: "xset.expire",
        run: Body::Timed(write::xset_expire),
        // Not `deny-oom`, as native EXPIRE: a time not in the future only
        // removes, and is accepted over maxmemory; the handler refuses a
        // later one there itself. So for the whole family.
        flags: "write fast",
        acl: "write fast",
        arity: -4,
        keys: KEY_UPDATE,
        summary: "Sets members' TTL in seconds",
        complexity: "O(log n) for each member",
        since: FIRST,
        args: EXPIRE_ARGS,
    },
    CommandSpec {
        name: "xset.pexpire",
        run: Body::Timed(write::xset_pexpire),
        flags: "write fast",
        acl: "write fast",
        arity: -4,
        keys: KEY_UPDATE,
        summary: "Sets members' TTL in milliseconds",
        complexity: "O(log n) for each member",
        since: FIRST,
        args: PEXPIRE_ARGS,
    },
    CommandSpec {
        name: "xset.expireat",
        run: Body::Timed(write::xset_expireat),
        flags: "write fast",
        acl: "write fast",
        arity: -4,
        keys: KEY_UPDATE,
        summary: "Sets members' deadline as a Unix time in seconds",
        complexity: "O(log n) for each member",
        since: FIRST,
        args: EXPIREAT_ARGS,
    },
    CommandSpec {
        name: "xset.pexpireat",
        run: Body::Timed(write::xset_pexpireat),
        flags: "write fast",
        acl: "write fast",
        arity: -4,
        keys: KEY_UPDATE,
        summary: "Sets members' deadline as a Unix time in milliseconds",
        complexity: "O(log n) for each member",
        since: FIRST,
        args: PEXPIREAT_ARGS,
    },
    CommandSpec {
        name: "xset.persist",
        run: Body::Timed(write::xset_persist),
        // Moving a member to the end of the deadline index can split a leaf:
        // it may grow memory, so it is refused under maxmemory like adds.
        flags: "write deny-oom fast",
        acl: "write fast",
        arity: -3,
        keys: KEY_UPDATE,
        summary: "Removes members' deadlines",
        complexity: "O(log n) for each member",
        since: FIRST,
        args: PERSIST_ARGS,
    },
    CommandSpec {
        name: "xset.scan",
        run: Body::Timed(read::xset_scan),
        flags: "readonly",
        acl: "read slow",
        arity: -3,
        keys: KEY_READ,
        summary: "Iterates live members with a cursor",
        complexity: "O(1) for each call, O(n) for a full iteration",
        since: FIRST,
        args: SCAN_ARGS,
    },
    CommandSpec {
        name: "xset.randmember",
        run: Body::Timed(random::xset_randmember),
        flags: "readonly",
        acl: "read slow",
        arity: -2,
        keys: KEY_READ,
        summary: "Returns random live members",
        complexity: RANDOM_COMPLEXITY,
        since: SECOND,
        args: RANDMEMBER_ARGS,
    },
    CommandSpec {
        name: "xset.pop",
        run: Body::Timed(random::xset_pop),
        flags: "write fast",
        acl: "write fast",
        arity: -2,
        keys: KEY_TAKE,
        summary: "Removes and returns random live members, or those expiring soonest",
        complexity: POP_COMPLEXITY,
        since: SECOND,
        args: POP_ARGS,
    },
    CommandSpec {
        name: "xset.inter",
        run: Body::Timed(algebra::xset_inter),
        flags: "readonly",
        acl: "read slow",
        arity: -3,
        keys: OPERANDS_READ,
        summary: "Intersects sets; each member lives until its earliest deadline",
        complexity: INTER_COMPLEXITY,
        since: SECOND,
        args: ALGEBRA_ARGS,
    },
    CommandSpec {
        name: "xset.interstore",
        run: Body::Timed(algebra::xset_interstore),
        flags: "write deny-oom",
        acl: "write slow",
        arity: -4,
        keys: STORE_KEYS,
        summary: "Stores an intersection with its deadlines",
        complexity: INTER_COMPLEXITY,
        since: SECOND,
        args: STORE_ARGS,
    },
    CommandSpec {
        name: "xset.intercard",
        run: Body::Timed(algebra::xset_intercard),
        flags: "readonly",
        acl: "read slow",
        arity: -3,
        keys: OPERANDS_READ,
        summary: "Counts the members of an intersection",
        complexity: INTERCARD_COMPLEXITY,
        since: SECOND,
        args: INTERCARD_ARGS,
    },
    CommandSpec {
        name: "xset.union",
        run: Body::Timed(algebra::xset_union),
        flags: "readonly",
        acl: "read slow",
        arity: -3,
        keys: OPERANDS_READ,
        summary: "Unites sets; each member lives until its latest deadline",
        complexity: UNION_COMPLEXITY,
        since: SECOND,
        args: ALGEBRA_ARGS,
    },
    CommandSpec {
        name: "xset.unionstore",
        run: Body::Timed(algebra::xset_unionstore),
        flags: "write deny-oom",
        acl: "write slow",
        arity: -4,
        keys: STORE_KEYS,
        summary: "Stores a union with its deadlines",
        complexity: UNION_COMPLEXITY,
        since: SECOND,
        args: STORE_ARGS,
    },
    CommandSpec {
        name: "xset.diff",
        run: Body::Timed(algebra::xset_diff),
        flags: "readonly",
        acl: "read slow",
        arity: -3,
        keys: OPERANDS_READ,
        summary: "Subtracts sets from the first; members keep the first key's deadlines",
        complexity: DIFF_COMPLEXITY,
        since: SECOND,
        args: ALGEBRA_ARGS,
    },
    CommandSpec {
        name: "xset.diffstore",
        run: Body::Timed(algebra::xset_diffstore),
        flags: "write deny-oom",
        acl: "write slow",
        arity: -4,
        keys: STORE_KEYS,
        summary: "Stores a difference with its deadlines",
        complexity: DIFF_COMPLEXITY,
        since: SECOND,
        args: STORE_ARGS,
    },
    CommandSpec {
        name: "xset.notify",
        run: Body::Timed(notify::xset_notify),
        flags: "write fast",
        acl: "write fast",
        arity: -2,
        keys: NOTIFY_KEYS,
        summary: "Delivers members that expire to a stream, stops delivering, or names the stream",
        complexity: "O(1)",
        since: THIRD,
        args: NOTIFY_ARGS,
    },
];

/// `XSET.DELIVERED key stream ...`: the set loses members (`SREM`'s `RW
/// DELETE`) and the stream gains entries and is trimmed (`XADD`'s `RW
/// UPDATE`).
const DELIVERED_KEYS: &[KeySpec] = &[
    KeySpec::At {
        pos: 1,
        access: KeyAccess::Remove,
    },
    KeySpec::At {
        pos: 2,
        access: KeyAccess::Update,
    },
];
const DELIVERED_ARGS: &[Arg] = &[
    KEY,
    Arg::key("stream", 1),
    Arg::string("first-id"),
    Arg::integer("trimmed-to"),
    Arg::block("entry", &[MEMBER, Arg::integer("deadline")]).multiple(),
];

/// Commands registered on every build that no client may call: what a
/// primary propagates for its own work, which a replica or a server
/// loading its AOF applies. After [`TABLE`]; not in the command reference
/// or the client libraries (their pages and methods follow [`TABLE`]).
pub const INTERNAL: &[CommandSpec] = &[CommandSpec {
    name: "xset.delivered",
    run: Body::Timed(delivered::xset_delivered),
    flags: "write",
    acl: "write slow",
    arity: -7,
    keys: DELIVERED_KEYS,
    summary: "Applies a primary's delivery of expired members to a stream (internal: accepted only \
              from a primary or an AOF)",
    complexity: "O(k log n) for k members",
    since: THIRD,
    args: DELIVERED_ARGS,
}];

/// Commands that exist only in test builds (`fault-injection`), after
/// [`INTERNAL`].
#[cfg(feature = "fault-injection")]
pub const TEST_ONLY: &[CommandSpec] = &[
    CommandSpec {
        name: "xset.debug-panic",
        run: Body::Timed(debug_panic),
        flags: "readonly",
        acl: "read slow",
        arity: -1,
        keys: &[],
        summary: "Panics on purpose (test builds only)",
        complexity: "O(1)",
        since: FIRST,
        args: &[],
    },
    CommandSpec {
        name: "xset.debug-fault",
        run: Body::Timed(debug_fault),
        flags: "readonly",
        acl: "read slow",
        arity: 2,
        keys: &[],
        summary: "Arms a fault point, or disarms all with OFF (test builds only)",
        complexity: "O(1)",
        since: SECOND,
        args: &[Arg::string("point")],
    },
];
#[cfg(not(feature = "fault-injection"))]
/// Commands that exist only in test builds: none in this build.
pub const TEST_ONLY: &[CommandSpec] = &[];

/// Every command this build registers: [`TABLE`], [`INTERNAL`], then
/// [`TEST_ONLY`].
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    TABLE.iter().chain(INTERNAL).chain(TEST_ONLY)
}

/// Command `index` of [`all`].
pub fn by_index(index: usize) -> Option<&'static CommandSpec> {
    let index = match index.checked_sub(TABLE.len()) {
        None => return TABLE.get(index),
        Some(rest) => rest,
    };
    match index.checked_sub(INTERNAL.len()) {
        None => INTERNAL.get(index),
        Some(rest) => TEST_ONLY.get(rest),
    }
}

/// `XSET.DEBUG-PANIC`: panics inside a command body, so the tests can prove
/// that no panic crosses into the server.
#[cfg(feature = "fault-injection")]
fn debug_panic(_ctx: &Context, _args: &[CmdArg], _clock: Clock) -> RedisResult {
    panic!("fault injected by XSET.DEBUG-PANIC");
}

/// `XSET.DEBUG-FAULT point`: arms a fault point of [`crate::faults`].
#[cfg(feature = "fault-injection")]
fn debug_fault(_ctx: &Context, args: &[CmdArg], _clock: Clock) -> RedisResult {
    if crate::faults::arm(args[1].as_slice()) {
        Ok(redis_module::RedisValue::SimpleStringStatic("OK"))
    } else {
        Err(crate::errors::err(crate::errors::SYNTAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_fit_the_callbacks() {
        let mut names: Vec<&str> = all().map(|c| c.name).collect();
        assert!(names.len() <= crate::ffi::command::MAX_COMMANDS);
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all().count());
        for (i, c) in all().enumerate() {
            assert_eq!(by_index(i).map(|s| s.name), Some(c.name));
        }
        assert!(by_index(all().count()).is_none());
    }

    /// The README's command list links every command of the table to its
    /// page, and no other command.
    #[test]
    fn readme_lists_every_command() {
        let readme = include_str!("../../README.md");
        for spec in TABLE {
            let link = format!(
                "[`{}`](docs/commands/{}.md)",
                spec.name.to_uppercase(),
                spec.name
            );
            assert!(readme.contains(&link), "README lacks {link}");
        }
        let links = readme.matches("](docs/commands/xset.").count();
        assert_eq!(links, TABLE.len(), "README links other command pages");
    }

    /// The integration tests leave the internal commands out of the
    /// command reference by the harness's list, which must be this one.
    #[test]
    fn the_harness_names_every_internal_command() {
        let harness = include_str!("../../tests/it/harness.rs");
        let listed = harness
            .split_once("pub const INTERNAL_COMMANDS: &[&str] = &[")
            .and_then(|(_, rest)| rest.split_once("];"))
            .expect("the harness's INTERNAL_COMMANDS")
            .0;
        let listed: Vec<&str> = listed
            .split(',')
            .map(|n| n.trim().trim_matches('"'))
            .filter(|n| !n.is_empty())
            .collect();
        let internal: Vec<&str> = INTERNAL.iter().map(|c| c.name).collect();
        assert_eq!(listed, internal);
        for spec in INTERNAL {
            assert!(TABLE.iter().all(|t| t.name != spec.name), "{}", spec.name);
        }
    }

    /// The panic guard tells the client that a command without a key of
    /// its own to repair changed nothing: only reads may lack one.
    #[test]
    fn every_write_has_a_key_to_repair() {
        for spec in all() {
            assert!(
                spec.repairable_key().is_some() || spec.is_read_only(),
                "{}",
                spec.name
            );
            assert_ne!(
                spec.is_read_only(),
                spec.flags.split(' ').any(|f| f == "write"),
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn every_wrong_count_misfits_its_arity() {
        for spec in all() {
            let least = spec.arity.unsigned_abs() as usize;
            assert!(least >= 1, "{}", spec.name);
            for argc in 0..least {
                assert!(!spec.fits(argc), "{} with {argc}", spec.name);
            }
            assert!(spec.fits(least), "{}", spec.name);
            assert_eq!(spec.fits(least + 1), spec.arity < 0, "{}", spec.name);
        }
    }
}
