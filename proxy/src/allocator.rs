//! The allocator of the `deltascope` process: mimalloc, not the system's,
//! with its arenas committed as they are used. `main` installs it; the
//! benches that measure the process's parts in their own process (the
//! recorded history's) do the same, so their figures are the process's.
//!
//! Why mimalloc: the recorder allocates and frees for every watch event (the
//! parsed object, its diff, the compressed rows), and glibc's malloc was a
//! quarter of its time (`perf`). 150,000 pod status changes written to
//! SQLite in a native probe: 16.1k → 19.7k deltas/s (means of three paired
//! runs), the process's CPU time a third less.
//!
//! Why the options: mimalloc commits a whole arena up front where the OS
//! overcommits (Linux), and memory it frees then stays resident: serve
//! holding 1,000 watches grew from 37 to 63 MiB, over its 50 MB bound; with
//! arenas committed on demand it is 42–44 MiB (`cargo bench -p
//! deltascope-proxy --bench proxy -- --quick`). And it gives freed pages
//! back a second later by default: under one session's worst client
//! (`serve_memory_bound`) serve's peak grew by 33–40 MB, over its 36.8 MB
//! bound, against 30.6 MB with glibc's malloc; given back at once, 30.7–32.1
//! MB. Giving them back at once did not slow the recorder's ingest
//! measurably (the probe above, three paired runs, within their noise).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::Once;

use mimalloc::MiMalloc;

/// mimalloc's `mi_option_arena_eager_commit` and `mi_option_purge_delay`
/// (`mimalloc.h`, the same indexes in its v2 and v3): the Rust binding names
/// no constant for them.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The options set, and their values: arenas committed as they are used,
/// freed pages given back to the OS at once.
const OPTIONS: [(libmimalloc_sys::mi_option_t, std::ffi::c_long); 2] =
    [(ARENA_EAGER_COMMIT, 0), (PURGE_DELAY, 0)];

/// The options are set once, before mimalloc's first allocation reserves
/// its first arena (Rust's runtime allocates before `main`, so `main` is
/// too late).
static TUNED: Once = Once::new();

/// The global allocator of the `deltascope` process (`#[global_allocator]`
/// is declared in each binary): mimalloc, its arenas committed as they are
/// used and freed pages given back at once (see the module doc).
pub struct ProcessAllocator;

impl ProcessAllocator {
    fn tuned(&self) -> &MiMalloc {
        TUNED.call_once(|| {
            for (option, value) in OPTIONS {
                // SAFETY: `mi_option_set` is not thread safe; `Once` runs
                // this on one thread, before any allocation through mimalloc.
                unsafe { libmimalloc_sys::mi_option_set(option, value) }
            }
        });
        &MiMalloc
    }
}

// SAFETY: every call is mimalloc's own, after the options are set.
unsafe impl GlobalAlloc for ProcessAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.tuned().alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.tuned().alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on (`ptr` came from `alloc`).
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on (`ptr` came from `alloc`).
        unsafe { MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arenas_are_committed_on_demand_and_pages_given_back_at_once() {
        let layout = Layout::from_size_align(64, 8).expect("a layout");
        // SAFETY: a valid layout, freed with the same.
        unsafe {
            let block = ProcessAllocator.alloc(layout);
            assert!(!block.is_null());
            ProcessAllocator.dealloc(block, layout);
        }
        for (option, value) in OPTIONS {
            // SAFETY: reading an option.
            assert_eq!(unsafe { libmimalloc_sys::mi_option_get(option) }, value);
        }
    }
}
