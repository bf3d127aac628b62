//! The names of the files cairn keeps in a database directory and its tier directories,
//! in one place: each kind's fixed name, or how a number goes into its name and is read
//! back. Numbers are written with at least six digits and read back with any number.

use std::path::{Path, PathBuf};

use crate::ids::CfId;

use crate::ids::FileNo;

/// The lock file held while a database is open.
pub const LOCK: &str = "LOCK";
/// The file naming the current manifest.
pub const CURRENT: &str = "CURRENT";
/// The temporary `CURRENT` is written through.
pub const CURRENT_TMP: &str = "CURRENT.tmp";
/// RusKey's tuner checkpoint.
pub const TUNER: &str = "TUNER";
/// The temporary the tuner checkpoint is written through.
pub const TUNER_TMP: &str = "TUNER.tmp";
/// The statistics of the last session (or the last periodic dump).
pub const STATS: &str = "STATS.json";
/// The temporary the statistics are written through.
pub const STATS_TMP: &str = "STATS.tmp";
/// The event log.
pub const EVENT_LOG: &str = "LOG";
/// The prefix of the event log's rotated copies (`LOG.old.<micros>`).
pub const OLD_EVENT_LOG_PREFIX: &str = "LOG.old.";
/// Repair's folder of unreadable tables.
pub const LOST_DIR: &str = "lost";

/// Manifests: `MANIFEST-<number>`.
pub const MANIFEST_PREFIX: &str = "MANIFEST-";
/// The manifest a new database writes first (`manifest(1)`).
pub const FIRST_MANIFEST: &str = "MANIFEST-000001";
/// Options files: `OPTIONS-<number>`.
pub const OPTIONS_PREFIX: &str = "OPTIONS-";
const QUERY_STORE_PREFIX: &str = "QUERYSTORE-";
/// Write-ahead logs: `<number>.log`.
pub const WAL_SUFFIX: &str = ".log";
/// Tables: `<number>.sst`.
pub const TABLE_SUFFIX: &str = ".sst";
/// A table's saved learned model (Bourbon), beside the table.
pub const MODEL_SUFFIX: &str = ".plr";
/// Value-log files: `<number>.vlog`.
pub const VLOG_SUFFIX: &str = ".vlog";
const QUERY_STORE_SUFFIX: &str = ".rtr";
/// What a file is written as before it is renamed into place.
pub const TMP_SUFFIX: &str = ".tmp";

/// `MANIFEST-000012` for 12.
pub fn manifest(no: FileNo) -> String {
    format!("{MANIFEST_PREFIX}{:06}", no.get())
}

/// What `CURRENT` holds when it names manifest `no`.
pub fn current_contents(no: FileNo) -> String {
    format!("{}\n", manifest(no))
}

/// `OPTIONS-000012` for 12.
pub fn options(no: u64) -> String {
    format!("{OPTIONS_PREFIX}{no:06}")
}

/// `000012.log` for 12: a write-ahead log.
pub fn wal(no: FileNo) -> String {
    format!("{:06}{WAL_SUFFIX}", no.get())
}

/// `000012.sst` for 12: a table.
pub fn table(no: FileNo) -> String {
    format!("{:06}{TABLE_SUFFIX}", no.get())
}

/// `000012.plr` for 12: table 12's learned model.
pub fn model(no: FileNo) -> String {
    format!("{:06}{MODEL_SUFFIX}", no.get())
}

/// `000012.vlog` for 12: a value-log file.
pub fn vlog(no: FileNo) -> String {
    format!("{:06}{VLOG_SUFFIX}", no.get())
}

/// SA-LSM's query store of column family `cf`.
pub fn query_store(cf: CfId) -> String {
    format!("{QUERY_STORE_PREFIX}{}{QUERY_STORE_SUFFIX}", cf.get())
}

/// The number of a name `<prefix><number>`.
fn number_after(name: &str, prefix: &str) -> Option<u64> {
    name.strip_prefix(prefix)?.parse().ok()
}

/// The number of a name `<number><suffix>`.
fn number_before(name: &str, suffix: &str) -> Option<u64> {
    name.strip_suffix(suffix)?.parse().ok()
}

/// The number of a manifest's name.
pub fn manifest_no(name: &str) -> Option<FileNo> {
    number_after(name, MANIFEST_PREFIX).map(FileNo::new)
}

/// The number of an options file's name.
pub fn options_no(name: &str) -> Option<u64> {
    number_after(name, OPTIONS_PREFIX)
}

/// The number of a write-ahead log's name.
pub fn wal_no(name: &str) -> Option<FileNo> {
    number_before(name, WAL_SUFFIX).map(FileNo::new)
}

/// The number of a table's name.
pub fn table_no(name: &str) -> Option<FileNo> {
    number_before(name, TABLE_SUFFIX).map(FileNo::new)
}

/// The number of a learned model's name (its table's).
pub fn model_no(name: &str) -> Option<FileNo> {
    number_before(name, MODEL_SUFFIX).map(FileNo::new)
}

/// The number of a value-log file's name.
pub fn vlog_no(name: &str) -> Option<FileNo> {
    number_before(name, VLOG_SUFFIX).map(FileNo::new)
}

/// Whether `name` is an options file (or its temporary).
pub fn is_options_file(name: &str) -> bool {
    name.strip_prefix(OPTIONS_PREFIX).is_some_and(|n| {
        let n = n.strip_suffix(TMP_SUFFIX).unwrap_or(n);
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Whether `name` is an unfinished save of a learned model.
pub fn is_model_tmp(name: &str) -> bool {
    name.strip_suffix(TMP_SUFFIX)
        .is_some_and(|n| n.ends_with(MODEL_SUFFIX))
}

/// Whether `name` is a query store.
pub fn is_query_store(name: &str) -> bool {
    name.starts_with(QUERY_STORE_PREFIX) && name.ends_with(QUERY_STORE_SUFFIX)
}

/// Whether `name` is a query store's temporary.
pub fn is_query_store_tmp(name: &str) -> bool {
    name.starts_with(QUERY_STORE_PREFIX) && name.ends_with(TMP_SUFFIX)
}

/// Whether `name` is the event log or one of its rotated copies.
pub fn is_event_log(name: &str) -> bool {
    name == EVENT_LOG
        || name
            .strip_prefix(OLD_EVENT_LOG_PREFIX)
            .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

/// Path of the `CURRENT` file.
pub fn current_path(root: &Path) -> PathBuf {
    root.join(CURRENT)
}

/// Path of manifest number `no`.
pub fn manifest_path(root: &Path, no: FileNo) -> PathBuf {
    root.join(manifest(no))
}

/// Path of write-ahead log number `no`.
pub fn wal_path(root: &Path, no: FileNo) -> PathBuf {
    root.join(wal(no))
}

/// Path of value-log file `no` in the database directory.
pub fn vlog_path(root: &Path, no: FileNo) -> PathBuf {
    root.join(vlog(no))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_to_their_numbers() {
        for raw in [0, 1, 12, 999_999, 1_000_000, u64::MAX] {
            assert_eq!(options_no(&options(raw)), Some(raw));
            let no = FileNo::new(raw);
            assert_eq!(manifest_no(&manifest(no)), Some(no));
            assert_eq!(wal_no(&wal(no)), Some(no));
            assert_eq!(table_no(&table(no)), Some(no));
            assert_eq!(model_no(&model(no)), Some(no));
            assert_eq!(vlog_no(&vlog(no)), Some(no));
        }
        assert_eq!(manifest(FileNo::new(12)), "MANIFEST-000012");
        assert_eq!(manifest(FileNo::new(1)), FIRST_MANIFEST);
        assert_eq!(table(FileNo::new(12)), "000012.sst");
        assert_eq!(query_store(CfId::new(3)), "QUERYSTORE-3.rtr");
        assert_eq!(table_no("x.sst"), None);
        assert_eq!(wal_no("000012.sst"), None);
    }

    #[test]
    fn kinds_are_told_apart() {
        assert!(is_options_file("OPTIONS-000012") && is_options_file("OPTIONS-000012.tmp"));
        assert!(!is_options_file("OPTIONS-") && !is_options_file("OPTIONS-x"));
        assert!(is_event_log("LOG") && is_event_log("LOG.old.1795804212000000"));
        assert!(!is_event_log("LOG.old.") && !is_event_log("LOG.old.x") && !is_event_log("a.log"));
        assert!(is_query_store("QUERYSTORE-0.rtr") && is_query_store_tmp("QUERYSTORE-0.tmp"));
        assert!(!is_query_store("QUERYSTORE-0.tmp") && !is_query_store("QUERYSTORE-0.sst"));
        assert_eq!(current_contents(FileNo::new(7)), "MANIFEST-000007\n");
    }
}
