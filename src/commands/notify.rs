//! `XSET.NOTIFY`: where a set delivers the members that leave it because
//! their deadline passed.
//!
//! ```text
//! XSET.NOTIFY key STREAM stream [MAXLEN [~] count]
//! XSET.NOTIFY key OFF
//! XSET.NOTIFY key
//! ```
//! The first form sets the delivery (creating an empty set at a missing
//! key, which then stays when it empties), the second stops it (deleting
//! the set if it holds no member), the third answers the stream's name or
//! nil. The stream must be another key, absent (then it is made, empty,
//! as `XGROUP CREATE ... MKSTREAM` makes it) or a stream; trimming is
//! always approximate, so `~` may be written as in `XADD` and changes
//! nothing.

use super::parse::{is, parse_i64, value_of};
use crate::clock::Clock;
use crate::errors::{self, err};
use crate::ffi::key::{CmdArg, Key};
use crate::keyspace::{create_stream, with_read, with_write};
use redis_module::{Context, KeyType, RedisError, RedisResult, RedisValue};
use xset_core::{Delivery, XSet};

/// What an `XSET.NOTIFY` asks.
enum Request {
    Query,
    Off,
    Stream(Delivery),
}

/// Parses the arguments after the key.
fn parse(args: &[CmdArg]) -> Result<Request, RedisError> {
    let Some(word) = args.get(2) else {
        return Ok(Request::Query);
    };
    if is(word, "OFF") {
        return match args.get(3) {
            None => Ok(Request::Off),
            Some(extra) => Err(errors::unknown_option(extra.as_slice())),
        };
    }
    if !is(word, "STREAM") {
        return Err(errors::unknown_option(word.as_slice()));
    }
    let stream = value_of(args, 2)?.as_slice().to_vec();
    let mut maxlen = None;
    let mut pos = 4;
    while let Some(option) = args.get(pos) {
        if !is(option, "MAXLEN") {
            return Err(errors::unknown_option(option.as_slice()));
        }
        if maxlen.is_some() {
            return Err(errors::given_twice(option.as_slice()));
        }
        let mut value = value_of(args, pos)?;
        pos += 1;
        if value.as_slice() == b"~" {
            value = value_of(args, pos)?;
            pos += 1;
        }
        let n = parse_i64(value.as_slice())?;
        if n <= 0 {
            return Err(err(errors::MAXLEN_POSITIVE));
        }
        maxlen = Some(n as u64);
        pos += 1;
    }
    Ok(Request::Stream(Delivery { stream, maxlen }))
}

/// `XSET.NOTIFY`: see the module docs. Replies `OK` to the writing forms,
/// the stream's name or nil to the query. O(1).
pub fn xset_notify(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let key = &args[1];
    match parse(args)? {
        Request::Query => with_read(ctx, key, clock, |set| {
            Ok(match set.and_then(XSet::delivery) {
                Some(d) => RedisValue::StringBuffer(d.stream.clone()),
                None => RedisValue::Null,
            })
        }),
        Request::Off => with_write(ctx, key, clock, |set, effects| {
            if set.delivery().is_some() {
                set.set_delivery(None);
                effects.delivery_set(None);
            }
            Ok(RedisValue::SimpleStringStatic("OK"))
        }),
        Request::Stream(delivery) => {
            if delivery.stream == key.as_slice() {
                return Err(err(errors::STREAM_IS_THE_SET));
            }
            let stream = &args[3];
            match Key::open(ctx, stream, false, 0).key_type() {
                KeyType::Empty | KeyType::Stream => {}
                _ => return Err(RedisError::WrongType),
            }
            let reply = with_write(ctx, key, clock, |set, effects| {
                if set.delivery() != Some(&delivery) {
                    effects.delivery_set(Some(&delivery));
                    set.set_delivery(Some(delivery));
                }
                Ok(RedisValue::SimpleStringStatic("OK"))
            })?;
            // A replica or a loading server is sent the stream the primary
            // made, and must not make one of its own.
            if clock.primary {
                create_stream(ctx, stream, key);
            }
            Ok(reply)
        }
    }
}
