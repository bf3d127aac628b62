use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What a file holds; I/O is counted separately for each kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// Write-ahead log.
    Wal,
    /// Manifest (version edits) and CURRENT.
    Manifest,
    /// SSTable.
    Table,
    /// Value log (key-value separation).
    ValueLog,
    /// Anything else (LOCK, options, temporary files).
    Other,
    /// A learned model saved beside its table (Bourbon).
    Model,
}

impl FileKind {
    /// All kinds, in index order.
    pub const ALL: [FileKind; 6] = [
        FileKind::Wal,
        FileKind::Manifest,
        FileKind::Table,
        FileKind::ValueLog,
        FileKind::Other,
        FileKind::Model,
    ];
    /// Dense index.
    pub fn index(self) -> usize {
        self as usize
    }
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Wal => "wal",
            FileKind::Manifest => "manifest",
            FileKind::Table => "table",
            FileKind::ValueLog => "vlog",
            FileKind::Other => "other",
            FileKind::Model => "model",
        }
    }
}

/// Counts of one slice of I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct IoCounts {
    /// Read operations.
    pub read_ops: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Write operations (each write call that reached the OS).
    pub write_ops: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// fsync / fdatasync calls.
    pub sync_ops: u64,
}

impl IoCounts {
    /// Sum of two counts.
    pub fn add(&self, o: &IoCounts) -> IoCounts {
        IoCounts {
            read_ops: self.read_ops + o.read_ops,
            read_bytes: self.read_bytes + o.read_bytes,
            write_ops: self.write_ops + o.write_ops,
            write_bytes: self.write_bytes + o.write_bytes,
            sync_ops: self.sync_ops + o.sync_ops,
        }
    }
    /// Difference `self - earlier`, saturating.
    pub fn since(&self, earlier: &IoCounts) -> IoCounts {
        IoCounts {
            read_ops: self.read_ops.saturating_sub(earlier.read_ops),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_ops: self.write_ops.saturating_sub(earlier.write_ops),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            sync_ops: self.sync_ops.saturating_sub(earlier.sync_ops),
        }
    }
}

#[derive(Default)]
pub(crate) struct AtomicCounts {
    read_ops: AtomicU64,
    read_bytes: AtomicU64,
    write_ops: AtomicU64,
    write_bytes: AtomicU64,
    sync_ops: AtomicU64,
}

impl AtomicCounts {
    fn load(&self) -> IoCounts {
        IoCounts {
            read_ops: self.read_ops.load(Relaxed),
            read_bytes: self.read_bytes.load(Relaxed),
            write_ops: self.write_ops.load(Relaxed),
            write_bytes: self.write_bytes.load(Relaxed),
            sync_ops: self.sync_ops.load(Relaxed),
        }
    }
}

/// Number of levels tracked per level (deeper levels are counted in the last slot).
pub const MAX_TRACKED_LEVELS: usize = 16;
/// Number of tiers tracked.
pub const MAX_TRACKED_TIERS: usize = 8;

/// I/O counters of one storage environment: by file kind and tier, and by level for
/// table and value-log I/O whose level is known.
pub struct IoStats {
    by_kind_tier: Vec<AtomicCounts>,
    by_level: Vec<AtomicCounts>,
    direct_io_fallbacks: AtomicU64,
    direct_reads: AtomicU64,
}

impl Default for IoStats {
    fn default() -> Self {
        IoStats {
            by_kind_tier: (0..FileKind::ALL.len() * MAX_TRACKED_TIERS)
                .map(|_| AtomicCounts::default())
                .collect(),
            by_level: (0..MAX_TRACKED_LEVELS)
                .map(|_| AtomicCounts::default())
                .collect(),
            direct_io_fallbacks: AtomicU64::new(0),
            direct_reads: AtomicU64::new(0),
        }
    }
}

impl IoStats {
    fn slot(&self, kind: FileKind, tier: usize) -> &AtomicCounts {
        &self.by_kind_tier[kind.index() * MAX_TRACKED_TIERS + tier.min(MAX_TRACKED_TIERS - 1)]
    }
    fn level_slot(&self, level: usize) -> &AtomicCounts {
        &self.by_level[level.min(MAX_TRACKED_LEVELS - 1)]
    }

    pub(crate) fn record_read(&self, kind: FileKind, tier: usize, level: Option<usize>, n: u64) {
        let s = self.slot(kind, tier);
        s.read_ops.fetch_add(1, Relaxed);
        s.read_bytes.fetch_add(n, Relaxed);
        if let Some(l) = level {
            let s = self.level_slot(l);
            s.read_ops.fetch_add(1, Relaxed);
            s.read_bytes.fetch_add(n, Relaxed);
        }
    }

    pub(crate) fn record_write(&self, kind: FileKind, tier: usize, level: Option<usize>, n: u64) {
        let s = self.slot(kind, tier);
        s.write_ops.fetch_add(1, Relaxed);
        s.write_bytes.fetch_add(n, Relaxed);
        if let Some(l) = level {
            let s = self.level_slot(l);
            s.write_ops.fetch_add(1, Relaxed);
            s.write_bytes.fetch_add(n, Relaxed);
        }
    }

    pub(crate) fn record_sync(&self, kind: FileKind, tier: usize) {
        self.slot(kind, tier).sync_ops.fetch_add(1, Relaxed);
    }

    pub(crate) fn record_direct_fallback(&self) {
        self.direct_io_fallbacks.fetch_add(1, Relaxed);
    }

    pub(crate) fn record_direct_read(&self) {
        self.direct_reads.fetch_add(1, Relaxed);
    }

    /// A consistent-enough copy of every counter.
    pub fn snapshot(&self) -> IoStatsSnapshot {
        IoStatsSnapshot {
            by_kind_tier: FileKind::ALL
                .iter()
                .map(|&k| {
                    (0..MAX_TRACKED_TIERS)
                        .map(|t| self.slot(k, t).load())
                        .collect()
                })
                .collect(),
            by_level: self.by_level.iter().map(|c| c.load()).collect(),
            direct_io_fallbacks: self.direct_io_fallbacks.load(Relaxed),
            direct_reads: self.direct_reads.load(Relaxed),
        }
    }
}

/// A copy of [`IoStats`].
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct IoStatsSnapshot {
    /// `[kind index][tier]`.
    pub by_kind_tier: Vec<Vec<IoCounts>>,
    /// `[level]` for table and value-log I/O (the last slot also holds deeper levels).
    pub by_level: Vec<IoCounts>,
    /// Files that were asked for `O_DIRECT` but opened buffered because the filesystem
    /// refused it.
    pub direct_io_fallbacks: u64,
    /// Reads done with `O_DIRECT`.
    pub direct_reads: u64,
}

impl IoStatsSnapshot {
    /// Totals of one file kind over all tiers.
    pub fn kind(&self, kind: FileKind) -> IoCounts {
        self.by_kind_tier
            .get(kind.index())
            .map(|v| v.iter().fold(IoCounts::default(), |a, c| a.add(c)))
            .unwrap_or_default()
    }
    /// Totals of one tier over all kinds.
    pub fn tier(&self, tier: usize) -> IoCounts {
        self.by_kind_tier
            .iter()
            .filter_map(|v| v.get(tier))
            .fold(IoCounts::default(), |a, c| a.add(c))
    }
    /// Totals of everything.
    pub fn total(&self) -> IoCounts {
        self.by_kind_tier
            .iter()
            .flatten()
            .fold(IoCounts::default(), |a, c| a.add(c))
    }
}
