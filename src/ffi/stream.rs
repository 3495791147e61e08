//! Appending to a stream and propagating each entry, with as few server
//! strings as the module API allows: the field names and the fixed value
//! are made once per [`Appender`], and each entry makes only its member's,
//! its deadline's and its ID's, handed by reference to both the stream
//! (`RedisModule_StreamAdd`, which copies the bytes) and the propagation
//! (`RedisModule_Replicate` with a `v` vector, which keeps references).

use super::key::{Key, KeyName};
use redis_module::{Context, KeyType, raw};
use std::ffi::{CStr, c_int};

/// Why a stream refused an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamRefusal {
    /// The key holds another type.
    WrongType,
    /// The stream reached its last possible ID, or an entry was too large.
    Full,
    /// The server lacks the stream API, or refused for another reason.
    Other,
}

/// Appends entries `fixed_name fixed_value name1 value1 name2 value2` to
/// the stream at an open key and propagates each as `XADD stream <id> ...`
/// with the ID the stream gave it.
pub struct Appender<'k> {
    ctx: &'k Context,
    key: &'k Key,
    stream: *mut raw::RedisModuleString,
    /// `fixed_name`, `fixed_value`, `name1`, `name2`: made once, freed on
    /// drop.
    words: [*mut raw::RedisModuleString; 4],
    /// The `first` value of each entry appended, kept (and freed on drop)
    /// for [`Appender::replicate_with_firsts`].
    firsts: Vec<*mut raw::RedisModuleString>,
    /// The last `second` value and its string, reused while entries share
    /// it (members that fall due together often share their deadline).
    last_second: Option<(u64, *mut raw::RedisModuleString)>,
    /// The ID the last entry got: the next one takes the one after it,
    /// which the stream accepts without reading the clock again (the first
    /// gets one the server makes, as `XADD key *`).
    last_id: Option<raw::RedisModuleStreamID>,
}

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
            stream: stream.raw(),
            words: [
                string(fixed.0),
                string(fixed.1),
                string(names[0]),
                string(names[1]),
            ],
            firsts: Vec::new(),
            last_second: None,
            last_id: None,
        }
    }

    /// Propagates `command key first...`: the `first` values of every entry
    /// appended so far, in order, passed by reference (no string is made
    /// for them again). For the removal of what was delivered.
    pub fn replicate_with_firsts(&mut self, command: &CStr, key: &impl KeyName) {
        let Some(replicate) = api!(RedisModule_Replicate) else {
            return;
        };
        if self.firsts.is_empty() {
            return;
        }
        let mut argv = Vec::with_capacity(self.firsts.len() + 1);
        argv.push(key.raw());
        argv.extend_from_slice(&self.firsts);
        // SAFETY: format `v` takes a vector of live strings and its
        // length; the server keeps its own references.
        unsafe {
            replicate(
                self.ctx.get_raw(),
                command.as_ptr(),
                c"v".as_ptr(),
                argv.as_mut_ptr(),
                argv.len(),
            )
        };
    }

    /// Appends `fixed, names[0] first, names[1] second` (the second as a
    /// decimal integer), and propagates it with its ID.
    ///
    /// # Errors
    /// Why the stream refused the entry; then it is unchanged and nothing
    /// is propagated.
    pub fn append(&mut self, first: &[u8], second: u64) -> Result<(), StreamRefusal> {
        let (Some(add), Some(from_ll), Some(replicate)) = (
            api!(RedisModule_StreamAdd),
            api!(RedisModule_CreateStringFromLongLong),
            api!(RedisModule_Replicate),
        ) else {
            return Err(StreamRefusal::Other);
        };
        if self.key.raw_handle().is_null() || self.words.iter().any(|w| w.is_null()) {
            return Err(StreamRefusal::Other);
        }
        let [fixed_name, fixed_value, name1, name2] = self.words;
        let value1 = string(first);
        let value2 = match self.last_second {
            Some((v, word)) if v == second => word,
            _ => {
                // SAFETY: no context: a string the caller frees.
                let word = unsafe { from_ll(std::ptr::null_mut(), second as std::ffi::c_longlong) };
                if let Some((_, old)) = self.last_second.replace((second, word)) {
                    free(old);
                }
                word
            }
        };
        let mut fields = [fixed_name, fixed_value, name1, value1, name2, value2];
        let (mut id, flags) = match self.last_id {
            Some(last) if last.seq < u64::MAX => (
                raw::RedisModuleStreamID {
                    ms: last.ms,
                    seq: last.seq + 1,
                },
                0,
            ),
            _ => (
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
                &mut id,
                fields.as_mut_ptr(),
                3,
            )
        };
        if status == raw::Status::Ok as c_int {
            self.last_id = Some(id);
            let mut buf = [0u8; 41];
            let id_word = stream_id(&mut buf, id.ms, id.seq);
            // SAFETY: the format matches the arguments: `s` live strings
            // (the server keeps its own references), `b` a pointer and a
            // length.
            unsafe {
                replicate(
                    self.ctx.get_raw(),
                    c"XADD".as_ptr(),
                    c"sbssssss".as_ptr(),
                    self.stream,
                    id_word.as_ptr(),
                    id_word.len(),
                    fixed_name,
                    fixed_value,
                    name1,
                    value1,
                    name2,
                    value2,
                )
            };
            self.firsts.push(value1);
            Ok(())
        } else {
            free(value1);
            Err(match self.key.key_type() {
                KeyType::Stream => StreamRefusal::Full,
                KeyType::Empty => StreamRefusal::Other,
                _ => StreamRefusal::WrongType,
            })
        }
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
        let last = self.last_second.take().map(|(_, w)| w);
        for w in self
            .words
            .into_iter()
            .chain(self.firsts.drain(..))
            .chain(last)
        {
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
