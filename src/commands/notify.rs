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

use super::requests::{NotifyRequest, parse_notify};
use crate::clock::Clock;
use crate::ffi::key::{CmdArg, Key};
use crate::keyspace::{create_stream, with_read, with_write};
use redis_module::{Context, KeyType, RedisError, RedisResult, RedisValue};
use xset_core::XSet;

/// `XSET.NOTIFY`: see the module docs. Replies `OK` to the writing forms,
/// the stream's name or nil to the query. O(1).
pub fn xset_notify(ctx: &Context, args: &[CmdArg], clock: Clock) -> RedisResult {
    let key = &args[1];
    match parse_notify(args)? {
        NotifyRequest::Query => with_read(ctx, key, clock, |set| {
            Ok(match set.and_then(XSet::delivery) {
                Some(d) => RedisValue::StringBuffer(d.stream.clone()),
                None => RedisValue::Null,
            })
        }),
        NotifyRequest::Off => with_write(ctx, key, clock, |set, effects| {
            if set.delivery().is_some() {
                set.set_delivery(None);
                effects.delivery_set(None);
            }
            Ok(RedisValue::SimpleStringStatic("OK"))
        }),
        NotifyRequest::Stream(delivery) => {
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
