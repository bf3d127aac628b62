//! In-memory sanity peer: a BTreeMap behind a RwLock. No storage I/O, so its counters
//! show only user bytes; its results bound what the harness itself costs.

use super::{BenchConfig, Engine, EngineCounters};
use anyhow::Result;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct BTreeEngine {
    map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
    user_bytes: AtomicU64,
}

impl Engine for BTreeEngine {
    fn open(_dir: &Path, _cfg: &BenchConfig) -> Result<Self> {
        Ok(BTreeEngine {
            map: RwLock::new(BTreeMap::new()),
            user_bytes: AtomicU64::new(0),
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.user_bytes
            .fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        self.map.write().insert(key.to_vec(), value.to_vec());
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.map.read().get(key).map(Vec::len))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.map.write().remove(key);
        Ok(())
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut map = self.map.write();
        let doomed: Vec<Vec<u8>> = map
            .range(start.to_vec()..end.to_vec())
            .map(|(k, _)| k.clone())
            .collect();
        for k in doomed {
            map.remove(&k);
        }
        Ok(())
    }

    fn scan(&self, start: &[u8], n: usize) -> Result<usize> {
        let map = self.map.read();
        let mut read = 0;
        for (k, v) in map.range(start.to_vec()..).take(n) {
            // Touch the bytes as a real engine's copy-out would.
            std::hint::black_box((k.len(), v.len()));
            read += 1;
        }
        Ok(read)
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn counters(&self) -> EngineCounters {
        EngineCounters {
            user_bytes_written: self.user_bytes.load(Ordering::Relaxed),
            ..Default::default()
        }
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
