//! Writes a table from entries added in internal-key order.

use std::cmp::Ordering;

use super::block::BlockBuilder;
use super::bloom::{filter_enabled, BloomBuilder};
use super::format::{
    block_trailer, BlockHandle, BlockType, Footer, COMPRESSED_FORMAT_VERSION, FIXED_FORMAT_VERSION,
    FORMAT_VERSION, LOCAL_FILTER_FORMAT_VERSION, PREFIXED_FORMAT_VERSION,
};
use super::index::{FenceIndex, IndexEntry};
use super::properties::TableProperties;
use crate::compression::{compress, Compression};
use crate::ids::CfId;
use crate::range_del::RangeDels;
use crate::storage::WritableFile;
use crate::types::{
    check_key, check_value, cmp_internal, parse_internal_key, range_bound_key, user_key, SeqNo,
    ValueKind, TRAILER_LEN,
};
use crate::{Error, Result};

/// Default target size of a data block.
pub const DEFAULT_BLOCK_SIZE: usize = 4096;

/// Blocks are cut at this size whatever the options say, so that the u32 entry offsets
/// inside a block cannot overflow (one entry is at most ~64 MiB) and the entry count fits
/// the 30 bits a block gives it.
const MAX_BLOCK_SIZE: usize = 1 << 30;
/// What an entry adds to a block beyond its key and value, at most: its offset and two
/// length varints.
const ENTRY_OVERHEAD: usize = 8;

/// How to build a table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableBuildOptions {
    /// Target uncompressed size of a data block; a block is cut once it reaches this.
    pub block_size: usize,
    /// Bloom filter bits per user key; 0 (or not a positive number) writes no filter.
    pub bloom_bits_per_key: f64,
    /// Write data blocks whose keys and values are at most 255 bytes fixed-width
    /// (layout 3, Bourbon's key + pointer entries), so a learned lookup reads only the
    /// entries around its prediction. Such tables are format version 3.
    pub fixed_width_entries: bool,
    /// Write the bloom filter in the cache-local layout (each key's bits in one 64-byte
    /// line: one cache miss per probe) rather than LevelDB's classic one. Such tables
    /// are format version 4.
    pub cache_local_filter: bool,
    /// How data and index blocks are compressed (a block that does not shrink by 1/8 is
    /// stored raw). Fixed-width blocks are always stored raw, so that a learned lookup can
    /// still read just the chunks around its prediction. Tables with a compressed block
    /// are format version 5.
    pub compression: Compression,
}

impl Default for TableBuildOptions {
    fn default() -> Self {
        TableBuildOptions {
            block_size: DEFAULT_BLOCK_SIZE,
            bloom_bits_per_key: 10.0,
            fixed_width_entries: false,
            cache_local_filter: true,
            compression: Compression::None,
        }
    }
}

/// The key range of one data block, as flush and compaction events report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRange {
    /// Where the block is.
    pub handle: BlockHandle,
    /// User key of the block's first entry.
    pub first_key: Vec<u8>,
    /// User key of the block's last entry.
    pub last_key: Vec<u8>,
}

/// What a finished table holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSummary {
    /// Bytes in the file.
    pub file_size: u64,
    /// Entries written.
    pub num_entries: u64,
    /// Smallest internal key (empty if no entries).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty if no entries).
    pub largest: Vec<u8>,
    /// Smallest sequence number (0 if no entries).
    pub min_seq: u64,
    /// Largest sequence number (0 if no entries); for an entry written at 0 by a
    /// last-level merge, the number it had (see [`TableBuilder::note_renumbered`]).
    pub max_seq: u64,
    /// Range tombstones held (one per fragment and sequence number).
    pub range_dels: u64,
    /// Every data block written, in order.
    pub blocks: Vec<BlockRange>,
}

/// Called with each data block as it is written: its handle, first and last user keys,
/// and contents (without trailer). Lets a cache take new blocks without reading them back.
pub type BlockSink = Box<dyn FnMut(BlockHandle, &[u8], &[u8], &[u8]) + Send>;

/// Builds one table file.
pub struct TableBuilder {
    file: WritableFile,
    opts: TableBuildOptions,
    block: BlockBuilder,
    /// User key of the pending block's first entry.
    block_first: Vec<u8>,
    /// Last internal key added.
    last_key: Vec<u8>,
    index: Vec<IndexEntry>,
    blocks: Vec<BlockRange>,
    bloom: Option<BloomBuilder>,
    props: TableProperties,
    /// Ordinal of the pending block's first entry.
    block_first_ordinal: u64,
    block_sink: Option<BlockSink>,
    /// A fixed-width block was written (the footer then says format version 3).
    any_fixed: bool,
    /// A compressed block was written (the footer then says format version 5).
    any_compressed: bool,
    /// Range deletions to store (the footer then says format version 6).
    range_dels: RangeDels,
}

impl TableBuilder {
    /// Starts a table in `file` (which should be empty).
    pub fn new(file: WritableFile, opts: TableBuildOptions) -> Self {
        let bloom = filter_enabled(opts.bloom_bits_per_key)
            .then(|| BloomBuilder::new(opts.bloom_bits_per_key, opts.cache_local_filter));
        TableBuilder {
            file,
            opts,
            block: if opts.fixed_width_entries {
                BlockBuilder::fixed_width()
            } else {
                BlockBuilder::default()
            },
            block_first: Vec::new(),
            last_key: Vec::new(),
            index: Vec::new(),
            blocks: Vec::new(),
            bloom,
            props: TableProperties::default(),
            block_first_ordinal: 0,
            block_sink: None,
            any_fixed: false,
            any_compressed: false,
            range_dels: RangeDels::default(),
        }
    }

    /// Says that the entry just added had sequence number `seq` before a last-level merge
    /// wrote it at 0: the table's largest sequence number stays that of the newest write
    /// it holds, which repair weighs logs left behind against (a log entry at or below it
    /// was flushed).
    pub fn note_renumbered(&mut self, seq: SeqNo) {
        self.props.max_seq = self.props.max_seq.max(seq);
    }

    /// Adds range deletions to the table (stored fragmented in their own block; the
    /// table's key range and sequence numbers widen to hold them). A table holding any
    /// must name its column family.
    pub fn add_range_dels(&mut self, dels: &RangeDels) {
        if dels.is_empty() {
            return;
        }
        self.range_dels = if self.range_dels.is_empty() {
            dels.clone()
        } else {
            RangeDels::union([&self.range_dels, dels])
        };
    }

    /// Records the column family the table belongs to in its properties (read by repair).
    pub fn set_column_family(&mut self, id: CfId, name: &str) {
        self.props.column_family = Some((id, name.to_owned()));
    }

    /// Hands every data block written from now on to `sink`.
    pub fn set_block_sink(&mut self, sink: BlockSink) {
        self.block_sink = Some(sink);
    }

    /// Adds an entry. Internal keys must be strictly increasing in internal order.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let Some(parsed) = parse_internal_key(ikey) else {
            return Err(Error::InvalidArgument(format!(
                "internal key of {} bytes is shorter than its {TRAILER_LEN}-byte trailer",
                ikey.len()
            )));
        };
        check_key(parsed.user_key)?;
        check_value(value)?;
        let first = self.props.num_entries == 0;
        if !first && cmp_internal(&self.last_key, ikey) != Ordering::Less {
            return Err(Error::InvalidArgument(
                "table keys must be added in strictly increasing internal order".into(),
            ));
        }
        if let Some(bloom) = &mut self.bloom {
            if first || user_key(&self.last_key) != parsed.user_key {
                bloom.add(parsed.user_key);
            }
        }
        // RocksDB's rule (block_size_deviation 10%): a block at 90% of its size that this
        // entry would push past the size is cut first, so blocks stay at or just under the
        // size instead of always over it.
        let size = self.opts.block_size.min(MAX_BLOCK_SIZE);
        let now = self.block.estimated_size();
        if !self.block.is_empty()
            && now + ikey.len() + value.len() + ENTRY_OVERHEAD > size
            && now >= size - size / 10
        {
            self.flush_block()?;
        }
        if self.block.is_empty() {
            self.block_first.clear();
            self.block_first.extend_from_slice(parsed.user_key);
            self.block_first_ordinal = self.props.num_entries;
        }
        self.block.add(ikey, value);

        let p = &mut self.props;
        if first {
            p.smallest = ikey.to_vec();
            p.min_seq = parsed.seq;
            p.max_seq = parsed.seq;
        }
        p.min_seq = p.min_seq.min(parsed.seq);
        p.max_seq = p.max_seq.max(parsed.seq);
        p.num_entries += 1;
        p.num_deletions += u64::from(parsed.kind == ValueKind::Deletion as u8);
        p.raw_key_bytes += ikey.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);

        if self.block.estimated_size() >= size {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Bytes written so far plus the pending data block.
    pub fn estimated_size(&self) -> u64 {
        let pending = if self.block.is_empty() {
            0
        } else {
            self.block.estimated_size() + super::format::BLOCK_TRAILER_LEN
        };
        self.file.len() + pending as u64
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Appends a block and its trailer, compressed when `compressible` and the table's
    /// codec shrinks it enough; the handle names the stored bytes.
    fn write_block(
        &mut self,
        contents: &[u8],
        ty: BlockType,
        compressible: bool,
    ) -> Result<BlockHandle> {
        let packed = compressible
            .then(|| compress(self.opts.compression, contents))
            .flatten();
        let (stored, codec) = match &packed {
            Some(p) => (p.as_slice(), self.opts.compression.code()),
            None => (contents, 0),
        };
        self.any_compressed |= packed.is_some();
        let handle = BlockHandle::new(self.file.len(), stored.len() as u64);
        self.file.append(stored)?;
        self.file.append(&block_trailer(stored, ty, codec))?;
        Ok(handle)
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let (contents, fixed) = self.block.finish_with_layout();
        self.any_fixed |= fixed.is_some();
        let handle = self.write_block(&contents, BlockType::Data, fixed.is_none())?;
        if let Some(sink) = &mut self.block_sink {
            sink(
                handle,
                &self.block_first,
                user_key(&self.last_key),
                &contents,
            );
        }
        self.index.push(IndexEntry {
            last_key: self.last_key.clone(),
            handle,
            first_ordinal: self.block_first_ordinal,
            fixed,
        });
        self.blocks.push(BlockRange {
            handle,
            first_key: std::mem::take(&mut self.block_first),
            last_key: user_key(&self.last_key).to_vec(),
        });
        self.props.num_data_blocks += 1;
        Ok(())
    }

    /// Writes the range-deletion block, and widens the key range and sequence numbers
    /// to cover what it holds.
    fn write_range_dels(&mut self) -> Result<()> {
        let dels = std::mem::take(&mut self.range_dels);
        let (Some((lo, hi)), Some((min_seq, max_seq))) = (dels.span(), dels.seq_range()) else {
            return Ok(());
        };
        if self.props.column_family.is_none() {
            return Err(Error::InvalidArgument(
                "a table holding range deletions must name its column family".into(),
            ));
        }
        let handle = self.write_block(&dels.encode(), BlockType::RangeDel, false)?;
        let p = &mut self.props;
        let (lo, hi) = (range_bound_key(lo), range_bound_key(hi));
        let points = p.num_entries > 0;
        if !points || cmp_internal(&lo, &p.smallest) == Ordering::Less {
            p.smallest = lo;
        }
        if !points || cmp_internal(&hi, &p.largest) == Ordering::Greater {
            p.largest = hi;
        }
        p.min_seq = if points {
            p.min_seq.min(min_seq)
        } else {
            min_seq
        };
        p.max_seq = if points {
            p.max_seq.max(max_seq)
        } else {
            max_seq
        };
        p.range_dels = Some((dels.len() as u64, handle));
        Ok(())
    }

    /// Writes the pending block, filter, index, range deletions, properties and footer,
    /// and fsyncs.
    pub fn finish(mut self) -> Result<TableSummary> {
        self.flush_block()?;
        let local_filter = self.bloom.as_ref().is_some_and(|b| b.is_cache_local());
        let filter = match self.bloom.take() {
            Some(b) => self.write_block(&b.finish(), BlockType::Filter, false)?,
            None => BlockHandle::default(),
        };
        let index = self.write_block(&FenceIndex::encode(&self.index), BlockType::Index, true)?;
        self.props.largest = self.last_key.clone();
        self.write_range_dels()?;
        let properties = self.write_block(&self.props.encode(), BlockType::Properties, false)?;
        let footer = Footer {
            index,
            filter,
            properties,
        };
        // The oldest version that names every layout the table holds, so older builds
        // read what they can and refuse the rest by its version.
        let version = if self.props.range_dels.is_some() {
            FORMAT_VERSION
        } else if self.any_compressed {
            COMPRESSED_FORMAT_VERSION
        } else if local_filter {
            LOCAL_FILTER_FORMAT_VERSION
        } else if self.any_fixed {
            FIXED_FORMAT_VERSION
        } else {
            PREFIXED_FORMAT_VERSION
        };
        self.file.append(&footer.encode_as(version))?;
        self.file.sync()?;
        Ok(TableSummary {
            file_size: self.file.len(),
            num_entries: self.props.num_entries,
            smallest: self.props.smallest,
            largest: self.props.largest,
            min_seq: self.props.min_seq,
            max_seq: self.props.max_seq,
            range_dels: self.props.range_dels.map_or(0, |(n, _)| n),
            blocks: self.blocks,
        })
    }
}
