//! Flush and compaction events: what Leaper, AC-Key and Bourbon react to.

use std::cell::Cell;
use std::sync::Arc;

use crate::table::BlockRange;
use crate::{Error, Result};

/// A table written by a flush or compaction, with the key range of every data block.
#[derive(Clone, Debug)]
pub struct OutputFile {
    /// File number.
    pub file_no: u64,
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
    pub file_no: u64,
    /// Level it came from.
    pub level: usize,
    /// Size in bytes.
    pub size: u64,
}

/// A flush of one memtable of one column family.
#[derive(Clone, Debug)]
pub struct FlushInfo {
    /// Column family id.
    pub cf: u32,
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
    pub cf: u32,
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
/// handlers short: they delay the background work. A handler may read the database and
/// write to it, but calls that wait for background work (`flush`, `compact_range`,
/// `drop_cf`, `run_background_work`, and a write that would have to wait for a flush)
/// fail with [`Error::InvalidArgument`] there: the work they wait for is the handler's
/// own caller, so they would wait forever.
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
    /// Whether this thread is inside a listener's callback.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Calls `f` on every listener, with the thread marked as inside a callback.
pub(crate) fn notify(listeners: &[Arc<dyn EventListener>], f: impl Fn(&dyn EventListener)) {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_CALLBACK.set(self.0);
        }
    }
    if listeners.is_empty() {
        return;
    }
    let _restore = Restore(IN_CALLBACK.replace(true));
    for l in listeners {
        f(l.as_ref());
    }
}

/// Refuses `what` inside a listener's callback (see [`EventListener`]).
pub(crate) fn refuse_in_callback(what: &str) -> Result<()> {
    if IN_CALLBACK.get() {
        return Err(Error::InvalidArgument(format!(
            "{what} cannot be called from an event listener: it would wait for the \
             background work that is running the listener"
        )));
    }
    Ok(())
}
