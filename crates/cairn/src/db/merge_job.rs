//! The steps every merge job shares, whether the picker chose it (`background.rs`) or
//! SA-LSM's placement asked for it (`placement.rs`): the prefetch policy's view of the
//! job, the sinks its table writers feed (AC-Key's block replacer, Leaper's warmer), the
//! merge of sorted runs into tables of one level, and the install of the outputs in one
//! version edit.

use std::sync::Arc;

use super::background::JobGuard;
use super::iter::RunIterator;
use super::table_cache::table_path;
use super::{CfState, DbInner};
use crate::cache::BlockReplacer;
use crate::compaction::merge::{merge, MergeOutput, MergeParams, ValueRewriter};
use crate::events::OutputFile;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::iter::InternalIterator;
use crate::policy::prefetch::Warmer;
use crate::range_del::RangeDels;
use crate::table::BlockSink;
use crate::types::SeqNo;
use crate::version::{AddedFile, DeletedFile};
use crate::version::{FileMeta, VersionEdit};
use crate::Result;

/// Where a merge's table writers offer the blocks they write.
#[derive(Default)]
pub(super) struct BlockSinks {
    /// AC-Key: new blocks that replace the inputs' cached ones.
    pub(super) replacer: Option<Arc<BlockReplacer>>,
    /// Leaper: new blocks of the ranges it predicts hot, to warm.
    pub(super) warmer: Option<Arc<Warmer>>,
}

impl BlockSinks {
    fn any(&self) -> bool {
        self.replacer.is_some() || self.warmer.is_some()
    }

    /// The sink of output table `file_no`.
    fn sink(&self, file_no: FileNo) -> BlockSink {
        let r = self.replacer.clone();
        let w = self.warmer.clone();
        Box::new(move |h, first, last, contents| {
            if let Some(r) = &r {
                r.offer(file_no, h, first, last, contents);
            }
            if let Some(w) = &w {
                w.offer(file_no, h, first, last, contents);
            }
        })
    }
}

/// A merge into new tables of one level of one column family.
pub(super) struct MergeInto<'a> {
    pub(super) db: &'a DbInner,
    pub(super) cf: &'a CfState,
    pub(super) level: usize,
    /// The deepest level holding data, for the tables' format (bottom compression).
    pub(super) deepest: usize,
    pub(super) snapshots: &'a [SeqNo],
    /// Nothing below the output holds its keys: tombstones may go.
    pub(super) bottommost: bool,
    pub(super) range_dels: Option<&'a RangeDels>,
    /// Every range deletion of the version the merge reads (see
    /// `MergeParams::version_dels`).
    pub(super) version_dels: Option<&'a RangeDels>,
    /// See `MergeParams::renumbered_max`.
    pub(super) renumbered_max: SeqNo,
    pub(super) sinks: &'a BlockSinks,
    /// Checked between entries: true ends the merge with an error.
    pub(super) stop: &'a (dyn Fn() -> bool + Sync),
}

impl MergeInto<'_> {
    fn tier(&self) -> usize {
        self.db.env.tier_for_level(self.level)
    }

    /// Whether the merge may write its old values at sequence number 0 (see
    /// `MergeParams::zero_seqs`): not into level 0, and not where placement's age rule reads
    /// the numbers back to date the keys (RocksDB keeps them for its time-aware tiering
    /// too).
    ///
    /// Nor with several column families: they share the log, and recovery replays a log's
    /// operations of a family already flushed too, so an older range deletion could come
    /// back above a value written at 0 (with one family, every operation replayed is newer
    /// than every table's).
    ///
    /// Parallel jobs and subcompactions may renumber: a job's `bottommost` is decided on
    /// the version loaded under the claims, and only a job holding the output level could
    /// put older data below it.
    fn zero_seqs(&self) -> bool {
        self.level > 0 && self.db.placement.seq_times.is_none() && self.db.cfs.read().len() == 1
    }

    /// An input run read a file at a time (`Options::max_open_files`).
    pub(super) fn run_input(
        &self,
        level: usize,
        files: Vec<Arc<FileMeta>>,
    ) -> Box<dyn InternalIterator> {
        let db = self.db;
        Box::new(RunIterator::compaction_input(
            files,
            level,
            db.tables.clone(),
            db.stats.clone(),
            db.prefetch.clone(),
        ))
    }

    /// Merges `it`'s entries, those in `bounds` (`[lo, hi)`, None unbounded), into new
    /// tables; on error the tables it wrote are gone.
    pub(super) fn merge(
        &self,
        it: &mut dyn InternalIterator,
        bounds: (Option<&[u8]>, Option<&[u8]>),
        values: Option<&mut dyn ValueRewriter>,
    ) -> Result<Vec<MergeOutput>> {
        let (db, cf, tier) = (self.db, self.cf, self.tier());
        // Shortens the rewriter's lifetime to this call's.
        let values = values.map(|v| v as &mut dyn ValueRewriter);
        let mut new_file = || {
            let no = db.versions.lock().new_file_no();
            (no, table_path(&db.env, tier, no))
        };
        let sink = |file_no: FileNo| self.sinks.sink(file_no);
        let mut params = MergeParams {
            env: &db.env,
            tier,
            level: self.level,
            column_family: (cf.id, &cf.name),
            build: cf.opts.table_build_options(self.level, self.deepest),
            target_file_size: cf.opts.target_file_size,
            snapshots: self.snapshots,
            bottommost: self.bottommost,
            zero_seqs: self.zero_seqs(),
            version_dels: self.version_dels,
            renumbered_max: self.renumbered_max,
            new_file: &mut new_file,
            should_stop: self.stop,
            block_sink: self
                .sinks
                .any()
                .then_some(&sink as &dyn Fn(FileNo) -> BlockSink),
            values,
            range_dels: self.range_dels,
            bounds,
        };
        merge(it, &mut params).map(|(outputs, _)| outputs)
    }

    /// Removes tables this merge wrote, when the job they belong to failed after it.
    pub(super) fn remove(&self, outputs: &[MergeOutput]) {
        for o in outputs {
            let _ = self
                .db
                .env
                .remove(&table_path(&self.db.env, self.tier(), o.desc.file_no));
        }
    }
}

/// The largest `max_seq` of the tables among `files` that hold entries written at 0 (see
/// `MergeParams::renumbered_max`).
pub(super) fn renumbered_max<'f>(files: impl Iterator<Item = &'f Arc<FileMeta>>) -> SeqNo {
    files
        .filter(|f| f.desc.min_seq == 0)
        .map(|f| f.desc.max_seq)
        .max()
        .unwrap_or(0)
}

/// Deletes `files` of `level` of family `cf` in `edit`.
pub(super) fn delete_inputs(
    edit: &mut VersionEdit,
    cf: CfId,
    level: usize,
    files: &[Arc<FileMeta>],
) {
    for f in files {
        edit.deleted.push(DeletedFile {
            cf,
            level: level as u32,
            file_no: f.file_no(),
        });
    }
}

/// The file numbers of a job's inputs.
pub(super) fn file_nos<'a>(files: impl IntoIterator<Item = &'a Arc<FileMeta>>) -> Vec<FileNo> {
    files.into_iter().map(|f| f.file_no()).collect()
}

impl DbInner {
    /// Tells the prefetch policy that a merge of `inputs` (file numbers and sizes) over
    /// the user keys `range` begins; the guard tells it the end, however the job ends.
    pub(super) fn begin_merge_job<'a>(
        &'a self,
        cf: CfId,
        inputs: impl IntoIterator<Item = &'a Arc<FileMeta>>,
        range: (&[u8], &[u8]),
    ) -> JobGuard<'a> {
        let inputs: Vec<(FileNo, u64)> = inputs
            .into_iter()
            .map(|f| (f.file_no(), f.size()))
            .collect();
        JobGuard(
            &self.prefetch,
            Some(self.prefetch.compaction_begin(cf, &inputs, range)),
        )
    }

    /// Adds `outputs` to `edit` as tables of `level` in sorted run `run`, and their
    /// descriptions to `files`; returns their bytes.
    pub(super) fn add_outputs(
        &self,
        edit: &mut VersionEdit,
        cf: CfId,
        (level, run): (usize, u64),
        outputs: Vec<MergeOutput>,
        files: &mut Vec<OutputFile>,
    ) -> u64 {
        let mut bytes = 0;
        for o in outputs {
            bytes += o.desc.size;
            files.push(self.output_file(&o.desc, level, o.summary.blocks));
            edit.added.push(AddedFile {
                cf,
                level: level as u32,
                run,
                file: o.desc,
            });
        }
        bytes
    }

    /// Installs a merge's edit. The prefetch policy learns the outputs before (their
    /// first reads come right after the install) and swaps its warmed blocks in after;
    /// AC-Key's read cache repoints its key-pointer entries from the inputs (`gone`) to
    /// the outputs.
    ///
    /// On failure the outputs stay, as for any merge: a failed manifest write may still
    /// have put the edit on disk, and recovery would then look for them. If it did not,
    /// the next open removes them as orphans.
    pub(super) fn install_merge(
        &self,
        cf: &CfState,
        edit: VersionEdit,
        job: &JobGuard<'_>,
        gone: &[FileNo],
        files: &[OutputFile],
    ) -> Result<()> {
        if let Some(j) = &job.1 {
            let outputs: Vec<FileNo> = files.iter().map(|f| f.file_no).collect();
            self.prefetch.compaction_outputs(j, &outputs);
        }
        self.install_edit(cf, edit)?;
        if let Some(j) = &job.1 {
            self.prefetch.compaction_installed(j);
        }
        if let Some(rc) = &self.read_cache {
            rc.on_compaction(cf.id, gone, files);
        }
        Ok(())
    }
}
