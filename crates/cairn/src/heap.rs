//! Handing the allocator's free memory back to the operating system after background work.
//!
//! glibc's malloc gives each thread that allocates under contention an arena of its own.
//! A flush or compaction frees its blocks, buffers and table builders into the arena of
//! the background thread that ran it, where they stay resident, interleaved with live
//! allocations, until that thread allocates again: several MiB of a database's resident
//! memory that no one uses. `malloc_trim` returns every whole free page of every arena.

use std::time::{Duration, Instant};

/// The least time between two releases. A release costs the pages it hands back, faulted
/// in again by the next jobs, and holds each arena's lock while it walks it: released
/// after every flush and compaction pass, fillrandom ran 9% slower at one thread.
pub(crate) const MIN_RELEASE_INTERVAL: Duration = Duration::from_millis(200);

/// When background work releases memory: after jobs freed some, at most once per
/// [`MIN_RELEASE_INTERVAL`]; jobs that end sooner leave the release due, for the next
/// idle moment past the interval (as jemalloc's decay hands back dirty pages a while
/// after they were freed).
#[derive(Debug, Default)]
pub(crate) struct ReleasePacer {
    /// Jobs ran since the last release.
    due: bool,
    last: Option<Instant>,
}

impl ReleasePacer {
    /// Notes that a run of jobs ended (their memory is freed).
    pub(crate) fn jobs_done(&mut self) {
        self.due = true;
    }

    /// Whether to release now, at `now`; if so, the release is counted as done.
    pub(crate) fn take_due(&mut self, now: Instant) -> bool {
        let ready = self
            .last
            .is_none_or(|t| now.saturating_duration_since(t) >= MIN_RELEASE_INTERVAL);
        if !(self.due && ready) {
            return false;
        }
        self.due = false;
        self.last = Some(now);
        true
    }

    /// How long after `now` a due release may run (`None`: none is due).
    pub(crate) fn due_in(&self, now: Instant) -> Option<Duration> {
        let since = self.last.map(|t| now.saturating_duration_since(t));
        self.due
            .then(|| since.map_or(Duration::ZERO, |s| MIN_RELEASE_INTERVAL.saturating_sub(s)))
    }
}

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

#[cfg(test)]
mod pacer_tests {
    use super::*;

    #[test]
    fn releases_follow_jobs_at_most_once_an_interval() {
        let mut p = ReleasePacer::default();
        let t0 = Instant::now();
        assert!(!p.take_due(t0), "nothing freed yet");
        p.jobs_done();
        assert_eq!(p.due_in(t0), Some(Duration::ZERO));
        assert!(p.take_due(t0));
        assert!(!p.take_due(t0), "done once");
        // Jobs soon after: due, but not before the interval has passed.
        p.jobs_done();
        let half = t0 + MIN_RELEASE_INTERVAL / 2;
        assert!(!p.take_due(half));
        assert_eq!(p.due_in(half), Some(MIN_RELEASE_INTERVAL / 2));
        assert!(p.take_due(t0 + MIN_RELEASE_INTERVAL));
        assert_eq!(p.due_in(t0 + MIN_RELEASE_INTERVAL), None);
        // Idle past the interval with no jobs: nothing to release.
        assert!(!p.take_due(t0 + MIN_RELEASE_INTERVAL * 5));
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
