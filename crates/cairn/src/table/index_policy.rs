//! Bourbon's seam option: how a table finds the block of a key, by fence pointers or by
//! a learned model ([`IndexPolicy`], `Options::index`), and which tables are learned.

/// How a table finds the data block (and entry) of a key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IndexPolicy {
    /// Fence pointers: binary search of the index block (the baseline).
    #[default]
    Fence,
    /// Bourbon's learned index: tables open with fence pointers; a background learner
    /// trains a Greedy-PLR model (error bound `delta` positions) on a table once it has
    /// lived `wait_ms` (learning guideline 2) and, under [`LearnMode::Cba`], once the
    /// cost-benefit analyzer says its lookups will repay the learning. Point reads then
    /// predict the entry's position and search only `+-delta` entries around it; whenever
    /// the prediction cannot be trusted they fall back to the fence pointers, so answers
    /// never differ. Models are saved beside their tables (`NNNNNN.plr`) and loaded when
    /// the table is next opened. `delta` must be in `1..=65536`.
    Learned {
        /// Error bound of the model, in entries.
        delta: u32,
        /// Which tables to learn.
        mode: LearnMode,
        /// Milliseconds a table must have been readable before it may be learned.
        wait_ms: u32,
    },
}

impl IndexPolicy {
    /// Bourbon's settings: delta 8, cost-benefit analyzer, 50 ms wait.
    pub const BOURBON: IndexPolicy = IndexPolicy::Learned {
        delta: 8,
        mode: LearnMode::Cba,
        wait_ms: 50,
    };

    /// A learned index that learns every table as soon as it is opened for reads.
    pub fn learn_all(delta: u32) -> IndexPolicy {
        IndexPolicy::Learned {
            delta,
            mode: LearnMode::Always,
            wait_ms: 0,
        }
    }
}

/// Which tables the background learner learns (Bourbon's always-learn, no-learn and
/// cost-benefit analyzer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LearnMode {
    /// Every table read after the wait.
    Always,
    /// None (the fence path only; the analyzer's statistics are still collected).
    Never,
    /// Tables whose expected benefit over their remaining life exceeds the learning cost.
    #[default]
    Cba,
}

/// Largest error bound of [`IndexPolicy::Learned`].
pub const MAX_LEARNED_DELTA: u32 = 1 << 16;
