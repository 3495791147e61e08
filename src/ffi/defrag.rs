//! Active defrag: the handle through which a value hands its buffers to the
//! server's allocator, which may copy each to a less fragmented page
//! (`RedisModule_DefragAlloc`, realloc-like: same contents, old block
//! freed). Servers built without defrag support never move anything; a
//! server without the API leaves every buffer where it is.

use redis_module::raw;
use std::ffi::c_void;

/// A defrag pass over one value.
pub struct Defrag {
    ctx: *mut raw::RedisModuleDefragCtx,
    moved: usize,
}

impl Defrag {
    /// # Safety
    /// `ctx` is the context of the defrag callback being served.
    pub(super) unsafe fn new(ctx: *mut raw::RedisModuleDefragCtx) -> Defrag {
        Defrag { ctx, moved: 0 }
    }

    /// Buffers moved so far.
    pub fn moved(&self) -> usize {
        self.moved
    }

    /// The block's new address, or `None` when it stays. `p` must be the
    /// start of a block from the server's allocator (every Rust allocation
    /// is: see `ffi::alloc`) that nothing else will free.
    fn relocate(&mut self, p: *mut c_void) -> Option<*mut c_void> {
        let f = api!(RedisModule_DefragAlloc)?;
        // SAFETY: `ctx` is live for the callback; `p` is a block of the
        // server's allocator (see above).
        let n = unsafe { f(self.ctx, p) };
        if n.is_null() {
            return None;
        }
        self.moved += 1;
        Some(n)
    }

    /// Moves the vector's buffer if the allocator asks to.
    pub fn vec<T>(&mut self, v: &mut Vec<T>) {
        if v.capacity() == 0 || std::mem::size_of::<T>() == 0 {
            return;
        }
        let (len, cap) = (v.len(), v.capacity());
        if let Some(n) = self.relocate(v.as_mut_ptr().cast()) {
            // SAFETY: the server copied the buffer to `n`, a block of the
            // same size class (so the same alignment), and freed the old
            // one: the old vector must not be dropped, so it is overwritten
            // without running its destructor.
            unsafe { std::ptr::write(v, Vec::from_raw_parts(n.cast::<T>(), len, cap)) };
        }
    }

    /// Moves the slice's buffer if the allocator asks to.
    pub fn slice<T>(&mut self, b: &mut Box<[T]>) {
        if b.is_empty() || std::mem::size_of::<T>() == 0 {
            return;
        }
        let len = b.len();
        if let Some(n) = self.relocate(b.as_mut_ptr().cast()) {
            // SAFETY: as in `vec`: the contents are at `n`, the old block
            // is freed and must not be dropped.
            unsafe {
                std::ptr::write(
                    b,
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(n.cast::<T>(), len)),
                )
            };
        }
    }

    /// Moves the boxed value if the allocator asks to.
    pub fn boxed<T>(&mut self, b: &mut Box<T>) {
        if std::mem::size_of::<T>() == 0 {
            return;
        }
        let p: *mut T = &mut **b;
        if let Some(n) = self.relocate(p.cast()) {
            // SAFETY: as in `vec`.
            unsafe { std::ptr::write(b, Box::from_raw(n.cast::<T>())) };
        }
    }

    /// Whether the server wants the walk to stop (its time slice for a big
    /// value is over); always false when it called without a time limit.
    pub fn should_stop(&mut self) -> bool {
        match api!(RedisModule_DefragShouldStop) {
            // SAFETY: `ctx` is live for the callback.
            Some(f) => unsafe { f(self.ctx) != 0 },
            None => false,
        }
    }

    /// The cursor a stopped walk of this value left, when the server runs
    /// the walk in slices ("late defrag"); `None` when it runs it whole.
    pub(super) fn cursor(&mut self) -> Option<u64> {
        let f = api!(RedisModule_DefragCursorGet)?;
        let mut cursor: std::ffi::c_ulong = 0;
        // SAFETY: `ctx` is live for the callback; `cursor` is a local.
        let ok = unsafe { f(self.ctx, &mut cursor) } == raw::REDISMODULE_OK as i32;
        ok.then_some(cursor as u64)
    }

    /// Leaves `cursor` for the next slice; false when the server does not
    /// run this walk in slices.
    pub(super) fn set_cursor(&mut self, cursor: u64) -> bool {
        match api!(RedisModule_DefragCursorSet) {
            // SAFETY: `ctx` is live for the callback.
            Some(f) => {
                let status = unsafe { f(self.ctx, cursor as std::ffi::c_ulong) };
                status == raw::REDISMODULE_OK as i32
            }
            None => false,
        }
    }

    /// Moves the block a value's pointer names, updating the pointer.
    ///
    /// # Safety
    /// `*value` is a block of the server's allocator owned by the server's
    /// key (the module value).
    pub(super) unsafe fn value(&mut self, value: *mut *mut c_void) {
        // SAFETY: the caller's contract.
        if let Some(n) = self.relocate(unsafe { *value }) {
            unsafe { *value = n };
        }
    }
}

/// What the module's global defrag callback runs (set once, at load).
static GLOBAL: std::sync::OnceLock<fn(&mut Defrag)> = std::sync::OnceLock::new();

unsafe extern "C" fn global(ctx: *mut raw::RedisModuleDefragCtx) {
    if let Some(f) = GLOBAL.get() {
        // SAFETY: the server passes the context of this callback.
        let mut d = unsafe { Defrag::new(ctx) };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut d)));
    }
}

/// Has the server call `f` once per active-defrag pass, for the module's
/// global structures; nothing on a server without the API.
pub fn register_global(ctx: &redis_module::Context, f: fn(&mut Defrag)) {
    let Some(register) = api!(RedisModule_RegisterDefragFunc) else {
        return;
    };
    if GLOBAL.set(f).is_ok() {
        // SAFETY: `ctx` is the module's load context.
        unsafe { register(ctx.get_raw(), Some(global)) };
    }
}
