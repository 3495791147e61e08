//! Fault points for the fault-injection tests: with the `fault-injection`
//! feature, a test arms a point with `XSET.DEBUG-FAULT <point>` and the code
//! there panics the next times it runs, until `XSET.DEBUG-FAULT off`. In
//! other builds [`hit`] is a constant `false` and the points compile away.

/// A place where a fault can be injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Writing a set to an RDB stream, after part of it is written.
    RdbSave = 1,
    /// Rewriting a set into an AOF, after its first command.
    AofRewrite = 2,
    /// A write command, after it changed part of its set.
    WriteMidway = 4,
    /// The repair after a write command's panic finds the set broken.
    Unrepairable = 8,
    /// A reply written element by element, halfway through.
    ReplyMidway = 16,
}

#[cfg(feature = "fault-injection")]
static ARMED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Whether `fault` is armed.
#[cfg(feature = "fault-injection")]
pub fn hit(fault: Fault) -> bool {
    ARMED.load(std::sync::atomic::Ordering::Relaxed) & fault as u32 != 0
}

/// Whether `fault` is armed: never, in this build.
#[cfg(not(feature = "fault-injection"))]
pub const fn hit(_fault: Fault) -> bool {
    false
}

/// Arms the point named `name` (`rdb-save`, `aof-rewrite`, `write-midway`,
/// `unrepairable`, `reply-midway`), or disarms all with `off`; false for
/// another name.
#[cfg(feature = "fault-injection")]
pub fn arm(name: &[u8]) -> bool {
    use std::sync::atomic::Ordering;
    let bit = match name.to_ascii_lowercase().as_slice() {
        b"off" => {
            ARMED.store(0, Ordering::Relaxed);
            return true;
        }
        b"rdb-save" => Fault::RdbSave,
        b"aof-rewrite" => Fault::AofRewrite,
        b"write-midway" => Fault::WriteMidway,
        b"unrepairable" => Fault::Unrepairable,
        b"reply-midway" => Fault::ReplyMidway,
        _ => return false,
    };
    ARMED.fetch_or(bit as u32, Ordering::Relaxed);
    true
}
