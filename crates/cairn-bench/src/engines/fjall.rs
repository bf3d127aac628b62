//! fjall (3.x, pure Rust), the engine a Rust user would embed instead of cairn,
//! configured to the same budget: block cache, memtable, bloom bits per key, compression
//! (LZ4 or none: fjall has no zstd, so a zstd setting runs as LZ4 and the report says so),
//! the leveled tree's L0 trigger, size ratio and table size where the run sets them.
//! One keyspace holds the data; writes reach the OS at once as RocksDB's unsynced WAL
//! does, or are synced with the journal when the run syncs. Counters come from fjall's
//! block metrics (the `metrics` feature: an atomic count per block load).

use super::{BenchConfig, Engine, EngineCounters};
use anyhow::{bail, Context, Result};
use fjall::config::{BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use std::path::Path;
use std::sync::Arc;

/// The version in every report: the one Cargo.lock pins (a test checks).
pub const VERSION: &str = "3.1.13";

pub struct FjallEngine {
    db: Database,
    data: Keyspace,
    sync: bool,
}

/// fjall's codec for the run's compression setting.
pub fn codec(c: cairn::Compression) -> CompressionType {
    match c {
        cairn::Compression::None => CompressionType::None,
        cairn::Compression::Lz4 | cairn::Compression::Zstd { .. } => CompressionType::Lz4,
    }
}

fn keyspace_options(cfg: &BenchConfig) -> KeyspaceCreateOptions {
    let mut leveled = fjall::compaction::Leveled::default();
    if let Some(n) = cfg.l0_trigger {
        leveled = leveled.with_l0_threshold(n.clamp(1, 255) as u8);
    }
    if let Some(b) = cfg.target_file_size {
        leveled = leveled.with_table_target_size(b);
    }
    if let Some(t) = cfg.size_ratio {
        leveled = leveled.with_level_ratio_policy(vec![t as f32]);
    }
    let bloom = if cfg.bloom_bits > 0.0 {
        FilterPolicyEntry::Bloom(BloomConstructionPolicy::BitsPerKey(cfg.bloom_bits as f32))
    } else {
        FilterPolicyEntry::None
    };
    let codec = codec(cfg.compression);
    KeyspaceCreateOptions::default()
        .max_memtable_size(cfg.write_buffer_size as u64)
        .filter_policy(FilterPolicy::all(bloom))
        .data_block_compression_policy(CompressionPolicy::all(codec))
        .index_block_compression_policy(CompressionPolicy::all(codec))
        .compaction_strategy(Arc::new(leveled))
}

impl Engine for FjallEngine {
    fn open(dir: &Path, cfg: &BenchConfig) -> Result<Self> {
        if cfg.direct_io {
            bail!("fjall has no direct I/O: run it without --direct-io");
        }
        let db = Database::builder(dir)
            .cache_size(cfg.cache_bytes as u64)
            .open()
            .with_context(|| format!("opening fjall in {}", dir.display()))?;
        let opts = keyspace_options(cfg);
        let data = db.keyspace("data", move || opts)?;
        Ok(FjallEngine {
            db,
            data,
            sync: cfg.sync,
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.data.insert(key, value)?;
        self.persist()
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.data.get(key)?.map(|v| std::hint::black_box(v.len())))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.data.remove(key)?;
        self.persist()
    }

    /// fjall has no range deletion: the keys in the range are deleted in one batch, as a
    /// fjall user would.
    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut batch = self.db.batch();
        for kv in self.data.range(start..end) {
            batch.remove(&self.data, kv.key()?);
        }
        batch.commit()?;
        self.persist()
    }

    fn scan(&self, start: &[u8], n: usize) -> Result<usize> {
        let mut read = 0;
        for kv in self.data.range(start..).take(n) {
            std::hint::black_box(kv.into_inner()?);
            read += 1;
        }
        Ok(read)
    }

    fn flush(&self) -> Result<()> {
        Ok(self.data.rotate_memtable_and_wait()?)
    }

    fn counters(&self) -> EngineCounters {
        let m = self.data.metrics();
        let misses = m.block_load_io_count() as u64;
        EngineCounters {
            read_ops: misses,
            read_bytes: m.block_io(),
            cache_hits: m.block_load_cached_count() as u64,
            cache_misses: misses,
            data_block_misses: Some(
                (m.data_block_load_count() - m.data_block_load_cached_count()) as u64,
            ),
            ..Default::default()
        }
    }

    /// Tables in all and in level 0 at the end of the run.
    fn extra_stats(&self) -> std::collections::BTreeMap<String, f64> {
        [
            ("tables", self.data.table_count() as f64),
            ("files_L0", self.data.l0_table_count() as f64),
            ("disk_bytes", self.data.disk_space() as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(PersistMode::SyncAll)?;
        drop(self);
        Ok(())
    }
}

impl FjallEngine {
    fn persist(&self) -> Result<()> {
        if self.sync {
            self.db.persist(PersistMode::SyncData)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BenchConfig {
        BenchConfig {
            write_buffer_size: 1 << 20,
            cache_bytes: 1 << 20,
            bloom_bits: 10.0,
            ..Default::default()
        }
    }

    #[test]
    fn reads_back_what_it_wrote_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let e: Box<dyn Engine> = Box::new(FjallEngine::open(dir.path(), &cfg()).unwrap());
        for i in 0..100u32 {
            e.put(format!("k{i:03}").as_bytes(), &[7u8; 10]).unwrap();
        }
        e.delete(b"k005").unwrap();
        e.delete_range(b"k010", b"k020").unwrap();
        e.flush().unwrap();
        assert_eq!(e.get(b"k004").unwrap(), Some(10));
        assert_eq!(e.get(b"k005").unwrap(), None);
        assert_eq!(e.get(b"k015").unwrap(), None);
        assert_eq!(e.scan(b"k008", 5).unwrap(), 5); // k008, k009, k020, k021, k022
        assert_eq!(e.scan(b"k098", 5).unwrap(), 2);
        e.close().unwrap();
        let e = FjallEngine::open(dir.path(), &cfg()).unwrap();
        assert_eq!(e.get(b"k099").unwrap(), Some(10));
        assert_eq!(e.get(b"k012").unwrap(), None);
        assert!(e.counters().cache_hits + e.counters().cache_misses > 0);
    }

    #[test]
    fn the_reported_version_is_the_locked_one() {
        let lock = include_str!("../../../../Cargo.lock");
        let want = format!("name = \"fjall\"\nversion = \"{VERSION}\"");
        assert!(
            lock.contains(&want),
            "Cargo.lock does not pin fjall {VERSION}"
        );
    }

    #[test]
    fn direct_io_is_refused_and_zstd_runs_as_lz4() {
        let dir = tempfile::tempdir().unwrap();
        let c = BenchConfig {
            direct_io: true,
            ..cfg()
        };
        assert!(FjallEngine::open(dir.path(), &c).is_err());
        assert_eq!(
            codec(cairn::Compression::Zstd { level: 3 }),
            CompressionType::Lz4
        );
        assert_eq!(codec(cairn::Compression::None), CompressionType::None);
    }
}
