//! Options of the xset commands, written as the command's words, and the
//! one reply shape that differs between RESP2 and RESP3.

use redis::{FromRedisValue, ParsingError, RedisWrite, ToRedisArgs, Value};

/// A bound of `XSET.COUNT` and `BYDEADLINE`: a deadline in Unix
/// milliseconds, inclusive or not, or an infinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// `n`: deadlines from or up to `n`, included.
    Inclusive(i64),
    /// `(n`: `n` excluded.
    Exclusive(i64),
    /// `-inf`.
    NegInf,
    /// `+inf`: also counts members without a deadline.
    PosInf,
}

impl ToRedisArgs for Bound {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        match self {
            Bound::Inclusive(n) => out.write_arg_fmt(n),
            Bound::Exclusive(n) => out.write_arg_fmt(format_args!("({n}")),
            Bound::NegInf => out.write_arg(b"-inf"),
            Bound::PosInf => out.write_arg(b"+inf"),
        }
    }
}

/// The unit of the times of `XSET.ADDEX`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unit {
    /// `EX`: a TTL in seconds (the server's default).
    #[default]
    Ex,
    /// `PX`: a TTL in milliseconds.
    Px,
    /// `EXAT`: a deadline as Unix seconds.
    ExAt,
    /// `PXAT`: a deadline as Unix milliseconds.
    PxAt,
}

/// The condition of the `XSET.EXPIRE` family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpireCondition {
    /// `NX`: only members without a deadline.
    Nx,
    /// `XX`: only members with a deadline.
    Xx,
    /// `GT`: only a later deadline.
    Gt,
    /// `LT`: only an earlier deadline.
    Lt,
}

impl ToRedisArgs for ExpireCondition {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        out.write_arg(match self {
            ExpireCondition::Nx => b"NX",
            ExpireCondition::Xx => b"XX",
            ExpireCondition::Gt => b"GT",
            ExpireCondition::Lt => b"LT",
        });
    }
}

/// The options of `XSET.ADDEX` before `MEMBERS`, built by chaining:
/// `AddOptions::new().nx().unit(Unit::Px).cap(3)`. Conflicting options are
/// sent as they are, for the server to refuse.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddOptions {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub unit: Option<Unit>,
    pub maxlen: Option<usize>,
    pub cap: Option<usize>,
}

impl AddOptions {
    pub fn new() -> Self {
        Self::default()
    }
    /// `NX`: only members not live yet.
    pub fn nx(mut self) -> Self {
        self.nx = true;
        self
    }
    /// `XX`: only live members.
    pub fn xx(mut self) -> Self {
        self.xx = true;
        self
    }
    /// `GT`: only a later deadline.
    pub fn gt(mut self) -> Self {
        self.gt = true;
        self
    }
    /// `LT`: only an earlier deadline.
    pub fn lt(mut self) -> Self {
        self.lt = true;
        self
    }
    /// `EX`, `PX`, `EXAT` or `PXAT`.
    pub fn unit(mut self, unit: Unit) -> Self {
        self.unit = Some(unit);
        self
    }
    /// `MAXLEN n`: drops the members expiring soonest beyond `n`.
    pub fn maxlen(mut self, n: usize) -> Self {
        self.maxlen = Some(n);
        self
    }
    /// `CAP n`: refuses (a `None` reply) an add that would leave more than
    /// `n` live members.
    pub fn cap(mut self, n: usize) -> Self {
        self.cap = Some(n);
        self
    }
}

impl ToRedisArgs for AddOptions {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        for (word, on) in [
            (b"NX", self.nx),
            (b"XX", self.xx),
            (b"GT", self.gt),
            (b"LT", self.lt),
        ] {
            if on {
                out.write_arg(word);
            }
        }
        if let Some(unit) = self.unit {
            out.write_arg(match unit {
                Unit::Ex => &b"EX"[..],
                Unit::Px => b"PX",
                Unit::ExAt => b"EXAT",
                Unit::PxAt => b"PXAT",
            });
        }
        if let Some(n) = self.maxlen {
            out.write_arg(b"MAXLEN");
            out.write_arg_fmt(n);
        }
        if let Some(n) = self.cap {
            out.write_arg(b"CAP");
            out.write_arg_fmt(n);
        }
    }
}

/// The options of `XSET.MEMBERS` before `WITHTTL`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MembersOptions {
    /// `BYDEADLINE min max`.
    pub by_deadline: Option<(Bound, Bound)>,
    /// `REV`: latest deadline first.
    pub rev: bool,
    /// `LIMIT offset count`.
    pub limit: Option<(usize, usize)>,
}

impl MembersOptions {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn by_deadline(mut self, min: Bound, max: Bound) -> Self {
        self.by_deadline = Some((min, max));
        self
    }
    pub fn rev(mut self) -> Self {
        self.rev = true;
        self
    }
    pub fn limit(mut self, offset: usize, count: usize) -> Self {
        self.limit = Some((offset, count));
        self
    }
}

impl ToRedisArgs for MembersOptions {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        if let Some((min, max)) = self.by_deadline {
            out.write_arg(b"BYDEADLINE");
            min.write_redis_args(out);
            max.write_redis_args(out);
        }
        if self.rev {
            out.write_arg(b"REV");
        }
        if let Some((offset, count)) = self.limit {
            out.write_arg(b"LIMIT");
            out.write_arg_fmt(offset);
            out.write_arg_fmt(count);
        }
    }
}

/// The options of `XSET.SCAN` before `WITHTTL`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanOptions {
    /// `MATCH pattern`.
    pub pattern: Option<Vec<u8>>,
    /// `COUNT count`: a hint of the members per step.
    pub count: Option<usize>,
}

impl ScanOptions {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn pattern(mut self, pattern: impl Into<Vec<u8>>) -> Self {
        self.pattern = Some(pattern.into());
        self
    }
    pub fn count(mut self, count: usize) -> Self {
        self.count = Some(count);
        self
    }
}

impl ToRedisArgs for ScanOptions {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        if let Some(p) = &self.pattern {
            out.write_arg(b"MATCH");
            out.write_arg(p);
        }
        if let Some(n) = self.count {
            out.write_arg(b"COUNT");
            out.write_arg_fmt(n);
        }
    }
}

/// A `WITHTTL` reply as `(member, ms_left)` pairs, whether the server sent
/// it flat (`[m, t, m, t]`, RESP2) or paired (`[[m, t], ...]`, RESP3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WithTtl<RV>(pub Vec<(RV, i64)>);

impl<RV: FromRedisValue> FromRedisValue for WithTtl<RV> {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let Value::Array(items) = v else {
            return Err(format!("a WITHTTL reply is an array, not {v:?}").into());
        };
        if items.iter().all(|i| matches!(i, Value::Array(_))) {
            // RESP3: one [member, ttl] array per member (or no member).
            return items
                .into_iter()
                .map(<(RV, i64)>::from_redis_value)
                .collect::<Result<_, _>>()
                .map(WithTtl);
        }
        if items.len() % 2 != 0 {
            return Err("a flat WITHTTL reply has an even length".into());
        }
        let mut out = Vec::with_capacity(items.len() / 2);
        let mut it = items.into_iter();
        while let (Some(m), Some(t)) = (it.next(), it.next()) {
            out.push((RV::from_redis_value(m)?, i64::from_redis_value(t)?));
        }
        Ok(WithTtl(out))
    }
}

impl<RV> From<WithTtl<RV>> for Vec<(RV, i64)> {
    fn from(w: WithTtl<RV>) -> Self {
        w.0
    }
}

/// An `XSET.SCAN ... WITHTTL` reply: the cursor and the pairs.
pub(crate) struct ScanWithTtl<RV>(u64, WithTtl<RV>);

impl<RV: FromRedisValue> FromRedisValue for ScanWithTtl<RV> {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (cursor, pairs) = <(u64, WithTtl<RV>)>::from_redis_value(v)?;
        Ok(ScanWithTtl(cursor, pairs))
    }
}

impl<RV> From<ScanWithTtl<RV>> for (u64, Vec<(RV, i64)>) {
    fn from(s: ScanWithTtl<RV>) -> Self {
        (s.0, s.1.0)
    }
}
