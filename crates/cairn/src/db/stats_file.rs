//! `STATS.json`: the statistics of the last session, written when the database closes so
//! that tools (`cairn info`) can show them after the process is gone. Advisory: nothing
//! reads it back into the engine, and a failure to write it only logs a warning.

use std::path::Path;

use crate::stats::DbStats;
use crate::storage::{FileKind, StorageEnv};
use crate::{Error, Result};

/// The file's name in the database directory.
pub(crate) const STATS_FILE: &str = "STATS.json";
/// The temporary name it is written under before the rename (`write_atomic`'s choice).
pub(crate) const STATS_TMP: &str = "STATS.tmp";

/// Writes `stats` as JSON: temporary file, fsync, rename, fsync of the directory.
pub(crate) fn save(env: &StorageEnv, root: &Path, stats: &DbStats) -> Result<()> {
    let json = serde_json::to_vec_pretty(stats)
        .map_err(|e| Error::InvalidArgument(format!("statistics do not serialize: {e}")))?;
    env.write_atomic(&root.join(STATS_FILE), FileKind::Other, &json)
}
