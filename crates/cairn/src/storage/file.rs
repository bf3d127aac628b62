use std::alloc::{self, Layout};
use std::cell::Cell;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::accounting::EnvInner;
use super::FileKind;
use crate::clock::{in_background, IoOp};
use crate::{Error, Result};

const WRITE_BUFFER: usize = 64 * 1024;
/// Alignment of the memory `O_DIRECT` reads into, and of file offsets where the device
/// refuses sector-aligned ones.
const DIRECT_ALIGN: usize = 4096;

/// The file-offset alignment the kernel asks of `O_DIRECT` reads of `file` (statx's
/// `STATX_DIOALIGN`, Linux 6.1 and later), where it says and it is at most 4 KiB. Where
/// it is 512, a 4 KiB block plus its trailer costs 4.5 KiB, not 8 KiB, as in RocksDB,
/// which aligns direct reads to the device's logical block size. A probe read cannot tell
/// this: some filesystems serve misaligned direct reads through the page cache.
pub(crate) fn dio_offset_align(file: &File) -> Option<u64> {
    use std::os::fd::AsRawFd;
    // SAFETY: statx writes only into `st`, a plain struct that zeroes are valid for; the
    // empty path with AT_EMPTY_PATH names the open descriptor.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut st,
        )
    };
    let align = u64::from(st.stx_dio_offset_align);
    (r == 0
        && st.stx_mask & libc::STATX_DIOALIGN != 0
        && align.is_power_of_two()
        && align <= DIRECT_ALIGN as u64)
        .then_some(align)
}

/// A file being written sequentially (WAL, table, manifest). Appends are buffered; each
/// buffer that reaches the OS counts as one write operation.
pub struct WritableFile {
    file: File,
    path: PathBuf,
    kind: FileKind,
    tier: usize,
    level: Option<usize>,
    buf: Vec<u8>,
    len: u64,
    /// Bytes known to have reached the file (`None` once a write failed partway unseen).
    at_os: Option<u64>,
    env: Arc<EnvInner>,
}

impl WritableFile {
    pub(crate) fn new(
        file: File,
        path: PathBuf,
        kind: FileKind,
        tier: usize,
        level: Option<usize>,
        env: Arc<EnvInner>,
    ) -> Self {
        WritableFile {
            file,
            path,
            kind,
            tier,
            level,
            buf: Vec::with_capacity(WRITE_BUFFER),
            len: 0,
            at_os: Some(0),
            env,
        }
    }

    /// Appends bytes (buffered).
    pub fn append(&mut self, data: &[u8]) -> Result<()> {
        self.len += data.len() as u64;
        if self.buf.len() + data.len() > WRITE_BUFFER && !self.buf.is_empty() {
            self.flush()?;
        }
        if data.len() >= WRITE_BUFFER {
            self.write_os(data)
        } else {
            self.buf.extend_from_slice(data);
            Ok(())
        }
    }

    fn write_os(&mut self, data: &[u8]) -> Result<()> {
        self.env.charge_space(data.len() as u64, &self.path)?;
        if let Some(f) = &self.env.faults {
            if let Some(k) = f.on_write(&self.path, data.len())? {
                // A torn write: part of the bytes reach the file, then the error.
                let _ = self.file.write_all(&data[..k]);
                f.wrote(&self.path, k as u64);
                self.at_os = self.at_os.map(|n| n + k as u64);
                return Err(f.torn(&self.path));
            }
        }
        if let Err(e) = self.file.write_all(data) {
            self.at_os = None; // some of it may have reached the file
            return Err(Error::io(self.path.display().to_string(), e));
        }
        self.at_os = self.at_os.map(|n| n + data.len() as u64);
        if let Some(f) = &self.env.faults {
            f.wrote(&self.path, data.len() as u64);
        }
        self.env
            .stats
            .record_write(self.kind, self.tier, self.level, data.len() as u64);
        self.env.charge(self.tier, IoOp::Write, data.len());
        Ok(())
    }

    /// Hands buffered bytes to the OS (no fsync).
    pub fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        // On error the bytes stay buffered so that a retry (after space returns) can
        // resend them; callers that cannot know what reached the file abandon it.
        let buf = std::mem::take(&mut self.buf);
        let r = self.write_os(&buf);
        self.buf = buf;
        if r.is_ok() {
            self.buf.clear();
        }
        r
    }

    /// Flushes and makes the data durable (fdatasync).
    pub fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.sync_written()
    }

    /// fsync of what already reached the file, leaving buffered bytes unwritten (a log
    /// whose last write failed keeps that write's bytes in its buffer: they must not be
    /// made durable, but what came before them must).
    pub fn sync_written(&mut self) -> Result<()> {
        if let Some(f) = &self.env.faults {
            f.on_sync(&self.path)?;
        }
        self.file
            .sync_data()
            .map_err(|e| Error::io(format!("fsync {}", self.path.display()), e))?;
        self.env.stats.record_sync(self.kind, self.tier);
        self.env.charge(self.tier, IoOp::Sync, 0);
        Ok(())
    }

    /// Cuts the file back to `len` bytes (what reached it before a failed write) and drops
    /// whatever is buffered; the file takes no more appends after this.
    pub fn cut_to(&mut self, len: u64) -> Result<()> {
        self.buf.clear();
        self.file
            .set_len(len)
            .map_err(|e| Error::io(format!("truncate {}", self.path.display()), e))?;
        if let Some(f) = &self.env.faults {
            f.truncated(&self.path, len);
        }
        self.len = len;
        self.at_os = Some(len);
        Ok(())
    }

    /// Bytes known to have reached the file (handed to the OS), or `None` when a failed
    /// write may have left part of its bytes there.
    pub fn reached_file(&self) -> Option<u64> {
        self.at_os
    }

    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True if nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A file read at offsets (tables, value logs), optionally with `O_DIRECT`.
pub struct RandomAccessFile {
    file: File,
    path: PathBuf,
    kind: FileKind,
    tier: usize,
    level: Option<usize>,
    direct: bool,
    /// File-offset alignment of direct reads.
    align: u64,
    size: u64,
    env: Arc<EnvInner>,
    /// The file mapped into memory (`Options::mmap_reads`): reads copy out of it.
    map: Option<memmap2::Mmap>,
    /// Where the last read ended: a read that starts there continues a scan, priced as
    /// sequential on the virtual clock.
    next_offset: AtomicU64,
}

impl RandomAccessFile {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        file: File,
        path: PathBuf,
        kind: FileKind,
        tier: usize,
        level: Option<usize>,
        direct: bool,
        size: u64,
        env: Arc<EnvInner>,
    ) -> Self {
        RandomAccessFile {
            file,
            path,
            kind,
            tier,
            level,
            direct,
            align: DIRECT_ALIGN as u64,
            size,
            env,
            map: None,
            next_offset: AtomicU64::new(u64::MAX),
        }
    }

    /// Maps the file's first `size()` bytes into memory; reads then copy out of the
    /// mapping instead of calling `pread`. Left unmapped if the mapping fails.
    pub(crate) fn map(&mut self) {
        // SAFETY: the mapping is read-only and covers only bytes that existed when the
        // file was opened; read_at never reads past `size`. cairn maps only tables and
        // value-log files, which it never writes, truncates or rewrites once they are
        // readable (a table is finished and synced, a value-log file synced, before a
        // version names it; they are removed by unlinking). Unlike `pread`, a mapped read
        // of a file another process truncated, or of a page the device fails to read,
        // raises SIGBUS instead of returning an error: `Options::mmap_reads` says so.
        let m = unsafe {
            memmap2::MmapOptions::new()
                .len(self.size as usize)
                .map(&self.file)
        };
        if let Ok(m) = m {
            self.map = Some(m);
        }
    }

    /// Whether reads copy out of a memory mapping.
    pub fn is_mapped(&self) -> bool {
        self.map.is_some()
    }

    /// Whether a read costs only memory: the file is mapped and its tier adds no
    /// simulated device latency (the learned index's analyzer times such reads).
    pub fn reads_from_memory(&self) -> bool {
        self.map.is_some() && !self.env.delays(self.tier)
    }

    /// The `O_DIRECT` offset alignment the kernel reports for this file, if it does.
    pub(crate) fn file_dio_align(&self) -> Option<u64> {
        dio_offset_align(&self.file)
    }

    /// File-offset alignment of direct reads.
    pub fn direct_align(&self) -> u64 {
        self.align
    }

    /// Aligns direct reads' file offsets to `align` bytes (a power of two, at most 4 KiB).
    pub(crate) fn set_direct_align(&mut self, align: u64) {
        debug_assert!(align.is_power_of_two() && align <= DIRECT_ALIGN as u64);
        self.align = align;
    }

    /// Size of the file when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True if reads bypass the page cache.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Reads exactly `len` bytes at `offset`; a read past the end is a corruption error
    /// (a handle pointing outside its file).
    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.check_read(offset, len)?;
        let out = if let Some(m) = &self.map {
            m[offset as usize..offset as usize + len].to_vec()
        } else if self.direct {
            self.read_direct(offset, len, |bytes| Ok(bytes.to_vec()))?
        } else {
            let mut v = vec![0u8; len];
            self.pread(&mut v, offset)?;
            v
        };
        self.count_read(offset, len);
        Ok(out)
    }

    /// Reads exactly `len` bytes at `offset` and hands them to `f`, as [`read_at`]
    /// (same checks, counts and delays) but without a buffer of its own: `f` sees the
    /// mapping itself when the file is mapped, the aligned buffer of a direct read, or
    /// else a buffer this thread reuses. For a reader that keeps only part of what it
    /// reads or a transform of it (a value out of its value-log record, a decompressed
    /// block).
    ///
    /// [`read_at`]: Self::read_at
    pub fn read_with<T>(
        &self,
        offset: u64,
        len: usize,
        f: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        self.check_read(offset, len)?;
        if let Some(m) = &self.map {
            self.count_read(offset, len);
            // In bounds: checked against `size`, the mapping's length, above.
            return f(&m[offset as usize..offset as usize + len]);
        }
        if self.direct {
            return self.read_direct(offset, len, |bytes| {
                self.count_read(offset, len);
                f(bytes)
            });
        }
        let mut buf = ReadScratch::take(len);
        self.pread(&mut buf.0[..len], offset)?;
        self.count_read(offset, len);
        f(&buf.0[..len])
    }

    /// Refuses a read past the end of the file (a corrupt handle), and runs the injected
    /// read faults.
    fn check_read(&self, offset: u64, len: usize) -> Result<()> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.size)
        {
            return Err(Error::corruption(
                self.path.display().to_string(),
                format!(
                    "read of {len} bytes at {offset} past end of file ({} bytes)",
                    self.size
                ),
            ));
        }
        if let Some(faults) = &self.env.faults {
            faults.on_read(&self.path)?;
        }
        Ok(())
    }

    fn pread(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io(self.path.display().to_string(), e))
    }

    /// Counts a read of `len` bytes at `offset` and charges its tier's device. A read
    /// is sequential when background work does it (compaction input), when it continues
    /// the last read of this file (a scan, readahead), or when the file is a log read
    /// whole; otherwise it pays the device's access latency.
    fn count_read(&self, offset: u64, len: usize) {
        self.env
            .stats
            .record_read(self.kind, self.tier, self.level, len as u64);
        if self.env.vclock.is_none() {
            // The wall clock's device profile prices every read alike.
            self.env.charge(self.tier, IoOp::RandomRead, len);
            return;
        }
        let continues = self.next_offset.swap(offset + len as u64, Relaxed) == offset;
        let random = matches!(
            self.kind,
            FileKind::Table | FileKind::ValueLog | FileKind::Model
        ) && !continues
            && !in_background();
        let op = if random {
            IoOp::RandomRead
        } else {
            IoOp::SequentialRead
        };
        self.env.charge(self.tier, op, len);
    }

    /// Reads `len` bytes at `offset` with `O_DIRECT` (the aligned span around them) and
    /// hands them to `f`.
    pub(crate) fn read_direct<T>(
        &self,
        offset: u64,
        len: usize,
        f: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let start = offset & !(self.align - 1);
        let end = (offset + len as u64).div_ceil(self.align) * self.align;
        let span = (end - start) as usize;
        let mut buf = AlignedBuf::new(span);
        let skip = (offset - start) as usize;
        let mut got = 0usize;
        // Near the end of the file the aligned span runs past it: stop once the bytes
        // asked for are in.
        while got < skip + len {
            let n = self
                .file
                .read_at(&mut buf.as_mut()[got..], start + got as u64)
                .map_err(|e| Error::io(self.path.display().to_string(), e))?;
            if n == 0 {
                break;
            }
            got += n;
        }
        if got < skip + len {
            return Err(Error::corruption(
                self.path.display().to_string(),
                "short direct read",
            ));
        }
        self.env.stats.record_direct_read();
        f(&buf.as_mut()[skip..skip + len])
    }
}

/// Largest read buffer a thread keeps for its next read: a data block and its trailer fit
/// many times over; a larger read (a whole log file, a large index) gets one of its own.
const SCRATCH_KEEP: usize = 256 << 10;

thread_local! {
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// A buffered read's buffer: this thread's spare one, given back when dropped. Taking it
/// empties the slot, so a read made inside another read's callback gets a fresh one. The
/// buffer is zeroed only where it grows: a block read then costs no allocation and no
/// memset (the glibc allocator's slow path for blocks over 1 KiB, and a page's worth of
/// zeroes, were a tenth of a cached-read profile).
struct ReadScratch(Vec<u8>);

impl ReadScratch {
    fn take(len: usize) -> Self {
        if len > SCRATCH_KEEP {
            // Not kept afterwards: growing the spare one would only copy it first.
            return ReadScratch(vec![0; len]);
        }
        // During the thread's teardown the slot may be gone: a fresh buffer then.
        let mut v = SCRATCH.try_with(Cell::take).unwrap_or_default();
        if v.len() < len {
            v.reserve_exact(len - v.len());
            v.resize(len, 0);
        }
        ReadScratch(v)
    }
}

impl Drop for ReadScratch {
    fn drop(&mut self) {
        if self.0.capacity() <= SCRATCH_KEEP {
            let v = std::mem::take(&mut self.0);
            // At thread exit the slot may be gone already: the buffer is then just freed.
            let _ = SCRATCH.try_with(|s| s.set(v));
        }
    }
}

/// A heap buffer aligned for `O_DIRECT`.
struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

impl AlignedBuf {
    fn new(len: usize) -> Self {
        let layout = Layout::from_size_align(len.max(DIRECT_ALIGN), DIRECT_ALIGN)
            .expect("aligned layout of a bounded read");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is a live allocation of layout.size() initialised bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { alloc::dealloc(self.ptr, self.layout) }
    }
}
