//! The grammar of `XSET.ADD` and `XSET.ADDEX`, from the argument vector to
//! an [`AddRequest`]: options, the `MEMBERS` block, typed times made
//! absolute, a member named twice kept once at its last position. Pure: it
//! reads arguments only, so the fuzz targets `grammar` and `requests`
//! (fuzz/) compile it with the errors and parse modules and stand-in
//! arguments. Every other command's grammar is in `requests.rs`.

use super::parse::{TimeUnit, add_deadline, members_block, not_members, once, parse_i64, value_of};
use crate::errors::{self, err};
use crate::ffi::key::CmdArg;
use redis_module::RedisError;
use smallvec::SmallVec;
use std::collections::HashMap;
use xset_core::{Compare, Presence};

/// Parses `XSET.ADD key member ttl [member ttl ...]`; on a replica or a
/// loading server (`primary` false) also version 0.1's `XSET.ADD key PXAT
/// MEMBERS ...`, read as `XSET.ADDEX`.
pub fn parse_add(
    args: &[CmdArg],
    primary: bool,
    now_ms: u64,
) -> Result<AddRequest<'_>, RedisError> {
    if args.len().is_multiple_of(2) && args.len() >= 4 {
        Ok(AddRequest::plain(parse_pairs(
            &args[2..],
            TimeUnit::Seconds,
            now_ms,
            "xset.add",
        )?))
    } else if !primary && args.len() >= 5 {
        // A 0.1 `XSET.ADD key PXAT MEMBERS ...` from a primary or an AOF.
        parse_addex(args, 2, now_ms)
    } else {
        Err(errors::arity("xset.add"))
    }
}

/// Members and absolute deadlines, one of them inline: an add of one
/// member, the common case, allocates nothing to hold it.
pub type Pairs<'a> = SmallVec<[(&'a CmdArg, u64); 1]>;

/// A parsed add.
pub struct AddRequest<'a> {
    pub presence: Presence,
    pub compare: Compare,
    pub max_len: Option<usize>,
    /// `CAP n`: refuse the whole add if the set would hold more than n live
    /// members.
    pub cap: Option<usize>,
    /// `CODES`: reply one code per pair given, in order, instead of the
    /// count; then `given` is how many pairs were given and `origin[i]` the
    /// position of `pairs[i]` among them.
    pub codes: bool,
    pub given: usize,
    pub origin: Vec<usize>,
    /// Member and absolute deadline; each member once, at its last position.
    pub pairs: Pairs<'a>,
}

impl<'a> AddRequest<'a> {
    fn plain(pairs: Pairs<'a>) -> AddRequest<'a> {
        AddRequest {
            presence: Presence::Any,
            compare: Compare::Any,
            max_len: None,
            cap: None,
            codes: false,
            given: pairs.len(),
            origin: Vec::new(),
            pairs: last_wins(pairs, None),
        }
    }
}

/// A member named twice counts once and its last deadline wins. With
/// `origin`, records where each kept pair stood among those given.
fn last_wins<'a>(mut pairs: Pairs<'a>, origin: Option<&mut Vec<usize>>) -> Pairs<'a> {
    let want_origin = origin.is_some();
    let mut kept: Vec<usize> = Vec::new();
    if pairs.len() > 1 {
        let mut last: HashMap<&[u8], usize> = HashMap::with_capacity(pairs.len());
        for (i, (m, _)) in pairs.iter().enumerate() {
            last.insert(m.as_slice(), i);
        }
        if last.len() < pairs.len() {
            let mut i = 0;
            pairs.retain(|(m, _)| {
                let keep = last.get(m.as_slice()) == Some(&i);
                if keep && want_origin {
                    kept.push(i);
                }
                i += 1;
                keep
            });
        } else if want_origin {
            kept.extend(0..pairs.len());
        }
    } else if want_origin {
        kept.extend(0..pairs.len());
    }
    if let Some(origin) = origin {
        *origin = kept;
    }
    pairs
}

fn parse_pairs<'a>(
    data: &'a [CmdArg],
    unit: TimeUnit,
    now_ms: u64,
    cmd: &str,
) -> Result<Pairs<'a>, RedisError> {
    let mut pairs = Pairs::with_capacity(data.len() / 2);
    for pair in data.chunks_exact(2) {
        pairs.push((&pair[0], add_deadline(&pair[1], unit, now_ms, cmd)?));
    }
    Ok(pairs)
}

/// Parses `XSET.ADDEX`'s options from `args[pos]` on, then its `MEMBERS`
/// block. A syntax error names the word: an unknown option, one given
/// twice, a second unit, an option without its value, or the missing
/// `MEMBERS`.
pub fn parse_addex(
    args: &[CmdArg],
    mut pos: usize,
    now_ms: u64,
) -> Result<AddRequest<'_>, RedisError> {
    let mut presence = Presence::Any;
    let mut compare = Compare::Any;
    let mut unit: Option<(TimeUnit, &CmdArg)> = None;
    let mut max_len = None;
    let mut cap = None;
    let mut codes = false;
    let data = loop {
        let Some(word) = args.get(pos) else {
            return Err(errors::members_expected(None));
        };
        let arg = word.as_slice();
        let is = |w: &str| arg.eq_ignore_ascii_case(w.as_bytes());
        let mut set_unit = |u| match unit {
            None => {
                unit = Some((u, word));
                Ok(())
            }
            Some((old, _)) if old == u => Err(errors::given_twice(arg)),
            Some((_, earlier)) => Err(errors::conflicts(arg, earlier.as_slice())),
        };
        if is("NX") {
            presence = merge_presence(presence, Presence::OnlyNew, arg)?;
        } else if is("XX") {
            presence = merge_presence(presence, Presence::OnlyExisting, arg)?;
        } else if is("GT") {
            compare = merge_compare(compare, Compare::Greater, arg)?;
        } else if is("LT") {
            compare = merge_compare(compare, Compare::Less, arg)?;
        } else if is("EX") {
            set_unit(TimeUnit::Seconds)?;
        } else if is("PX") {
            set_unit(TimeUnit::Millis)?;
        } else if is("EXAT") {
            set_unit(TimeUnit::UnixSeconds)?;
        } else if is("PXAT") {
            set_unit(TimeUnit::UnixMillis)?;
        } else if is("MAXLEN") {
            if max_len.is_some() {
                return Err(errors::given_twice(arg));
            }
            let n = parse_i64(value_of(args, pos)?.as_slice())?;
            if n <= 0 {
                return Err(err(errors::MAXLEN_POSITIVE));
            }
            max_len = Some(usize::try_from(n).unwrap_or(usize::MAX));
            pos += 1;
        } else if is("CAP") {
            if cap.is_some() {
                return Err(errors::given_twice(arg));
            }
            let n = parse_i64(value_of(args, pos)?.as_slice())?;
            if n <= 0 {
                return Err(err(errors::CAP_POSITIVE));
            }
            cap = Some(usize::try_from(n).unwrap_or(usize::MAX));
            pos += 1;
        } else if is("CODES") {
            once(&mut codes, word)?;
        } else if is("MEMBERS") {
            break members_block(args, pos, 2)?;
        } else {
            return Err(not_members(args, pos));
        }
        pos += 1;
    };
    if presence == Presence::OnlyNew && compare != Compare::Any {
        return Err(err(errors::GT_LT_NX));
    }
    let unit = unit.map_or(TimeUnit::Seconds, |(u, _)| u);
    let pairs = parse_pairs(data, unit, now_ms, "xset.addex")?;
    let given = pairs.len();
    let mut origin = Vec::new();
    let pairs = last_wins(pairs, codes.then_some(&mut origin));
    Ok(AddRequest {
        presence,
        compare,
        max_len,
        cap,
        codes,
        given,
        origin,
        pairs,
    })
}

/// `NX`/`XX` given once: the same word twice is a syntax error that names
/// it, the other one Redis's own error for the pair.
fn merge_presence(old: Presence, new: Presence, word: &[u8]) -> Result<Presence, RedisError> {
    match old {
        Presence::Any => Ok(new),
        o if o == new => Err(errors::given_twice(word)),
        _ => Err(err(errors::NX_AND_XX)),
    }
}

/// `GT`/`LT` given once, as [`merge_presence`].
fn merge_compare(old: Compare, new: Compare, word: &[u8]) -> Result<Compare, RedisError> {
    match old {
        Compare::Any => Ok(new),
        o if o == new => Err(errors::given_twice(word)),
        _ => Err(err(errors::GT_LT_NX)),
    }
}
