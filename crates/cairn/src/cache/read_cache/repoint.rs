//! Keeping the read cache's entries true as the tree changes: a flush rewrites KV values
//! and repoints KP entries of the keys it wrote (and bumps the generation readers check),
//! range deletions drop what they cover, and a compaction repoints KP entries and replaces
//! its inputs' cached blocks by its outputs'.

use super::*;
use crate::ids::CfId;
use crate::ids::FileNo;

/// The table and block of `ukey` among freshly written tables, from their block ranges.
pub(super) fn locate(outputs: &[OutputFile], ukey: &[u8]) -> Option<(FileNo, BlockHandle)> {
    let f = outputs
        .iter()
        .find(|o| o.smallest.as_slice() <= ukey && ukey <= o.largest.as_slice())?;
    let i = f.blocks.partition_point(|b| b.last_key.as_slice() < ukey);
    let b = f.blocks.get(i)?;
    (b.first_key.as_slice() <= ukey).then_some((f.file_no, b.handle))
}

impl ReadCache {
    /// Brings cached entries up to date with a flushed memtable (section 4.1.2): KV
    /// entries take the flushed value, KP entries point into the new level-0 tables
    /// (`outputs`); deleted keys are dropped. Call after the tables are written and before
    /// their version is installed (pointers to them are followed only once it is).
    pub fn on_flush(&self, cf: CfId, mem: &Arc<Memtable>, outputs: &[OutputFile]) {
        let mut st = self.state.lock();
        self.generation.fetch_add(1, Ordering::SeqCst);
        let prefix = cf.get().to_be_bytes();
        let cached = st.kv.len() + st.kp.len();
        let mut it = mem.iter();
        if cached < mem.num_entries() {
            // Fewer cached keys than flushed ones: look each cached key up.
            let keys: Vec<Vec<u8>> = st
                .kv
                .keys()
                .into_iter()
                .chain(st.kp.keys())
                .filter(|k| k.starts_with(&prefix))
                .collect();
            for k in keys {
                let ukey = &k[4..];
                it.seek(&make_lookup_key(ukey, MAX_SEQ));
                if !it.valid() {
                    continue;
                }
                if let Some(p) = parse_internal_key(it.key()).filter(|p| p.user_key == ukey) {
                    self.apply_flushed(&mut st, &k, p.seq, p.value_kind(), it.value(), outputs);
                }
            }
        } else {
            it.seek_to_first();
            let mut last: Option<Vec<u8>> = None;
            while it.valid() {
                if let Some(p) = parse_internal_key(it.key()) {
                    if last.as_deref() != Some(p.user_key) {
                        let k = point_key(cf, p.user_key);
                        if st.kv.contains(&k) || st.kp.contains(&k) {
                            self.apply_flushed(
                                &mut st,
                                &k,
                                p.seq,
                                p.value_kind(),
                                it.value(),
                                outputs,
                            );
                        }
                        last = Some(p.user_key.to_vec());
                    }
                }
                it.next();
            }
        }
        if let Some(d) = mem.range_dels() {
            Self::forget_deleted(&mut st, cf, &d);
        }
        self.shrink(&mut st);
    }

    /// Drops the cached entries of family `cf` that a flushed range deletion deletes
    /// (readers met the deletion in the memtable until now).
    pub(super) fn forget_deleted(st: &mut State, cf: CfId, dels: &crate::range_del::RangeDels) {
        let prefix = cf.get().to_be_bytes();
        let deleted = |k: &[u8], seq: u64| dels.max_cover(&k[4..], u64::MAX) > seq;
        let kv: Vec<Vec<u8>> = st
            .kv
            .keys()
            .into_iter()
            .filter(|k| k.starts_with(&prefix))
            .filter(|k| st.kv.peek(k).is_some_and(|s| deleted(k, s.value.seq)))
            .collect();
        let kp: Vec<Vec<u8>> = st
            .kp
            .keys()
            .into_iter()
            .filter(|k| k.starts_with(&prefix))
            .filter(|k| st.kp.peek(k).is_some_and(|s| deleted(k, s.value.ptr.seq)))
            .collect();
        for k in kv {
            st.kv.remove(&k);
        }
        for k in kp {
            st.kp.remove(&k);
        }
    }

    pub(super) fn apply_flushed(
        &self,
        st: &mut State,
        k: &[u8],
        seq: u64,
        kind: Option<ValueKind>,
        value: &[u8],
        outputs: &[OutputFile],
    ) {
        let k = k.to_vec();
        let klen = k.len() - 4;
        // The flushed version is found in the newest level-0 run: one run probed.
        let m = 1;
        if kind != Some(ValueKind::Value) {
            st.kv.remove(&k);
            st.kp.remove(&k);
            return;
        }
        st.kv.update(&k, |v| {
            v.value = value.to_vec();
            v.seq = seq;
            v.m = m;
            let c = kv_charge(klen, value);
            (c, efficiency(EntryKind::Kv, m, c))
        });
        if st.kp.contains(&k) {
            match locate(outputs, &k[4..]) {
                Some((file_no, block)) => st.kp.update(&k, |v| {
                    v.ptr = KpPointer {
                        file_no,
                        block,
                        seq,
                        m,
                        value: None,
                    };
                    v.inline = (value.len() <= POINTER_BYTES).then(|| value.to_vec());
                    let c = kp_charge(klen);
                    (c, kp_efficiency(v, c))
                }),
                None => drop(st.kp.remove(&k)),
            }
        }
    }

    /// Drops every cached point entry of family `cf` whose key lies in one of `ranges`
    /// (inclusive), around `publish`, which makes newer versions of them visible below the
    /// memtables (an ingest, whose tables [`on_flush`](Self::on_flush)'s syncing never
    /// sees). The cache stays locked throughout, so no lookup meets an old entry once the
    /// new versions are visible, and the generation moves before and after `publish`, so
    /// no read that began before caches what it found.
    pub fn forget_ranges_around(
        &self,
        cf: CfId,
        ranges: &[(&[u8], &[u8])],
        publish: impl FnOnce(),
    ) {
        let bounds: Vec<(Vec<u8>, Vec<u8>)> = ranges
            .iter()
            .map(|(lo, hi)| (point_key(cf, lo), point_key(cf, hi)))
            .collect();
        let mut st = self.state.lock();
        self.generation.fetch_add(1, Ordering::SeqCst);
        let inside = |k: &Vec<u8>| bounds.iter().any(|(lo, hi)| k >= lo && k <= hi);
        let keys: Vec<Vec<u8>> = st
            .kv
            .keys()
            .into_iter()
            .chain(st.kp.keys())
            .filter(inside)
            .collect();
        for k in keys {
            st.kv.remove(&k);
            st.kp.remove(&k);
        }
        publish();
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Repoints KP entries into a compaction's output tables (section 4.1.2); entries
    /// whose key is not found there are dropped. Call after the new version is installed;
    /// bumps the generation so that no read that began before leaves a pointer into an
    /// input table.
    pub fn on_compaction(&self, cf: CfId, inputs: &[FileNo], outputs: &[OutputFile]) {
        let inputs: HashSet<FileNo> = inputs.iter().copied().collect();
        let prefix = cf.get().to_be_bytes();
        let mut st = self.state.lock();
        // A reader that found its entry in an input table must not cache a pointer to it.
        self.generation.fetch_add(1, Ordering::SeqCst);
        let keys: Vec<Vec<u8>> = st
            .kp
            .keys()
            .into_iter()
            .filter(|k| k.starts_with(&prefix))
            .filter(|k| {
                st.kp
                    .peek(k)
                    .is_some_and(|s| inputs.contains(&s.value.ptr.file_no))
            })
            .collect();
        for k in keys {
            match locate(outputs, &k[4..]) {
                Some((file_no, block)) => st.kp.update(&k, |v| {
                    v.ptr.file_no = file_no;
                    v.ptr.block = block;
                    v.ptr.value = None;
                    let c = kp_charge(k.len() - 4);
                    (c, kp_efficiency(v, c))
                }),
                None => drop(st.kp.remove(&k)),
            }
        }
    }

    /// A collector of replacements for the cached data blocks of a compaction's input
    /// tables, to hand to the compaction's table writers; `None` if none is cached.
    pub fn block_replacer(&self, inputs: &[FileNo]) -> Option<BlockReplacer> {
        let inputs: HashSet<FileNo> = inputs.iter().copied().collect();
        let st = self.state.lock();
        let cached = st
            .blocks
            .keys()
            .into_iter()
            .filter(|k| inputs.contains(&k.file_no))
            .filter_map(|k| {
                let s = st.blocks.peek(&k)?;
                Some((k, s.value.data()?.clone()))
            })
            .collect();
        drop(st);
        BlockReplacer::new(cached)
    }

    /// Replaces cached blocks of compacted tables by the chosen new blocks (the old ones
    /// would only be dropped when their files are deleted). An old block evicted
    /// meanwhile is not replaced.
    pub fn replace_blocks(&self, replacer: BlockReplacer) {
        let mut st = self.state.lock();
        for (old, new, block) in replacer.into_replacements() {
            let Some(s) = st.blocks.remove(&old) else {
                continue;
            };
            if st.blocks.contains(&new) {
                continue;
            }
            let charge = block.charge();
            let e = efficiency(EntryKind::Block, 0, charge);
            if charge <= s.charge || self.make_room(&mut st, EntryKind::Block, charge) {
                st.blocks.insert(new, CacheValue::Data(block), charge, e);
                st.totals.block_replacements += 1;
            }
        }
    }
}
