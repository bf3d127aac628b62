//! RocksDB (Debian's librocksdb 7.8 through the `rocksdb` 0.20 crate, or with cfg
//! `rocksdb_latest` a current one: peers/rocksdb-latest), configured to the same budget as
//! cairn. Timed runs keep no statistics (`BenchConfig::rocksdb_statistics` off): the gauges
//! and the stall time then come from DB properties, and `compare` takes the I/O and cache
//! counters from a separate untimed pass that keeps statistics (parsed from the ticker
//! dump, because 0.20 exposes no per-ticker getter).

use super::{BenchConfig, Engine, EngineCounters};
use anyhow::{Context, Result};
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, Options, ReadOptions, WriteOptions, DB,
};
use std::collections::HashMap;
use std::path::Path;

pub struct RocksEngine {
    db: DB,
    opts: Options,
    write_opts: WriteOptions,
    /// One ReadOptions for every read, as an application that cares would keep.
    read_opts: ReadOptions,
    statistics: bool,
    // Keeps the shared block cache alive as long as the DB.
    _cache: Cache,
}

impl Engine for RocksEngine {
    fn open(dir: &Path, cfg: &BenchConfig) -> Result<Self> {
        let cache = lru_cache(cfg.cache_bytes)?;
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_bloom_filter(cfg.bloom_bits, false);
        table.set_cache_index_and_filter_blocks(cfg.cache_index_and_filter_blocks);
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_write_buffer_size(cfg.write_buffer_size);
        opts.set_max_write_buffer_number(cfg.memtables.max(2) as i32);
        opts.set_max_subcompactions(cfg.subcompactions.max(1) as u32);
        if cfg.compaction_jobs > 1 {
            // RocksDB gives a quarter of max_background_jobs (at least one) to flushes and
            // the rest to compactions: N + 1 jobs are one flush and N compactions up to
            // N = 6, and the open grows the thread pools to them. (It runs more than one
            // compaction only while compaction falls behind: level 0 near its slowdown
            // trigger or pending bytes past the soft limit.)
            opts.set_max_background_jobs(cfg.compaction_jobs as i32 + 1);
        }
        if let Some(b) = cfg.level1_bytes {
            opts.set_max_bytes_for_level_base(b);
        }
        if let Some(b) = cfg.target_file_size {
            opts.set_target_file_size_base(b);
        }
        if let Some(t) = cfg.size_ratio {
            opts.set_max_bytes_for_level_multiplier(t as f64);
        }
        if let Some(n) = cfg.l0_trigger {
            opts.set_level_zero_file_num_compaction_trigger(n as i32);
        }
        if let Some(n) = cfg.num_levels {
            opts.set_num_levels(n as i32);
        }
        let (codec, level) = match cfg.compression {
            cairn::Compression::None => (DBCompressionType::None, None),
            cairn::Compression::Lz4 => (DBCompressionType::Lz4, None),
            cairn::Compression::Zstd { level } => (DBCompressionType::Zstd, Some(level)),
        };
        opts.set_compression_type(codec);
        opts.set_bottommost_compression_type(codec);
        if let Some(level) = level {
            // RocksDB's defaults for the window and strategy; no dictionary.
            opts.set_compression_options(-14, level, 0, 0);
            opts.set_bottommost_compression_options(-14, level, 0, 0, true);
        }
        opts.set_use_direct_reads(cfg.direct_io);
        opts.set_allow_mmap_reads(cfg.mmap_reads == Some(true) && !cfg.direct_io);
        opts.set_use_direct_io_for_flush_and_compaction(cfg.direct_io);
        opts.set_block_based_table_factory(&table);
        // The table option lives in the default family's options, loaded from the file.
        let mut families = None;
        if cfg.rocksdb_prepopulate {
            let (o, f) =
                with_table_option(dir, &opts, &cache, "prepopulate_block_cache", "kFlushOnly")?;
            (opts, families) = (o, Some(f));
        }
        if cfg.rocksdb_statistics {
            opts.enable_statistics();
        }
        let db = match families {
            Some(f) => DB::open_cf_descriptors(&opts, dir, f),
            None => DB::open(&opts, dir),
        }
        .with_context(|| format!("opening rocksdb in {}", dir.display()))?;
        let mut write_opts = WriteOptions::default();
        write_opts.set_sync(cfg.sync);
        Ok(RocksEngine {
            db,
            opts,
            write_opts,
            read_opts: ReadOptions::default(),
            statistics: cfg.rocksdb_statistics,
            _cache: cache,
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_opt(key, value, &self.write_opts)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self
            .db
            .get_pinned_opt(key, &self.read_opts)?
            .map(|v| std::hint::black_box(v.len())))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        Ok(self.db.delete_opt(key, &self.write_opts)?)
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut b = rocksdb::WriteBatch::default();
        b.delete_range(start, end);
        Ok(self.db.write_opt(b, &self.write_opts)?)
    }

    fn scan(&self, start: &[u8], n: usize) -> Result<usize> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        let mut read = 0;
        while read < n && it.valid() {
            std::hint::black_box((it.key(), it.value()));
            read += 1;
            if read < n {
                it.next(); // as cairn's scan: never past the last entry asked for
            }
        }
        it.status()?;
        Ok(read)
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn counters(&self) -> EngineCounters {
        let prop = |name: &str| self.db.property_int_value(name).ok().flatten().unwrap_or(0);
        let stall_micros = self
            .db
            .property_value("rocksdb.dbstats")
            .ok()
            .flatten()
            .and_then(|s| cumulative_stall_micros(&s))
            .unwrap_or(0);
        if !self.statistics {
            return EngineCounters {
                flushes_running: prop("rocksdb.num-running-flushes"),
                compactions_running: prop("rocksdb.num-running-compactions"),
                stall_micros,
                ..Default::default()
            };
        }
        let stats = parse_statistics(&self.opts.get_statistics().unwrap_or_default());
        let c = |name: &str| stats.get(name).copied().unwrap_or(0);
        let (flush_w, compact_w, wal_w) = (
            c("rocksdb.flush.write.bytes"),
            c("rocksdb.compact.write.bytes"),
            c("rocksdb.wal.bytes"),
        );
        EngineCounters {
            // File-level reads (gets, iterators and compaction) as counted by the SST reader.
            read_ops: c("rocksdb.sst.read.micros.count"),
            read_bytes: c("rocksdb.last.level.read.bytes") + c("rocksdb.non.last.level.read.bytes"),
            // WAL writes are counted per write batch; SST writes have no op ticker, so
            // this undercounts ops for flush/compaction (bytes are exact).
            write_ops: c("rocksdb.write.wal") + c("rocksdb.wal.synced"),
            write_bytes: wal_w + flush_w + compact_w,
            cache_hits: c("rocksdb.block.cache.hit"),
            cache_misses: c("rocksdb.block.cache.miss"),
            user_bytes_written: c("rocksdb.bytes.written"),
            flush_bytes_written: flush_w,
            compaction_bytes_written: compact_w,
            flushes_running: prop("rocksdb.num-running-flushes"),
            compactions_running: prop("rocksdb.num-running-compactions"),
            // Leaper's metric is cairn's own count; RocksDB has none.
            invalidation_misses: 0,
            compaction_bytes_read: c("rocksdb.compact.read.bytes"),
            stall_micros,
            data_block_misses: Some(c("rocksdb.block.cache.data.miss")),
            ..Default::default()
        }
    }

    /// Files per level at the end of the run (`files_L0`, ...; levels holding files), the
    /// same shape figures cairn reports.
    fn extra_stats(&self) -> std::collections::BTreeMap<String, f64> {
        (0..7)
            .filter_map(|l| {
                let n = self
                    .db
                    .property_int_value(format!("rocksdb.num-files-at-level{l}").as_str())
                    .ok()
                    .flatten()?;
                (n > 0).then(|| (format!("files_L{l}"), n as f64))
            })
            .collect()
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.flush_wal(true)?;
        drop(self);
        Ok(())
    }
}

/// An LRU block cache of `bytes` (the 0.20 crate's constructor can fail, later ones not).
fn lru_cache(bytes: usize) -> Result<Cache> {
    #[cfg(not(rocksdb_latest))]
    let cache = Cache::new_lru_cache(bytes).context("creating block cache")?;
    #[cfg(rocksdb_latest)]
    let cache = Cache::new_lru_cache(bytes);
    Ok(cache)
}

/// `opts` with one block-based table option set that the C API cannot set: a first open
/// writes the options file, the option goes into its table section, and the file is
/// loaded back (with the same block cache): the database's options and the families'
/// (which hold the table options).
fn with_table_option(
    dir: &Path,
    opts: &Options,
    cache: &Cache,
    key: &str,
    value: &str,
) -> Result<(Options, Vec<rocksdb::ColumnFamilyDescriptor>)> {
    drop(DB::open(opts, dir).with_context(|| format!("opening rocksdb in {}", dir.display()))?);
    let number = |p: &Path| -> Option<u64> {
        p.file_name()?
            .to_str()?
            .strip_prefix("OPTIONS-")?
            .parse()
            .ok()
    };
    let newest = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| number(&p).map(|n| (n, p)))
        .max()
        .map(|(_, p)| p)
        .context("rocksdb wrote no options file")?;
    let text = std::fs::read_to_string(&newest)?;
    std::fs::write(&newest, set_table_option(&text, key, value)?)?;
    let env = rocksdb::Env::new().context("rocksdb env")?;
    Options::load_latest(dir, env, false, cache.clone())
        .with_context(|| format!("loading {}", newest.display()))
}

/// An options file's text with `key=value` in the default family's block-based table
/// section (replaced if present).
fn set_table_option(text: &str, key: &str, value: &str) -> Result<String> {
    const SECTION: &str = "[TableOptions/BlockBasedTable \"default\"]";
    let entry = format!("  {key}={value}");
    let mut out = Vec::new();
    let (mut inside, mut found, mut set) = (false, false, false);
    for line in text.lines() {
        if line.trim_start().starts_with('[') {
            if inside && !set {
                out.push(entry.clone());
                set = true;
            }
            inside = line.trim() == SECTION;
            found |= inside;
        }
        if inside && line.trim_start().starts_with(&format!("{key}=")) {
            out.push(entry.clone());
            set = true;
            continue;
        }
        out.push(line.to_string());
    }
    if inside && !set {
        out.push(entry);
    }
    anyhow::ensure!(found, "the options file has no {SECTION} section");
    Ok(out.join("\n") + "\n")
}

/// The `Cumulative stall: HH:MM:SS.mmm H:M:S` line of RocksDB's DB stats, in microseconds
/// (kept without statistics: it is the write controller's own tally).
pub fn cumulative_stall_micros(dbstats: &str) -> Option<u64> {
    let line = dbstats
        .lines()
        .find(|l| l.trim_start().starts_with("Cumulative stall:"))?;
    let hms = line.split(':').skip(1).collect::<Vec<_>>();
    // "Cumulative stall" ":" "00" ":" "00" ":" "0.123 H" ...
    let h: f64 = hms.first()?.trim().parse().ok()?;
    let m: f64 = hms.get(1)?.trim().parse().ok()?;
    let s: f64 = hms.get(2)?.split_whitespace().next()?.parse().ok()?;
    Some(((h * 3600.0 + m * 60.0 + s) * 1e6).round() as u64)
}

/// Parses RocksDB's statistics dump: `name COUNT : n` tickers become `name`, and
/// histograms `name P50 : .. COUNT : n SUM : s` become `name.count` / `name.sum`.
pub fn parse_statistics(dump: &str) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for line in dump.lines() {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(name) = toks.first() else { continue };
        let field = |label: &str| {
            toks.windows(3)
                .find(|w| w[0] == label && w[1] == ":")
                .and_then(|w| w[2].parse::<f64>().ok())
        };
        let is_hist = toks.contains(&"P50");
        if let Some(count) = field("COUNT") {
            if is_hist {
                out.insert(format!("{name}.count"), count as u64);
                if let Some(sum) = field("SUM") {
                    out.insert(format!("{name}.sum"), sum as u64);
                }
            } else {
                out.insert(name.to_string(), count as u64);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_option_goes_into_the_default_familys_table_section() {
        let file = "[CFOptions \"default\"]\n  num_levels=7\n\n\
                    [TableOptions/BlockBasedTable \"default\"]\n  block_size=4096\n\
                    \n[CFOptions \"other\"]\n  num_levels=7\n";
        let got = set_table_option(file, "prepopulate_block_cache", "kFlushOnly").unwrap();
        let section: Vec<&str> = got
            .split("[TableOptions/BlockBasedTable \"default\"]")
            .nth(1)
            .unwrap()
            .split("[CFOptions")
            .next()
            .unwrap()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(
            section,
            ["block_size=4096", "prepopulate_block_cache=kFlushOnly"]
        );
        // Replaced, not repeated; and a file without the section is refused.
        let again = set_table_option(&got, "prepopulate_block_cache", "kDisable").unwrap();
        assert_eq!(again.matches("prepopulate_block_cache").count(), 1);
        assert!(again.contains("prepopulate_block_cache=kDisable"));
        assert!(set_table_option("[Version]\n", "x", "y").is_err());
    }

    #[test]
    fn prepopulate_reaches_the_options_rocksdb_runs_with() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BenchConfig {
            rocksdb_prepopulate: true,
            ..BenchConfig::default()
        };
        let e = RocksEngine::open(dir.path(), &cfg).unwrap();
        e.put(b"k", b"v").unwrap();
        Box::new(e).close().unwrap();
        let newest = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.file_name().into_string().unwrap()))
            .filter(|n| n.starts_with("OPTIONS-"))
            .max_by_key(|n| n["OPTIONS-".len()..].parse::<u64>().unwrap_or(0))
            .unwrap();
        let text = std::fs::read_to_string(dir.path().join(newest)).unwrap();
        assert!(
            text.contains("prepopulate_block_cache=kFlushOnly"),
            "{text}"
        );
    }

    #[test]
    fn parses_the_cumulative_stall() {
        let dbstats = "** DB Stats **\nUptime(secs): 1.0 total, 1.0 interval\n\
                       Cumulative writes: 10 writes, 10 keys\n\
                       Cumulative stall: 00:01:2.500 H:M:S, 3.1 percent\n\
                       Interval stall: 00:00:0.000 H:M:S, 0.0 percent\n";
        assert_eq!(cumulative_stall_micros(dbstats), Some(62_500_000));
        assert_eq!(cumulative_stall_micros("nothing"), None);
    }

    #[test]
    fn parses_tickers_and_histograms() {
        let dump = "rocksdb.block.cache.miss COUNT : 12\n\
                    rocksdb.sst.read.micros P50 : 1.5 P95 : 3.0 P99 : 4.0 P100 : 9.0 COUNT : 77 SUM : 130\n";
        let m = parse_statistics(dump);
        assert_eq!(m["rocksdb.block.cache.miss"], 12);
        assert_eq!(m["rocksdb.sst.read.micros.count"], 77);
        assert_eq!(m["rocksdb.sst.read.micros.sum"], 130);
    }

    /// Guards the ticker names against the linked librocksdb: if one is renamed, its
    /// counter silently reads 0, so check each moves when it should.
    #[test]
    fn counters_move_with_io() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BenchConfig {
            write_buffer_size: 256 << 10,
            cache_bytes: 64 << 10,
            rocksdb_statistics: true,
            ..Default::default()
        };
        let e = RocksEngine::open(dir.path(), &cfg).unwrap();
        let v = vec![7u8; 100];
        // Three overlapping flushed files, so compact_range must merge (not just move) them.
        for _ in 0..3 {
            for i in 0..20_000u64 {
                e.put(&i.to_be_bytes(), &v).unwrap();
            }
            e.flush().unwrap();
        }
        e.db.compact_range::<&[u8], &[u8]>(None, None);
        for i in (0..20_000u64).step_by(7) {
            assert!(e.get(&i.to_be_bytes()).unwrap().is_some());
        }
        assert_eq!(e.scan(&0u64.to_be_bytes(), 50).unwrap(), 50);
        let c = e.counters();
        if std::env::var_os("CAIRN_BENCH_DUMP_STATS").is_some() {
            eprintln!("{}", e.opts.get_statistics().unwrap_or_default());
        }
        assert!(c.user_bytes_written >= 20_000 * 108, "{c:?}");
        assert!(c.write_bytes > c.user_bytes_written, "{c:?}");
        assert!(
            c.flush_bytes_written > 0 && c.compaction_bytes_written > 0,
            "{c:?}"
        );
        assert!(c.read_ops > 0 && c.read_bytes > 0, "{c:?}");
        assert!(c.cache_hits > 0 && c.cache_misses > 0, "{c:?}");
        // Data-block misses (Leaper's metric) are a part of all misses.
        assert!(
            c.data_block_misses
                .is_some_and(|m| m > 0 && m <= c.cache_misses),
            "{c:?}"
        );
        assert!(c.write_ops > 0, "{c:?}");
        assert!(c.compaction_bytes_read > 0, "{c:?}");
        Box::new(e).close().unwrap();
        // Without statistics the gauges and the stall tally still come from properties.
        let dir = tempfile::tempdir().unwrap();
        let e = RocksEngine::open(dir.path(), &BenchConfig::default()).unwrap();
        e.put(b"k", b"v").unwrap();
        assert_eq!(e.get(b"k").unwrap(), Some(1));
        assert!(e.opts.get_statistics().is_none());
        let c = e.counters();
        assert_eq!((c.read_bytes, c.cache_hits), (0, 0), "{c:?}");
        assert!(e
            .db
            .property_value("rocksdb.dbstats")
            .unwrap()
            .is_some_and(|s| s.contains("Cumulative stall")));
        Box::new(e).close().unwrap();
    }
}
