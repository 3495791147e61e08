//! The global allocator outside tests: Rust's allocations go to the
//! server's allocator, so `INFO memory`, `MEMORY USAGE` and `maxmemory` see
//! them.

use redis_module::alloc::RedisAlloc;
use std::alloc::{GlobalAlloc, Layout};

/// The crate's `RedisAlloc`, plus zeroed allocation and resizing through
/// `RedisModule_Calloc` and `RedisModule_Realloc`, which `RedisAlloc` leaves
/// to the defaults: a big zeroed array (a growing hash table) then gets
/// fresh zero pages instead of a memset, and a growing vector may grow in
/// place.
pub struct ServerAlloc;

/// `layout`'s size rounded up to its alignment: jemalloc aligns every size
/// class to the largest power of two dividing it (up to a page), which is
/// how `RedisAlloc` gets aligned blocks from a plain allocation.
fn padded(size: usize, align: usize) -> usize {
    (size + align - 1) & !(align - 1)
}

// SAFETY: every block comes from, and goes back to, Redis's allocator, with
// the size rounding `RedisAlloc` uses for alignment; calls whose API pointer
// is missing fall back to `RedisAlloc`'s own.
unsafe impl GlobalAlloc for ServerAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { RedisAlloc.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { RedisAlloc.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match api!(RedisModule_Calloc) {
            Some(f) => unsafe { f(1, padded(layout.size(), layout.align())) }.cast(),
            None => unsafe { RedisAlloc.alloc_zeroed(layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match api!(RedisModule_Realloc) {
            Some(f) => unsafe { f(ptr.cast(), padded(new_size, layout.align())) }.cast(),
            None => unsafe { RedisAlloc.realloc(ptr, layout, new_size) },
        }
    }
}
