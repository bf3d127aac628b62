//! Compaction: choosing the next unit of work from an immutable version ([`picker`]) and
//! doing it ([`merge`]), cut into ranges that run in parallel ([`split`]).

pub mod merge;
pub mod picker;
pub mod split;

pub use picker::{manual, pick, pick_free, LevelShape, Task};
