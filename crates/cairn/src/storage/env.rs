use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

pub(crate) use super::accounting::{EnvInner, Tier};
use super::file::{RandomAccessFile, WritableFile};
use super::{DeviceProfile, FaultInjector, FileKind, IoStats};
use crate::clock::{Clock, DeviceModel, IoOp, VirtualClock};
use crate::{Error, Result};

/// One storage tier: a directory for the tables of levels `first_level..` (up to the next
/// tier's first level), with a device profile.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TierConfig {
    /// Directory; relative paths are inside the database directory.
    pub dir: PathBuf,
    /// First level stored in this tier.
    pub first_level: usize,
    /// Added latency per I/O.
    pub profile: DeviceProfile,
}

/// The storage environment of one database. Cheap to clone.
#[derive(Clone)]
pub struct StorageEnv {
    inner: Arc<EnvInner>,
    root: PathBuf,
}

impl StorageEnv {
    /// Sets up the environment for a database at `root`, creating tier directories.
    /// With no tiers, everything lives in `root` with no added latency.
    pub fn new(root: &Path, tiers: &[TierConfig], latency_scale: f64) -> Result<Self> {
        Self::build(root, tiers, latency_scale, true)
    }

    /// As [`new`](Self::new), creating no directory (a read-only open): a tier
    /// directory that is not there holds no file.
    pub fn existing(root: &Path, tiers: &[TierConfig], latency_scale: f64) -> Result<Self> {
        Self::build(root, tiers, latency_scale, false)
    }

    fn build(root: &Path, tiers: &[TierConfig], latency_scale: f64, create: bool) -> Result<Self> {
        let mut ts: Vec<Tier> = if tiers.is_empty() {
            vec![Tier {
                dir: root.to_path_buf(),
                first_level: 0,
                profile: DeviceProfile::None,
            }]
        } else {
            tiers
                .iter()
                .map(|t| Tier {
                    dir: if t.dir.is_absolute() {
                        t.dir.clone()
                    } else {
                        root.join(&t.dir)
                    },
                    first_level: t.first_level,
                    profile: t.profile,
                })
                .collect()
        };
        ts.sort_by_key(|t| t.first_level);
        if ts[0].first_level != 0 {
            return Err(Error::InvalidArgument(
                "the first storage tier must start at level 0".into(),
            ));
        }
        if !(latency_scale.is_finite() && latency_scale >= 0.0) {
            return Err(Error::InvalidArgument(format!(
                "latency scale {latency_scale} must be a finite number >= 0"
            )));
        }
        for t in ts.iter().filter(|_| create) {
            fs::create_dir_all(&t.dir).map_err(|e| Error::io(t.dir.display().to_string(), e))?;
        }
        Ok(StorageEnv {
            inner: Arc::new(EnvInner {
                stats: IoStats::default(),
                tiers: ts,
                latency_scale,
                space_left: AtomicI64::new(i64::MAX),
                faults: None,
                mmap_reads: false,
                read_only: false,
                vclock: None,
            }),
            root: root.to_path_buf(),
        })
    }

    /// Routes every operation through `faults` (tests). Call on a new environment.
    pub fn with_faults(mut self, faults: Option<Arc<FaultInjector>>) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.faults = faults,
            None => debug_assert!(false, "with_faults on a shared environment"),
        }
        self
    }

    /// Refuses every change to the directories: creating, renaming and removing files
    /// and syncing directories fail with [`Error::ReadOnly`]. Set before the environment
    /// is shared.
    pub fn with_read_only(mut self, on: bool) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.read_only = on,
            None => debug_assert!(false, "with_read_only on a shared environment"),
        }
        self
    }

    /// Whether the environment refuses changes.
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    fn refuse_if_read_only(&self, what: &str, path: &Path) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly(format!("{what} {}", path.display())));
        }
        Ok(())
    }

    /// Maps tables and value logs opened for buffered reads (not direct ones) into
    /// memory, so a read is a copy out of the page cache with no system call
    /// (`Options::mmap_reads`; never on the virtual clock). Set before the environment
    /// is shared.
    pub fn with_mmap_reads(mut self, on: bool) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.mmap_reads = on && inner.vclock.is_none(),
            None => debug_assert!(false, "with_mmap_reads on a shared environment"),
        }
        self
    }

    /// Charges every I/O to a virtual device clock with `clock` (mapped reads then stay
    /// off: each read is priced as a device read). Returns the clock. Set before the
    /// environment is shared.
    pub fn with_clock(mut self, clock: &Clock) -> Result<(Self, Option<Arc<VirtualClock>>)> {
        let Clock::Virtual(model) = clock else {
            return Ok((self, None));
        };
        model.validate()?;
        let devices: Vec<DeviceModel> = self
            .inner
            .tiers
            .iter()
            .map(|t| tier_device(t.profile, model))
            .collect();
        for d in &devices {
            d.validate()?;
        }
        let vc = Arc::new(VirtualClock::new(devices));
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                inner.vclock = Some(vc.clone());
                inner.mmap_reads = false;
            }
            None => debug_assert!(false, "with_clock on a shared environment"),
        }
        Ok((self, Some(vc)))
    }

    /// The clock the engine's learned parts read: this environment's virtual clock, or
    /// the wall clock.
    pub fn engine_clock(&self) -> crate::clock::EngineClock {
        match &self.inner.vclock {
            Some(c) => crate::clock::EngineClock::Virtual(c.clone()),
            None => crate::clock::EngineClock::Wall,
        }
    }

    /// The virtual clock I/O is charged to, if any.
    pub fn virtual_clock(&self) -> Option<&Arc<VirtualClock>> {
        self.inner.vclock.as_ref()
    }

    /// The database directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Number of tiers.
    pub fn num_tiers(&self) -> usize {
        self.inner.tiers.len()
    }

    /// The tier that stores `level`.
    pub fn tier_for_level(&self, level: usize) -> usize {
        self.inner
            .tiers
            .iter()
            .rposition(|t| t.first_level <= level)
            .unwrap_or(0)
    }

    /// The directory of a tier.
    pub fn tier_dir(&self, tier: usize) -> &Path {
        &self.inner.tiers[tier.min(self.inner.tiers.len() - 1)].dir
    }

    /// The device profile of a tier.
    pub fn tier_profile(&self, tier: usize) -> DeviceProfile {
        self.inner.tiers[tier.min(self.inner.tiers.len() - 1)].profile
    }

    /// The I/O counters.
    pub fn stats(&self) -> &IoStats {
        &self.inner.stats
    }

    /// Limits the bytes that may still be written (a simulated full disk); `None` lifts it.
    pub fn set_space_quota(&self, bytes: Option<u64>) {
        let v = bytes.map_or(i64::MAX, |b| b.min(i64::MAX as u64 - 1) as i64);
        self.inner.space_left.store(v, Ordering::Relaxed);
    }

    /// Creates (or truncates) a file for sequential writing.
    pub fn create(
        &self,
        path: &Path,
        kind: FileKind,
        tier: usize,
        level: Option<usize>,
    ) -> Result<WritableFile> {
        self.refuse_if_read_only("creating", path)?;
        if let Some(f) = &self.inner.faults {
            f.on_create(path)?;
        }
        let file = File::create(path).map_err(|e| Error::io(path.display().to_string(), e))?;
        Ok(WritableFile::new(
            file,
            path.to_path_buf(),
            kind,
            tier,
            level,
            self.inner.clone(),
        ))
    }

    /// Opens a file for reads at offsets. With `direct`, tries `O_DIRECT` and falls back to
    /// buffered reads (counted in `IoStats::direct_io_fallbacks`) where it is refused.
    pub fn open_read(
        &self,
        path: &Path,
        kind: FileKind,
        tier: usize,
        level: Option<usize>,
        direct: bool,
    ) -> Result<RandomAccessFile> {
        let mut used_direct = false;
        let file = if direct {
            match OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(path)
            {
                Ok(f) => {
                    used_direct = true;
                    f
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    self.inner.stats.record_direct_fallback();
                    File::open(path).map_err(|e| Error::io(path.display().to_string(), e))?
                }
                Err(e) => return Err(Error::io(path.display().to_string(), e)),
            }
        } else {
            File::open(path).map_err(|e| Error::io(path.display().to_string(), e))?
        };
        let size = file
            .metadata()
            .map_err(|e| Error::io(path.display().to_string(), e))?
            .len();
        let mut f = RandomAccessFile::new(
            file,
            path.to_path_buf(),
            kind,
            tier,
            level,
            used_direct,
            size,
            self.inner.clone(),
        );
        if !used_direct
            && size > 0
            && self.inner.mmap_reads
            && matches!(kind, FileKind::Table | FileKind::ValueLog)
        {
            f.map(); // where the filesystem cannot map, reads stay system calls
        }
        if used_direct && size > 0 {
            // The alignment the kernel reports for this file, else whole pages. Some
            // filesystems accept the flag but refuse every read: then buffered reads.
            if let Some(align) = f.file_dio_align() {
                f.set_direct_align(align);
            }
            if f.read_direct(0, 1, |_| Ok(())).is_err() {
                self.inner.stats.record_direct_fallback();
                return self.open_read(path, kind, tier, level, false);
            }
        }
        Ok(f)
    }

    /// Reads a whole file (WAL and manifest replay), counted as one read per 1 MiB.
    pub fn read_whole(&self, path: &Path, kind: FileKind) -> Result<Vec<u8>> {
        let f = self.open_read(path, kind, 0, None, false)?;
        let size = f.size() as usize;
        let mut out = Vec::with_capacity(size);
        let mut off = 0usize;
        while off < size {
            let n = (size - off).min(1 << 20);
            out.extend_from_slice(&f.read_at(off as u64, n)?);
            off += n;
        }
        Ok(out)
    }

    /// Writes a small file atomically: temp file, fsync, rename, fsync of the directory.
    pub fn write_atomic(&self, path: &Path, kind: FileKind, data: &[u8]) -> Result<()> {
        let tmp = path.with_extension("tmp");
        let mut f = self.create(&tmp, kind, 0, None)?;
        f.append(data)?;
        f.sync()?;
        drop(f);
        self.rename(&tmp, path)?;
        self.sync_dir(path.parent().unwrap_or(&self.root))
    }

    /// fsync of a directory, so that created, renamed and removed entries are durable.
    pub fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.refuse_if_read_only("syncing", dir)?;
        if let Some(f) = &self.inner.faults {
            f.on_dir_sync(dir)?;
        }
        let d = File::open(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
        d.sync_all()
            .map_err(|e| Error::io(format!("fsync dir {}", dir.display()), e))?;
        self.inner.stats.record_sync(FileKind::Other, 0);
        self.inner.charge(0, IoOp::Sync, 0);
        Ok(())
    }

    /// Renames a file.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.refuse_if_read_only("renaming", from)?;
        if let Some(f) = &self.inner.faults {
            f.on_rename(from, to)?;
        }
        fs::rename(from, to)
            .map_err(|e| Error::io(format!("rename {} -> {}", from.display(), to.display()), e))
    }

    /// Removes a file; a missing file is not an error.
    pub fn remove(&self, path: &Path) -> Result<()> {
        self.refuse_if_read_only("removing", path)?;
        if let Some(f) = &self.inner.faults {
            f.on_remove(path);
        }
        match fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path.display().to_string(), e)),
        }
    }
}

/// The virtual device of a tier: a tier with a device profile keeps that device; one
/// without runs on the clock's model.
fn tier_device(profile: DeviceProfile, model: &DeviceModel) -> DeviceModel {
    match profile {
        DeviceProfile::None => model.clone(),
        DeviceProfile::Ssd => DeviceModel::ssd(),
        DeviceProfile::Hdd => DeviceModel::hdd(),
        DeviceProfile::Custom {
            read_us,
            write_us,
            mib_per_sec,
        } => DeviceModel {
            name: "custom".into(),
            access_us: read_us,
            read_mib_per_sec: mib_per_sec,
            write_mib_per_sec: mib_per_sec,
            sync_us: write_us,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mapped reads return what `pread` returns, are counted alike, refuse reads past
    /// the end, and apply only to tables and value logs read without `O_DIRECT`.
    #[test]
    fn mapped_reads() {
        let dir = tempfile::tempdir().unwrap();
        let env = StorageEnv::new(dir.path(), &[], 0.0)
            .unwrap()
            .with_mmap_reads(true);
        let p = dir.path().join("t");
        let mut w = env.create(&p, FileKind::Table, 0, Some(1)).unwrap();
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        w.append(&bytes).unwrap();
        w.sync().unwrap();
        let r = env
            .open_read(&p, FileKind::Table, 0, Some(1), false)
            .unwrap();
        assert!(r.is_mapped());
        let plain = StorageEnv::new(dir.path(), &[], 0.0).unwrap();
        let q = plain
            .open_read(&p, FileKind::Table, 0, Some(1), false)
            .unwrap();
        assert!(!q.is_mapped());
        for (off, len) in [(0, 1), (17, 300), (4096, 904), (0, 5000), (4999, 1)] {
            assert_eq!(r.read_at(off, len).unwrap(), q.read_at(off, len).unwrap());
            assert_eq!(r.read_at(off, len).unwrap(), &bytes[off as usize..][..len]);
        }
        assert!(r.read_at(4990, 11).unwrap_err().is_corruption());
        assert!(r.read_at(u64::MAX, 2).unwrap_err().is_corruption());
        assert_eq!(env.stats().snapshot().kind(FileKind::Table).read_ops, 10);
        // read_with hands over the same bytes (the mapping itself when mapped), is checked
        // and counted the same, and passes the reader's own error on.
        for f in [&r, &q] {
            let sum = f
                .read_with(17, 300, |b| Ok(b.iter().map(|&x| x as u64).sum::<u64>()))
                .unwrap();
            assert_eq!(sum, bytes[17..317].iter().map(|&x| x as u64).sum::<u64>());
            assert!(f
                .read_with(4990, 11, |_| Ok(()))
                .unwrap_err()
                .is_corruption());
            let e = f.read_with(0, 4, |_| -> Result<()> {
                Err(Error::corruption("x", "bad"))
            });
            assert!(e.unwrap_err().is_corruption());
        }
        // Each: the in-bounds read and the one whose reader failed; the refused one not.
        assert_eq!(env.stats().snapshot().kind(FileKind::Table).read_ops, 12);
        assert_eq!(plain.stats().snapshot().kind(FileKind::Table).read_ops, 7);
        // WALs are read whole; direct reads bypass the page cache a map would use.
        assert!(!env
            .open_read(&p, FileKind::Wal, 0, None, false)
            .unwrap()
            .is_mapped());
        let d = env.open_read(&p, FileKind::Table, 0, None, true).unwrap();
        assert_ne!(d.is_direct(), d.is_mapped(), "mapped unless direct");
        assert!(env
            .open_read(&p, FileKind::ValueLog, 0, None, false)
            .unwrap()
            .is_mapped());
    }

    #[test]
    fn counts_and_quota() {
        let dir = tempfile::tempdir().unwrap();
        let env = StorageEnv::new(dir.path(), &[], 1.0).unwrap();
        let p = dir.path().join("f");
        let mut w = env.create(&p, FileKind::Table, 0, Some(1)).unwrap();
        w.append(&[7u8; 1000]).unwrap();
        w.sync().unwrap();
        let r = env
            .open_read(&p, FileKind::Table, 0, Some(1), true)
            .unwrap();
        assert_eq!(r.read_at(10, 20).unwrap(), vec![7u8; 20]);
        assert!(r.read_at(990, 20).unwrap_err().is_corruption());
        let s = env.stats().snapshot();
        assert_eq!(s.kind(FileKind::Table).write_bytes, 1000);
        assert_eq!(s.kind(FileKind::Table).read_ops, 1);
        assert_eq!(s.by_level[1].read_bytes, 20);
        assert!(s.direct_reads + s.direct_io_fallbacks >= 1);

        env.set_space_quota(Some(100));
        let mut w = env
            .create(&dir.path().join("g"), FileKind::Wal, 0, None)
            .unwrap();
        w.append(&[1u8; 200]).unwrap();
        let e = w.sync().unwrap_err();
        assert!(e.is_no_space(), "{e}");
        env.set_space_quota(None);
        w.sync().unwrap();
    }

    #[test]
    fn direct_reads_at_any_offset_return_the_bytes_buffered_reads_do() {
        let dir = tempfile::tempdir().unwrap();
        let env = StorageEnv::new(dir.path(), &[], 1.0).unwrap();
        let p = dir.path().join("f");
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut w = env.create(&p, FileKind::Table, 0, Some(1)).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
        let mut direct = env.open_read(&p, FileKind::Table, 0, None, true).unwrap();
        if !direct.is_direct() {
            eprintln!("O_DIRECT refused here: the aligned-read arithmetic is not tested");
            return;
        }
        // What the kernel reported, and each coarser alignment cairn uses.
        let reported = direct.direct_align();
        for align in [reported, 512, 4096].into_iter().filter(|&a| a >= reported) {
            direct.set_direct_align(align);
            for (at, len) in [(0, 1), (1, 4101), (511, 2), (4095, 4097), (12_345, 7_655)] {
                let got = direct.read_at(at, len).unwrap();
                assert!(
                    got == data[at as usize..at as usize + len],
                    "{len} bytes at {at}, aligned to {align}"
                );
            }
        }
    }

    #[test]
    fn read_with_hands_each_read_exactly_its_bytes_through_a_reused_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let env = StorageEnv::new(dir.path(), &[], 0.0).unwrap();
        let p = dir.path().join("f");
        // Past the largest buffer a thread keeps (256 KiB).
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 253) as u8).collect();
        let mut w = env.create(&p, FileKind::Table, 0, Some(1)).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
        let plain = env.open_read(&p, FileKind::Table, 0, None, false).unwrap();
        let direct = env.open_read(&p, FileKind::Table, 0, None, true).unwrap();
        let want = |at: u64, len: usize| &data[at as usize..at as usize + len];
        for f in [&plain, &direct] {
            // A long read, then shorter ones: each sees its own length, never the tail
            // an earlier, longer read left in the buffer; then one past what is kept.
            for (at, len) in [(5, 9_000), (100, 3), (7_000, 4_096), (0, 300_000), (1, 1)] {
                let got = f.read_with(at, len, |b| Ok(b.to_vec())).unwrap();
                assert!(got == want(at, len), "{len} bytes at {at}");
            }
            // A read inside another's callback gets a buffer of its own.
            let (outer, inner) = f
                .read_with(50, 5_000, |a| {
                    let inner = f.read_with(60_000, 4_000, |b| Ok(b.to_vec()))?;
                    Ok((a.to_vec(), inner))
                })
                .unwrap();
            assert!(outer == want(50, 5_000) && inner == want(60_000, 4_000));
            // A failed read leaves nothing behind that a later one could see.
            assert!(f.read_with(299_990, 20, |_| Ok(())).is_err());
            assert!(f.read_with(299_990, 10, |b| Ok(b.to_vec())).unwrap() == want(299_990, 10));
        }
    }

    #[test]
    fn tiers_map_levels() {
        let dir = tempfile::tempdir().unwrap();
        let tiers = [
            TierConfig {
                dir: "hot".into(),
                first_level: 0,
                profile: DeviceProfile::None,
            },
            TierConfig {
                dir: "cold".into(),
                first_level: 2,
                profile: DeviceProfile::Hdd,
            },
        ];
        let env = StorageEnv::new(dir.path(), &tiers, 0.0).unwrap();
        assert_eq!(env.tier_for_level(0), 0);
        assert_eq!(env.tier_for_level(1), 0);
        assert_eq!(env.tier_for_level(5), 1);
        assert!(env.tier_dir(1).ends_with("cold"));
        assert!(env.tier_dir(1).is_dir());
    }
}
