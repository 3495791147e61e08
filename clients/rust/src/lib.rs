//! Typed commands of xset, the Redis module whose set members each expire
//! on their own, for the [`redis`] crate.
//!
//! [`XSetCommands`] extends every sync connection (`redis::Connection`,
//! `redis::Client`, cluster connections: anything `ConnectionLike`), and
//! [`AsyncXSetCommands`] every async one, with one `xset_*` method per
//! command; [`cmd`] builds the same commands for a [`redis::pipe`]. Replies
//! are typed, and the same under RESP2 and RESP3: a `WITHTTL` reply, flat
//! under RESP2 and paired under RESP3, is a `Vec<(member, ttl_ms)>` either
//! way ([`WithTtl`]). The library is thin: every condition, cap and error is
//! the server's; an error reply is a [`redis::RedisError`] with its message.
//!
//! ```no_run
//! use xset_client::XSetCommands;
//!
//! # fn main() -> redis::RedisResult<()> {
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! con.xset_add("active:users", &[("alice", 3600)])?;
//! assert!(con.xset_has("active:users", "alice")?);
//! let live: Vec<(String, i64)> = con.xset_members_with_ttl("active:users", &Default::default())?;
//! # Ok(()) }
//! ```
//!
//! Method names carry the `xset_` prefix so that they never clash with
//! `redis::Commands` (`ttl`, `expire`, ...). A method that takes one member
//! returns one value; its `_many` twin sends a `MEMBERS` block and returns a
//! `Vec`, one value per member in order.

#![forbid(unsafe_code)]

mod types;

// The README's examples compile (they need a server to run).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

pub use types::{AddOptions, Bound, ExpireCondition, MembersOptions, ScanOptions, Unit, WithTtl};

#[cfg(feature = "aio")]
use redis::RedisFuture;
use redis::{Cmd, ConnectionLike, FromRedisValue, RedisResult, ToRedisArgs};

/// A command word followed by a member or a `MEMBERS count ...` block.
fn target<M: ToRedisArgs>(c: &mut Cmd, members: &[M]) {
    c.arg("MEMBERS").arg(members.len()).arg(members);
}

fn algebra<K: ToRedisArgs>(name: &str, keys: &[K], with_ttl: bool) -> Cmd {
    let mut c = redis::cmd(name);
    c.arg(keys.len()).arg(keys);
    if with_ttl {
        c.arg("WITHTTL");
    }
    c
}

fn store<D: ToRedisArgs, K: ToRedisArgs>(name: &str, destination: D, keys: &[K]) -> Cmd {
    let mut c = redis::cmd(name);
    c.arg(destination).arg(keys.len()).arg(keys);
    c
}

fn read_one<K: ToRedisArgs, M: ToRedisArgs>(name: &str, key: K, member: M) -> Cmd {
    let mut c = redis::cmd(name);
    c.arg(key).arg(member);
    c
}

fn read_many<K: ToRedisArgs, M: ToRedisArgs>(name: &str, key: K, members: &[M]) -> Cmd {
    let mut c = redis::cmd(name);
    c.arg(key);
    target(&mut c, members);
    c
}

fn set_time<K: ToRedisArgs>(name: &str, key: K, time: i64, cond: Option<ExpireCondition>) -> Cmd {
    let mut c = redis::cmd(name);
    c.arg(key).arg(time).arg(cond);
    c
}

fn addex<K: ToRedisArgs, M: ToRedisArgs>(
    key: K,
    items: &[(M, i64)],
    opts: &AddOptions,
    codes: bool,
) -> Cmd {
    let mut c = redis::cmd("XSET.ADDEX");
    c.arg(key).arg(opts);
    if codes {
        c.arg("CODES");
    }
    c.arg("MEMBERS").arg(items.len()).arg(items);
    c
}

fn randmember<K: ToRedisArgs>(key: K, count: Option<i64>, with_ttl: bool) -> Cmd {
    let mut c = redis::cmd("XSET.RANDMEMBER");
    c.arg(key).arg(count);
    if with_ttl {
        c.arg("WITHTTL");
    }
    c
}

fn pop<K: ToRedisArgs>(key: K, count: Option<usize>, soonest: bool) -> Cmd {
    let mut c = redis::cmd("XSET.POP");
    c.arg(key).arg(count);
    if soonest {
        c.arg("SOONEST");
    }
    c
}

fn scan<K: ToRedisArgs>(key: K, cursor: u64, opts: &ScanOptions, with_ttl: bool) -> Cmd {
    let mut c = redis::cmd("XSET.SCAN");
    c.arg(key).arg(cursor).arg(opts);
    if with_ttl {
        c.arg("WITHTTL");
    }
    c
}

fn members<K: ToRedisArgs>(key: K, opts: &MembersOptions, with_ttl: bool) -> Cmd {
    let mut c = redis::cmd("XSET.MEMBERS");
    c.arg(key).arg(opts);
    if with_ttl {
        c.arg("WITHTTL");
    }
    c
}

/// Generates, from one list, the command builders of [`cmd`], the methods
/// of [`XSetCommands`] and those of [`AsyncXSetCommands`]. Each entry:
/// `fn name<ArgGenerics>[ReplyGeneric](args) -> Reply as Wire { builder }`,
/// where `Wire` is the type the reply is parsed into and `Into` turns into
/// `Reply` (they differ only for `WITHTTL` replies).
macro_rules! commands {
    ($(
        $(#[$attr:meta])*
        fn $name:ident<$($g:ident: $bound:ident),*> $([$rv:ident])? ($($arg:ident: $argty:ty),*)
            -> $ret:ty as $wire:ty $body:block
    )*) => {
        /// Each command as a [`redis::Cmd`], for a pipeline or a
        /// transaction (`redis::pipe().add_command(cmd::xset_add(...))`).
        /// Parse a `WITHTTL` reply there as [`WithTtl`].
        pub mod cmd {
            #[allow(unused_imports)]
            use super::*;
            $(
                $(#[$attr])*
                pub fn $name<$($g: $bound),*>($($arg: $argty),*) -> Cmd $body
            )*
        }

        /// The xset commands on a sync connection. Implemented for every
        /// [`redis::ConnectionLike`].
        pub trait XSetCommands: ConnectionLike + Sized {
            $(
                $(#[$attr])*
                fn $name<$($g: $bound,)* $($rv: FromRedisValue)?>(&mut self, $($arg: $argty),*)
                    -> RedisResult<$ret>
                {
                    cmd::$name::<$($g),*>($($arg),*).query::<$wire>(self).map(Into::into)
                }
            )*
        }

        impl<T: ConnectionLike> XSetCommands for T {}

        /// The xset commands on an async connection (feature `aio`, on by
        /// default): the methods of [`XSetCommands`], returning futures.
        #[cfg(feature = "aio")]
        pub trait AsyncXSetCommands: redis::aio::ConnectionLike + Send + Sized {
            $(
                $(#[$attr])*
                fn $name<'a, $($g: $bound + Send + Sync + 'a,)* $($rv: FromRedisValue + Send + 'a)?>(
                    &'a mut self, $($arg: $argty),*
                ) -> RedisFuture<'a, $ret> {
                    let c = cmd::$name::<$($g),*>($($arg),*);
                    Box::pin(async move { c.query_async::<$wire>(self).await.map(Into::into) })
                }
            )*
        }

        #[cfg(feature = "aio")]
        impl<T: redis::aio::ConnectionLike + Send> AsyncXSetCommands for T {}
    };
}

commands! {
    /// `XSET.ADD key member ttl ...`: adds or refreshes members, each with a
    /// TTL in seconds; the number of members that were new.
    fn xset_add<K: ToRedisArgs, M: ToRedisArgs>(key: K, items: &[(M, u64)]) -> usize as usize {
        let mut c = redis::cmd("XSET.ADD");
        c.arg(key).arg(items);
        c
    }

    /// `XSET.ADDEX`: adds `(member, time)` pairs with the conditions, unit,
    /// `MAXLEN` or `CAP` of `opts`; the number of members that were new, or
    /// `None` when `CAP` refused the add (then nothing changed).
    fn xset_addex<K: ToRedisArgs, M: ToRedisArgs>(key: K, items: &[(M, i64)], opts: &AddOptions)
        -> Option<usize> as Option<usize>
    {
        addex(key, items, opts, false)
    }

    /// `XSET.ADDEX ... CODES`: as [`xset_addex`](XSetCommands::xset_addex),
    /// with one code per pair: 1 added, 2 deadline changed, 3 removed, 0
    /// unchanged; `None` when `CAP` refused the add.
    fn xset_addex_codes<K: ToRedisArgs, M: ToRedisArgs>(key: K, items: &[(M, i64)], opts: &AddOptions)
        -> Option<Vec<i64>> as Option<Vec<i64>>
    {
        addex(key, items, opts, true)
    }

    /// `XSET.HAS`: whether `member` is live.
    fn xset_has<K: ToRedisArgs, M: ToRedisArgs>(key: K, member: M) -> bool as bool {
        read_one("XSET.HAS", key, member)
    }

    /// `XSET.MHAS`: whether each member is live, in order.
    fn xset_mhas<K: ToRedisArgs, M: ToRedisArgs>(key: K, members: &[M]) -> Vec<bool> as Vec<bool> {
        let mut c = redis::cmd("XSET.MHAS");
        c.arg(key).arg(members);
        c
    }

    /// `XSET.REM`: removes members; how many were live.
    fn xset_rem<K: ToRedisArgs, M: ToRedisArgs>(key: K, members: &[M]) -> usize as usize {
        let mut c = redis::cmd("XSET.REM");
        c.arg(key).arg(members);
        c
    }

    /// `XSET.CARD`: the number of live members.
    fn xset_card<K: ToRedisArgs>(key: K) -> usize as usize {
        let mut c = redis::cmd("XSET.CARD");
        c.arg(key);
        c
    }

    /// `XSET.COUNT`: live members whose deadline (Unix ms) lies within
    /// `min..=max`.
    fn xset_count<K: ToRedisArgs>(key: K, min: Bound, max: Bound) -> usize as usize {
        let mut c = redis::cmd("XSET.COUNT");
        c.arg(key).arg(min).arg(max);
        c
    }

    /// `XSET.MEMBERS`: live members, soonest deadline first (see
    /// [`MembersOptions`] for `BYDEADLINE`, `REV`, `LIMIT`).
    fn xset_members<K: ToRedisArgs>[RV](key: K, opts: &MembersOptions) -> Vec<RV> as Vec<RV> {
        members(key, opts, false)
    }

    /// `XSET.MEMBERS ... WITHTTL`: `(member, ms_left)` pairs (`-1`: no
    /// deadline).
    fn xset_members_with_ttl<K: ToRedisArgs>[RV](key: K, opts: &MembersOptions)
        -> Vec<(RV, i64)> as WithTtl<RV>
    {
        members(key, opts, true)
    }

    /// `XSET.TTL key member`: seconds left (`-1` no deadline, `-2` not live).
    fn xset_ttl<K: ToRedisArgs, M: ToRedisArgs>(key: K, member: M) -> i64 as i64 {
        read_one("XSET.TTL", key, member)
    }

    /// `XSET.TTL key MEMBERS ...`: seconds left of each member.
    fn xset_ttl_many<K: ToRedisArgs, M: ToRedisArgs>(key: K, members: &[M]) -> Vec<i64> as Vec<i64> {
        read_many("XSET.TTL", key, members)
    }

    /// `XSET.PTTL key member`: milliseconds left.
    fn xset_pttl<K: ToRedisArgs, M: ToRedisArgs>(key: K, member: M) -> i64 as i64 {
        read_one("XSET.PTTL", key, member)
    }

    /// `XSET.PTTL key MEMBERS ...`.
    fn xset_pttl_many<K: ToRedisArgs, M: ToRedisArgs>(key: K, members: &[M]) -> Vec<i64> as Vec<i64> {
        read_many("XSET.PTTL", key, members)
    }

    /// `XSET.EXPIRETIME key member`: the deadline as Unix seconds.
    fn xset_expiretime<K: ToRedisArgs, M: ToRedisArgs>(key: K, member: M) -> i64 as i64 {
        read_one("XSET.EXPIRETIME", key, member)
    }

    /// `XSET.EXPIRETIME key MEMBERS ...`.
    fn xset_expiretime_many<K: ToRedisArgs, M: ToRedisArgs>(key: K, members: &[M])
        -> Vec<i64> as Vec<i64>
    {
        read_many("XSET.EXPIRETIME", key, members)
    }

    /// `XSET.PEXPIRETIME key member`: the deadline as Unix milliseconds.
    fn xset_pexpiretime<K: ToRedisArgs, M: ToRedisArgs>(key: K, member: M) -> i64 as i64 {
        read_one("XSET.PEXPIRETIME", key, member)
    }

    /// `XSET.PEXPIRETIME key MEMBERS ...`.
    fn xset_pexpiretime_many<K: ToRedisArgs, M: ToRedisArgs>(key: K, members: &[M])
        -> Vec<i64> as Vec<i64>
    {
        read_many("XSET.PEXPIRETIME", key, members)
    }

    /// `XSET.EXPIRE key seconds [NX|XX|GT|LT] member`: a code: `-2` not
    /// live, `0` condition not met, `1` set, `2` removed.
    fn xset_expire<K: ToRedisArgs, M: ToRedisArgs>(
        key: K, seconds: i64, cond: Option<ExpireCondition>, member: M
    ) -> i64 as i64 {
        let mut c = set_time("XSET.EXPIRE", key, seconds, cond);
        c.arg(member);
        c
    }

    /// `XSET.EXPIRE ... MEMBERS ...`: a code per member.
    fn xset_expire_many<K: ToRedisArgs, M: ToRedisArgs>(
        key: K, seconds: i64, cond: Option<ExpireCondition>, members: &[M]
    ) -> Vec<i64> as Vec<i64> {
        let mut c = set_time("XSET.EXPIRE", key, seconds, cond);
        target(&mut c, members);
        c
    }

    /// `XSET.PEXPIRE`: as [`xset_expire`](XSetCommands::xset_expire), in ms.
    fn xset_pexpire<K: ToRedisArgs, M: ToRedisArgs>(
        key: K, milliseconds: i64, cond: Option<ExpireCondition>, member: M
    ) -> i64 as i64 {
        let mut c = set_time("XSET.PEXPIRE", key, milliseconds, cond);
        c.arg(member);
        c
    }

    /// `XSET.PEXPIRE ... MEMBERS ...`.
    fn xset_pexpire_many<K: ToRedisArgs, M: ToRedisArgs>(
        key: K, milliseconds: i64, cond: Option<ExpireCondition>, members: &[M]
    ) -> Vec<i64> as Vec<i64> {
        let mut c = set_time("XSET.PEXPIRE", key, milliseconds, cond);
        target(&mut c, members);
        c
    }

    /// `XSET.EXPIREAT`: a deadline as Unix seconds.
    fn xset_expireat<K: ToRedisArgs, M: ToRedisArgs>(
        key: K, unix_seconds: i64, cond: Option<ExpireCondition>, member: M
    ) -> i64 as i64 {
        let mut c = set_time("XSET.EXPIREAT", key, unix_seconds, cond);
        c.arg(member);
        c
    }

    /// `XSET.EXPIREAT ... MEMBERS ...`.
    fn xset_expireat_many<K: ToRedisArgs, M: ToRedisArgs>(
        key: K, unix_seconds: i64, cond: Option<ExpireCondition>, members: &[M]
    ) -> Vec<i64> as Vec<i64> {
        let mut c = set_time("XSET.EXPIREAT", key, unix_seconds, cond);
        target(&mut c, members);
        c
    }

    /// `XSET.PEXPIREAT`: a deadline as Unix milliseconds.
    fn xset_pexpireat<K: ToRedisArgs, M: ToRedisArgs>(
        key: K, unix_ms: i64, cond: Option<ExpireCondition>, member: M
    ) -> i64 as i64 {
        let mut c = set_time("XSET.PEXPIREAT", key, unix_ms, cond);
        c.arg(member);
        c
    }

    /// `XSET.PEXPIREAT ... MEMBERS ...`.
    fn xset_pexpireat_many<K: ToRedisArgs, M: ToRedisArgs>(
        key: K, unix_ms: i64, cond: Option<ExpireCondition>, members: &[M]
    ) -> Vec<i64> as Vec<i64> {
        let mut c = set_time("XSET.PEXPIREAT", key, unix_ms, cond);
        target(&mut c, members);
        c
    }

    /// `XSET.PERSIST key member`: `-2` not live, `-1` had no deadline, `1`
    /// deadline removed.
    fn xset_persist<K: ToRedisArgs, M: ToRedisArgs>(key: K, member: M) -> i64 as i64 {
        read_one("XSET.PERSIST", key, member)
    }

    /// `XSET.PERSIST key MEMBERS ...`.
    fn xset_persist_many<K: ToRedisArgs, M: ToRedisArgs>(key: K, members: &[M]) -> Vec<i64> as Vec<i64> {
        read_many("XSET.PERSIST", key, members)
    }

    /// `XSET.SCAN`: one step, `(next_cursor, members)`; over at cursor 0.
    fn xset_scan<K: ToRedisArgs>[RV](key: K, cursor: u64, opts: &ScanOptions)
        -> (u64, Vec<RV>) as (u64, Vec<RV>)
    {
        scan(key, cursor, opts, false)
    }

    /// `XSET.SCAN ... WITHTTL`: one step, `(next_cursor, (member, ms_left))`.
    fn xset_scan_with_ttl<K: ToRedisArgs>[RV](key: K, cursor: u64, opts: &ScanOptions)
        -> (u64, Vec<(RV, i64)>) as types::ScanWithTtl<RV>
    {
        scan(key, cursor, opts, true)
    }

    /// `XSET.RANDMEMBER key`: one random live member, `None` if none.
    fn xset_randmember<K: ToRedisArgs>[RV](key: K) -> Option<RV> as Option<RV> {
        randmember(key, None, false)
    }

    /// `XSET.RANDMEMBER key count`: up to `count` distinct members, or
    /// exactly `-count` with repeats when negative.
    fn xset_randmember_count<K: ToRedisArgs>[RV](key: K, count: i64) -> Vec<RV> as Vec<RV> {
        randmember(key, Some(count), false)
    }

    /// `XSET.RANDMEMBER key count WITHTTL`.
    fn xset_randmember_with_ttl<K: ToRedisArgs>[RV](key: K, count: i64)
        -> Vec<(RV, i64)> as WithTtl<RV>
    {
        randmember(key, Some(count), true)
    }

    /// `XSET.POP key [SOONEST]`: removes and returns one member (random, or
    /// the soonest to expire), `None` if none.
    fn xset_pop<K: ToRedisArgs>[RV](key: K, soonest: bool) -> Option<RV> as Option<RV> {
        pop(key, None, soonest)
    }

    /// `XSET.POP key count [SOONEST]`: up to `count` members.
    fn xset_pop_count<K: ToRedisArgs>[RV](key: K, count: usize, soonest: bool) -> Vec<RV> as Vec<RV> {
        pop(key, Some(count), soonest)
    }

    /// `XSET.INTER`: members live in every key, each until its earliest
    /// deadline, soonest first.
    fn xset_inter<K: ToRedisArgs>[RV](keys: &[K]) -> Vec<RV> as Vec<RV> {
        algebra("XSET.INTER", keys, false)
    }

    /// `XSET.INTER ... WITHTTL`.
    fn xset_inter_with_ttl<K: ToRedisArgs>[RV](keys: &[K]) -> Vec<(RV, i64)> as WithTtl<RV> {
        algebra("XSET.INTER", keys, true)
    }

    /// `XSET.UNION`: members live in any key, each until its latest deadline.
    fn xset_union<K: ToRedisArgs>[RV](keys: &[K]) -> Vec<RV> as Vec<RV> {
        algebra("XSET.UNION", keys, false)
    }

    /// `XSET.UNION ... WITHTTL`.
    fn xset_union_with_ttl<K: ToRedisArgs>[RV](keys: &[K]) -> Vec<(RV, i64)> as WithTtl<RV> {
        algebra("XSET.UNION", keys, true)
    }

    /// `XSET.DIFF`: members of the first key in none of the others.
    fn xset_diff<K: ToRedisArgs>[RV](keys: &[K]) -> Vec<RV> as Vec<RV> {
        algebra("XSET.DIFF", keys, false)
    }

    /// `XSET.DIFF ... WITHTTL`.
    fn xset_diff_with_ttl<K: ToRedisArgs>[RV](keys: &[K]) -> Vec<(RV, i64)> as WithTtl<RV> {
        algebra("XSET.DIFF", keys, true)
    }

    /// `XSET.INTERSTORE`: stores the intersection with its deadlines; its size.
    fn xset_interstore<D: ToRedisArgs, K: ToRedisArgs>(destination: D, keys: &[K]) -> usize as usize {
        store("XSET.INTERSTORE", destination, keys)
    }

    /// `XSET.UNIONSTORE`: stores the union; its size.
    fn xset_unionstore<D: ToRedisArgs, K: ToRedisArgs>(destination: D, keys: &[K]) -> usize as usize {
        store("XSET.UNIONSTORE", destination, keys)
    }

    /// `XSET.DIFFSTORE`: stores the difference; its size.
    fn xset_diffstore<D: ToRedisArgs, K: ToRedisArgs>(destination: D, keys: &[K]) -> usize as usize {
        store("XSET.DIFFSTORE", destination, keys)
    }

    /// `XSET.INTERCARD`: the size of the intersection, counting stops at
    /// `limit`.
    fn xset_intercard<K: ToRedisArgs>(keys: &[K], limit: Option<usize>) -> usize as usize {
        let mut c = redis::cmd("XSET.INTERCARD");
        c.arg(keys.len()).arg(keys);
        if let Some(limit) = limit {
            c.arg("LIMIT").arg(limit);
        }
        c
    }

    /// `XSET.NOTIFY key STREAM stream [MAXLEN maxlen]`: from now on, each
    /// member whose deadline passes is appended, when the server reclaims
    /// it, to `stream` as an entry with the fields `key`, `member` and
    /// `deadline` (Unix ms), the stream trimmed to about `maxlen` entries
    /// if given. A missing set or stream is created, empty. In a cluster
    /// the stream must hash to the set's slot.
    fn xset_notify<K: ToRedisArgs, S: ToRedisArgs>(key: K, stream: S, maxlen: Option<usize>)
        -> () as ()
    {
        let mut c = redis::cmd("XSET.NOTIFY");
        c.arg(key).arg("STREAM").arg(stream);
        if let Some(n) = maxlen {
            c.arg("MAXLEN").arg(n);
        }
        c
    }

    /// `XSET.NOTIFY key OFF`: stops the delivery (a set left without
    /// members is then deleted).
    fn xset_notify_off<K: ToRedisArgs>(key: K) -> () as () {
        let mut c = redis::cmd("XSET.NOTIFY");
        c.arg(key).arg("OFF");
        c
    }

    /// `XSET.NOTIFY key`: the name of the stream the set delivers to, `None`
    /// when it delivers nowhere (or is missing).
    fn xset_notify_stream<K: ToRedisArgs>[RV](key: K) -> Option<RV> as Option<RV> {
        let mut c = redis::cmd("XSET.NOTIFY");
        c.arg(key);
        c
    }
}
