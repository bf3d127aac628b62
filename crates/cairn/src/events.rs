//! Flush and compaction events: what Leaper, AC-Key and Bourbon react to.

use std::cell::Cell;
use std::sync::Arc;

use crate::ids::CfId;
use crate::ids::FileNo;
use crate::table::BlockRange;
use crate::{Error, Result};

/// A table written by a flush or compaction, with the key range of every data block.
#[derive(Clone, Debug)]
pub struct OutputFile {
    /// File number.
    pub file_no: FileNo,
    /// Level it was added to.
    pub level: usize,
    /// Size in bytes.
    pub size: u64,
    /// Smallest user key.
    pub smallest: Vec<u8>,
    /// Largest user key.
    pub largest: Vec<u8>,
    /// Every data block written, with its handle and key range.
    pub blocks: Vec<BlockRange>,
}

/// An input table of a compaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFile {
    /// File number.
    pub file_no: FileNo,
    /// Level it came from.
    pub level: usize,
    /// Size in bytes.
    pub size: u64,
}

/// A flush of one memtable of one column family.
#[derive(Clone, Debug)]
pub struct FlushInfo {
    /// Column family id.
    pub cf: CfId,
    /// Column family name.
    pub cf_name: String,
    /// Memtable id.
    pub memtable_id: u64,
    /// Tables written (empty at begin).
    pub outputs: Vec<OutputFile>,
}

/// One compaction job.
#[derive(Clone, Debug)]
pub struct CompactionInfo {
    /// Column family id.
    pub cf: CfId,
    /// Column family name.
    pub cf_name: String,
    /// Level the inputs were taken from.
    pub input_level: usize,
    /// Level the outputs go to.
    pub output_level: usize,
    /// Why it ran.
    pub reason: &'static str,
    /// Input tables (all levels).
    pub inputs: Vec<InputFile>,
    /// Tables written (empty at begin; empty for a trivial move, whose input is moved).
    pub outputs: Vec<OutputFile>,
    /// True if the input was moved to the output level without rewriting.
    pub trivial_move: bool,
}

/// Receives flush and compaction events on the background thread that runs them. Keep
/// handlers short: they delay the background work. A handler may read the database; its
/// writes and the calls that wait for background work (`flush`, `compact_range`,
/// `drop_cf`, `run_background_work`, `proactive_compact`) fail with
/// [`Error::InvalidArgument`] there, since they can wait for the work that is running the
/// handler (a write may have to wait for a flush, or queue behind a writer that does).
/// Other databases may be used freely.
pub trait EventListener: Send + Sync {
    /// A flush starts.
    fn on_flush_begin(&self, _info: &FlushInfo) {}
    /// A flush finished and its tables are installed.
    fn on_flush_end(&self, _info: &FlushInfo) {}
    /// A compaction starts.
    fn on_compaction_begin(&self, _info: &CompactionInfo) {}
    /// A compaction finished and its result is installed.
    fn on_compaction_end(&self, _info: &CompactionInfo) {}
}

thread_local! {
    /// The database (its address) whose listener this thread is inside, or 0.
    static IN_CALLBACK: Cell<usize> = const { Cell::new(0) };
}

/// Calls `f` on every listener of database `owner` (any address unique to it), with the
/// thread marked as inside its callback.
pub(crate) fn notify(
    owner: usize,
    listeners: &[Arc<dyn EventListener>],
    f: impl Fn(&dyn EventListener),
) {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_CALLBACK.set(self.0);
        }
    }
    if listeners.is_empty() {
        return;
    }
    let _restore = Restore(IN_CALLBACK.replace(owner));
    for l in listeners {
        f(l.as_ref());
    }
}

/// Refuses `what` on database `owner` inside one of its listeners' callbacks (see
/// [`EventListener`]).
pub(crate) fn refuse_in_callback(owner: usize, what: &str) -> Result<()> {
    if IN_CALLBACK.get() == owner {
        return Err(Error::InvalidArgument(format!(
            "{what} cannot be called from the database's own event listener: it could \
             wait for the background work that is running the listener"
        )));
    }
    Ok(())
}
