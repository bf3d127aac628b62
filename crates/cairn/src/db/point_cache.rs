//! The get path's use of AC-Key's point cache: a KV hit answers at once; a KP hit reads the
//! one data block it names, after checking that the table is still in the read's version
//! and that the entry found there is the one cached, and falls back to the levels
//! otherwise. A cached answer is thus always the one the levels would give.

use std::sync::atomic::Ordering;

use super::{DbInner, SuperVersion};
use crate::cache::{KpPointer, PointLookup, ReadCache};
use crate::ids::CfId;
use crate::table::ReadTrace;
use crate::types::{lookup_key, ValueKind};
use crate::Result;

pub(crate) enum Cached {
    /// The answer.
    Answer(Option<Vec<u8>>),
    /// Read the levels; `ghost_hit` asks for what is found to go to the KV cache.
    Miss { ghost_hit: bool },
}

impl DbInner {
    /// `fill`: a KP hit may put its block in the block cache and move to the KV cache
    /// ([`ReadOptions::fill_cache`](crate::ReadOptions::fill_cache)). No cached version
    /// older than `floor` (a range deletion covering the key) answers.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn get_cached(
        &self,
        rc: &ReadCache,
        generation: u64,
        sv: &SuperVersion,
        cf: CfId,
        key: &[u8],
        seq: u64,
        floor: u64,
        fill: bool,
    ) -> Result<Cached> {
        match rc.lookup_point_above(cf, key, seq, floor) {
            PointLookup::Value(v) => Ok(Cached::Answer(Some(v))),
            PointLookup::Miss { ghost_hit } => Ok(Cached::Miss { ghost_hit }),
            PointLookup::Pointer(ptr) => {
                match self.follow_pointer(rc, sv, cf, key, seq, ptr, fill)? {
                    Some(v) => {
                        rc.pointer_followed();
                        if let (Some(v), true) = (&v, fill) {
                            rc.promote(generation, cf, key, v, ptr);
                        }
                        Ok(Cached::Answer(v))
                    }
                    None => Ok(Cached::Miss { ghost_hit: false }),
                }
            }
        }
    }

    /// The entry a KP pointer names, if its table is in `sv` and the entry is the cached
    /// version of `key`; `None` sends the read to the levels.
    #[allow(clippy::too_many_arguments)]
    fn follow_pointer(
        &self,
        rc: &ReadCache,
        sv: &SuperVersion,
        cf: CfId,
        key: &[u8],
        seq: u64,
        ptr: KpPointer,
        fill: bool,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let found = sv.version.levels.iter().enumerate().find_map(|(level, l)| {
            l.runs
                .iter()
                .filter_map(|r| r.file_for(key))
                .find(|f| f.file_no() == ptr.file_no)
                .map(|f| (level, f.clone()))
        });
        let Some((level, f)) = found else {
            // Not in this read's version: a flush's table not installed yet, or a compaction
            // input whose entry is being repointed. The levels answer.
            return Ok(None);
        };
        let counters = self.stats.level(level);
        if let Some(vp) = ptr.value {
            // The table is in the read's version, so the value-log files it points into
            // are alive; tables are immutable, so the entry admitted from it is still there.
            counters.gets_served.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(Some(self.vlog.get_decoded(key, &vp)?)));
        }
        let table = self.tables.get(&f, level)?;
        let mut trace = ReadTrace {
            no_fill: !fill,
            ..ReadTrace::default()
        };
        let block = table.read_block_at(ptr.block, &mut trace);
        counters.record(&trace);
        let block = block?;
        let lookup = lookup_key(key, seq);
        let pos = block.seek(&lookup);
        if pos >= block.entry_count() {
            return Ok(None);
        }
        let (ikey, value) = block.entry(pos);
        let kind = ikey.value_kind();
        // A bottommost compaction may have written the cached version at number 0.
        let same_version = ikey.seq() == ptr.seq || ikey.seq() == 0;
        if !ikey.user_key_eq(key)
            || !same_version
            || !matches!(kind, Some(ValueKind::Value | ValueKind::ValuePointer))
        {
            rc.forget_pointer(cf, key, ptr); // cannot happen while the entry is kept in sync
            return Ok(None);
        }
        counters.gets_served.fetch_add(1, Ordering::Relaxed);
        let kind = kind.unwrap_or(ValueKind::Value);
        Ok(Some(self.resolve_entry(key, kind, value.to_vec())?))
    }
}
