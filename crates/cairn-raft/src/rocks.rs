//! RocksDB behind the engine seam (feature `rocksdb`): the store the bench compares cairn
//! with, running the same Raft logic over the same three column families.

use std::path::Path;

use rocksdb::{ColumnFamilyDescriptor, Direction, IteratorMode, Options, ReadOptions, DB};

use crate::engine::{BatchOp, EngineError, EngineView, Family, Pair, RaftEngine, Visit};

fn err(e: rocksdb::Error) -> EngineError {
    EngineError(e.into_string())
}

/// A RocksDB database with the store's three column families (RocksDB's defaults).
pub struct RocksEngine {
    db: DB,
}

impl RocksEngine {
    pub fn open(path: &Path) -> Result<Self, EngineError> {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let cfs = Family::ALL
            .iter()
            .map(|f| ColumnFamilyDescriptor::new(f.name(), Options::default()));
        Ok(RocksEngine {
            db: DB::open_cf_descriptors(&o, path, cfs).map_err(err)?,
        })
    }

    fn cf(&self, f: Family) -> Result<&rocksdb::ColumnFamily, EngineError> {
        self.db
            .cf_handle(f.name())
            .ok_or_else(|| EngineError(format!("no column family {}", f.name())))
    }
}

impl RaftEngine for RocksEngine {
    fn write(&self, ops: Vec<BatchOp>, sync: bool) -> Result<(), EngineError> {
        let mut b = rocksdb::WriteBatch::default();
        for op in &ops {
            match op {
                BatchOp::Put(f, k, v) => b.put_cf(self.cf(*f)?, k, v),
                BatchOp::Delete(f, k) => b.delete_cf(self.cf(*f)?, k),
                BatchOp::DeleteRange(f, s, e) => b.delete_range_cf(self.cf(*f)?, s, e),
            }
        }
        let mut wo = rocksdb::WriteOptions::default();
        wo.set_sync(sync);
        self.db.write_opt(b, &wo).map_err(err)
    }

    fn accepts(&self, op: &BatchOp) -> bool {
        match op {
            BatchOp::DeleteRange(_, s, e) => s <= e,
            _ => true,
        }
    }

    fn view(&self) -> Box<dyn EngineView + '_> {
        Box::new(RocksView {
            engine: self,
            snap: self.db.snapshot(),
        })
    }

    fn describe(&self) -> String {
        "RocksDB (Debian's librocksdb, rocksdb crate 0.20)".into()
    }
}

struct RocksView<'a> {
    engine: &'a RocksEngine,
    snap: rocksdb::Snapshot<'a>,
}

impl RocksView<'_> {
    fn ro(&self, end: Option<&[u8]>) -> ReadOptions {
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&self.snap);
        if let Some(e) = end {
            ro.set_iterate_upper_bound(e.to_vec());
        }
        ro
    }
}

impl EngineView for RocksView<'_> {
    fn get(&self, fam: Family, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        self.snap.get_cf(self.engine.cf(fam)?, key).map_err(err)
    }

    fn scan(
        &self,
        fam: Family,
        start: &[u8],
        end: Option<&[u8]>,
        f: Visit<'_>,
    ) -> Result<(), EngineError> {
        let cf = self.engine.cf(fam)?;
        let it = self.engine.db.iterator_cf_opt(
            cf,
            self.ro(end),
            IteratorMode::From(start, Direction::Forward),
        );
        for item in it {
            let (k, v) = item.map_err(err)?;
            if f(&k, &v).is_break() {
                break;
            }
        }
        Ok(())
    }

    fn last(&self, fam: Family) -> Result<Option<Pair>, EngineError> {
        let cf = self.engine.cf(fam)?;
        let mut it = self
            .engine
            .db
            .iterator_cf_opt(cf, self.ro(None), IteratorMode::End);
        match it.next() {
            Some(Ok((k, v))) => Ok(Some((k.to_vec(), v.to_vec()))),
            Some(Err(e)) => Err(err(e)),
            None => Ok(None),
        }
    }
}
