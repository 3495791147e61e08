//! RDB decoding of every encoding version, on untrusted input: `decode`
//! must return an error or a set that keeps its invariants, and a decoded
//! set must come back the same through `encode` and `decode` at the
//! current version.
//!
//! Input: one byte choosing the encoding version (0 to 4, so versions 1, 2
//! and 3 and two unknown ones), one byte choosing the small-encoding limits,
//! then the RDB items: a `u64` is a LEB128 varint, a string a varint length
//! and its bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use xset_core::Limits;
use xset_core::encoding::{self, ENCODING_VERSION, Sink, Source};

struct Items<'a>(&'a [u8]);

impl Items<'_> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.0.split_first()?;
            self.0 = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
}

impl Source for Items<'_> {
    type Bytes = Vec<u8>;
    fn get_u64(&mut self) -> Option<u64> {
        self.varint()
    }
    fn get_bytes(&mut self) -> Option<Vec<u8>> {
        let n = usize::try_from(self.varint()?).ok()?;
        if n > self.0.len() {
            return None;
        }
        let (bytes, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(bytes.to_vec())
    }
}

/// The items an encode writes; decode reads each kind back in order.
#[derive(Default)]
struct Written {
    u64s: Vec<u64>,
    strings: Vec<Vec<u8>>,
}

impl Sink for Written {
    fn put_u64(&mut self, v: u64) {
        self.u64s.push(v);
    }
    fn put_bytes(&mut self, b: &[u8]) {
        self.strings.push(b.to_vec());
    }
}

struct Replay {
    u64s: std::vec::IntoIter<u64>,
    strings: std::vec::IntoIter<Vec<u8>>,
}

impl Source for Replay {
    type Bytes = Vec<u8>;
    fn get_u64(&mut self) -> Option<u64> {
        self.u64s.next()
    }
    fn get_bytes(&mut self) -> Option<Vec<u8>> {
        self.strings.next()
    }
}

fuzz_target!(|data: &[u8]| {
    let [version, limits, items @ ..] = data else {
        return;
    };
    let encver = i32::from(version % 5);
    let limits = Limits {
        max_small_members: u16::from(limits & 0x0f) * 16,
        max_small_member_bytes: (limits >> 4) * 16,
    };
    let Ok(set) = encoding::decode(encver, &mut Items(items), limits) else {
        return;
    };
    set.check_invariants();
    let mut out = Written::default();
    encoding::encode(&set, &mut out);
    let mut replay = Replay {
        u64s: out.u64s.into_iter(),
        strings: out.strings.into_iter(),
    };
    let again = encoding::decode(ENCODING_VERSION, &mut replay, limits)
        .expect("a decoded set encodes to a loadable payload");
    again.check_invariants();
    assert!(
        set.iter_all().eq(again.iter_all()),
        "round trip keeps every member and deadline"
    );
    assert_eq!(set.delivery(), again.delivery(), "round trip keeps the delivery");
});
