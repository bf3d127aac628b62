//! RusKey's per-level options beside its tuner: how a change of a level's run limit
//! takes effect ([`Transition`]) and how bloom-filter bits are spread over the levels
//! ([`BloomAllocation`], Monkey).

/// How a change of a level's run limit K takes effect (RusKey 4.1-4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Transition {
    /// Merge the level into the next one now; the new K applies to the emptied level (on
    /// the last level, or the deepest one holding data, which has nothing below, at once).
    Greedy,
    /// The new K takes effect when the level next empties (on the last level, or the
    /// deepest one holding data, which never empties, at once). A leveled level (K = 1)
    /// above data merges down a file at a time and may never empty.
    Lazy,
    /// FLSM: sealed runs stay; the active run's capacity becomes C_i / K' at once (sealed
    /// now if already larger).
    Flexible,
}

/// How bloom-filter bits per key are spread over levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BloomAllocation {
    /// The same bits per key at every level.
    Uniform,
    /// Monkey (RusKey 5.2, Dayan et al. 2017): false-positive rates grow by the size ratio
    /// T per level (f_i = T^(i-1) f_1), for the same total memory as uniform allocation.
    Monkey,
}
