//! Options of one column family (RocksDB's `ColumnFamilyOptions`): how its tables are
//! built, when its memtable is full, whether its values are separated, which index its
//! tables use (Bourbon's or fence pointers) and whether its point reads use the point
//! cache (AC-Key's KV and KP caches). So one family can run Bourbon and another AC-Key in
//! one database.
//!
//! A family runs with the database's [`Options`] and its own `CfOptions` laid over them
//! ([`Options::for_family`]). Named families take theirs from
//! [`Options::column_families`]; [`Db::create_cf_with`](crate::Db::create_cf_with) adds one
//! there. The options file keeps them, and an open that does not name a family takes its
//! options from the file, so a family keeps its settings across sessions.

use serde::{Deserialize, Serialize};

use crate::compression::Compression;
use crate::options::{IndexPolicy, Options};

/// What one column family may set for itself. Start from the database's
/// ([`CfOptions::from`]) and change what differs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CfOptions {
    /// Memtable size at which it is switched and flushed. The families share one WAL,
    /// and a switch switches every family's memtable (RocksDB switches only the full
    /// one), so the smallest buffer among families being written sets the pace.
    pub write_buffer_size: usize,
    /// Size at which compaction outputs are cut.
    pub target_file_size: u64,
    /// Target size of a data block.
    pub block_size: usize,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits_per_key: f64,
    /// Block compression below the levels `compression_per_level` names.
    pub compression: Compression,
    /// Block compression of the first levels.
    pub compression_per_level: Vec<Compression>,
    /// Block compression of the deepest level holding data (`None`: as `compression`).
    pub bottommost_compression: Option<Compression>,
    /// Fixed-width data blocks (Bourbon's layout for a learned lookup's chunk reads).
    pub fixed_width_entries: bool,
    /// The index of the family's tables: fence pointers, or a learned index (Bourbon).
    /// One learner serves every family, so learned families (and the database's own
    /// learned policy) must agree on its parameters.
    pub index: IndexPolicy,
    /// Values this long or longer go to the value log (WiscKey); `None`: none do.
    pub value_threshold: Option<usize>,
    /// Whether point reads use the point cache (the KV and KP caches of
    /// [`Options::read_cache`]); off, the family's reads go to the levels and only its
    /// blocks are cached.
    pub point_cache: bool,
}

impl From<&Options> for CfOptions {
    fn from(o: &Options) -> Self {
        CfOptions {
            write_buffer_size: o.write_buffer_size,
            target_file_size: o.target_file_size,
            block_size: o.block_size,
            bloom_bits_per_key: o.bloom_bits_per_key,
            compression: o.compression,
            compression_per_level: o.compression_per_level.clone(),
            bottommost_compression: o.bottommost_compression,
            fixed_width_entries: o.fixed_width_entries,
            index: o.index,
            value_threshold: o.value_threshold,
            point_cache: true,
        }
    }
}

impl Default for CfOptions {
    fn default() -> Self {
        CfOptions::from(&Options::default())
    }
}

impl Options {
    /// The options family `name` runs with: these, with `column_families[name]` laid over
    /// them (the database's own for a family not named there). The result names no
    /// family.
    pub fn for_family(&self, name: &str) -> Options {
        let mut o = self.clone();
        o.column_families.clear();
        if let Some(c) = self.column_families.get(name) {
            o.write_buffer_size = c.write_buffer_size;
            o.target_file_size = c.target_file_size;
            o.block_size = c.block_size;
            o.bloom_bits_per_key = c.bloom_bits_per_key;
            o.compression = c.compression;
            o.compression_per_level = c.compression_per_level.clone();
            o.bottommost_compression = c.bottommost_compression;
            o.fixed_width_entries = c.fixed_width_entries;
            o.index = c.index;
            o.value_threshold = c.value_threshold;
        }
        o
    }

    /// Whether family `name`'s point reads use the point cache.
    pub fn family_point_cache(&self, name: &str) -> bool {
        self.column_families.get(name).is_none_or(|c| c.point_cache)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_runs_with_its_own_options_over_the_databases() {
        let mut db = Options {
            block_size: 8192,
            ..Options::default()
        };
        let learned = CfOptions {
            index: IndexPolicy::BOURBON,
            compression: Compression::None,
            point_cache: false,
            ..CfOptions::from(&db)
        };
        db.column_families.insert("models".into(), learned);
        let m = db.for_family("models");
        assert_eq!(m.index, IndexPolicy::BOURBON);
        assert_eq!(m.compression, Compression::None);
        assert_eq!(m.block_size, 8192, "taken from the database");
        assert!(m.column_families.is_empty());
        assert!(!db.family_point_cache("models"));
        let other = db.for_family("logs");
        assert_eq!(other.index, IndexPolicy::Fence);
        assert!(db.family_point_cache("logs"));
    }
}
