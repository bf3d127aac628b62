//! The iterator every internal source implements (memtable, table, merged levels), over
//! internal keys in internal order (user key ascending, newest version first).

use crate::Result;

/// A positioned cursor over internal entries. Errors are sticky: once `status()` returns an
/// error, `valid()` is false.
pub trait InternalIterator: Send {
    /// True if positioned at an entry.
    fn valid(&self) -> bool;
    /// Positions at the first entry.
    fn seek_to_first(&mut self);
    /// Positions at the last entry.
    fn seek_to_last(&mut self);
    /// Positions at the first entry whose internal key is >= `ikey`.
    fn seek(&mut self, ikey: &[u8]);
    /// Positions at the last entry whose internal key is <= `ikey`.
    fn seek_for_prev(&mut self, ikey: &[u8]);
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. Requires `valid()`.
    fn prev(&mut self);
    /// The internal key. Requires `valid()`.
    fn key(&self) -> &[u8];
    /// The value. Requires `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}
