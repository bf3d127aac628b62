//! The fuzz target for whole tables, opened from a scratch file, and the resealing of a
//! table's checksums.

use super::*;
use crate::ids::FileNo;

/// A per-thread scratch directory for the targets that need files; removed with the
/// thread.
pub(super) struct Scratch {
    pub(super) dir: PathBuf,
    pub(super) env: StorageEnv,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(super) static SCRATCH_NO: AtomicU64 = AtomicU64::new(0);

pub(super) fn new_scratch() -> Scratch {
    let dir = std::env::temp_dir().join(format!(
        "cairn-fuzz-{}-{}",
        std::process::id(),
        SCRATCH_NO.fetch_add(1, AtomicOrdering::Relaxed)
    ));
    let env = StorageEnv::new(&dir, &[], 0.0).expect("scratch directory for fuzzing");
    Scratch { dir, env }
}

thread_local! {
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// Writes `data` to a scratch file and opens it for reads `n` times; the file is unlinked
/// before this returns (the open descriptors keep its contents).
pub(super) fn scratch_files(data: &[u8], n: usize) -> Vec<RandomAccessFile> {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let s = s.get_or_insert_with(new_scratch);
        let path = s.dir.join("000001.sst");
        std::fs::write(&path, data).expect("write scratch table");
        let files = (0..n)
            .map(|_| {
                s.env
                    .open_read(&path, FileKind::Table, 0, Some(0), false)
                    .expect("open scratch table")
            })
            .collect();
        let _ = std::fs::remove_file(&path);
        files
    })
}

/// A table file: open it (fence pointers with a block cache, and a learned index trained
/// at open), read every entry forwards and a few backwards, seek and get keys. When its
/// keys are in order, the learned index must answer like the fence pointers.
pub fn table(data: &[u8]) {
    table_once(data);
    let sealed = reseal_table(data);
    if sealed != data {
        table_once(&sealed);
    }
}

pub(super) fn table_once(data: &[u8]) {
    let mut files = scratch_files(data, 2);
    let learned_file = files.pop().expect("two files");
    let fence_file = files.pop().expect("two files");
    let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(1 << 20, 1));
    let Some(t) = typed_io(
        "table open",
        Table::open(fence_file, FileNo::new(1), Some(cache)),
    ) else {
        return;
    };
    let t = Arc::new(t);
    let props = t.properties().clone();
    let _ = (
        t.pinned_memory(),
        t.file_size(),
        t.name(),
        t.usage().snapshot(),
    );

    // Every entry, in order. A table cannot hold more entries than 10-byte slices.
    let mut it = t.iter();
    it.seek_to_first();
    let (mut n, mut sorted) = (0u64, true);
    let mut sample: Vec<Vec<u8>> = Vec::new();
    let mut prev: Option<Vec<u8>> = None;
    while it.valid() {
        n += 1;
        assert!(n <= data.len() as u64 / 10 + 1, "iterator does not end");
        let k = it.key().to_vec();
        let _ = it.value();
        if let Some(p) = &prev {
            sorted &= cmp_internal(p, &k) == std::cmp::Ordering::Less;
        }
        if sample.len() < 24 || n % 17 == 0 {
            sample.push(k.clone());
        }
        prev = Some(k);
        it.next();
    }
    let complete = typed_io("table iterator", it.status()).is_some();
    assert!(
        !complete || n == props.num_entries,
        "{n} entries read, {props:?}"
    );
    it.seek_to_last();
    for _ in 0..8 {
        if !it.valid() {
            break;
        }
        it.prev();
    }
    let _ = (it.status(), it.trace().data_misses);
    for k in keys_from(data) {
        sample.push(make_lookup_key(&k, MAX_SEQ));
    }
    // Whether each block ends with the key the index says (a forged table may differ;
    // then the two index paths may differ too).
    let mut trace = ReadTrace::default();
    let mut consistent = true;
    let index = t.index().expect("opened tables keep their index");
    for i in 0..index.num_blocks() {
        match typed_io("table block", t.read_block(i, &mut trace)) {
            Some(b) => consistent &= b.key(b.entry_count() - 1) == index.block(i).last_key[..],
            None => consistent = false,
        }
    }
    let mut fence_answers = Vec::new();
    for k in &sample {
        let mut it = t.iter();
        it.seek(k);
        it.seek_for_prev(k);
        let _ = it.status();
        let _ = typed_io("filter", t.may_contain(crate::types::user_key(k)));
        fence_answers.push(typed_io("table get", t.get(k, &mut trace)));
    }

    // Learned index trained at open (reads and checks every block again).
    let Some(l) = typed_io(
        "learned table open",
        Table::open_with(
            learned_file,
            FileNo::new(2),
            None,
            IndexPolicy::learn_all(2),
        ),
    ) else {
        return;
    };
    assert!(l.is_learned());
    for (k, fence) in sample.iter().zip(&fence_answers) {
        let learned = typed_io("learned get", l.get(k, &mut trace));
        if let (true, Some(a), Some(b)) = (complete && sorted && consistent, fence, &learned) {
            assert_eq!(a, b, "learned index answers differently for key {k:?}");
        }
    }
}

/// Block checksum as the trailer stores it: CRC32C of contents then the type byte.
pub(super) fn block_crc(contents: &[u8], ty: u8) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(contents), &[ty])
}

/// Rewrites the trailer checksum of the block `[off, off + size)` (type byte kept).
pub(super) fn reseal_block(b: &mut [u8], off: u64, size: u64, limit: usize) -> Option<Vec<u8>> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    // A size of 0 is the handle of an absent filter.
    if size == 0 || end.checked_add(5)? > limit {
        return None;
    }
    let crc = block_crc(&b[start..end], b[end]);
    b[end + 1..end + 5].copy_from_slice(&crc.to_le_bytes());
    Some(b[start..end].to_vec())
}

/// The table with its footer, meta-block and data-block checksums recomputed.
pub(super) fn reseal_table(data: &[u8]) -> Vec<u8> {
    let mut b = data.to_vec();
    let Some(footer_at) = b.len().checked_sub(FOOTER_LEN) else {
        return b;
    };
    let f = &b[footer_at..];
    let crc = crc32c::crc32c_append(crc32c::crc32c(&f[..48]), &f[52..]);
    // Handles: index, filter, properties (offset and size each).
    let h: Vec<u64> = (0..6).map(|i| u64_le(f, 8 * i).unwrap_or(0)).collect();
    b[footer_at + 48..footer_at + 52].copy_from_slice(&crc.to_le_bytes());
    for i in [1, 2] {
        reseal_block(&mut b, h[2 * i], h[2 * i + 1], footer_at);
    }
    let Some(index) = reseal_block(&mut b, h[0], h[1], footer_at) else {
        return b;
    };
    if let Ok(ib) = Block::decode_with(index, NAME, true) {
        for i in 0..ib.entry_count().min(4096) {
            let mut pos = 0;
            let v = ib.entry(i).1;
            if let (Some(off), Some(size)) = (get_varint(v, &mut pos), get_varint(v, &mut pos)) {
                reseal_block(&mut b, off, size, footer_at);
            }
        }
    }
    b
}
