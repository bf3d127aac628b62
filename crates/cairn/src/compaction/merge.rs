//! The merge that flushes and compactions share: read entries in internal order, keep the
//! newest version of each key in every snapshot stripe, drop tombstones where nothing older
//! can be below, and write tables cut at the target size (never splitting one user key's
//! versions across two files, which the picker's key-range units rely on). Into the last
//! level, values every snapshot sees are written at sequence number 0 where nothing reads
//! their numbers back (`MergeParams::zero_seqs`).
//!
//! Range deletions of the inputs drop the entries they cover where no snapshot lies
//! between the two, and go to the outputs cut at the files' boundaries: a file keeps the
//! pieces from its first key up to the next file's first key (the first and last files
//! reach the merge's bounds), so the outputs together delete what the inputs did.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::ids::CfId;
use crate::ids::FileNo;
use crate::iter::InternalIterator;
use crate::range_del::RangeDels;
use crate::storage::{FileKind, StorageEnv};
use crate::table::{BlockSink, TableBuildOptions, TableBuilder, TableSummary};
use crate::types::{make_internal_key, pack_trailer, parse_internal_key, SeqNo, ValueKind};
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
    pub column_family: (CfId, &'a str),
    /// Table format options.
    pub build: TableBuildOptions,
    /// Cut output files at this size.
    pub target_file_size: u64,
    /// Live snapshots, ascending.
    pub snapshots: &'a [SeqNo],
    /// Nothing older than the output can hold these keys: tombstones may be dropped.
    pub bottommost: bool,
    /// With `bottommost`: a kept value older than every snapshot is written at sequence
    /// number 0, as RocksDB writes its last level. Every reader sees that version either
    /// way, and LZ4 then mostly elides the trailers (4-5% of a table of 116-byte entries).
    /// Off where something reads the numbers back: the age rule of placement, a level-0
    /// output.
    pub zero_seqs: bool,
    /// Every range deletion of the version the merge reads, wherever it lies. A read
    /// weighs an entry's number against every deletion covering its key, in any level, and
    /// placement's moves can leave an older deletion above a newer entry: an entry that a
    /// deletion older than itself covers keeps its number.
    pub version_dels: Option<&'a RangeDels>,
    /// The newest number the inputs' entries at 0 had: the largest `max_seq` of the input
    /// tables holding one (0 if none). An output that copies such an entry keeps it as its
    /// own `max_seq`, so that repair still knows the writes the table reflects.
    pub renumbered_max: SeqNo,
    /// Allocates a file number and its path.
    pub new_file: &'a mut dyn FnMut() -> (FileNo, PathBuf),
    /// Checked between entries; a stop request ends the merge with an error.
    pub should_stop: &'a dyn Fn() -> bool,
    /// Gives each output table (by file number) a sink for its data blocks (AC-Key hands
    /// new blocks to the cache this way).
    pub block_sink: Option<&'a dyn Fn(FileNo) -> BlockSink>,
    /// Rewrites values of kept entries (key-value separation and value-log GC); `None`
    /// keeps every value as it is.
    pub values: Option<&'a mut dyn ValueRewriter>,
    /// The inputs' range deletions, fragmented (`None`: there are none).
    pub range_dels: Option<&'a RangeDels>,
    /// The user keys this merge owns, `[lo, hi)` (`None`: unbounded); a subcompaction's
    /// range. Range deletions are cut at them.
    pub bounds: (Option<&'a [u8]>, Option<&'a [u8]>),
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
    /// The first user key of the file's share of range deletions (`None`: unbounded).
    dels_from: Option<Vec<u8>>,
    /// Bytes of value-log records referenced, per value-log file.
    vlog_refs: BTreeMap<FileNo, u64>,
    file_no: FileNo,
    path: PathBuf,
    /// Scratch for an entry's rewritten internal key.
    key: Vec<u8>,
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
    // What the outputs keep of the range deletions: inside the bounds, one per stripe.
    let out_dels = p.range_dels.map(|d| {
        d.clip(p.bounds.0, p.bounds.1)
            .collapse(p.snapshots, p.bottommost)
    });
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
            (parsed.kind == ValueKind::Deletion as u8 && p.bottommost && stripe == 0)
                || covered(p, parsed.user_key, parsed.seq, stripe)
        };
        if !drop {
            let cut = open.as_ref().is_some_and(|o| {
                o.builder.estimated_size() >= p.target_file_size
                    && last_written_user.as_slice() != parsed.user_key
            });
            if cut {
                let o = open.take().expect("checked");
                let dels = file_dels(&out_dels, &o, Some(parsed.user_key));
                outputs.push(finish(o, p.tier, dels.as_ref())?);
            }
            if open.is_none() {
                let from = match outputs.is_empty() {
                    true => p.bounds.0.map(<[u8]>::to_vec),
                    false => Some(parsed.user_key.to_vec()),
                };
                open = Some(open_output(p, created, from)?);
            }
            let o = open.as_mut().expect("opened above");
            let seq = match renumber(p, &parsed, stripe) {
                true => 0,
                false => parsed.seq,
            };
            add_entry(p, o, input, &parsed, seq)?;
            counts.entries_out += 1;
            last_written_user.clear();
            last_written_user.extend_from_slice(parsed.user_key);
        }
        input.next();
    }
    input.status()?;
    // Range deletions with no entry kept beside them still need a file.
    if open.is_none() && outputs.is_empty() && out_dels.as_ref().is_some_and(|d| !d.is_empty()) {
        open = Some(open_output(p, created, p.bounds.0.map(<[u8]>::to_vec))?);
    }
    if let Some(o) = open.take() {
        let dels = file_dels(&out_dels, &o, p.bounds.1);
        outputs.push(finish(o, p.tier, dels.as_ref())?);
    }
    Ok((outputs, counts))
}

/// Whether the kept entry is written at sequence number 0 (see
/// `MergeParams::zero_seqs`): every snapshot sees it, and no range deletion older than it
/// covers its key.
fn renumber(p: &MergeParams<'_>, parsed: &crate::types::ParsedKey<'_>, stripe: usize) -> bool {
    p.zero_seqs
        && p.bottommost
        && stripe == 0
        && p.version_dels
            .is_none_or(|d| d.max_cover(parsed.user_key, parsed.seq) == 0)
}

/// True when one of the inputs' range deletions deletes the entry at `seq` for every
/// snapshot that sees it (the oldest deletion above it is in the same stripe).
fn covered(p: &MergeParams<'_>, user_key: &[u8], seq: SeqNo, stripe: usize) -> bool {
    p.range_dels
        .and_then(|d| d.oldest_cover_above(user_key, seq))
        .is_some_and(|t| p.snapshots.partition_point(|&s| s < t) == stripe)
}

/// The share of `dels` of an output file: from its first key up to `to` (the next file's
/// first key, or the merge's upper bound).
fn file_dels(dels: &Option<RangeDels>, o: &Open, to: Option<&[u8]>) -> Option<RangeDels> {
    let d = dels.as_ref()?.clip(o.dels_from.as_deref(), to);
    (!d.is_empty()).then_some(d)
}

fn open_output(
    p: &mut MergeParams<'_>,
    created: &mut Vec<PathBuf>,
    dels_from: Option<Vec<u8>>,
) -> Result<Open> {
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
    Ok(Open {
        builder,
        dels_from,
        vlog_refs: BTreeMap::new(),
        file_no,
        path,
        key: Vec::new(),
    })
}

/// Writes the input's current entry to `o`, its value rewritten as the merge says.
fn add_entry(
    p: &mut MergeParams<'_>,
    o: &mut Open,
    input: &dyn InternalIterator,
    parsed: &crate::types::ParsedKey<'_>,
    seq: SeqNo,
) -> Result<()> {
    let kind = parsed.value_kind().expect("checked by the caller");
    let value = input.value();
    let new_pointer = match p.values.as_mut() {
        Some(v) => v.rewrite(parsed.user_key, kind, value)?,
        None => None,
    };
    // A tombstone keeps its number: the versions it hides below may still be read.
    let seq = match kind {
        ValueKind::Deletion => parsed.seq,
        ValueKind::Value | ValueKind::ValuePointer => seq,
    };
    let pointer = match &new_pointer {
        Some(ptr) => {
            let k = make_internal_key(parsed.user_key, seq, ValueKind::ValuePointer);
            o.builder.add(&k, ptr)?;
            Some(ptr.as_slice())
        }
        None if seq != parsed.seq => {
            // The input's key with the new trailer, in a buffer the output reuses.
            o.key.clear();
            o.key.extend_from_slice(parsed.user_key);
            o.key
                .extend_from_slice(&pack_trailer(seq, kind as u8).to_le_bytes());
            o.builder.add(&o.key, value)?;
            (kind == ValueKind::ValuePointer).then_some(value)
        }
        None => {
            o.builder.add(input.key(), value)?;
            (kind == ValueKind::ValuePointer).then_some(value)
        }
    };
    if seq == 0 {
        // Renumbered now (its number is `parsed.seq`) or before (an input's `max_seq`).
        o.builder.note_renumbered(parsed.seq.max(p.renumbered_max));
    }
    if let Some(ptr) = pointer {
        let ptr = ValuePointer::decode(ptr)?;
        *o.vlog_refs.entry(ptr.file_no).or_default() += ptr.len as u64;
    }
    Ok(())
}

fn finish(mut o: Open, tier: usize, dels: Option<&RangeDels>) -> Result<MergeOutput> {
    let _ = &o.path;
    if let Some(d) = dels {
        o.builder.add_range_dels(d);
    }
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
            range_dels: summary.range_dels,
        },
        summary,
    })
}
