//! Appending to a stream, with as few server strings as the module API
//! allows: the field names and the fixed value are made once per
//! [`Appender`], and each entry makes only its member's and (when it
//! differs from the previous entry's) its deadline's, handed by reference
//! both to the stream (`RedisModule_StreamAdd`, which copies the bytes)
//! and to the one command that propagates the whole batch
//! (`RedisModule_Replicate` with a `v` vector, which keeps references), so
//! the server looks the command up once per batch, not once per entry.

use super::key::{Key, KeyName};
use redis_module::{Context, KeyType, raw};
use std::ffi::{CStr, c_int};

/// Why a stream refused an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamRefusal {
    /// The key holds another type.
    WrongType,
    /// The stream reached its last possible ID, an entry was too large, or
    /// a given ID was not after the stream's last one.
    Full,
    /// The server lacks the stream API, or refused for another reason.
    Other,
}

/// Appends entries `fixed_name fixed_value name1 value1 name2 value2` to
/// the stream at an open key, and propagates them all as one command.
pub struct Appender<'k> {
    ctx: &'k Context,
    key: &'k Key,
    /// `fixed_name`, `fixed_value`, `name1`, `name2`: made once, freed on
    /// drop.
    words: [*mut raw::RedisModuleString; 4],
    /// What [`Appender::replicate`] propagates after the command's name:
    /// four slots it fills then (the key it is given, the stream, the
    /// first ID, the trim), then `value1 value2` of each entry that
    /// [`Appender::append`] added. A deadline's string stands here once
    /// for each entry that shares it.
    argv: Vec<*mut raw::RedisModuleString>,
    /// The strings `append` made, each freed once on drop.
    owned: Vec<*mut raw::RedisModuleString>,
    /// The last `second` value and its string (in `owned`), reused while
    /// entries share it (members that fall due together often share their
    /// deadline).
    last_second: Option<(u64, *mut raw::RedisModuleString)>,
    stream: *mut raw::RedisModuleString,
}

/// The slots at the head of [`Appender::argv`].
const HEAD: usize = 4;

/// A server string of `bytes`, freed by the caller (no context: not
/// auto-released).
fn string(bytes: &[u8]) -> *mut raw::RedisModuleString {
    match api!(RedisModule_CreateString) {
        // SAFETY: a NULL context makes a string the caller frees; the
        // bytes are copied.
        Some(create) => unsafe { create(std::ptr::null_mut(), bytes.as_ptr().cast(), bytes.len()) },
        None => std::ptr::null_mut(),
    }
}

/// A server string of the decimal `n`, freed by the caller.
fn number(n: i64) -> *mut raw::RedisModuleString {
    match api!(RedisModule_CreateStringFromLongLong) {
        // SAFETY: no context: a string the caller frees.
        Some(from_ll) => unsafe { from_ll(std::ptr::null_mut(), n as std::ffi::c_longlong) },
        None => std::ptr::null_mut(),
    }
}

fn free(s: *mut raw::RedisModuleString) {
    if let Some(f) = api!(RedisModule_FreeString)
        && !s.is_null()
    {
        // SAFETY: made by this file with a NULL context, freed once.
        unsafe { f(std::ptr::null_mut(), s) };
    }
}

impl<'k> Appender<'k> {
    /// An appender to the stream open at `key` (for writing), named
    /// `stream`, whose entries start with `fixed` (name, value) and then
    /// carry the fields `names`.
    pub fn new(
        ctx: &'k Context,
        key: &'k Key,
        stream: &'k impl KeyName,
        fixed: (&[u8], &[u8]),
        names: [&[u8]; 2],
    ) -> Appender<'k> {
        Appender {
            ctx,
            key,
            words: [
                string(fixed.0),
                string(fixed.1),
                string(names[0]),
                string(names[1]),
            ],
            argv: vec![std::ptr::null_mut(); HEAD],
            owned: Vec::new(),
            last_second: None,
            stream: stream.raw(),
        }
    }

    /// Appends `fixed, names[0] first, names[1] second` (the second as a
    /// decimal integer) with the ID `id` (`(ms, seq)`), or with one the
    /// server makes, as `XADD key *`, when `None`; returns the ID it got.
    /// The entry is kept for [`Appender::replicate`].
    ///
    /// # Errors
    /// Why the stream refused the entry; then it is unchanged.
    pub fn append(
        &mut self,
        first: &[u8],
        second: u64,
        id: Option<(u64, u64)>,
    ) -> Result<(u64, u64), StreamRefusal> {
        let value1 = string(first);
        let value2 = match self.last_second {
            Some((v, word)) if v == second => word,
            _ => {
                let word = number(i64::try_from(second).unwrap_or(i64::MAX));
                self.owned.push(word);
                self.last_second = Some((second, word));
                word
            }
        };
        match self.add(id, value1, value2) {
            Ok(got) => {
                self.owned.push(value1);
                self.argv.extend([value1, value2]);
                Ok(got)
            }
            Err(refusal) => {
                free(value1);
                Err(refusal)
            }
        }
    }

    /// Appends `fixed, names[0] first, names[1] second` with the ID `id`,
    /// the values as given (a replica applying what its primary appended).
    /// Not kept for [`Appender::replicate`].
    ///
    /// # Errors
    /// Why the stream refused the entry; then it is unchanged.
    pub fn append_given(
        &mut self,
        id: (u64, u64),
        first: &impl KeyName,
        second: &impl KeyName,
    ) -> Result<(), StreamRefusal> {
        self.add(Some(id), first.raw(), second.raw()).map(|_| ())
    }

    fn add(
        &mut self,
        id: Option<(u64, u64)>,
        value1: *mut raw::RedisModuleString,
        value2: *mut raw::RedisModuleString,
    ) -> Result<(u64, u64), StreamRefusal> {
        let Some(add) = api!(RedisModule_StreamAdd) else {
            return Err(StreamRefusal::Other);
        };
        if self.key.raw_handle().is_null()
            || value1.is_null()
            || value2.is_null()
            || self.words.iter().any(|w| w.is_null())
        {
            return Err(StreamRefusal::Other);
        }
        let [fixed_name, fixed_value, name1, name2] = self.words;
        let mut fields = [fixed_name, fixed_value, name1, value1, name2, value2];
        let (mut got, flags) = match id {
            Some((ms, seq)) => (raw::RedisModuleStreamID { ms, seq }, 0),
            None => (
                raw::RedisModuleStreamID { ms: 0, seq: 0 },
                raw::REDISMODULE_STREAM_ADD_AUTOID as c_int,
            ),
        };
        // SAFETY: an open key, three pairs of live strings, which the
        // server copies into the stream.
        let status = unsafe {
            add(
                self.key.raw_handle(),
                flags,
                &mut got,
                fields.as_mut_ptr(),
                3,
            )
        };
        if status == raw::Status::Ok as c_int {
            Ok((got.ms, got.seq))
        } else {
            Err(match self.key.key_type() {
                KeyType::Stream => StreamRefusal::Full,
                KeyType::Empty => StreamRefusal::Other,
                _ => StreamRefusal::WrongType,
            })
        }
    }

    /// Propagates `command key stream first_id trimmed_to first second
    /// ...`: the `first` and `second` values of every entry [`append`]
    /// added, in order, passed by reference (no string is made for them
    /// again), `first_id` written `ms-seq` and `trimmed_to` as a decimal.
    /// Nothing when no entry was added.
    ///
    /// [`append`]: Appender::append
    pub fn replicate(
        &mut self,
        command: &CStr,
        key: &impl KeyName,
        first_id: (u64, u64),
        trimmed_to: i64,
    ) {
        let Some(replicate) = api!(RedisModule_Replicate) else {
            return;
        };
        if self.argv.len() == HEAD {
            return;
        }
        let mut buf = [0u8; 41];
        let id = string(stream_id(&mut buf, first_id.0, first_id.1));
        let trim = number(trimmed_to);
        self.argv[..HEAD].copy_from_slice(&[key.raw(), self.stream, id, trim]);
        if self.argv.iter().all(|s| !s.is_null()) {
            // SAFETY: format `v` takes a vector of live strings and its
            // length; the server keeps its own references.
            unsafe {
                replicate(
                    self.ctx.get_raw(),
                    command.as_ptr(),
                    c"v".as_ptr(),
                    self.argv.as_mut_ptr(),
                    self.argv.len(),
                )
            };
        }
        free(id);
        free(trim);
        self.argv[..HEAD].fill(std::ptr::null_mut());
    }
}

/// `ms-seq` written into `buf`.
fn stream_id(buf: &mut [u8; 41], ms: u64, seq: u64) -> &[u8] {
    let mut at = 0;
    for (i, n) in [ms, seq].into_iter().enumerate() {
        if i == 1 {
            buf[at] = b'-';
            at += 1;
        }
        let mut digits = [0u8; 20];
        let mut k = digits.len();
        let mut v = n;
        loop {
            k -= 1;
            digits[k] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let d = &digits[k..];
        buf[at..at + d.len()].copy_from_slice(d);
        at += d.len();
    }
    &buf[..at]
}

impl Drop for Appender<'_> {
    fn drop(&mut self) {
        for w in self.words.into_iter().chain(self.owned.drain(..)) {
            free(w);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn stream_ids_are_written_as_redis_writes_them() {
        let mut buf = [0u8; 41];
        assert_eq!(super::stream_id(&mut buf, 0, 0), b"0-0");
        assert_eq!(
            super::stream_id(&mut buf, 1795786426710, 17),
            b"1795786426710-17"
        );
        let max = format!("{}-{}", u64::MAX, u64::MAX);
        assert_eq!(
            super::stream_id(&mut buf, u64::MAX, u64::MAX),
            max.as_bytes()
        );
    }
}
