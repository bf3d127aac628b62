//! [`DbStats`] in the Prometheus text exposition format (version 0.0.4), named as the
//! field names them: `cairn_` and the quantity, `_total` for counters, `_bytes` and
//! `_seconds` for units, labels for levels, tiers and percentiles. A service serves the
//! text from its own metrics endpoint, or writes it for node_exporter's textfile
//! collector; `cairn metrics DB` prints it from a database's `STATS.json`.

use std::fmt::Write;

use crate::stats::{DbStats, Latency};

/// Counters only grow (within one session); gauges go up and down.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// Writes one metric family: its HELP and TYPE lines, then one sample per label set.
struct Family<'a> {
    out: &'a mut String,
    /// Labels every sample carries (`db="..."`), with a trailing comma when not empty.
    common: &'a str,
}

impl Family<'_> {
    fn family(&mut self, name: &str, kind: Kind, help: &str, samples: &[(&str, f64)]) {
        let _ = writeln!(self.out, "# HELP cairn_{name} {help}");
        let _ = writeln!(self.out, "# TYPE cairn_{name} {}", kind.name());
        for (labels, v) in samples {
            let all = format!("{}{labels}", self.common);
            let all = all.trim_end_matches(',');
            if all.is_empty() {
                let _ = writeln!(self.out, "cairn_{name} {v}");
            } else {
                let _ = writeln!(self.out, "cairn_{name}{{{all}}} {v}");
            }
        }
    }

    fn one(&mut self, name: &str, kind: Kind, help: &str, v: f64) {
        self.family(name, kind, help, &[("", v)]);
    }
}

/// Escapes a label value (backslash, double quote, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The statistics as Prometheus text; `db`, when given, labels every sample `db="..."`
/// (several databases in one process).
pub fn prometheus_text(s: &DbStats, db: Option<&str>) -> String {
    let mut out = String::new();
    let common = db.map_or(String::new(), |d| format!("db=\"{}\",", escape(d)));
    let mut f = Family {
        out: &mut out,
        common: &common,
    };
    operations(&mut f, s);
    background(&mut f, s);
    caches(&mut f, s);
    levels(&mut f, s);
    learned(&mut f, s);
    out
}

impl DbStats {
    /// These statistics as Prometheus text ([`prometheus_text`]).
    pub fn prometheus_text(&self, db: Option<&str>) -> String {
        prometheus_text(self, db)
    }
}

fn operations(f: &mut Family<'_>, s: &DbStats) {
    use Kind::*;
    f.one("gets_total", Counter, "Point reads.", s.gets as f64);
    f.one(
        "memtable_hits_total",
        Counter,
        "Point reads answered by a memtable.",
        s.memtable_hits as f64,
    );
    f.one(
        "writes_total",
        Counter,
        "Write batches acknowledged.",
        s.writes as f64,
    );
    f.one(
        "entries_written_total",
        Counter,
        "Entries written by batches (puts and deletes).",
        s.entries_written as f64,
    );
    f.one(
        "user_written_bytes_total",
        Counter,
        "Bytes of keys and values written by users.",
        s.user_bytes_written as f64,
    );
    f.one(
        "iterators_total",
        Counter,
        "Iterators created.",
        s.iterators as f64,
    );
    for (name, help, l) in [
        ("get_latency_seconds", "Point read latency.", &s.get_latency),
        ("write_latency_seconds", "Write latency.", &s.write_latency),
        (
            "scan_latency_seconds",
            "Latency of an iterator step.",
            &s.scan_latency,
        ),
    ] {
        latency(f, name, help, l);
    }
}

/// A latency summary: its quantiles (seconds) and sample count.
fn latency(f: &mut Family<'_>, name: &str, help: &str, l: &Latency) {
    let us = 1e-6;
    let _ = writeln!(f.out, "# HELP cairn_{name} {help}");
    let _ = writeln!(f.out, "# TYPE cairn_{name} summary");
    for (q, v) in [
        ("0.5", l.p50),
        ("0.95", l.p95),
        ("0.99", l.p99),
        ("0.999", l.p999),
    ] {
        let labels = format!("{}quantile=\"{q}\"", f.common);
        let _ = writeln!(f.out, "cairn_{name}{{{labels}}} {}", v * us);
    }
    let labels = f.common.trim_end_matches(',');
    let braces = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(f.out, "cairn_{name}_count{braces} {}", l.count);
}

fn background(f: &mut Family<'_>, s: &DbStats) {
    use Kind::*;
    f.one("flushes_total", Counter, "Flushes done.", s.flushes as f64);
    f.one(
        "compactions_total",
        Counter,
        "Compactions done (merges).",
        s.compactions as f64,
    );
    f.one(
        "trivial_moves_total",
        Counter,
        "Files moved down a level without rewriting.",
        s.trivial_moves as f64,
    );
    f.one(
        "memory_releases_total",
        Counter,
        "Times background work handed the allocator's free memory back.",
        s.memory_releases as f64,
    );
    f.one(
        "subcompactions_total",
        Counter,
        "Key ranges of split compactions.",
        s.subcompactions as f64,
    );
    f.one(
        "flush_written_bytes_total",
        Counter,
        "Bytes of tables written by flushes.",
        s.flush_bytes_written as f64,
    );
    f.one(
        "compaction_written_bytes_total",
        Counter,
        "Bytes of tables written by compactions.",
        s.compaction_bytes_written as f64,
    );
    f.one(
        "compaction_read_bytes_total",
        Counter,
        "Bytes read by compactions.",
        s.compaction_bytes_read as f64,
    );
    f.one(
        "flushes_running",
        Gauge,
        "Flushes running now.",
        s.flushes_running as f64,
    );
    f.one(
        "compactions_running",
        Gauge,
        "Compactions running now.",
        s.compactions_running as f64,
    );
    f.one(
        "stall_seconds_total",
        Counter,
        "Time writers spent stopped for flushes or compactions.",
        s.stall_micros as f64 * 1e-6,
    );
    f.one(
        "slowdowns_total",
        Counter,
        "Writes delayed by the level-0 slowdown.",
        s.slowdowns as f64,
    );
    f.one(
        "member_inserts_total",
        Counter,
        "Commit-group batches their own writers inserted into the memtable.",
        s.member_inserts as f64,
    );
    f.one(
        "background_errors_total",
        Counter,
        "Flush or compaction failures.",
        s.background_errors as f64,
    );
    let tiers = s.io.by_kind_tier.iter().map(Vec::len).max().unwrap_or(0);
    let io: Vec<_> = (0..tiers).map(|t| (t, s.io.tier(t))).collect();
    let by_tier = |g: fn(&crate::storage::IoCounts) -> u64| -> Vec<(String, f64)> {
        io.iter()
            .map(|(t, c)| (format!("tier=\"{t}\""), g(c) as f64))
            .collect()
    };
    for (name, help, g) in [
        (
            "io_read_ops_total",
            "Storage reads, by tier.",
            (|c: &crate::storage::IoCounts| c.read_ops) as fn(&_) -> u64,
        ),
        (
            "io_read_bytes_total",
            "Bytes read from storage, by tier.",
            |c| c.read_bytes,
        ),
        ("io_write_ops_total", "Storage writes, by tier.", |c| {
            c.write_ops
        }),
        (
            "io_write_bytes_total",
            "Bytes written to storage, by tier.",
            |c| c.write_bytes,
        ),
        ("io_sync_ops_total", "fsyncs, by tier.", |c| c.sync_ops),
    ] {
        let samples = by_tier(g);
        let refs: Vec<(&str, f64)> = samples.iter().map(|(l, v)| (l.as_str(), *v)).collect();
        f.family(name, Counter, help, &refs);
    }
}

fn caches(f: &mut Family<'_>, s: &DbStats) {
    use Kind::*;
    f.one(
        "block_cache_hits_total",
        Counter,
        "Data block cache hits.",
        s.block_cache_hits as f64,
    );
    f.one(
        "block_cache_misses_total",
        Counter,
        "Data block cache misses.",
        s.block_cache_misses as f64,
    );
    f.one(
        "block_cache_usage_bytes",
        Gauge,
        "Bytes held by the block cache.",
        s.block_cache_usage as f64,
    );
    f.one(
        "open_files",
        Gauge,
        "Table and value-log files open.",
        s.open_files as f64,
    );
    let rc = &s.read_cache;
    f.one(
        "read_cache_capacity_bytes",
        Gauge,
        "The read cache's budget.",
        rc.capacity as f64,
    );
    f.family(
        "read_cache_bytes",
        Gauge,
        "Bytes of each read cache component (AC-Key: kv, kp, block).",
        &[
            ("component=\"kv\"", rc.kv_bytes as f64),
            ("component=\"kp\"", rc.kp_bytes as f64),
            ("component=\"block\"", rc.block_bytes as f64),
            ("component=\"ghost\"", rc.ghost_bytes as f64),
        ],
    );
    f.family(
        "read_cache_hits_total",
        Counter,
        "Hits of each read cache component.",
        &[
            ("component=\"kv\"", rc.kv_hits as f64),
            ("component=\"kp\"", rc.kp_hits as f64),
            ("component=\"block\"", rc.block_hits as f64),
            ("component=\"ghost\"", rc.ghost_hits as f64),
        ],
    );
    f.one(
        "read_cache_point_target_bytes",
        Gauge,
        "AC-Key's target for the KV and KP caches together.",
        rc.point_target_bytes as f64,
    );
    f.one(
        "read_cache_kv_target_bytes",
        Gauge,
        "AC-Key's target for the KV cache.",
        rc.kv_target_bytes as f64,
    );
}

fn levels(f: &mut Family<'_>, s: &DbStats) {
    use Kind::*;
    let label: Vec<String> = (0..s.levels.len())
        .map(|l| format!("level=\"{l}\""))
        .collect();
    let per = |g: &dyn Fn(&crate::stats::LevelStats) -> f64| -> Vec<(&str, f64)> {
        s.levels
            .iter()
            .zip(&label)
            .map(|(l, lab)| (lab.as_str(), g(l)))
            .collect()
    };
    f.family(
        "level_bytes",
        Gauge,
        "Bytes of tables per level.",
        &per(&|l| l.bytes as f64),
    );
    f.family(
        "level_files",
        Gauge,
        "Tables per level.",
        &per(&|l| l.files as f64),
    );
    f.family(
        "level_runs",
        Gauge,
        "Sorted runs per level.",
        &per(&|l| l.runs as f64),
    );
    f.family(
        "level_run_limit",
        Gauge,
        "The run limit K of each level (RusKey tunes it).",
        &per(&|l| f64::from(l.k)),
    );
    f.family(
        "level_gets_served_total",
        Counter,
        "Point reads answered at each level.",
        &per(&|l| l.gets_served as f64),
    );
    f.family(
        "level_data_block_misses_total",
        Counter,
        "Data blocks read from storage per level.",
        &per(&|l| l.data_block_misses as f64),
    );
}

fn learned(f: &mut Family<'_>, s: &DbStats) {
    use Kind::*;
    f.one(
        "learned_tables_total",
        Counter,
        "Tables Bourbon's learner learned.",
        s.learned_tables as f64,
    );
    f.one(
        "learned_lookups_total",
        Counter,
        "Table lookups answered by a learned index.",
        s.learned_lookups as f64,
    );
    f.one(
        "learned_fallbacks_total",
        Counter,
        "Table lookups a learned index handed to the fence pointers.",
        s.learned_fallbacks as f64,
    );
    let p = &s.prefetch;
    f.one(
        "prefetch_warmed_blocks_total",
        Counter,
        "Blocks warmed around flushes and compactions (Leaper).",
        p.warmed_blocks as f64,
    );
    f.one(
        "prefetch_warmed_hits_total",
        Counter,
        "Warmed blocks a read found.",
        p.warmed_hits as f64,
    );
    f.one(
        "prefetch_invalidation_misses_total",
        Counter,
        "Block misses caused by flushes and compactions.",
        p.invalidation_misses as f64,
    );
    let t = &s.tuner;
    f.one(
        "tuner_missions_total",
        Counter,
        "Missions the compaction tuner observed (RusKey).",
        t.missions as f64,
    );
    f.one(
        "tuner_changes_total",
        Counter,
        "Run limit changes the tuner made.",
        t.changes as f64,
    );
    f.one(
        "proactive_compactions_total",
        Counter,
        "Proactive compactions (SA-LSM).",
        s.proactive_compactions as f64,
    );
    f.one(
        "proactive_cold_records_total",
        Counter,
        "Records proactive compactions moved to the cold tier.",
        s.proactive_cold_records as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_well_formed() {
        let mut s = DbStats {
            gets: 7,
            block_cache_hits: 3,
            stall_micros: 1_500_000,
            ..Default::default()
        };
        s.levels = vec![Default::default(); 3];
        s.levels[1].bytes = 4096;
        let text = prometheus_text(&s, Some("main \"db\""));
        assert!(
            text.contains("cairn_gets_total{db=\"main \\\"db\\\"\"} 7\n"),
            "{text}"
        );
        assert!(text.contains("cairn_block_cache_hits_total{db=\"main \\\"db\\\"\"} 3\n"));
        assert!(text.contains("cairn_stall_seconds_total{db=\"main \\\"db\\\"\"} 1.5\n"));
        assert!(text.contains("cairn_level_bytes{db=\"main \\\"db\\\"\",level=\"1\"} 4096\n"));
        let plain = prometheus_text(&s, None);
        assert!(plain.contains("\ncairn_gets_total 7\n"), "{plain}");
        assert!(plain.contains("cairn_get_latency_seconds{quantile=\"0.99\"} 0\n"));
        // Every sample line belongs to the family declared above it.
        let mut family = String::new();
        for line in plain.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                family = rest.split(' ').next().unwrap().to_string();
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                assert!(name.starts_with(&family), "{line} outside {family}");
                let v = line.rsplit(' ').next().unwrap();
                assert!(v.parse::<f64>().is_ok(), "{line}");
            }
        }
    }
}
