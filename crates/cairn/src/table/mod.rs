//! SSTables: immutable sorted files of internal entries.
//!
//! # File format (versions 1-4)
//!
//! ```text
//! [data block 0][trailer] ... [data block n-1][trailer]
//! [filter block][trailer]        (absent when the bloom filter is off)
//! [index block][trailer]
//! [properties block][trailer]
//! [footer: 64 bytes]
//! ```
//!
//! * **Trailer** (5 bytes, after every block): block type (u8: data 0, index 1, filter 2,
//!   properties 3) and CRC32C (u32 LE) of the contents followed by the type byte. Checked
//!   on every read; a mismatch is [`Error::Corruption`](crate::Error::Corruption).
//! * **Data block** (target 4 KiB): the user keys' common prefix once, then entries
//!   `[varint key_len][varint value_len][rest of internal key][value]`, then the offset of
//!   every entry (u16 LE, u32 LE past 64 KiB), the prefix length (u16) and the entry count
//!   with layout flags (u32); blocks of older tables (no prefix, u32 offsets, plain count)
//!   still read. With `fixed_width_entries`, blocks of short entries are fixed-width
//!   instead: chunks of four equal-sized entries, each chunk checksummed, so a few entries
//!   can be read and verified without the rest of the block. See [`block`]. Every entry is
//!   addressable by index, so a learned index (Bourbon) that predicts a key's position
//!   (ordinal) in the table can jump straight to it.
//! * **Index block** (fence pointers): same layout as a data block; one entry per data
//!   block, keyed by the block's last internal key, valued `[varint offset][varint
//!   size][varint first ordinal]` (the [`BlockHandle`] and the table position of the block's
//!   first entry), then, for a fixed-width block, `[varint layout]` (its key and value
//!   widths). Data blocks tile the file from offset 0 in order.
//! * **Filter block**: a bloom filter over the distinct user keys, in one of two layouts
//!   (see [`bloom`]): classic, the bit array followed by the probe count `k` (u8, 1..=30),
//!   xxh3 with double hashing over the whole array; or cache-local (the default,
//!   `cache_local_filter`), 64-byte lines followed by `k` and a marker byte, every key's
//!   bits in the one line its hash picks.
//! * **Properties block**: see [`TableProperties`].
//! * **Footer**: index, filter and properties handles (fixed u64 LE offset and size each;
//!   a filter size of 0 means no filter), CRC32C of the other footer bytes (u32), format
//!   version (u32: 4 when the filter is cache-local, else 3 when the table holds a
//!   fixed-width block, else 2; 1 from older builds still reads), magic (u64,
//!   `"cairnTBL"`). See [`Footer`].
//!
//! Decoders bounds-check every varint, length and offset against the bytes they were given,
//! so arbitrary bytes yield errors, never panics or huge allocations.

pub mod block;
pub(crate) mod block_buffers;
pub mod bloom;
mod builder;
pub mod format;
pub mod index;
pub mod index_policy;
mod iter;
pub mod learned_index;
pub mod model_file;
pub mod properties;
mod read_trace;
pub mod readahead;
mod reader;
pub mod usage;

#[cfg(test)]
mod learned_tests;
#[cfg(test)]
mod tests;

pub use block::{Block, FixedLayout, KeyRef, CHUNK_ENTRIES};
pub use bloom::BloomFilter;
pub use builder::{
    BlockRange, BlockSink, TableBuildOptions, TableBuilder, TableSummary, DEFAULT_BLOCK_SIZE,
};
pub use format::{BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN, FORMAT_VERSION, TABLE_MAGIC};
pub use index::{FenceIndex, IndexEntry};
pub use iter::TableIterator;
pub use learned_index::{LearnedIndex, LearnedLookup, Position};
pub use properties::TableProperties;
pub use read_trace::ReadTrace;
pub use reader::{MetaRef, Table};
pub use usage::{TableUsage, UsageSnapshot};

/// A small valid block, for tests of other modules (the cache).
#[cfg(test)]
pub(crate) fn block_for_tests(n: u32) -> std::sync::Arc<Block> {
    use crate::types::{make_internal_key, ValueKind};
    let mut b = block::BlockBuilder::default();
    for i in 0..n.max(1) {
        b.add(
            &make_internal_key(&i.to_be_bytes(), 1, ValueKind::Value),
            b"v",
        );
    }
    std::sync::Arc::new(Block::decode(b.finish(), "test").expect("valid test block"))
}

/// A small valid bloom filter, for tests of other modules (the cache).
#[cfg(test)]
pub(crate) fn filter_for_tests() -> std::sync::Arc<BloomFilter> {
    let mut b = bloom::BloomBuilder::new(10.0, true);
    b.add(b"k");
    std::sync::Arc::new(BloomFilter::decode(b.finish(), "test").expect("valid test filter"))
}
