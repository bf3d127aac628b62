//! An open table: footer, index, filter and properties read once at open; data blocks
//! read on demand through the block cache. The index and filter stay in the table, or,
//! with `Options::cache_index_and_filter_blocks`, go to the block cache, charged to its
//! budget, and are read again after an eviction.

use std::ops::{Deref, Range};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::block::Block;
use super::bloom::BloomFilter;
use super::format::{
    block_contents, block_contents_in, BlockHandle, BlockType, Footer, BLOCK_TRAILER_LEN,
    FOOTER_LEN,
};
use super::index::FenceIndex;
use super::learned_index::{LearnedIndex, LearnedLookup, Position};
use super::properties::TableProperties;
use super::read_trace::ReadTrace;
use super::readahead::{RawBlock, Readahead};
use super::usage::TableUsage;
use crate::cache::{BlockCache, BlockKey, CacheValue};
use crate::ids::FileNo;
use crate::learned::{KeySpace, PlrBuilder};
use crate::options::IndexPolicy;
use crate::range_del::RangeDels;
use crate::storage::RandomAccessFile;
use crate::types::user_key;
use crate::{Error, Result};

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The index or the filter of an open table: held by the table, or left to the block
/// cache (then read again, checksummed and decoded, whenever it was evicted).
enum Meta<T> {
    Pinned(Arc<T>),
    Cached(BlockHandle),
}

/// An index or filter in use: borrowed from the table, or held from the cache until
/// dropped (an eviction meanwhile does not take it away).
pub enum MetaRef<'a, T> {
    /// Pinned in the table.
    Pinned(&'a Arc<T>),
    /// From the block cache.
    Cached(Arc<T>),
}

impl<T> MetaRef<'_, T> {
    /// A handle that outlives the borrow (iterators keep the index while they live).
    pub fn to_arc(&self) -> Arc<T> {
        match self {
            MetaRef::Pinned(a) => Arc::clone(a),
            MetaRef::Cached(a) => a.clone(),
        }
    }
}

impl<T> Deref for MetaRef<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            MetaRef::Pinned(a) => a,
            MetaRef::Cached(a) => a,
        }
    }
}

/// An open table, shared as `Arc<Table>`.
pub struct Table {
    file: RandomAccessFile,
    name: String,
    file_no: FileNo,
    cache: Option<Arc<dyn BlockCache>>,
    index: Meta<FenceIndex>,
    /// Installed once (at open or by the background learner); readers switch to it
    /// without locks.
    learned: OnceLock<LearnedIndex>,
    filter: Option<Meta<BloomFilter>>,
    /// Where the data blocks end and the meta blocks begin.
    data_end: u64,
    props: TableProperties,
    /// The range deletions the table holds, fragmented (read at open).
    range_dels: Option<Arc<RangeDels>>,
    usage: TableUsage,
    /// Iterators read ahead: where the OS cannot (direct reads) and for whole-table
    /// readers (compaction inputs, opened without a cache). With buffered reads the page
    /// cache reads ahead already, and a short scan would pay for blocks it never reaches.
    readahead: bool,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("file", &self.name)
            .field("file_no", &self.file_no)
            .field("entries", &self.props.num_entries)
            .finish()
    }
}

/// Slices one block (with trailer) out of `region`, which starts at file offset `base`,
/// and verifies it.
fn meta_block(
    region: &[u8],
    base: u64,
    h: BlockHandle,
    ty: BlockType,
    file: &str,
) -> Result<Vec<u8>> {
    let slice = h
        .offset
        .checked_sub(base)
        .zip(h.end_with_trailer().and_then(|e| e.checked_sub(base)))
        .and_then(|(s, e)| region.get(usize::try_from(s).ok()?..usize::try_from(e).ok()?))
        .ok_or_else(|| {
            Error::corruption(file, format!("{ty:?} block handle {h:?} out of range"))
        })?;
    block_contents_in(slice, ty, file, h.offset)
}

/// Decodes an index block and checks it against the table's properties.
fn decode_index(
    raw: Vec<u8>,
    name: &str,
    data_end: u64,
    props: &TableProperties,
) -> Result<FenceIndex> {
    let index = FenceIndex::decode(raw, name, data_end, props.num_entries)?;
    if index.num_blocks() as u64 != props.num_data_blocks {
        return Err(Error::corruption(
            name,
            "index and properties disagree on block count",
        ));
    }
    Ok(index)
}

/// Reads and checks the range-deletion block: well formed, holding the count the
/// properties name.
fn decode_range_dels(
    region: &[u8],
    base: u64,
    h: BlockHandle,
    count: u64,
    name: &str,
) -> Result<RangeDels> {
    let raw = meta_block(region, base, h, BlockType::RangeDel, name)?;
    let dels = RangeDels::decode(&raw)
        .ok_or_else(|| Error::corruption(name, "malformed range-deletion block"))?;
    if dels.len() as u64 != count {
        return Err(Error::corruption(
            name,
            "range-deletion block and properties disagree on the tombstone count",
        ));
    }
    Ok(dels)
}

impl Table {
    /// The range deletions the table holds, fragmented; `None` when it holds none.
    pub fn range_dels(&self) -> Option<&Arc<RangeDels>> {
        self.range_dels.as_ref()
    }

    /// Opens a table: reads the footer, then the filter, index and properties blocks in one
    /// read. `file_no` keys the table's blocks in `cache`. Uses fence pointers only.
    pub fn open(
        file: RandomAccessFile,
        file_no: FileNo,
        cache: Option<Arc<dyn BlockCache>>,
    ) -> Result<Table> {
        Self::open_with(file, file_no, cache, IndexPolicy::Fence)
    }

    /// As [`open`](Self::open), with an index policy: [`IndexPolicy::Learned`] also reads
    /// every data block once (bypassing the cache) and trains a [`LearnedIndex`] now
    /// (whatever its mode and wait: those are the database's background learner's), which
    /// [`get`](Self::get) then uses.
    pub fn open_with(
        file: RandomAccessFile,
        file_no: FileNo,
        cache: Option<Arc<dyn BlockCache>>,
        policy: IndexPolicy,
    ) -> Result<Table> {
        Self::open_inner(file, file_no, cache, policy, false)
    }

    /// As [`open`](Self::open), leaving the index and filter to `cache`
    /// (`Options::cache_index_and_filter_blocks`): they are read and checked now, put in
    /// the cache charged to its budget, and read again whenever a lookup finds them
    /// evicted.
    pub fn open_caching_meta(
        file: RandomAccessFile,
        file_no: FileNo,
        cache: Arc<dyn BlockCache>,
    ) -> Result<Table> {
        Self::open_inner(file, file_no, Some(cache), IndexPolicy::Fence, true)
    }

    fn open_inner(
        file: RandomAccessFile,
        file_no: FileNo,
        cache: Option<Arc<dyn BlockCache>>,
        policy: IndexPolicy,
        cache_meta: bool,
    ) -> Result<Table> {
        let name = file.path().display().to_string();
        let size = file.size();
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &name,
                format!("file of {size} bytes is too short for a table"),
            ));
        }
        let footer_at = size - FOOTER_LEN as u64;
        let footer = Footer::decode(&file.read_at(footer_at, FOOTER_LEN)?, &name)?;
        let has_filter = footer.filter.size != 0;
        // Meta blocks sit between the data blocks and the footer: filter, index, properties.
        let data_end = if has_filter {
            footer.filter.offset
        } else {
            footer.index.offset
        };
        if data_end > footer_at {
            return Err(Error::corruption(
                &name,
                "meta blocks start past the footer",
            ));
        }
        let region = file.read_at(data_end, (footer_at - data_end) as usize)?;
        let props_raw = meta_block(
            &region,
            data_end,
            footer.properties,
            BlockType::Properties,
            &name,
        )?;
        let props = TableProperties::decode(&props_raw, &name)?;
        let index_raw = meta_block(&region, data_end, footer.index, BlockType::Index, &name)?;
        let index = decode_index(index_raw, &name, data_end, &props)?;
        let filter = if has_filter {
            let raw = meta_block(&region, data_end, footer.filter, BlockType::Filter, &name)?;
            Some(BloomFilter::decode(raw, &name)?)
        } else {
            None
        };
        let range_dels = match props.range_dels {
            Some((n, h)) => Some(Arc::new(decode_range_dels(&region, data_end, h, n, &name)?)),
            None => None,
        };
        let readahead = file.is_direct() || cache.is_none();
        let (index, filter) = match &cache {
            Some(c) if cache_meta => {
                let key = |h: BlockHandle| BlockKey {
                    file_no,
                    offset: h.offset,
                };
                let charge = index.memory();
                c.insert(
                    key(footer.index),
                    CacheValue::Index(Arc::new(index)),
                    charge,
                );
                let filter = filter.map(|f| {
                    let charge = f.size();
                    c.insert(key(footer.filter), CacheValue::Filter(Arc::new(f)), charge);
                    Meta::Cached(footer.filter)
                });
                (Meta::Cached(footer.index), filter)
            }
            _ => (
                Meta::Pinned(Arc::new(index)),
                filter.map(|f| Meta::Pinned(Arc::new(f))),
            ),
        };
        let table = Table {
            file,
            name,
            file_no,
            cache,
            index,
            learned: OnceLock::new(),
            filter,
            data_end,
            props,
            range_dels,
            usage: TableUsage::default(),
            readahead,
        };
        if let IndexPolicy::Learned { delta, .. } = policy {
            table.learn(delta)?;
        }
        Ok(table)
    }

    /// Trains a learned index and installs it, unless one is installed already (then
    /// nothing is read). Returns whether this call installed it. Concurrent readers keep
    /// using the fence pointers until the model is in place.
    pub fn learn(&self, delta: u32) -> Result<bool> {
        if self.learned.get().is_some() {
            return Ok(false);
        }
        let l = self.train(delta)?;
        Ok(self.learned.set(l).is_ok())
    }

    /// Installs a model made elsewhere (loaded from its file); false if one is installed.
    pub fn install_learned(&self, l: LearnedIndex) -> bool {
        self.learned.set(l).is_ok()
    }

    /// How a model of this table numbers keys: after the common prefix of its smallest
    /// and largest keys.
    pub fn key_space(&self) -> KeySpace {
        KeySpace::spanning(
            user_key(&self.props.smallest),
            user_key(&self.props.largest),
        )
    }

    /// Whether a learned index is installed.
    pub fn is_learned(&self) -> bool {
        self.learned.get().is_some()
    }

    /// Lookup counters and sampled path timings (for the cost-benefit analyzer).
    pub fn usage(&self) -> &TableUsage {
        &self.usage
    }

    /// Reads every data block in turn (not through the cache, reading ahead up to 256 KiB
    /// at a time) and trains a learned index on the user keys in table order, numbered in the
    /// key space between the table's smallest and largest keys. Keys out of order or out of
    /// that range (a forged table with valid checksums) are a corruption error.
    fn train(&self, delta: u32) -> Result<LearnedIndex> {
        let space = self.key_space();
        let mut plr = PlrBuilder::new(delta);
        let mut trace = ReadTrace::default();
        let (mut n, mut prev) = (0u64, 0u64);
        let mut key = Vec::new();
        let mut readahead = Readahead::default();
        let index = self.index_ref(&mut trace)?;
        for i in 0..index.num_blocks() {
            readahead.visit(i);
            let block = self.load_block(&index, i, &mut trace, Some(&mut readahead))?;
            for j in 0..block.entry_count() {
                block.key_into(j, &mut key);
                let x = space.number(user_key(&key)).ok_or_else(|| {
                    Error::corruption(
                        &self.name,
                        format!("entry {n} (block {i}) lies outside the table's key range"),
                    )
                })?;
                if x < prev {
                    return Err(Error::corruption(
                        &self.name,
                        format!("keys out of order at entry {n} (block {i})"),
                    ));
                }
                plr.add(x, n);
                (n, prev) = (n + 1, x);
            }
        }
        Ok(LearnedIndex::from_plr(plr.finish(), space, n))
    }

    /// The first entry with internal key >= `lookup_ikey`, if it has the same user key:
    /// `(internal key, value)`. Checks the bloom filter first. The caller interprets the
    /// entry's kind (a tombstone is returned like any entry).
    pub fn get(
        &self,
        lookup_ikey: &[u8],
        trace: &mut ReadTrace,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.get_position(lookup_ikey, trace)?.map(|p| p.to_entry()))
    }

    /// As [`get`](Self::get), the entry left where it lies in its block: a point read
    /// copies out only the value (copying the key too was 1.4% of a cached get).
    pub(crate) fn get_position(
        &self,
        lookup_ikey: &[u8],
        trace: &mut ReadTrace,
    ) -> Result<Option<Position>> {
        let ukey = user_key(lookup_ikey);
        let t = trace.time_steps.then(Instant::now);
        if let Some(f) = self.filter_ref(trace)? {
            trace.bloom_checked = true;
            let absent = !f.may_contain(ukey);
            if let Some(t) = t {
                trace.step_filter_ns += nanos(t.elapsed());
            }
            if absent {
                trace.bloom_negative = true;
                self.usage.bloom_negative();
                return Ok(None);
            }
        }
        let sampled = self.usage.begin_lookup();
        let timed = (sampled || trace.time_steps).then(Instant::now);
        let reads = trace.storage_reads;
        let index = self.index_ref(trace)?;
        let learned = self.learned.get();
        // When timed: the moment the first data block is asked for ends the index part.
        let mut first_read = None;
        let r = self.search(
            &index,
            learned,
            lookup_ikey,
            trace,
            timed.map(|_| &mut first_read),
            true,
        );
        if let Some(t0) = timed {
            let ns = nanos(t0.elapsed()).max(1);
            let index_ns =
                first_read.map_or(ns, |t: Instant| nanos(t.saturating_duration_since(t0)));
            if trace.time_steps {
                trace.step_index_ns += index_ns;
                trace.step_data_ns += ns - index_ns.min(ns);
            }
            // Only lookups served from memory are kept for the analyzer: a storage read's
            // time would swamp the index's (and the analyzer compares index paths). Reads
            // of a mapped file are copies out of the page cache: memory too.
            if sampled && (trace.storage_reads == reads || self.file.reads_from_memory()) {
                self.usage.sample(learned.is_some(), ns);
                trace.sampled_ns = ns;
                trace.sampled_index_ns = index_ns;
                trace.sampled_model = learned.is_some();
            }
        }
        let r = r?.filter(|p| p.block.key(p.pos).user_key_eq(ukey));
        if let Some(p) = &r {
            let handle = index.block(p.block_no).handle;
            trace.found_block = u32::try_from(p.block_no).ok().map(|b| (b, handle));
        }
        if r.is_some() {
            self.usage.positive();
        }
        Ok(r)
    }

    /// Where the first entry with internal key >= `ikey` lies (`None`: past the last
    /// entry), found as [`get`](Self::get) finds it: through the model when there is one
    /// and it can answer. Iterators seek with it.
    /// Seeks count as index lookups for the cost-benefit analyzer (a scan-heavy table
    /// gains from a model too), and one in [`SAMPLE_EVERY`](super::usage::SAMPLE_EVERY)
    /// is timed like a get's search.
    pub fn seek_position(&self, ikey: &[u8], trace: &mut ReadTrace) -> Result<Option<Position>> {
        let index = self.index_ref(trace)?;
        self.seek_position_in(&index, ikey, trace)
    }

    /// [`seek_position`](Self::seek_position) with the index in hand (an iterator's).
    pub(crate) fn seek_position_in(
        &self,
        index: &FenceIndex,
        ikey: &[u8],
        trace: &mut ReadTrace,
    ) -> Result<Option<Position>> {
        let timed = self.usage.begin_lookup().then(Instant::now);
        let reads = trace.storage_reads;
        let learned = self.learned.get();
        let r = self.search(index, learned, ikey, trace, None, false);
        if let Some(t0) =
            timed.filter(|_| trace.storage_reads == reads || self.file.reads_from_memory())
        {
            self.usage
                .sample(learned.is_some(), nanos(t0.elapsed()).max(1));
        }
        r
    }

    /// The first entry with internal key >= `lookup_ikey`: through the model if there is
    /// one and it can answer, else through the fence pointers. With `window_reads` (a get,
    /// which needs only the entry) the model reads just its window's entries of a
    /// fixed-width block that is not cached; an iterator's seek needs whole blocks.
    fn search(
        &self,
        index: &FenceIndex,
        learned: Option<&LearnedIndex>,
        lookup_ikey: &[u8],
        trace: &mut ReadTrace,
        mut first_read: Option<&mut Option<Instant>>,
        window_reads: bool,
    ) -> Result<Option<Position>> {
        let mut mark = || {
            if let Some(f) = first_read.as_deref_mut().filter(|f| f.is_none()) {
                *f = Some(Instant::now());
            }
        };
        if let Some(learned) = learned {
            let read = |b, entries| {
                mark();
                if window_reads {
                    self.read_entries(index, b, entries, trace)
                } else {
                    self.read_block_in(index, b, trace, None)
                }
            };
            match learned.lookup(index, lookup_ikey, read)? {
                LearnedLookup::Found(e) => {
                    trace.learned_lookups = trace.learned_lookups.saturating_add(1);
                    return Ok(e);
                }
                LearnedLookup::Fallback => {
                    trace.learned_fallbacks = trace.learned_fallbacks.saturating_add(1)
                }
            }
        }
        let Some(mut i) = index.locate(lookup_ikey) else {
            return Ok(None);
        };
        // The fence index names the right block; walking on is only a safety net.
        while i < index.num_blocks() {
            mark();
            let block = self.read_block_in(index, i, trace, None)?;
            let pos = block.seek(lookup_ikey);
            if pos < block.entry_count() {
                return Ok(Some(Position {
                    block_no: i,
                    block,
                    pos,
                }));
            }
            i += 1;
        }
        Ok(None)
    }

    /// False if the table certainly holds no entry for `user_key` (true without a filter).
    pub fn may_contain(&self, user_key: &[u8]) -> Result<bool> {
        let mut trace = ReadTrace::default();
        Ok(self
            .filter_ref(&mut trace)?
            .is_none_or(|f| f.may_contain(user_key)))
    }

    /// The index (pinned, from the cache, or read again from storage).
    pub fn index(&self) -> Result<MetaRef<'_, FenceIndex>> {
        self.index_ref(&mut ReadTrace::default())
    }

    /// The bloom filter, when the table has one (pinned, from the cache, or read again).
    pub fn filter(&self) -> Result<Option<MetaRef<'_, BloomFilter>>> {
        self.filter_ref(&mut ReadTrace::default())
    }

    fn cache_key(&self, h: BlockHandle) -> BlockKey {
        BlockKey {
            file_no: self.file_no,
            offset: h.offset,
        }
    }

    /// Reads a block and verifies its checksum (one storage read): a meta block evicted
    /// from the cache, or a data block named by its handle.
    fn read_checked(
        &self,
        h: BlockHandle,
        ty: BlockType,
        trace: &mut ReadTrace,
    ) -> Result<Vec<u8>> {
        let len = usize::try_from(h.size)
            .ok()
            .and_then(|n| n.checked_add(BLOCK_TRAILER_LEN))
            .ok_or_else(|| Error::corruption(&self.name, format!("{ty:?} block size overflows")))?;
        // Read into the thread's reused buffer: the block's one allocation is then its
        // decompressed (or copied-out) contents.
        let name = &self.name;
        // Counted once read, before the checks, as the storage layer counts it.
        self.file.read_with(h.offset, len, |raw| {
            trace.storage_reads += 1;
            trace.storage_bytes += len as u64;
            block_contents_in(raw, ty, name, h.offset)
        })
    }

    pub(crate) fn index_ref(&self, trace: &mut ReadTrace) -> Result<MetaRef<'_, FenceIndex>> {
        let h = match &self.index {
            Meta::Pinned(i) => {
                trace.index_hits += 1;
                return Ok(MetaRef::Pinned(i));
            }
            Meta::Cached(h) => *h,
        };
        let key = self.cache_key(h);
        let cache = self.cache.as_ref().expect("a cached index has a cache");
        if let Some(CacheValue::Index(i)) = cache.lookup(&key) {
            trace.index_hits += 1;
            return Ok(MetaRef::Cached(i));
        }
        trace.index_misses += 1;
        let raw = self.read_checked(h, BlockType::Index, trace)?;
        let index = Arc::new(decode_index(raw, &self.name, self.data_end, &self.props)?);
        if !trace.no_fill {
            cache.insert(key, CacheValue::Index(index.clone()), index.memory());
        }
        Ok(MetaRef::Cached(index))
    }

    fn filter_ref(&self, trace: &mut ReadTrace) -> Result<Option<MetaRef<'_, BloomFilter>>> {
        let h = match &self.filter {
            None => return Ok(None),
            Some(Meta::Pinned(f)) => {
                trace.filter_hits += 1;
                return Ok(Some(MetaRef::Pinned(f)));
            }
            Some(Meta::Cached(h)) => *h,
        };
        let key = self.cache_key(h);
        let cache = self.cache.as_ref().expect("a cached filter has a cache");
        if let Some(CacheValue::Filter(f)) = cache.lookup(&key) {
            trace.filter_hits += 1;
            return Ok(Some(MetaRef::Cached(f)));
        }
        trace.filter_misses += 1;
        let raw = self.read_checked(h, BlockType::Filter, trace)?;
        let filter = Arc::new(BloomFilter::decode(raw, &self.name)?);
        if !trace.no_fill {
            cache.insert(key, CacheValue::Filter(filter.clone()), filter.size());
        }
        Ok(Some(MetaRef::Cached(filter)))
    }

    /// Data block `i` (`i < index().num_blocks()`), from the cache or storage. A block read
    /// from storage is checksummed, decoded and put in the cache.
    pub fn read_block(&self, i: usize, trace: &mut ReadTrace) -> Result<Arc<Block>> {
        let index = self.index_ref(trace)?;
        self.read_block_in(&index, i, trace, None)
    }

    /// The data block at `handle` (from a key-pointer cache entry, which keeps it so as to
    /// skip the index), from the cache or storage. A handle that does not name one of the
    /// table's data blocks is a corruption error; a block read from storage is
    /// checksummed (its entry count is not checked against an index it did not consult).
    pub fn read_block_at(&self, handle: BlockHandle, trace: &mut ReadTrace) -> Result<Arc<Block>> {
        let key = self.cache_key(handle);
        if let Some(b) = self.cached_block(&key, trace) {
            return Ok(b);
        }
        if handle.end_with_trailer().is_none_or(|e| e > self.data_end) {
            return Err(Error::corruption(
                &self.name,
                format!("block handle {handle:?} past the data"),
            ));
        }
        let raw = self.read_checked(handle, BlockType::Data, trace)?;
        trace.data_misses += 1;
        let block = Arc::new(Block::decode(raw, &self.name)?);
        if let Some(cache) = self.cache.as_ref().filter(|_| !trace.no_fill) {
            cache.insert(key, CacheValue::Data(block.clone()), block.charge());
        }
        Ok(block)
    }

    /// As [`read_block`](Self::read_block) with the index in hand; an iterator walking
    /// the table passes its readahead, through which misses go.
    pub(crate) fn read_block_in(
        &self,
        index: &FenceIndex,
        i: usize,
        trace: &mut ReadTrace,
        mut readahead: Option<&mut Readahead>,
    ) -> Result<Arc<Block>> {
        let handle = index.block(i).handle;
        let key = self.cache_key(handle);
        if let Some(ra) = readahead.as_deref_mut() {
            ra.visit(i);
        }
        if let Some(b) = self.cached_block(&key, trace) {
            if let Some(ra) = readahead {
                ra.hit();
            }
            return Ok(b);
        }
        let block = Arc::new(self.load_block(index, i, trace, readahead)?);
        if let Some(cache) = self.cache.as_ref().filter(|_| !trace.no_fill) {
            cache.insert(key, CacheValue::Data(block.clone()), block.charge());
        }
        Ok(block)
    }

    /// The data block under `key` if the cache holds it, counted as a hit (and as a
    /// warmed hit the first time a prefetched block is read).
    fn cached_block(&self, key: &BlockKey, trace: &mut ReadTrace) -> Option<Arc<Block>> {
        let (b, first_warmed_read) = self
            .cache
            .as_ref()?
            .lookup(key)
            .and_then(CacheValue::read_data)?;
        trace.data_hits += 1;
        trace.warmed_hits += u32::from(first_warmed_read);
        Some(b)
    }

    /// Entries `entries` of data block `i`, for a learned get. A fixed-width block: the
    /// block if it is cached, else only the
    /// chunks holding those entries, in one small read with every chunk's checksum
    /// verified (Bourbon's read of the predicted entries; not cached, being part of a
    /// block). Other blocks: the whole block, through the cache.
    fn read_entries(
        &self,
        index: &FenceIndex,
        i: usize,
        entries: Range<usize>,
        trace: &mut ReadTrace,
    ) -> Result<Arc<Block>> {
        let e = index.block(i);
        let n = index.block_entries(i) as usize;
        let Some(layout) = e
            .fixed
            .filter(|_| entries.start < entries.end && entries.end <= n)
        else {
            return self.read_block_in(index, i, trace, None);
        };
        // A cached block is searched in place: cheaper than copying and checking chunks
        // even out of a mapped file.
        if let Some(b) = self.cached_block(&self.cache_key(e.handle), trace) {
            return Ok(b);
        }
        let (span, _) = layout.chunk_span(n, entries.start, entries.end);
        let at = e.handle.offset + span.start as u64;
        let raw = self.file.read_at(at, span.len())?;
        trace.storage_reads += 1;
        trace.storage_bytes += span.len() as u64;
        trace.chunk_reads += 1;
        let part =
            Block::decode_chunks(raw, layout, n, entries.start, entries.end, &self.name, at)?;
        Ok(Arc::new(part))
    }

    /// Reads, checksums and decodes data block `i` from storage (or from `readahead`).
    fn load_block(
        &self,
        index: &FenceIndex,
        i: usize,
        trace: &mut ReadTrace,
        readahead: Option<&mut Readahead>,
    ) -> Result<Block> {
        let handle = index.block(i).handle;
        let contents = match readahead {
            Some(ra) => {
                let len = usize::try_from(handle.size)
                    .ok()
                    .and_then(|n| n.checked_add(BLOCK_TRAILER_LEN))
                    .ok_or_else(|| Error::corruption(&self.name, "block size overflows"))?;
                let (name, at) = (&self.name, handle.offset);
                ra.read(
                    &self.file,
                    at,
                    len,
                    self.data_end(),
                    trace,
                    |raw| match raw {
                        RawBlock::Owned(raw) => block_contents(raw, BlockType::Data, name, at),
                        RawBlock::InBuffer(raw) => {
                            block_contents_in(raw, BlockType::Data, name, at)
                        }
                    },
                )?
            }
            None => self.read_checked(handle, BlockType::Data, trace)?,
        };
        trace.data_misses += 1;
        let block = Block::decode(contents, &self.name)?;
        if block.fixed_layout() != index.block(i).fixed {
            return Err(Error::corruption(
                &self.name,
                format!("block {i}'s layout differs from the index's"),
            ));
        }
        if block.entry_count() as u64 != index.block_entries(i) {
            return Err(Error::corruption(
                &self.name,
                format!(
                    "block {i} holds {} entries, index says {}",
                    block.entry_count(),
                    index.block_entries(i)
                ),
            ));
        }
        Ok(block)
    }

    /// Where the data blocks end (readahead stops there).
    fn data_end(&self) -> u64 {
        self.data_end
    }

    /// Whether its iterators read ahead (see the field).
    pub fn reads_ahead(&self) -> bool {
        self.readahead
    }

    /// Turns iterators' readahead on or off (tests of either behaviour).
    #[cfg(test)]
    pub(crate) fn set_readahead(&mut self, on: bool) {
        self.readahead = on;
    }

    /// The table's statistics.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// The file number the table was opened with.
    pub fn file_no(&self) -> FileNo {
        self.file_no
    }

    /// Size of the file in bytes.
    pub fn file_size(&self) -> u64 {
        self.file.size()
    }

    /// Replaces the learned index (tests: a wrong model must not change answers).
    #[cfg(test)]
    pub(crate) fn set_learned_index(&mut self, l: Option<LearnedIndex>) {
        self.learned = OnceLock::new();
        if let Some(l) = l {
            let _ = self.learned.set(l);
        }
    }

    /// The learned index, once learned.
    pub fn learned_index(&self) -> Option<&LearnedIndex> {
        self.learned.get()
    }

    /// The file's path, as used in error messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes of index and filter held in memory (not those left to the block cache).
    pub fn pinned_memory(&self) -> usize {
        let index = match &self.index {
            Meta::Pinned(i) => i.memory(),
            Meta::Cached(_) => 0,
        };
        let filter = match &self.filter {
            Some(Meta::Pinned(f)) => f.size(),
            _ => 0,
        };
        index + filter + self.learned.get().map_or(0, |l| l.memory())
    }
}
