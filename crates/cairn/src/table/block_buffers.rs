//! The buffers of dropped data blocks, kept per thread for the next block a read of that
//! thread decompresses. A cached read that misses allocates a block's worth of bytes and,
//! at the cache's next eviction, frees another; both calls into the allocator (blocks of
//! 4 KiB are past glibc's per-thread cache) were 4-5% of a readrandom profile. The reader
//! that inserts a block is the thread that frees the one it evicts, so a few buffers per
//! thread are enough.
//!
//! Bounded: at most [`MAX_KEPT_BYTES`] of spare capacity per thread, and a buffer is only
//! handed out for a block it fits closely, so that a block's cache charge (its capacity)
//! stays what an exact allocation would charge, within an eighth.
//!
//! A new buffer is allocated at the block's size class, not its exact size. The cache
//! frees blocks in its own order, and glibc reuses a freed 4 KiB hole only for a request
//! it holds whole: with every block allocated at its own size, the reader's arena grew
//! holes too small for the next blocks, 3.5 MiB free of 8.7 on a 4 MiB cache after 15 s
//! of random reads, and kept growing. In classes a freed block fits the next of its class
//! exactly: 0.02 MiB free of 5.0, steady.

use std::cell::RefCell;

/// Spare bytes one thread keeps at most (a few 4 KiB blocks, or one 64 KiB block).
pub(crate) const MAX_KEPT_BYTES: usize = 64 << 10;

#[derive(Default)]
struct Kept {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

/// An empty buffer with room for `len` bytes: a kept one whose capacity is at most an
/// eighth above `len`, or a new one of `len`'s [`size_class`].
pub(crate) fn take(len: usize) -> Vec<u8> {
    let fits = |cap: usize| cap >= len && cap - len <= len / 8;
    let kept = KEPT
        .try_with(|k| {
            let mut k = k.borrow_mut();
            let i = k.bufs.iter().rposition(|b| fits(b.capacity()))?;
            let buf = k.bufs.swap_remove(i);
            k.bytes -= buf.capacity();
            Some(buf)
        })
        .ok()
        .flatten();
    kept.unwrap_or_else(|| Vec::with_capacity(size_class(len)))
}

/// `len` rounded up to its size class: 16 classes per doubling (steps of 128 bytes from
/// 2 to 4 KiB), so a block is charged at most a 16th more than its bytes. Finer classes
/// fragment again: at steps of 64 bytes the reader's arena held 1.6 MiB free of 6.6.
pub(crate) fn size_class(len: usize) -> usize {
    let floor_pow2 = 1usize << len.max(1).ilog2();
    let step = (floor_pow2 / 16).max(64);
    len.div_ceil(step) * step
}

/// Keeps `buf` for a later [`take`] on this thread if it fits the bound; frees it
/// otherwise (the oldest kept buffers make room first).
pub(crate) fn give(mut buf: Vec<u8>) {
    let cap = buf.capacity();
    if cap == 0 || cap > MAX_KEPT_BYTES {
        return;
    }
    buf.clear();
    // During the thread's teardown the pool may be gone: the buffer is simply freed.
    let _ = KEPT.try_with(|k| {
        let Ok(mut k) = k.try_borrow_mut() else {
            return;
        };
        while k.bytes + cap > MAX_KEPT_BYTES {
            let old = k.bufs.remove(0);
            k.bytes -= old.capacity();
        }
        k.bytes += cap;
        k.bufs.push(buf);
    });
}

/// Spare bytes this thread keeps now (tests).
#[cfg(test)]
pub(crate) fn kept_bytes() -> usize {
    KEPT.with(|k| k.borrow().bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_serves_a_close_size_and_not_a_far_one() {
        let mut b = Vec::with_capacity(4096);
        b.extend_from_slice(&[7; 100]);
        let ptr = b.as_ptr();
        give(b);
        assert_eq!(kept_bytes(), 4096);
        // Far larger or far smaller blocks get buffers of their own, of their class.
        assert_eq!(take(8192).capacity(), 8192);
        assert_eq!(take(1000).capacity(), 1024);
        assert_eq!(take(8000).capacity(), 8192);
        let again = take(4000);
        assert_eq!(again.as_ptr(), ptr, "the kept buffer was not reused");
        assert!(again.is_empty());
        assert_eq!(kept_bytes(), 0);
    }

    /// A filter or index block keeps its buffer (and is charged by its length): it must
    /// not take a spare larger than itself.
    #[test]
    fn only_data_blocks_take_a_spare() {
        use crate::compression::CODE_NONE;
        use crate::table::format::{block_contents_in, block_trailer, BlockType};
        let contents = vec![5u8; 4096];
        let stored = |ty| {
            [
                contents.as_slice(),
                &block_trailer(&contents, ty, CODE_NONE),
            ]
            .concat()
        };
        give(Vec::with_capacity(4400));
        let filter = block_contents_in(&stored(BlockType::Filter), BlockType::Filter, "t", 0);
        assert_eq!(filter.unwrap().capacity(), 4096);
        let data = block_contents_in(&stored(BlockType::Data), BlockType::Data, "t", 0).unwrap();
        assert_eq!(
            (data.capacity(), data.as_slice()),
            (4400, contents.as_slice())
        );
    }

    /// Blocks of nearby sizes share a class, so a hole one leaves in the allocator fits
    /// the next; no class adds more than a 16th to the block.
    #[test]
    fn new_buffers_come_in_size_classes() {
        let (a, b) = (take(3841), take(3968));
        assert_eq!((a.capacity(), b.capacity()), (3968, 3968));
        assert_eq!(take(3840).capacity(), 3840);
        assert_eq!(take(4097).capacity(), 4352);
        for len in (1..70_000).step_by(7) {
            let class = size_class(len);
            assert!(
                class >= len && class - len <= (len / 16).max(63),
                "{len} -> {class}"
            );
            assert_eq!(size_class(class), class, "a class is its own class");
        }
    }

    #[test]
    fn the_pool_stays_within_its_bound() {
        for _ in 0..100 {
            give(Vec::with_capacity(5000));
        }
        assert!(kept_bytes() <= MAX_KEPT_BYTES);
        assert!(kept_bytes() > MAX_KEPT_BYTES - 5000);
        give(Vec::with_capacity(MAX_KEPT_BYTES + 1));
        assert!(kept_bytes() <= MAX_KEPT_BYTES);
    }
}
