//! The only code that opens keys, propagates and notifies. Commands and the
//! expiry cycle reach sets through [`with_write`], [`with_read`],
//! [`with_live_read`] and [`expire_due`]; what a write changes, its body
//! reports to [`Effects`], the one place that turns changes into
//! propagation, keyspace events and the modified-key signal.
//!
//! Rules every path keeps:
//! - on a primary, touching a key first reclaims its due members and
//!   propagates that as `XSET.REM` (the set algebra's operands excepted:
//!   [`with_operands`] only hides them); replicas and loaders never delete
//!   on their own clock and hide expired members on reads;
//! - writes are propagated in absolute form (`PXAT`), never as typed;
//! - a set that becomes empty is deleted, with a `del` event, unless it
//!   carries a delivery (`XSET.NOTIFY`), which keeps it as an empty stream
//!   stays;
//! - a member reclaimed because its deadline passed is appended to its
//!   set's delivery stream in the same propagated unit as its removal
//!   (reads of such a set only hide due members, so every reclaim that
//!   delivers is a write's or the expiry cycle's);
//! - the tracking index follows every change of a set's earliest deadline.

use crate::clock::{self, Clock};
use crate::config;
use crate::datatype::{XSET_TYPE, rebuild_commands};
use crate::errors;
use crate::faults::{self, Fault};
use crate::ffi::key::{CmdArg, Key, KeyName};
use crate::ffi::propagate;
use crate::ffi::server::{self, ContextFlags};
use crate::ffi::stream::{Appender, StreamRefusal};
use crate::stats;
use crate::tracking;
use redis_module::{Context, KeyType, NotifyEvent, RedisError, RedisResult, RedisValue, raw};
use std::collections::HashMap;
use std::ffi::CStr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};
use xset_core::algebra::{Input, PlainSet};
use xset_core::{Delivery, Member, StreamId, XSet, key_slot};

/// At most this many due members are reclaimed when a command touches a
/// key; any rest stays hidden from replies and is left to later touches, so
/// one command never stalls the server on a huge backlog.
pub const LAZY_RECLAIM_LIMIT: usize = 1024;

/// Members the expiry cycle drains between two looks at the clock (and per
/// propagated `XSET.REM`).
const EXPIRY_CHUNK: usize = 128;

/// What a write's body did to its key, reported as it happens: each change
/// is propagated (in absolute form) and announced by its keyspace event at
/// once, in the order reported, and [`with_write`] signals the key as
/// modified afterwards exactly when something was reported.
pub struct Effects<'a, K: KeyName> {
    ctx: &'a Context,
    key: &'a K,
    flags: ContextFlags,
    changed: bool,
}

impl<K: KeyName> Effects<'_, K> {
    /// `pairs` (member, absolute deadline) were written: one `XSET.ADDEX key
    /// PXAT MEMBERS ...` and `xset.add`. Nothing when empty.
    pub fn added(&mut self, pairs: &[(&CmdArg, u64)]) {
        if pairs.is_empty() {
            return;
        }
        propagate_add(self.ctx, self.flags, self.key, pairs);
        notify(self.ctx, c"xset.add", self.key);
        self.changed = true;
    }

    /// `members` were removed: one `XSET.REM` and `event` (`xset.rem`, or
    /// `xset.expired` for a time not in the future). Nothing when empty.
    pub fn removed<M: AsRef<[u8]>>(&mut self, members: &[M], event: &CStr) {
        if members.is_empty() {
            return;
        }
        propagate_rem(self.ctx, self.key, members);
        notify(self.ctx, event, self.key);
        self.changed = true;
    }

    /// `removed` members went because a primary's expiry removed them (a
    /// replica or a loading server applying `XSET.DELIVERED`, which is
    /// propagated as it came): `xset.expired`, nothing propagated here.
    /// Nothing when none went.
    pub fn expired_as_told(&mut self, removed: usize) {
        if removed == 0 {
            return;
        }
        notify(self.ctx, c"xset.expired", self.key);
        self.changed = true;
    }

    /// `members` got deadline `deadline_ms`: one `XSET.PEXPIREAT` and
    /// `xset.expire`. Nothing when empty.
    pub fn deadline_set(&mut self, deadline_ms: u64, members: &[&[u8]]) {
        if members.is_empty() {
            return;
        }
        propagate_deadline(self.ctx, self.key, deadline_ms, members);
        notify(self.ctx, c"xset.expire", self.key);
        self.changed = true;
    }

    /// The set's delivery became `delivery` (`None`: off): one
    /// `XSET.NOTIFY` and `xset.notify`.
    pub fn delivery_set(&mut self, delivery: Option<&Delivery>) {
        let maxlen = delivery.and_then(|d| d.maxlen).map(|n| n.to_string());
        let parts: Vec<&[u8]> = match (delivery, &maxlen) {
            (None, _) => vec![b"OFF"],
            (Some(d), None) => vec![b"STREAM", &d.stream],
            (Some(d), Some(n)) => vec![b"STREAM", &d.stream, b"MAXLEN", n.as_bytes()],
        };
        propagate(self.ctx, "XSET.NOTIFY", self.key, &parts);
        notify(self.ctx, c"xset.notify", self.key);
        self.changed = true;
    }

    /// `members` lost their deadlines: one `XSET.PERSIST` and
    /// `xset.persist`. Nothing when empty.
    pub fn persisted(&mut self, members: &[&[u8]]) {
        if members.is_empty() {
            return;
        }
        propagate_persist(self.ctx, self.key, members);
        notify(self.ctx, c"xset.persist", self.key);
        self.changed = true;
    }
}

/// Replicates `cmd key parts...` to replicas and the AOF.
fn propagate(ctx: &Context, cmd: &str, key: &impl KeyName, parts: &[&[u8]]) {
    let mut argv: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
    argv.push(key.as_slice());
    argv.extend_from_slice(parts);
    ctx.replicate(cmd, argv.as_slice());
}

/// Replicates the removal of `members` as one `XSET.REM`.
fn propagate_rem<M: AsRef<[u8]>>(ctx: &Context, key: &impl KeyName, members: &[M]) {
    if members.is_empty() {
        return;
    }
    let parts: Vec<&[u8]> = members.iter().map(AsRef::as_ref).collect();
    propagate(ctx, "XSET.REM", key, &parts);
}

/// Replicates that `pairs` (member, absolute deadline) were written, as
/// `XSET.ADDEX key PXAT MEMBERS n member deadline ...`.
fn propagate_add(ctx: &Context, flags: ContextFlags, key: &impl KeyName, pairs: &[(&CmdArg, u64)]) {
    match pairs {
        [] => {}
        [(member, deadline_ms)] => {
            if !propagate::replicate_one_member_add(ctx, flags, key, *member, *deadline_ms) {
                propagate_add_generic(ctx, key, pairs);
            }
        }
        _ => propagate_add_generic(ctx, key, pairs),
    }
}

fn propagate_add_generic(ctx: &Context, key: &impl KeyName, pairs: &[(&CmdArg, u64)]) {
    let deadlines: Vec<String> = pairs.iter().map(|(_, d)| d.to_string()).collect();
    let count = pairs.len().to_string();
    let mut parts: Vec<&[u8]> = Vec::with_capacity(3 + 2 * pairs.len());
    parts.extend([&b"PXAT"[..], b"MEMBERS", count.as_bytes()]);
    for ((member, _), d) in pairs.iter().zip(&deadlines) {
        parts.push(member.as_slice());
        parts.push(d.as_bytes());
    }
    propagate(ctx, "XSET.ADDEX", key, &parts);
}

/// Replicates that `members` got deadline `deadline_ms`.
fn propagate_deadline(ctx: &Context, key: &impl KeyName, deadline_ms: u64, members: &[&[u8]]) {
    if members.is_empty() {
        return;
    }
    let when = deadline_ms.to_string();
    let count = members.len().to_string();
    let mut parts: Vec<&[u8]> = vec![when.as_bytes(), b"MEMBERS", count.as_bytes()];
    parts.extend_from_slice(members);
    propagate(ctx, "XSET.PEXPIREAT", key, &parts);
}

/// Replicates that `members` lost their deadlines.
fn propagate_persist(ctx: &Context, key: &impl KeyName, members: &[&[u8]]) {
    if members.is_empty() {
        return;
    }
    let count = members.len().to_string();
    let mut parts: Vec<&[u8]> = vec![b"MEMBERS", count.as_bytes()];
    parts.extend_from_slice(members);
    propagate(ctx, "XSET.PERSIST", key, &parts);
}

/// Emits the module-class keyspace event `event` (`xset.add`, ...) for
/// `key`.
///
/// Always called, even when `notify-keyspace-events` lacks `d`: the server
/// hands every event to the modules subscribed to its class whatever that
/// config says (`moduleNotifyKeyspaceEvent`, 7.0 to 8.x and Valkey), and no
/// module API tells whether another module subscribed to module-class
/// events (RediSearch does, for RedisJSON). Unheard, the call costs well
/// under 1% of an add's server CPU (`docs/design.md`), not worth a check
/// that only holds with no other module loaded.
fn notify(ctx: &Context, event: &CStr, key: &impl KeyName) {
    server::notify(ctx, NotifyEvent::MODULE, event, key);
}

fn notify_del(ctx: &Context, key: &impl KeyName) {
    server::notify(ctx, NotifyEvent::GENERIC, c"del", key);
}

/// Removes up to `limit` due members of `set`, appends each to the set's
/// delivery stream if it has one, propagates their removal and emits
/// `xset.expired`; returns how many went. The one place where expiry
/// deletes, for lazy and active expiry alike. Primary only. The caller
/// deletes the key if the set is left empty.
///
/// The members delivered are propagated as one `XSET.DELIVERED` (their
/// removal and their stream entries together), any others as one
/// `XSET.REM`. The server wraps what one command or one expiry slice
/// propagates in `MULTI`/`EXEC`, so replicas and the AOF apply all or
/// nothing; and while the stream is missing nothing is reclaimed.
fn reclaim_due(
    ctx: &Context,
    key: &impl KeyName,
    set: &mut XSet,
    now_ms: u64,
    limit: usize,
) -> usize {
    if let Some(d) = set.delivery()
        && !stream_elsewhere(ctx, key, d)
        && stream_missing(ctx, &d.stream)
    {
        stats::record_delivery_deferred();
        return 0;
    }
    let gone = set.drain_expired_with_deadlines(now_ms, limit);
    if gone.is_empty() {
        return 0;
    }
    let delivered = set
        .delivery()
        .map_or(0, |delivery| deliver(ctx, key, delivery, &gone));
    let members: Vec<&[u8]> = gone.iter().map(|(m, _)| m.as_ref()).collect();
    propagate_rem(ctx, key, &members[delivered..]);
    notify(ctx, c"xset.expired", key);
    if config::notify_expired_members() {
        publish_expired(ctx, key, &members);
    }
    gone.len()
}

/// Appends one entry per member of `gone` (member, absolute deadline) to
/// `delivery`'s stream, with the fields `key`, `member` and `deadline`, in
/// order and with consecutive IDs, then trims the stream if it has a
/// `MAXLEN`; propagates all of it and the members' removal as one
/// `XSET.DELIVERED key stream <first ID> <length after the trim, or -1>
/// member deadline ...`, made of the strings the entries were made from.
/// Returns how many members, from the first, went to the stream: a stream
/// key of another type, or in another cluster slot than `key`, takes none,
/// and one that refuses an entry takes none after it. The members are
/// gone all the same; the failure is counted and logged.
fn deliver(
    ctx: &Context,
    key: &impl KeyName,
    delivery: &Delivery,
    gone: &[(Member, u64)],
) -> usize {
    if stream_elsewhere(ctx, key, delivery) {
        let why = "in another cluster slot than the set";
        delivery_failed(ctx, key, delivery, gone.len(), why);
        return 0;
    }
    let stream = ctx.create_string(delivery.stream.as_slice());
    let handle = Key::open(ctx, &stream, true, 0);
    let mut appender = Appender::new(
        ctx,
        &handle,
        &stream,
        (b"key", key.as_slice()),
        [b"member", b"deadline"],
    );
    // The first entry gets an ID the server makes, as `XADD stream *`; the
    // others the ones after it, which the stream accepts without reading
    // the clock again and a replica can count.
    let (mut first, mut last): (Option<StreamId>, Option<StreamId>) = (None, None);
    let mut delivered = 0;
    for (member, deadline_ms) in gone {
        let id = match last {
            None => Ok(None),
            Some(last) => last.after(1).map(Some).ok_or(StreamRefusal::Full),
        };
        let added = id.and_then(|id| {
            let id = id.map(|i| (i.ms, i.seq));
            appender.append(member.as_ref(), *deadline_ms, id)
        });
        match added {
            Ok((ms, seq)) => {
                last = Some(StreamId { ms, seq });
                first = first.or(last);
                delivered += 1;
            }
            Err(refusal) => {
                let why = match refusal {
                    StreamRefusal::WrongType => "holding another type",
                    StreamRefusal::Full => "refusing the entry",
                    StreamRefusal::Other => "refused by the server",
                };
                delivery_failed(ctx, key, delivery, gone.len() - delivered, why);
                break;
            }
        }
    }
    let Some(first) = first else {
        return 0;
    };
    // One event for the batch: what a client waiting on keyspace events
    // needs (the stream changed), without one per entry.
    server::notify(ctx, NotifyEvent::STREAM, c"xadd", &stream);
    let trimmed_to = delivery.maxlen.and_then(|n| handle.stream_trim(n, true));
    let trim_word = trimmed_to.map_or(-1, |len| i64::try_from(len).unwrap_or(i64::MAX));
    appender.replicate(c"XSET.DELIVERED", key, (first.ms, first.seq), trim_word);
    if trimmed_to.is_some() {
        server::notify(ctx, NotifyEvent::STREAM, c"xtrim", &stream);
    }
    server::signal_modified(ctx, &stream);
    stats::record_delivered(delivered);
    delivered
}

/// Applies one drain of a primary's (`XSET.DELIVERED`) on a replica or
/// while loading: appends each `member deadline` pair of `entries` to
/// `stream` with the fields the primary wrote (`key`, `member`,
/// `deadline`, the deadline's bytes as they came), entry `i` with the ID
/// `i` places after `first_id`; trims the stream to exactly `trimmed_to`
/// entries; removes the members from the set at `key` without delivering
/// them again; emits the primary's events (`xadd`, `xtrim`,
/// `xset.expired`, `del` if the set goes) and propagates the command as it
/// came, which reaches a replica's own AOF. Nothing is counted as
/// delivered.
///
/// # Errors
/// `WRONGTYPE` when either key holds another type, or the stream refused
/// the first entry (its ID not after the stream's last): then nothing
/// changed.
pub fn apply_delivered(
    ctx: &Context,
    (key, stream): (&CmdArg, &CmdArg),
    clock: Clock,
    first_id: StreamId,
    trimmed_to: Option<u64>,
    entries: &[CmdArg],
) -> RedisResult {
    Key::open(ctx, key, false, 0)
        .get_value::<XSet>(&XSET_TYPE)
        .map_err(|_| RedisError::WrongType)?;
    let handle = Key::open(ctx, stream, true, 0);
    if !matches!(handle.key_type(), KeyType::Empty | KeyType::Stream) {
        return Err(RedisError::WrongType);
    }
    let mut appender = Appender::new(
        ctx,
        &handle,
        stream,
        (b"key", key.as_slice()),
        [b"member", b"deadline"],
    );
    for (i, pair) in entries.chunks_exact(2).enumerate() {
        let id = first_id.after(i as u64).ok_or(StreamRefusal::Full);
        if id
            .and_then(|id| appender.append_given((id.ms, id.seq), &pair[0], &pair[1]))
            .is_err()
        {
            if i == 0 {
                return Err(errors::err(errors::DELIVERED_ID_NOT_AFTER));
            }
            // Cannot happen to a replica whose stream is the primary's.
            ctx.log_warning(&format!(
                "xset: XSET.DELIVERED: stream '{}' refused entry {i} of {}",
                String::from_utf8_lossy(stream.as_slice()),
                entries.len() / 2
            ));
            break;
        }
    }
    drop(appender);
    server::notify(ctx, NotifyEvent::STREAM, c"xadd", stream);
    if trimmed_to.is_some_and(|len| handle.stream_trim(len, false).is_some()) {
        server::notify(ctx, NotifyEvent::STREAM, c"xtrim", stream);
    }
    server::signal_modified(ctx, stream);
    with_write(ctx, key, clock, |set, effects| {
        let members = entries.iter().step_by(2);
        let removed = members.filter(|m| set.remove(m.as_slice()).is_some());
        effects.expired_as_told(removed.count());
        Ok(RedisValue::SimpleStringStatic("OK"))
    })?;
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// Whether, in a cluster, the stream hashes to another slot than the set
/// (a set restored under another name): no entry can go there, and its
/// absence here is no reason to wait.
fn stream_elsewhere(ctx: &Context, key: &impl KeyName, delivery: &Delivery) -> bool {
    ContextFlags::of(Some(ctx)).cluster() && key_slot(&delivery.stream) != key_slot(key.as_slice())
}

/// Whether the stream key `name` is missing: then a set that delivers to it
/// keeps its due members (hidden from reads) until the stream exists
/// again, rather than making a new one. In a cluster, a set can reach a
/// node before its stream does (a reshard's `MIGRATE` batches), and a
/// stream made there would hold entries the arriving one then clashes
/// with; `XSET.NOTIFY` makes the stream, so it is missing only after a
/// `DEL` or in such a window.
fn stream_missing(ctx: &Context, name: &[u8]) -> bool {
    let name = ctx.create_string(name);
    Key::open(ctx, &name, false, raw::REDISMODULE_OPEN_KEY_NOTOUCH).is_empty()
}

/// Makes the empty stream `stream` if the key is missing, as `XGROUP
/// CREATE ... MKSTREAM` would: one entry added and trimmed away at once,
/// propagated as the `XADD ... MAXLEN 0` with its ID that does the same.
/// Returns whether it made one.
pub fn create_stream(ctx: &Context, stream: &CmdArg, set_key: &CmdArg) -> bool {
    let handle = Key::open(ctx, stream, true, 0);
    let fields: [&[u8]; 2] = [b"key", set_key.as_slice()];
    let Some((ms, seq)) = handle.create_empty_stream(&fields) else {
        return false;
    };
    let id = format!("{ms}-{seq}");
    let parts: [&[u8]; 5] = [b"MAXLEN", b"0", id.as_bytes(), fields[0], fields[1]];
    propagate(ctx, "XADD", stream, &parts);
    server::notify(ctx, NotifyEvent::STREAM, c"xadd", stream);
    server::signal_modified(ctx, stream);
    true
}

/// Counts `n` members that expired undelivered and logs why, at most once
/// every ten seconds.
fn delivery_failed(ctx: &Context, key: &impl KeyName, delivery: &Delivery, n: usize, why: &str) {
    if stats::record_delivery_failed(n) {
        ctx.log_warning(&format!(
            "xset: {n} expired member(s) of key '{}' were not delivered: stream '{}' is {why} \
             (further failures are counted in INFO xset, xset_delivery_failures)",
            String::from_utf8_lossy(key.as_slice()),
            String::from_utf8_lossy(&delivery.stream),
        ));
    }
}

/// Publishes each expired member on `__xset@<db>__:expired:<key>`, one
/// message per member (binary-safe), when `xset.notify-expired-members` is
/// on. Keyspace events name only the key; this says which members went.
fn publish_expired<M: AsRef<[u8]>>(ctx: &Context, key: &impl KeyName, gone: &[M]) {
    let mut channel = format!("__xset@{}__:expired:", server::selected_db(ctx)).into_bytes();
    channel.extend_from_slice(key.as_slice());
    for member in gone {
        server::publish(ctx, &channel, member.as_ref());
    }
}

/// Opens `key` for writing and runs `body` on its set: an empty set when the
/// key is absent (stored afterwards only if `body` left members or a
/// delivery in it). On a primary, due members are reclaimed first. A set
/// left empty is deleted, unless it carries a delivery.
/// `body` reports what it changed to its [`Effects`]; the key is signalled
/// as modified only if something changed (a lazy reclaim included).
pub fn with_write<K: KeyName>(
    ctx: &Context,
    key: &K,
    clock: Clock,
    body: impl FnOnce(&mut XSet, &mut Effects<'_, K>) -> RedisResult,
) -> RedisResult {
    let mut effects = Effects {
        ctx,
        key,
        flags: clock.flags,
        changed: false,
    };
    let handle = Key::open(ctx, key, true, 0);
    let existing = handle
        .get_value_mut::<XSet>(&XSET_TYPE)
        .map_err(|_| RedisError::WrongType)?;
    let tracked = existing.as_ref().map(|s| s.next_deadline());
    // A new set is made only for a missing key: not on the write path of
    // an existing one.
    let mut fresh: Option<XSet> = None;
    let set: &mut XSet = match existing {
        Some(set) => {
            // Nothing is due unless the earliest deadline has passed: the
            // usual write skips the drain without touching the store again.
            if clock.primary && tracked.flatten().is_some_and(|d| d <= clock.now_ms) {
                let n = reclaim_due(ctx, key, set, clock.now_ms, LAZY_RECLAIM_LIMIT);
                stats::record_lazy(n);
                effects.changed |= n > 0;
            }
            set
        }
        None => fresh.insert(XSet::with_limits(config::limits())),
    };
    let reply = body(set, &mut effects);
    let empty = set.is_empty() && !set.keeps_when_empty();
    let next = set.next_deadline();
    // The database is asked for only when the key's tracking moves (not on
    // the usual write, which leaves the earliest deadline where it was).
    let relocate = |before, after| {
        let db = server::selected_db(ctx);
        tracking::with(|t| t.relocate(db, key.as_slice(), before, after));
    };
    match tracked {
        Some(before) if empty => {
            // The emptied value no longer knows where it was tracked.
            relocate(before, None);
            handle.delete()?;
            notify_del(ctx, key);
        }
        Some(before) if before == next => {}
        Some(before) => relocate(before, next),
        None if empty => {}
        None => {
            if let Some(fresh) = fresh {
                handle.set_value(&XSET_TYPE, fresh)?;
                relocate(None, next);
            }
        }
    }
    if effects.changed {
        server::signal_modified(ctx, key);
    }
    reply
}

/// Runs `body` on the set at `key` (`None` when absent), read-only. On a
/// primary, a key with due members is first reclaimed through
/// [`with_write`]; elsewhere expired members stay and the core's `now_ms`
/// filters hide them.
pub fn with_read(
    ctx: &Context,
    key: &impl KeyName,
    clock: Clock,
    body: impl FnOnce(Option<&XSet>) -> RedisResult,
) -> RedisResult {
    read_at(
        ctx,
        key,
        |next| read_at_clock(clock, next),
        |set, _| body(set),
    )
}

/// Runs `body` on the set at `key` (`None` when absent) and the time to
/// read it at, for a read whose reply depends on time only through which
/// members are live. When no member is due by [`clock::live_bound_ms`]
/// (the usual read), that bound is the time and the server's context flags
/// are not read: every member is live at the command's own time too. Else
/// it runs as [`with_read`] at the command's time. The key is looked up
/// once either way, unless due members must be reclaimed first.
pub fn with_live_read(
    ctx: &Context,
    key: &impl KeyName,
    body: impl FnOnce(Option<&XSet>, u64) -> RedisResult,
) -> RedisResult {
    let read = |next: Option<u64>| match clock::live_bound_ms() {
        Some(bound_ms) if next.is_none_or(|d| d > bound_ms) => Read::At(bound_ms),
        _ => read_at_clock(Clock::of(ctx), next),
    };
    read_at(ctx, key, read, body)
}

/// How a read goes on, given its set's earliest deadline.
enum Read {
    /// Answer from the set as it is, at this time.
    At(u64),
    /// Reclaim the due members first, then answer at this clock's time.
    Reclaimed(Clock),
}

/// A read at `clock` of a set whose earliest deadline is `next`: only a
/// primary that is not paused reclaims, and only what is due.
fn read_at_clock(clock: Clock, next: Option<u64>) -> Read {
    if clock.primary && !clock.paused && next.is_some_and(|d| d <= clock.now_ms) {
        Read::Reclaimed(clock)
    } else {
        Read::At(clock.now_ms)
    }
}

/// The reads' common path: one lookup of `key`, `read` decides from the
/// set's earliest deadline, and a reclaim looks the key up again after.
fn read_at(
    ctx: &Context,
    key: &impl KeyName,
    read: impl FnOnce(Option<u64>) -> Read,
    body: impl FnOnce(Option<&XSet>, u64) -> RedisResult,
) -> RedisResult {
    let clock = {
        let handle = Key::open(ctx, key, false, 0);
        let set = handle
            .get_value::<XSet>(&XSET_TYPE)
            .map_err(|_| RedisError::WrongType)?;
        match read(set.and_then(XSet::next_deadline)) {
            Read::At(now_ms) => return body(set, now_ms),
            // A read never delivers: it hides what is due and leaves the
            // reclaim to a write or the expiry cycle.
            Read::Reclaimed(clock) if set.and_then(XSet::delivery).is_some() => {
                return body(set, clock.now_ms);
            }
            Read::Reclaimed(clock) => clock,
        }
    };
    with_write(ctx, key, clock, |_, _| Ok(RedisValue::NoReply))?;
    let handle = Key::open(ctx, key, false, 0);
    body(
        handle
            .get_value::<XSet>(&XSET_TYPE)
            .map_err(|_| RedisError::WrongType)?,
        clock.now_ms,
    )
}

/// What [`repair_after_panic`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repair {
    /// The key holds no xset: nothing to do.
    Nothing,
    /// The set was whole and stays as the command left it; `resent`: on a
    /// primary, it was re-sent whole to replicas and the AOF (a replica or
    /// a loading server propagates nothing).
    Kept { resent: bool },
    /// The set was empty or broken and was deleted; `propagated`: on a
    /// primary, the deletion went to replicas and the AOF too.
    Deleted { propagated: bool },
}

/// After a write command panicked on `key`: the set may have changed
/// without the change being propagated, be empty (which must not stay: the
/// next RDB would not load), or break an invariant. A whole set is re-sent
/// to replicas and the AOF as `DEL` plus the commands that rebuild it, so
/// they hold exactly what the primary holds; an empty or broken one is
/// deleted and the deletion propagated. A replica only deletes.
pub fn repair_after_panic(ctx: &Context, key: &impl KeyName, clock: Clock) -> Repair {
    let handle = Key::open(ctx, key, true, 0);
    let Ok(Some(set)) = handle.get_value_mut::<XSet>(&XSET_TYPE) else {
        return Repair::Nothing;
    };
    let whole = (!set.is_empty() || set.keeps_when_empty())
        && !faults::hit(Fault::Unrepairable)
        && catch_unwind(AssertUnwindSafe(|| set.check_invariants())).is_ok();
    let db = server::selected_db(ctx);
    if whole {
        if clock.primary {
            propagate(ctx, "DEL", key, &[]);
            rebuild_commands(set, |cmd, args| {
                propagate(ctx, &cmd.to_string_lossy(), key, args);
            });
            // The DEL dropped the key's own TTL on the replicas.
            if let Some(at_ms) = server::key_expires_at(ctx, key) {
                propagate(ctx, "PEXPIREAT", key, &[at_ms.to_string().as_bytes()]);
            }
        }
        let deadline_ms = set.next_deadline();
        tracking::with(|t| {
            t.forget_key(db, key.as_slice());
            t.relocate(db, key.as_slice(), None, deadline_ms);
        });
        server::signal_modified(ctx, key);
        return Repair::Kept {
            resent: clock.primary,
        };
    }
    tracking::with(|t| t.forget_key(db, key.as_slice()));
    if handle.delete().is_ok() {
        if clock.primary {
            propagate(ctx, "DEL", key, &[]);
        }
        server::signal_modified(ctx, key);
        notify_del(ctx, key);
    }
    Repair::Deleted {
        propagated: clock.primary,
    }
}

/// Tracks `key` of the selected database anew after it arrived under this
/// name (`RENAME`/`MOVE`/`COPY` targets, `RESTORE`). Keys of other types
/// are left alone.
pub fn retrack(ctx: &Context, key: &[u8]) {
    let name = ctx.create_string(key);
    let handle = Key::open(ctx, &name, false, raw::REDISMODULE_OPEN_KEY_NOTOUCH);
    if let Ok(Some(set)) = handle.get_value::<XSet>(&XSET_TYPE) {
        let db = server::selected_db(ctx);
        tracking::with(|t| t.relocate(db, key, None, set.next_deadline()));
    }
}

/// Drains the due members of `key` (popped from the tracking index) in the
/// selected database, in chunks until none is due or `budget` since
/// `started` is spent; tracks what is left anew, or deletes the key once
/// empty. Returns how many members went.
pub fn expire_due(
    ctx: &Context,
    key: &[u8],
    now_ms: u64,
    started: Instant,
    budget: Duration,
) -> usize {
    let name = ctx.create_string(key);
    let handle = Key::open(ctx, &name, true, 0);
    let Ok(Some(set)) = handle.get_value_mut::<XSet>(&XSET_TYPE) else {
        // Gone or no longer an xset: the popped entry was stale.
        return 0;
    };
    let mut expired = 0;
    let deferred = loop {
        let n = reclaim_due(ctx, &name, set, now_ms, EXPIRY_CHUNK);
        expired += n;
        if n < EXPIRY_CHUNK {
            // Fewer than a chunk yet some still due: the delivery was
            // deferred (its stream is missing).
            break set.next_deadline().is_some_and(|d| d <= now_ms);
        }
        if started.elapsed() >= budget {
            break false;
        }
    };
    if expired > 0 {
        server::signal_modified(ctx, &name);
    }
    if set.is_empty() && !set.keeps_when_empty() {
        if handle.delete().is_ok() {
            notify_del(ctx, &name);
        }
    } else {
        let db = server::selected_db(ctx);
        // A deferred key is looked at again a period later, not at once.
        let next = if deferred {
            Some(now_ms + config::period_ms())
        } else {
            set.next_deadline()
        };
        tracking::with(|t| t.relocate(db, key, None, next));
    }
    expired
}

/// What one algebra key holds, as [`with_operands`] finds it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Xset,
    Plain,
    Missing,
}

/// Runs `body` on the operands of an algebra command, one per key in
/// order: an xset, a plain Redis set (its members copied out, without
/// deadlines), or a missing key. Every key is type-checked first: any
/// other type is `WRONGTYPE` before anything is copied. `copy` says, from
/// the kinds of all keys, whether plain sets are needed at all: when the
/// operation's result is empty whatever they hold (an intersection with a
/// missing key), they stay empty operands. A key named twice is copied
/// once.
/// Read-only: due members are hidden by the core's `now_ms` filters, not
/// reclaimed (an exception to this file's rule for single-key commands).
pub fn with_operands<R>(
    ctx: &Context,
    keys: &[CmdArg],
    copy: impl Fn(&[Kind]) -> bool,
    body: impl FnOnce(&[Input<'_>]) -> R,
) -> Result<R, RedisError> {
    let mut handles = Vec::with_capacity(keys.len());
    let mut kinds = Vec::with_capacity(keys.len());
    for key in keys {
        let handle = Key::open(ctx, key, false, 0);
        kinds.push(match handle.key_type() {
            KeyType::Empty => Kind::Missing,
            KeyType::Set => Kind::Plain,
            KeyType::Module if matches!(handle.get_value::<XSet>(&XSET_TYPE), Ok(Some(_))) => {
                Kind::Xset
            }
            _ => return Err(RedisError::WrongType),
        });
        handles.push(handle);
    }
    // Plain sets copied, each distinct key once, at the position of its
    // first occurrence; later occurrences share that copy. Hashed, so that
    // the cost stays linear in the number of keys.
    let mut first_seen: HashMap<&[u8], usize> = HashMap::with_capacity(keys.len());
    let first_of: Vec<usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| *first_seen.entry(k.as_slice()).or_insert(i))
        .collect();
    let wanted = copy(&kinds);
    let mut copies: Vec<Option<PlainSet>> = (0..keys.len()).map(|_| None).collect();
    for (i, key) in keys.iter().enumerate() {
        if wanted && kinds[i] == Kind::Plain && first_of[i] == i {
            let mut members = PlainSet::new();
            server::for_each_set_member(ctx, key, |m| {
                members.insert(m.to_vec());
            });
            copies[i] = Some(members);
        }
    }
    let empty = PlainSet::new();
    let mut inputs = Vec::with_capacity(keys.len());
    for (i, handle) in handles.iter().enumerate() {
        inputs.push(match kinds[i] {
            Kind::Xset => match handle.get_value::<XSet>(&XSET_TYPE) {
                Ok(Some(set)) => Input::Xset(set),
                _ => return Err(RedisError::WrongType),
            },
            Kind::Plain => Input::Plain(copies[first_of[i]].as_ref().unwrap_or(&empty)),
            Kind::Missing => Input::Missing,
        });
    }
    Ok(body(&inputs))
}

/// Makes `set` the value of `dest`, whatever `dest` held before (any type,
/// and its key TTL, are gone, as after `SINTERSTORE`); an empty `set`
/// deletes `dest` instead. Propagates the result, never the recipe: `DEL`
/// if `dest` existed, then the commands that rebuild `set` with its
/// absolute deadlines, so replicas and the AOF hold exactly this set
/// whatever their clocks say. Emits `event` (or `del` when an existing
/// `dest` was deleted) and tracks `dest` anew. Returns the members stored.
pub fn replace_with(
    ctx: &Context,
    dest: &impl KeyName,
    set: XSet,
    event: &CStr,
) -> RedisResult<usize> {
    let handle = Key::open(ctx, dest, true, 0);
    let db = server::selected_db(ctx);
    if let Ok(Some(old)) = handle.get_value::<XSet>(&XSET_TYPE) {
        let before = old.next_deadline();
        tracking::with(|t| t.relocate(db, dest.as_slice(), before, None));
    }
    let existed = !handle.is_empty();
    if existed {
        handle.delete()?;
        propagate(ctx, "DEL", dest, &[]);
    }
    let stored = set.len();
    if set.is_empty() {
        if existed {
            notify_del(ctx, dest);
            server::signal_modified(ctx, dest);
        }
        return Ok(0);
    }
    let next = set.next_deadline();
    if let Err(e) = handle.set_value(&XSET_TYPE, set) {
        // Cannot happen on a key just opened for writing; if it did, the
        // deletion above stands and is announced.
        if existed {
            notify_del(ctx, dest);
            server::signal_modified(ctx, dest);
        }
        return Err(e);
    }
    if faults::hit(Fault::WriteMidway) {
        panic!("fault injected in a store, before its propagation");
    }
    if let Ok(Some(set)) = handle.get_value::<XSet>(&XSET_TYPE) {
        rebuild_commands(set, |cmd, args| {
            propagate(ctx, &cmd.to_string_lossy(), dest, args);
        });
    }
    tracking::with(|t| t.relocate(db, dest.as_slice(), None, next));
    notify(ctx, event, dest);
    server::signal_modified(ctx, dest);
    Ok(stored)
}
