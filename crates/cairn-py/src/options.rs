//! Engine options from Python: a preset by name, then a dict of option names to values.
//! Only plain values are reachable this way (sizes, counts, flags, enums by name); the
//! learned parts are chosen with presets, which set their many parameters consistently.

use cairn::{BloomAllocation, CfOptions, Compression, Options, WalRecovery};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::InvalidArgument;

/// Every option a dict may set, with what it holds (the docstring of `option_names`).
pub const OPTION_NAMES: &[(&str, &str)] = &[
    (
        "create_if_missing",
        "bool: create the database if the directory holds none",
    ),
    ("error_if_exists", "bool: fail if a database already exists"),
    (
        "write_buffer_size",
        "int: bytes a memtable takes before it is flushed",
    ),
    (
        "max_write_buffers",
        "int: memtables (active + immutable) before writes wait",
    ),
    ("block_size", "int: target size of a data block"),
    (
        "compression",
        "str: block compression of levels compression_per_level does not name: 'none', 'lz4', 'zstd' or 'zstd:LEVEL'",
    ),
    (
        "compression_per_level",
        "list[str]: compression of levels 0, 1, ... (default ['none', 'none'])",
    ),
    (
        "bottommost_compression",
        "str | None: compression of the deepest level holding data (None: as its level)",
    ),
    ("block_cache_bytes", "int: byte budget of the read cache"),
    (
        "block_cache_shards",
        "int: shards of the block cache (0: one per 512 KiB, up to 64)",
    ),
    (
        "block_cache_hot_share",
        "float: share of the block cache for blocks read again (0: plain LRU)",
    ),
    (
        "bloom_bits_per_key",
        "float: average bloom-filter bits per key (0 disables)",
    ),
    ("bloom_allocation", "str: 'uniform' or 'monkey'"),
    ("size_ratio", "int: size ratio T between levels"),
    ("level1_bytes", "int: capacity of level 1"),
    ("num_levels", "int: levels, level 0 included"),
    (
        "l0_compaction_trigger",
        "int: level-0 runs that trigger a compaction",
    ),
    (
        "l0_slowdown_trigger",
        "int: level-0 runs at which writes slow down",
    ),
    ("l0_stop_trigger", "int: level-0 runs at which writes stop"),
    (
        "level_runs",
        "list[int]: initial run limit K_i of levels 1.. (1 = leveling, T = tiering)",
    ),
    ("target_file_size", "int: target size of table files"),
    (
        "read_triggered_compaction",
        "bool: seeks that merge level 0 with other runs ask for its compaction",
    ),
    (
        "max_subcompactions",
        "int: threads one level-0 compaction may use (1..=64)",
    ),
    (
        "max_background_compactions",
        "int: compaction jobs on disjoint levels that may run at once (1..=64)",
    ),
    ("use_direct_reads", "bool: read tables with O_DIRECT"),
    (
        "max_open_files",
        "int | None: most table and value-log files kept open (None or -1: unbounded; else >= 20)",
    ),
    (
        "cache_index_and_filter_blocks",
        "bool: keep index and filter blocks in the block cache, charged to its budget",
    ),
    (
        "mmap_reads",
        "bool: read tables and value logs through memory maps",
    ),
    (
        "fixed_width_entries",
        "bool: write fixed-width data blocks (Bourbon's key + pointer entries)",
    ),
    (
        "cache_local_filter",
        "bool: write bloom filters with each key's bits in one cache line (default true)",
    ),
    (
        "latency_scale",
        "float: multiplier of the storage tiers' simulated latencies",
    ),
    ("wal_recovery", "str: 'strict' or 'skip-corrupt'"),
    (
        "background_work",
        "bool: run flushes and compactions in background threads",
    ),
    (
        "value_threshold",
        "int | None: values this large go to a value log (None: none)",
    ),
    (
        "vlog_gc_space_amp",
        "float | None: value-log space amplification that triggers GC",
    ),
    (
        "invalidation_window_ms",
        "int: window of the prefetcher's invalidation-miss metric",
    ),
    (
        "invalidation_metric",
        "bool: count invalidation misses (Leaper's metric; on in its presets)",
    ),
];

/// The options of a preset (`None`: cairn's defaults), with `overrides` applied.
pub fn build(preset: Option<&str>, overrides: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut o = match preset {
        None => Options::default(),
        Some(name) => cairn::presets::by_name(name).ok_or_else(|| {
            InvalidArgument::new_err(format!(
                "unknown preset {name:?} (cairn.presets() lists them)"
            ))
        })?,
    };
    if let Some(d) = overrides {
        // A copy: extracting a value may run user code that changes the dict.
        for item in d.items().iter() {
            let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
            let name: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("option names must be str"))?;
            set(&mut o, &name, &v).map_err(|e| {
                if e.is_instance_of::<InvalidArgument>(d.py()) {
                    e
                } else {
                    InvalidArgument::new_err(format!("option {name:?}: {e}"))
                }
            })?;
        }
    }
    Ok(o)
}

fn set(o: &mut Options, name: &str, v: &Bound<'_, PyAny>) -> PyResult<()> {
    match name {
        "create_if_missing" => o.create_if_missing = v.extract()?,
        "error_if_exists" => o.error_if_exists = v.extract()?,
        "write_buffer_size" => o.write_buffer_size = v.extract()?,
        "max_write_buffers" => o.max_write_buffers = v.extract()?,
        "block_size" => o.block_size = v.extract()?,
        "compression" => o.compression = compression(name, &v.extract::<String>()?)?,
        "compression_per_level" => {
            o.compression_per_level = v
                .extract::<Vec<String>>()?
                .iter()
                .map(|s| compression(name, s))
                .collect::<PyResult<_>>()?
        }
        "bottommost_compression" => {
            o.bottommost_compression = match v.extract::<Option<String>>()? {
                None => None,
                Some(s) => Some(compression(name, &s)?),
            }
        }
        "block_cache_bytes" => o.block_cache_bytes = v.extract()?,
        "block_cache_shards" => o.block_cache_shards = v.extract()?,
        "bloom_bits_per_key" => o.bloom_bits_per_key = v.extract()?,
        "bloom_allocation" => {
            o.bloom_allocation = match v.extract::<String>()?.as_str() {
                "uniform" => BloomAllocation::Uniform,
                "monkey" => BloomAllocation::Monkey,
                s => return Err(bad_choice("bloom_allocation", s, "'uniform' or 'monkey'")),
            }
        }
        "size_ratio" => o.size_ratio = v.extract()?,
        "level1_bytes" => o.level1_bytes = v.extract()?,
        "num_levels" => o.num_levels = v.extract()?,
        "l0_compaction_trigger" => o.l0_compaction_trigger = v.extract()?,
        "l0_slowdown_trigger" => o.l0_slowdown_trigger = v.extract()?,
        "l0_stop_trigger" => o.l0_stop_trigger = v.extract()?,
        "level_runs" => o.level_runs = v.extract()?,
        "target_file_size" => o.target_file_size = v.extract()?,
        "block_cache_hot_share" => o.block_cache_hot_share = v.extract()?,
        "read_triggered_compaction" => o.read_triggered_compaction = v.extract()?,
        "max_subcompactions" => o.max_subcompactions = v.extract()?,
        "max_background_compactions" => o.max_background_compactions = v.extract()?,
        "use_direct_reads" => o.use_direct_reads = v.extract()?,
        "max_open_files" => {
            // RocksDB's -1 means unbounded too; a bound below 20 is refused at open.
            o.max_open_files = match v.extract::<Option<i64>>()? {
                None | Some(-1) => None,
                Some(n) => Some(usize::try_from(n).map_err(|_| {
                    InvalidArgument::new_err(format!(
                        "option \"max_open_files\" is {n}, expected None, -1 or a count >= 20"
                    ))
                })?),
            }
        }
        "cache_index_and_filter_blocks" => o.cache_index_and_filter_blocks = v.extract()?,
        "mmap_reads" => o.mmap_reads = v.extract()?,
        "fixed_width_entries" => o.fixed_width_entries = v.extract()?,
        "cache_local_filter" => o.cache_local_filter = v.extract()?,
        "latency_scale" => o.latency_scale = v.extract()?,
        "wal_recovery" => {
            o.wal_recovery = match v.extract::<String>()?.as_str() {
                "strict" => WalRecovery::Strict,
                "skip-corrupt" => WalRecovery::SkipCorrupt,
                s => return Err(bad_choice("wal_recovery", s, "'strict' or 'skip-corrupt'")),
            }
        }
        "background_work" => o.background_work = v.extract()?,
        "value_threshold" => o.value_threshold = v.extract()?,
        "vlog_gc_space_amp" => o.vlog_gc_space_amp = v.extract()?,
        "invalidation_window_ms" => o.invalidation_window_ms = v.extract()?,
        "invalidation_metric" => o.invalidation_metric = v.extract()?,
        _ => {
            return Err(InvalidArgument::new_err(format!(
                "unknown option {name:?} (cairn.option_names() lists them)"
            )))
        }
    }
    Ok(())
}

/// The options a column family may set for itself (besides `point_cache`).
const FAMILY_OPTIONS: &[&str] = &[
    "write_buffer_size",
    "target_file_size",
    "block_size",
    "bloom_bits_per_key",
    "compression",
    "compression_per_level",
    "bottommost_compression",
    "fixed_width_entries",
    "value_threshold",
];

/// A family's own options: the database's `base`, the per-family parts of `preset` (its
/// index, value separation and fixed-width layout), then `overrides` (option names, and
/// `point_cache`); any other key is refused.
pub fn family(
    base: &Options,
    preset: Option<&str>,
    overrides: Option<&Bound<'_, PyDict>>,
) -> PyResult<CfOptions> {
    let mut o = base.clone();
    if let Some(name) = preset {
        // What a preset sets per family: the index (Bourbon), value separation and the
        // block layout that goes with them.
        let p = build(Some(name), None)?;
        o.index = p.index;
        o.value_threshold = p.value_threshold;
        o.fixed_width_entries = p.fixed_width_entries;
    }
    let mut point_cache = true;
    if let Some(d) = overrides {
        for item in d.items().iter() {
            let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
            let name: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("option names must be str"))?;
            if name == "point_cache" {
                point_cache = v.extract()?;
                continue;
            }
            if !FAMILY_OPTIONS.contains(&name.as_str()) {
                return Err(InvalidArgument::new_err(format!(
                    "{name:?} is not a per-family option (those are {FAMILY_OPTIONS:?} and \
                     \"point_cache\")"
                )));
            }
            set(&mut o, &name, &v).map_err(|e| {
                if e.is_instance_of::<InvalidArgument>(d.py()) {
                    e
                } else {
                    InvalidArgument::new_err(format!("option {name:?}: {e}"))
                }
            })?;
        }
    }
    Ok(CfOptions {
        point_cache,
        ..CfOptions::from(&o)
    })
}

fn compression(name: &str, s: &str) -> PyResult<Compression> {
    Compression::parse(s)
        .ok_or_else(|| bad_choice(name, s, "'none', 'lz4', 'zstd' or 'zstd:LEVEL'"))
}

fn bad_choice(name: &str, got: &str, want: &str) -> PyErr {
    InvalidArgument::new_err(format!("option {name:?} is {got:?}, expected {want}"))
}

/// The values of every settable option in `o`, as a dict.
pub fn to_dict<'py>(py: Python<'py>, o: &Options) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("create_if_missing", o.create_if_missing)?;
    d.set_item("error_if_exists", o.error_if_exists)?;
    d.set_item("write_buffer_size", o.write_buffer_size)?;
    d.set_item("max_write_buffers", o.max_write_buffers)?;
    d.set_item("block_size", o.block_size)?;
    d.set_item("compression", o.compression.name())?;
    let per_level: Vec<String> = o.compression_per_level.iter().map(|c| c.name()).collect();
    d.set_item("compression_per_level", PyList::new(py, per_level)?)?;
    d.set_item(
        "bottommost_compression",
        o.bottommost_compression.map(|c| c.name()),
    )?;
    d.set_item("block_cache_bytes", o.block_cache_bytes)?;
    d.set_item("block_cache_shards", o.block_cache_shards)?;
    d.set_item("bloom_bits_per_key", o.bloom_bits_per_key)?;
    d.set_item(
        "bloom_allocation",
        match o.bloom_allocation {
            BloomAllocation::Uniform => "uniform",
            BloomAllocation::Monkey => "monkey",
        },
    )?;
    d.set_item("size_ratio", o.size_ratio)?;
    d.set_item("level1_bytes", o.level1_bytes)?;
    d.set_item("num_levels", o.num_levels)?;
    d.set_item("l0_compaction_trigger", o.l0_compaction_trigger)?;
    d.set_item("l0_slowdown_trigger", o.l0_slowdown_trigger)?;
    d.set_item("l0_stop_trigger", o.l0_stop_trigger)?;
    d.set_item("level_runs", PyList::new(py, &o.level_runs)?)?;
    d.set_item("target_file_size", o.target_file_size)?;
    d.set_item("block_cache_hot_share", o.block_cache_hot_share)?;
    d.set_item("read_triggered_compaction", o.read_triggered_compaction)?;
    d.set_item("max_subcompactions", o.max_subcompactions)?;
    d.set_item("max_background_compactions", o.max_background_compactions)?;
    d.set_item("use_direct_reads", o.use_direct_reads)?;
    d.set_item("max_open_files", o.max_open_files)?;
    d.set_item(
        "cache_index_and_filter_blocks",
        o.cache_index_and_filter_blocks,
    )?;
    d.set_item("mmap_reads", o.mmap_reads)?;
    d.set_item("fixed_width_entries", o.fixed_width_entries)?;
    d.set_item("cache_local_filter", o.cache_local_filter)?;
    d.set_item("latency_scale", o.latency_scale)?;
    d.set_item(
        "wal_recovery",
        match o.wal_recovery {
            WalRecovery::Strict => "strict",
            WalRecovery::SkipCorrupt => "skip-corrupt",
        },
    )?;
    d.set_item("background_work", o.background_work)?;
    d.set_item("value_threshold", o.value_threshold)?;
    d.set_item("vlog_gc_space_amp", o.vlog_gc_space_amp)?;
    d.set_item("invalidation_window_ms", o.invalidation_window_ms)?;
    d.set_item("invalidation_metric", o.invalidation_metric)?;
    Ok(d)
}
