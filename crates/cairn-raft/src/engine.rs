//! The key-value engine under the Raft store: cairn, or (feature `rocksdb`, for the
//! comparison the bench makes) RocksDB, behind one seam, so both run the same Raft logic.

use std::ops::ControlFlow;

/// The three column families of a node's store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// The log, keyed by big-endian index.
    Log,
    /// Vote, committed and purged ids, applied state.
    Meta,
    /// The state machine's pairs.
    Data,
}

impl Family {
    pub(crate) const ALL: [Family; 3] = [Family::Log, Family::Meta, Family::Data];

    /// The column family's name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Log => "raft_log",
            Family::Meta => "raft_meta",
            Family::Data => "raft_data",
        }
    }
}

/// One write of an atomic batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOp {
    Put(Family, Vec<u8>, Vec<u8>),
    Delete(Family, Vec<u8>),
    /// Every key in `[start, end)`.
    DeleteRange(Family, Vec<u8>, Vec<u8>),
}

/// A visitor of scanned pairs: `Break` stops the scan.
pub type Visit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> ControlFlow<()>;

/// A key and its value.
pub type Pair = (Vec<u8>, Vec<u8>);

/// An engine's failure, with its message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EngineError(pub String);

impl From<cairn::Error> for EngineError {
    fn from(e: cairn::Error) -> Self {
        EngineError(e.to_string())
    }
}

/// What the Raft store needs of an engine.
pub trait RaftEngine: Send + Sync + 'static {
    /// Applies `ops` atomically; durable before it returns when `sync`.
    fn write(&self, ops: Vec<BatchOp>, sync: bool) -> Result<(), EngineError>;
    /// Whether the engine would take `op` (a key or value within its limits, a range
    /// whose start is not after its end): a refused request must change nothing, on every
    /// node alike, so it is checked before it joins a batch.
    fn accepts(&self, op: &BatchOp) -> bool;
    /// A consistent view of every family as of now.
    fn view(&self) -> Box<dyn EngineView + '_>;
    /// The engine's name and version (reports).
    fn describe(&self) -> String;
}

/// Reads at one moment.
pub trait EngineView {
    fn get(&self, fam: Family, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError>;
    /// Calls `f` on each pair of `fam` with a key in `[start, end)` (`end` None: to the
    /// last), in key order, until it breaks.
    fn scan(
        &self,
        fam: Family,
        start: &[u8],
        end: Option<&[u8]>,
        f: Visit<'_>,
    ) -> Result<(), EngineError>;
    /// The last pair of `fam`.
    fn last(&self, fam: Family) -> Result<Option<Pair>, EngineError>;
}

/// cairn: one database, the families as column families.
pub(crate) struct CairnEngine {
    db: cairn::Db,
    /// Indexed by `Family as usize`.
    cfs: Vec<cairn::ColumnFamily>,
}

impl CairnEngine {
    pub(crate) fn open(path: &std::path::Path, opts: cairn::Options) -> cairn::Result<Self> {
        let db = cairn::Db::open(path, opts)?;
        let cfs = Family::ALL
            .iter()
            .map(|f| match db.cf(f.name()) {
                Some(cf) => Ok(cf),
                None => db.create_cf(f.name()),
            })
            .collect::<cairn::Result<_>>()?;
        Ok(CairnEngine { db, cfs })
    }

    fn cf(&self, f: Family) -> &cairn::ColumnFamily {
        &self.cfs[f as usize]
    }

    fn add(&self, b: &mut cairn::WriteBatch, op: &BatchOp) -> cairn::Result<()> {
        match op {
            BatchOp::Put(f, k, v) => b.put_cf(self.cf(*f).id(), k, v),
            BatchOp::Delete(f, k) => b.delete_cf(self.cf(*f).id(), k),
            BatchOp::DeleteRange(f, s, e) => b.delete_range_cf(self.cf(*f).id(), s, e),
        }
    }
}

impl RaftEngine for CairnEngine {
    fn write(&self, ops: Vec<BatchOp>, sync: bool) -> Result<(), EngineError> {
        let mut b = cairn::WriteBatch::new();
        for op in &ops {
            self.add(&mut b, op)?;
        }
        let wo = cairn::WriteOptions {
            sync,
            ..cairn::WriteOptions::default()
        };
        Ok(self.db.write(&wo, b)?)
    }

    fn accepts(&self, op: &BatchOp) -> bool {
        self.add(&mut cairn::WriteBatch::new(), op).is_ok()
    }

    fn view(&self) -> Box<dyn EngineView + '_> {
        Box::new(CairnView {
            engine: self,
            snapshot: self.db.snapshot(),
        })
    }

    fn describe(&self) -> String {
        format!("cairn {}", env!("CARGO_PKG_VERSION"))
    }
}

struct CairnView<'a> {
    engine: &'a CairnEngine,
    snapshot: cairn::Snapshot,
}

impl CairnView<'_> {
    fn ro(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> cairn::ReadOptions {
        cairn::ReadOptions {
            snapshot: Some(self.snapshot.clone()),
            lower_bound: start.map(<[u8]>::to_vec),
            upper_bound: end.map(<[u8]>::to_vec),
            ..cairn::ReadOptions::default()
        }
    }
}

impl EngineView for CairnView<'_> {
    fn get(&self, fam: Family, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        let e = self.engine;
        Ok(e.db.get_opt(&self.ro(None, None), e.cf(fam), key)?)
    }

    fn scan(
        &self,
        fam: Family,
        start: &[u8],
        end: Option<&[u8]>,
        f: Visit<'_>,
    ) -> Result<(), EngineError> {
        let e = self.engine;
        let mut it = e.db.iter(&self.ro(Some(start), end), e.cf(fam))?;
        it.seek(start);
        while it.valid() {
            if f(it.key(), it.value()).is_break() {
                return Ok(());
            }
            it.next();
        }
        Ok(it.status()?)
    }

    fn last(&self, fam: Family) -> Result<Option<Pair>, EngineError> {
        let e = self.engine;
        let mut it = e.db.iter(&self.ro(None, None), e.cf(fam))?;
        it.seek_to_last();
        if it.valid() {
            return Ok(Some((it.key().to_vec(), it.value().to_vec())));
        }
        it.status()?;
        Ok(None)
    }
}
