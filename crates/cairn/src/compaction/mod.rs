//! Compaction: choosing the next unit of work from an immutable version ([`picker`]) and
//! doing it ([`merge`]).

pub mod merge;
pub mod picker;

pub use picker::{manual, pick, LevelShape, Task};
