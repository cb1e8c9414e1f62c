//! The binaries' allocator: small blocks from per-thread free lists, the rest
//! from the system allocator (docs/performance.md#allocator).
//!
//! A call allocates a few thousand small blocks (JSON trees, strings, paths)
//! and frees most of them before it ends. glibc's `malloc` spends a quarter
//! of a 5-goal `checkpoint`'s instructions outside SHA-256 on them (its bins,
//! their consolidation, and in a hook, where a watchdog thread runs, a lock
//! on every call). Rust tells an allocator each block's size when it frees
//! it, so a block needs no header: a freed block goes on its thread's list
//! for its size class and is handed out again for the next block of that
//! class, last freed first; a class with an empty list cuts its block from
//! the thread's current chunk. No lock is taken: each thread has its own
//! lists and chunk, and a block may be freed by another thread than the one
//! that allocated it (it joins the freeing thread's list).
//!
//! What is not small (more than [`MAX_SMALL`] bytes, or aligned to more
//! than 16) goes to the system allocator as before, as do the chunks.
//! Memory on a list is never given back while the process runs: the
//! binaries are short-lived processes, and the largest allocations (a large
//! plan's text, its serialisation) are not small.
//!
//! The library sets no allocator: whoever links it owns that choice.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr;

/// Largest block served from the lists.
pub const MAX_SMALL: usize = 8192;
/// Alignment of every block (every class size is a multiple of it).
const ALIGN: usize = 16;
/// Classes step by 16 bytes up to [`FINE_MAX`], then by [`COARSE`].
const FINE_MAX: usize = 1024;
const COARSE: usize = 128;
const FINE_CLASSES: usize = FINE_MAX / ALIGN;
/// Number of size classes.
pub const CLASSES: usize = FINE_CLASSES + (MAX_SMALL - FINE_MAX) / COARSE;
/// Bytes a thread takes from the system allocator at a time.
const CHUNK: usize = 64 << 10;

/// The class of a block of `size` bytes (1 ..= [`MAX_SMALL`]).
pub fn class_of(size: usize) -> usize {
    if size <= FINE_MAX {
        size.div_ceil(ALIGN).max(1) - 1
    } else {
        FINE_CLASSES + (size - FINE_MAX).div_ceil(COARSE) - 1
    }
}

/// The size of the blocks of class `class`.
pub fn class_size(class: usize) -> usize {
    if class < FINE_CLASSES {
        (class + 1) * ALIGN
    } else {
        FINE_MAX + (class + 1 - FINE_CLASSES) * COARSE
    }
}

/// Whether a layout is served from the lists.
fn small(layout: Layout) -> bool {
    layout.size() <= MAX_SMALL && layout.align() <= ALIGN
}

/// One thread's lists and chunk. Constant-initialised and without a
/// destructor, so it is usable at any point of a thread's life; a thread's
/// blocks stay with it when it exits (the process ends soon after).
struct Cache {
    /// The head of each class's list of free blocks; a free block's first
    /// word points to the next.
    heads: [Cell<*mut u8>; CLASSES],
    /// The unused rest of the current chunk.
    next: Cell<*mut u8>,
    end: Cell<*mut u8>,
}

thread_local! {
    static CACHE: Cache = const {
        Cache {
            heads: [const { Cell::new(ptr::null_mut()) }; CLASSES],
            next: Cell::new(ptr::null_mut()),
            end: Cell::new(ptr::null_mut()),
        }
    };
}

/// The allocator (see the module's documentation).
pub struct SmallAlloc;

impl Cache {
    /// A block of class `class`, or null if the system allocator has no
    /// chunk to give.
    ///
    /// # Safety
    /// The lists hold only blocks of their class that nothing else uses.
    unsafe fn take(&self, class: usize) -> *mut u8 {
        let head = self.heads[class].get();
        if !head.is_null() {
            // SAFETY: a listed block is at least 16 bytes, 16-aligned, and
            // its first word is the list's next link.
            self.heads[class].set(unsafe { head.cast::<*mut u8>().read() });
            return head;
        }
        let size = class_size(class);
        let next = self.next.get();
        if (self.end.get() as usize) - (next as usize) >= size {
            // SAFETY: `next + size` is within the current chunk.
            self.next.set(unsafe { next.add(size) });
            return next;
        }
        // SAFETY: the layout has a non-zero size and a power-of-two alignment.
        let chunk = unsafe { System.alloc(Layout::from_size_align_unchecked(CHUNK, ALIGN)) };
        if chunk.is_null() {
            return chunk;
        }
        // The rest of the old chunk is left unused (less than one block of
        // this class).
        // SAFETY: the chunk is CHUNK >= size bytes long.
        unsafe {
            self.next.set(chunk.add(size));
            self.end.set(chunk.add(CHUNK));
        }
        chunk
    }

    /// Puts a block of class `class` on its list.
    ///
    /// # Safety
    /// `block` is a block of class `class` that nothing uses any more.
    unsafe fn give(&self, block: *mut u8, class: usize) {
        // SAFETY: the block is at least 16 bytes and 16-aligned.
        unsafe { block.cast::<*mut u8>().write(self.heads[class].get()) };
        self.heads[class].set(block);
    }
}

// SAFETY: small blocks are 16-aligned pieces of chunks the system allocator
// gave, each handed out to one owner until it is freed with the layout it
// was allocated with (the `GlobalAlloc` contract), which names its class;
// everything else is the system allocator's.
unsafe impl GlobalAlloc for SmallAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !small(layout) {
            return unsafe { System.alloc(layout) };
        }
        let class = class_of(layout.size());
        // SAFETY: see `Cache::take`.
        CACHE
            .try_with(|c| unsafe { c.take(class) })
            .unwrap_or_else(|_| {
                // (Not reached: the cache has no destructor.) A block of the
                // whole class size, so that it may join a list when freed.
                unsafe { System.alloc(Layout::from_size_align_unchecked(class_size(class), ALIGN)) }
            })
    }

    #[inline]
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if !small(layout) {
            return unsafe { System.dealloc(block, layout) };
        }
        let class = class_of(layout.size());
        // A block that cannot be listed (not reached) is left unused.
        // SAFETY: the caller frees a block it allocated with `layout`.
        let _ = CACHE.try_with(|c| unsafe { c.give(block, class) });
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !small(layout) {
            return unsafe { System.alloc_zeroed(layout) };
        }
        let block = unsafe { self.alloc(layout) };
        if !block.is_null() {
            // SAFETY: the block holds `layout.size()` bytes.
            unsafe { block.write_bytes(0, layout.size()) };
        }
        block
    }

    #[inline]
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's layout and size are valid (`GlobalAlloc`).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (small(layout), small(new_layout)) {
            (false, false) => unsafe { System.realloc(block, layout, new_size) },
            (true, true) if class_of(layout.size()) == class_of(new_size) => block,
            _ => {
                let new = unsafe { self.alloc(new_layout) };
                if !new.is_null() {
                    // SAFETY: both blocks hold at least the smaller size and
                    // do not overlap (the old one is still allocated).
                    unsafe {
                        ptr::copy_nonoverlapping(block, new, layout.size().min(new_size));
                        self.dealloc(block, layout);
                    }
                }
                new
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_has_a_class_that_holds_it_and_no_smaller_class_does() {
        let mut last = 0;
        for size in 1..=MAX_SMALL {
            let c = class_of(size);
            assert!(c < CLASSES, "{size}");
            assert!(class_size(c) >= size, "{size}");
            assert_eq!(class_size(c) % ALIGN, 0);
            if c > 0 {
                assert!(class_size(c - 1) < size, "{size}");
            }
            assert!(c >= last);
            last = c;
        }
        assert_eq!(class_of(MAX_SMALL), CLASSES - 1);
        assert_eq!(class_size(CLASSES - 1), MAX_SMALL);
    }

    #[test]
    fn a_freed_block_is_handed_out_again_for_its_class_only() {
        let a = SmallAlloc;
        let l = Layout::from_size_align(40, 8).unwrap();
        unsafe {
            let p = a.alloc(l);
            assert!(!p.is_null());
            assert_eq!(p as usize % ALIGN, 0);
            p.write_bytes(0xAB, 40);
            a.dealloc(p, l);
            // Another class does not get it; the same class does.
            let q = a.alloc(Layout::from_size_align(100, 8).unwrap());
            assert_ne!(q, p);
            let r = a.alloc(Layout::from_size_align(33, 1).unwrap());
            assert_eq!(r, p);
            a.dealloc(q, Layout::from_size_align(100, 8).unwrap());
            a.dealloc(r, Layout::from_size_align(33, 1).unwrap());
        }
    }

    #[test]
    fn blocks_do_not_overlap_and_keep_their_bytes() {
        let a = SmallAlloc;
        let mut blocks = Vec::new();
        // More than a chunk's worth, across every class.
        for i in 0..3000usize {
            let size = 1 + (i * 37) % MAX_SMALL;
            let l = Layout::from_size_align(size, 1 << (i % 5)).unwrap();
            let p = unsafe { a.alloc(l) };
            assert!(!p.is_null());
            assert_eq!(p as usize % l.align(), 0);
            unsafe { p.write_bytes(i as u8, size) };
            blocks.push((p, l, i as u8));
            if i % 3 == 0 {
                let (p, l, _) = blocks.swap_remove(i % blocks.len());
                unsafe { a.dealloc(p, l) };
            }
        }
        let mut spans: Vec<(usize, usize)> = blocks
            .iter()
            .map(|(p, l, _)| (*p as usize, *p as usize + l.size()))
            .collect();
        spans.sort_unstable();
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0, "overlap");
        }
        for (p, l, v) in blocks {
            let bytes = unsafe { std::slice::from_raw_parts(p, l.size()) };
            assert!(bytes.iter().all(|b| *b == v));
            unsafe { a.dealloc(p, l) };
        }
    }

    #[test]
    fn realloc_keeps_the_bytes_across_classes_and_into_the_system_allocator() {
        let a = SmallAlloc;
        unsafe {
            let mut l = Layout::from_size_align(10, 1).unwrap();
            let mut p = a.alloc(l);
            for (i, b) in b"0123456789".iter().enumerate() {
                p.add(i).write(*b);
            }
            // Same class, a larger class, the system allocator, and back.
            for new in [16, 700, 5000, MAX_SMALL + 1, 3 * MAX_SMALL, 12] {
                let q = a.realloc(p, l, new);
                assert!(!q.is_null());
                let kept = std::slice::from_raw_parts(q, 10);
                assert_eq!(kept, b"0123456789", "to {new}");
                if class_of(new.min(MAX_SMALL)) == class_of(l.size()) && new <= MAX_SMALL {
                    assert_eq!(q, p);
                }
                p = q;
                l = Layout::from_size_align(new, 1).unwrap();
            }
            a.dealloc(p, l);
        }
    }

    #[test]
    fn large_and_over_aligned_blocks_go_to_the_system_allocator() {
        let a = SmallAlloc;
        unsafe {
            for l in [
                Layout::from_size_align(MAX_SMALL + 1, 8).unwrap(),
                Layout::from_size_align(64, 64).unwrap(),
                Layout::from_size_align(1 << 20, 16).unwrap(),
            ] {
                let p = a.alloc(l);
                assert!(!p.is_null());
                assert_eq!(p as usize % l.align(), 0);
                p.write_bytes(1, l.size());
                a.dealloc(p, l);
            }
            let z = a.alloc_zeroed(Layout::from_size_align(300, 8).unwrap());
            z.write_bytes(7, 300);
            a.dealloc(z, Layout::from_size_align(300, 8).unwrap());
            let z = a.alloc_zeroed(Layout::from_size_align(300, 8).unwrap());
            assert!(std::slice::from_raw_parts(z, 300).iter().all(|b| *b == 0));
            a.dealloc(z, Layout::from_size_align(300, 8).unwrap());
        }
    }

    /// The binaries' global allocator is this one: on a new thread, blocks of
    /// 16 bytes allocated one after another lie 16 bytes apart (no header
    /// between them, as glibc's `malloc` puts).
    #[test]
    fn the_global_allocator_cuts_headerless_blocks() {
        let adjacent = std::thread::spawn(|| {
            let blocks: Vec<Box<[u8; 16]>> = (0..64).map(|i| Box::new([i as u8; 16])).collect();
            blocks
                .windows(2)
                .filter(|w| {
                    (&*w[1] as *const [u8; 16] as usize)
                        .wrapping_sub(&*w[0] as *const [u8; 16] as usize)
                        == 16
                })
                .count()
        })
        .join()
        .unwrap();
        assert!(adjacent >= 60, "{adjacent} of 63 pairs adjacent");
    }

    #[test]
    fn threads_free_each_others_blocks() {
        let a = &SmallAlloc;
        let l = Layout::from_size_align(48, 8).unwrap();
        let blocks: Vec<usize> = std::thread::scope(|s| {
            s.spawn(|| {
                (0..500)
                    .map(|i| unsafe {
                        let p = a.alloc(l);
                        p.write_bytes(i as u8, 48);
                        p as usize
                    })
                    .collect()
            })
            .join()
            .unwrap()
        });
        for (i, p) in blocks.iter().enumerate() {
            let bytes = unsafe { std::slice::from_raw_parts(*p as *const u8, 48) };
            assert!(bytes.iter().all(|b| *b == i as u8));
            unsafe { a.dealloc(*p as *mut u8, l) };
        }
        // This thread now hands them out.
        let p = unsafe { a.alloc(l) };
        assert!(blocks.contains(&(p as usize)));
        unsafe { a.dealloc(p, l) };
    }
}
