//! Process memory and I/O from /proc. Both are per process: `compare` runs each engine in
//! its own child process so these numbers belong to one engine (plus the harness).

use serde::{Deserialize, Serialize};

fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Peak resident set size of this process in bytes (VmHWM, falling back to ru_maxrss).
/// The kernel updates VmHWM lazily, so the current VmRSS can exceed it: take the max.
pub fn peak_rss_bytes() -> u64 {
    if let Some(k) = status_kib("VmHWM:") {
        return (k * 1024).max(current_rss_bytes());
    }
    // SAFETY: getrusage only writes the struct we hand it.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut ru) == 0 {
            return ru.ru_maxrss as u64 * 1024; // kilobytes on Linux
        }
    }
    0
}

pub fn current_rss_bytes() -> u64 {
    status_kib("VmRSS:").unwrap_or(0) * 1024
}

/// CPU time of this process (all threads), seconds: what `time` reports as user and sys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTime {
    pub user_s: f64,
    pub sys_s: f64,
}

impl CpuTime {
    pub fn now() -> CpuTime {
        // SAFETY: getrusage only writes the struct we hand it.
        unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            if libc::getrusage(libc::RUSAGE_SELF, &mut ru) != 0 {
                return CpuTime::default();
            }
            let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            CpuTime {
                user_s: secs(ru.ru_utime),
                sys_s: secs(ru.ru_stime),
            }
        }
    }

    pub fn since(&self, e: &CpuTime) -> CpuTime {
        CpuTime {
            user_s: (self.user_s - e.user_s).max(0.0),
            sys_s: (self.sys_s - e.sys_s).max(0.0),
        }
    }

    pub fn total_s(&self) -> f64 {
        self.user_s + self.sys_s
    }
}

/// /proc/self/io: what the OS saw, independent of what an engine reports about itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcIo {
    /// read()/pread() syscalls and their bytes (page cache hits included).
    pub syscalls_read: u64,
    pub chars_read: u64,
    pub syscalls_write: u64,
    pub chars_written: u64,
    /// Bytes the block layer actually fetched from / sent toward storage.
    pub storage_read_bytes: u64,
    pub storage_write_bytes: u64,
}

impl ProcIo {
    pub fn now() -> ProcIo {
        let Ok(s) = std::fs::read_to_string("/proc/self/io") else {
            return ProcIo::default();
        };
        let get = |k: &str| {
            s.lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        ProcIo {
            syscalls_read: get("syscr:"),
            chars_read: get("rchar:"),
            syscalls_write: get("syscw:"),
            chars_written: get("wchar:"),
            storage_read_bytes: get("read_bytes:"),
            storage_write_bytes: get("write_bytes:"),
        }
    }

    pub fn since(&self, e: &ProcIo) -> ProcIo {
        ProcIo {
            syscalls_read: self.syscalls_read.saturating_sub(e.syscalls_read),
            chars_read: self.chars_read.saturating_sub(e.chars_read),
            syscalls_write: self.syscalls_write.saturating_sub(e.syscalls_write),
            chars_written: self.chars_written.saturating_sub(e.chars_written),
            storage_read_bytes: self.storage_read_bytes.saturating_sub(e.storage_read_bytes),
            storage_write_bytes: self
                .storage_write_bytes
                .saturating_sub(e.storage_write_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        // Busy until CPU time moves (the machine is shared: wall time says little).
        let t0 = CpuTime::now();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while CpuTime::now().since(&t0).user_s < 0.01 && start.elapsed().as_secs() < 20 {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        assert!(CpuTime::now().since(&t0).user_s >= 0.01);
    }

    #[test]
    fn peak_rss_grows_with_allocation() {
        let before = peak_rss_bytes();
        assert!(before > 0);
        let v = vec![1u8; 64 << 20];
        std::hint::black_box(&v);
        assert!(peak_rss_bytes() >= before);
        assert!(peak_rss_bytes() >= 64 << 20, "{}", peak_rss_bytes());
    }
}
