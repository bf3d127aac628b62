//! Handing the allocator's free memory back to the operating system after background work.
//!
//! glibc's malloc gives each thread that allocates under contention an arena of its own.
//! A flush or compaction frees its blocks, buffers and table builders into the arena of
//! the background thread that ran it, where they stay resident, interleaved with live
//! allocations, until that thread allocates again: several MiB of a database's resident
//! memory that no one uses. `malloc_trim` returns every whole free page of every arena.

/// Returns the allocator's free pages to the operating system, where the allocator can
/// (glibc on Linux); elsewhere does nothing.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes the arenas' own locks and frees only memory no
    // allocation holds; any thread may call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Resident bytes of this process.
    fn rss() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }

    /// A thread frees 15 of every 16 small blocks it allocated (a finished job's blocks
    /// beside what it keeps): the free pages stay resident until released.
    #[test]
    fn release_returns_a_background_threads_freed_blocks() {
        const BLOCKS: usize = 32 * 1024;
        let kept = std::thread::spawn(|| {
            let mut blocks: Vec<Vec<u8>> = (0..BLOCKS).map(|i| vec![i as u8; 4000]).collect();
            let kept: Vec<Vec<u8>> = blocks.iter_mut().step_by(16).map(std::mem::take).collect();
            drop(blocks);
            kept
        })
        .join()
        .unwrap();
        let before = rss();
        super::release_free_memory();
        let after = rss();
        // 120 MiB were freed; other tests allocate beside this one, so ask for half.
        assert!(
            before.saturating_sub(after) > 64 << 20,
            "resident {before} bytes before the release, {after} after"
        );
        drop(kept);
    }
}
