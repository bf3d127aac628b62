//! The merge that flushes and compactions share: read entries in internal order, keep the
//! newest version of each key in every snapshot stripe, drop tombstones where nothing older
//! can be below, and write tables cut at the target size (never splitting one user key's
//! versions across two files, which the picker's key-range units rely on).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::iter::InternalIterator;
use crate::storage::{FileKind, StorageEnv};
use crate::table::{BlockSink, TableBuildOptions, TableBuilder, TableSummary};
use crate::types::{make_internal_key, parse_internal_key, SeqNo, ValueKind};
use crate::version::FileDesc;
use crate::vlog::ValuePointer;
use crate::{Error, Result};

/// Where and how to write the output.
pub struct MergeParams<'a> {
    /// Storage.
    pub env: &'a StorageEnv,
    /// Tier of the output level.
    pub tier: usize,
    /// Output level (for I/O accounting).
    pub level: usize,
    /// Column family (id, name), recorded in each output's properties.
    pub column_family: (u32, &'a str),
    /// Table format options.
    pub build: TableBuildOptions,
    /// Cut output files at this size.
    pub target_file_size: u64,
    /// Live snapshots, ascending.
    pub snapshots: &'a [SeqNo],
    /// Nothing older than the output can hold these keys: tombstones may be dropped.
    pub bottommost: bool,
    /// Allocates a file number and its path.
    pub new_file: &'a mut dyn FnMut() -> (u64, PathBuf),
    /// Checked between entries; a stop request ends the merge with an error.
    pub should_stop: &'a dyn Fn() -> bool,
    /// Gives each output table (by file number) a sink for its data blocks (AC-Key hands
    /// new blocks to the cache this way).
    pub block_sink: Option<&'a dyn Fn(u64) -> BlockSink>,
    /// Rewrites values of kept entries (key-value separation and value-log GC); `None`
    /// keeps every value as it is.
    pub values: Option<&'a mut dyn ValueRewriter>,
}

/// Rewrites the value of an entry the merge keeps.
pub trait ValueRewriter {
    /// A value-log pointer to store instead of `(kind, value)` of `user_key` (the entry
    /// becomes a `ValuePointer`), or `None` to keep the entry as it is.
    fn rewrite(
        &mut self,
        user_key: &[u8],
        kind: ValueKind,
        value: &[u8],
    ) -> Result<Option<Vec<u8>>>;
}

/// One table written by a merge.
pub struct MergeOutput {
    /// Its durable description.
    pub desc: FileDesc,
    /// What the builder reported (block ranges for events).
    pub summary: TableSummary,
}

/// Counts of what a merge did.
#[derive(Default, Debug, Clone, Copy)]
pub struct MergeCounts {
    /// Entries read.
    pub entries_in: u64,
    /// Entries written.
    pub entries_out: u64,
    /// Bytes read from inputs (keys + values).
    pub bytes_in: u64,
}

struct Open {
    builder: TableBuilder,
    /// Bytes of value-log records referenced, per value-log file.
    vlog_refs: BTreeMap<u64, u64>,
    file_no: u64,
    path: PathBuf,
}

/// Runs the merge; on error, removes any file it created.
pub fn merge(
    input: &mut dyn InternalIterator,
    p: &mut MergeParams<'_>,
) -> Result<(Vec<MergeOutput>, MergeCounts)> {
    let mut created: Vec<PathBuf> = Vec::new();
    let r = merge_inner(input, p, &mut created);
    if r.is_err() {
        for path in &created {
            let _ = p.env.remove(path);
        }
    }
    r
}

fn merge_inner(
    input: &mut dyn InternalIterator,
    p: &mut MergeParams<'_>,
    created: &mut Vec<PathBuf>,
) -> Result<(Vec<MergeOutput>, MergeCounts)> {
    let mut outputs = Vec::new();
    let mut counts = MergeCounts::default();
    let mut open: Option<Open> = None;
    let mut cur_key: Vec<u8> = Vec::new();
    let mut have_key = false;
    let mut last_stripe: Option<usize> = None;
    let mut last_written_user: Vec<u8> = Vec::new();
    input.seek_to_first();
    while input.valid() {
        if (p.should_stop)() {
            return Err(Error::Closed("shutting down".into()));
        }
        let ikey = input.key();
        let parsed = parse_internal_key(ikey)
            .filter(|k| k.value_kind().is_some())
            .ok_or_else(|| Error::corruption("compaction input", "malformed internal key"))?;
        counts.entries_in += 1;
        counts.bytes_in += (ikey.len() + input.value().len()) as u64;
        if !have_key || parsed.user_key != cur_key.as_slice() {
            cur_key.clear();
            cur_key.extend_from_slice(parsed.user_key);
            have_key = true;
            last_stripe = None;
        }
        let stripe = p.snapshots.partition_point(|&s| s < parsed.seq);
        let drop = if last_stripe == Some(stripe) {
            true // shadowed by a newer version visible to the same snapshots
        } else {
            last_stripe = Some(stripe);
            parsed.kind == ValueKind::Deletion as u8 && p.bottommost && stripe == 0
        };
        if !drop {
            let cut = open.as_ref().is_some_and(|o| {
                o.builder.estimated_size() >= p.target_file_size
                    && last_written_user.as_slice() != parsed.user_key
            });
            if cut {
                let o = open.take().expect("checked");
                outputs.push(finish(o, p.tier)?);
            }
            if open.is_none() {
                let (file_no, path) = (p.new_file)();
                created.push(path.clone());
                let f = p
                    .env
                    .create(&path, FileKind::Table, p.tier, Some(p.level))?;
                let mut builder = TableBuilder::new(f, p.build);
                builder.set_column_family(p.column_family.0, p.column_family.1);
                if let Some(make) = p.block_sink {
                    builder.set_block_sink(make(file_no));
                }
                open = Some(Open {
                    builder,
                    vlog_refs: BTreeMap::new(),
                    file_no,
                    path,
                });
            }
            let o = open.as_mut().expect("opened above");
            let kind = parsed.value_kind().expect("checked above");
            let value = input.value();
            let new_pointer = match p.values.as_mut() {
                Some(v) => v.rewrite(parsed.user_key, kind, value)?,
                None => None,
            };
            let pointer = match &new_pointer {
                Some(ptr) => {
                    let k = make_internal_key(parsed.user_key, parsed.seq, ValueKind::ValuePointer);
                    o.builder.add(&k, ptr)?;
                    Some(ptr.as_slice())
                }
                None => {
                    o.builder.add(ikey, value)?;
                    (kind == ValueKind::ValuePointer).then_some(value)
                }
            };
            if let Some(ptr) = pointer {
                let ptr = ValuePointer::decode(ptr)?;
                *o.vlog_refs.entry(ptr.file_no).or_default() += ptr.len as u64;
            }
            counts.entries_out += 1;
            last_written_user.clear();
            last_written_user.extend_from_slice(parsed.user_key);
        }
        input.next();
    }
    input.status()?;
    if let Some(o) = open.take() {
        outputs.push(finish(o, p.tier)?);
    }
    Ok((outputs, counts))
}

fn finish(o: Open, tier: usize) -> Result<MergeOutput> {
    let _ = &o.path;
    let vlog_refs = o.vlog_refs.into_iter().collect();
    let summary = o.builder.finish()?;
    Ok(MergeOutput {
        desc: FileDesc {
            file_no: o.file_no,
            tier: tier as u32,
            size: summary.file_size,
            smallest: summary.smallest.clone(),
            largest: summary.largest.clone(),
            num_entries: summary.num_entries,
            min_seq: summary.min_seq,
            max_seq: summary.max_seq,
            vlog_refs,
        },
        summary,
    })
}
