//! Typed ids: a column family id ([`CfId`]) and a file number ([`FileNo`]).
//!
//! Both were bare integers (`u32` and `u64`) before; wrapping them keeps either from being
//! passed where another integer (a level, a sequence number, a size) is expected. An id
//! is made only by name (`new`), never by `into()` from any integer; the raw value comes
//! back by `get` or `From`. Their
//! encodings are unchanged: wherever one is written (WAL batches, manifest edits, table
//! properties, trace files, file names) the raw integer is written, taken with `get`.

use std::fmt;

/// A column family's id. `0` ([`CfId::DEFAULT`]) is the `default` family; the others are
/// given out in order of creation and never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct CfId(u32);

impl CfId {
    /// The `default` column family (id 0).
    pub const DEFAULT: CfId = CfId(0);

    /// The id with raw value `id`.
    pub const fn new(id: u32) -> Self {
        CfId(id)
    }

    /// The raw value.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl Default for CfId {
    fn default() -> Self {
        CfId::DEFAULT
    }
}

impl fmt::Display for CfId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<CfId> for u32 {
    fn from(id: CfId) -> Self {
        id.0
    }
}

/// A file's number: the number in a table's, a log's, a value log's or a manifest's file
/// name. The version set gives them out and never reuses one (tools opening a table alone
/// may name it by any number). No integer turns into one unnamed:
///
/// ```compile_fail
/// let sequence: u64 = 5;
/// let no: cairn::FileNo = sequence.into();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct FileNo(u64);

impl FileNo {
    /// The file number with raw value `no`.
    pub const fn new(no: u64) -> Self {
        FileNo(no)
    }

    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The number after this one (the allocator's next).
    pub const fn next(self) -> Self {
        FileNo(self.0 + 1)
    }
}

impl fmt::Display for FileNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<FileNo> for u64 {
    fn from(no: FileNo) -> Self {
        no.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn cf_id_round_trips() {
        for raw in [0, 1, 7, u32::MAX] {
            let id = CfId::new(raw);
            assert_eq!(id.get(), raw);
            assert_eq!(u32::from(id), raw);
        }
        assert_eq!(CfId::DEFAULT.get(), 0);
        assert_eq!(CfId::default(), CfId::DEFAULT);
    }

    #[test]
    fn file_no_round_trips() {
        for raw in [0, 1, 42, u64::MAX] {
            let no = FileNo::new(raw);
            assert_eq!(no.get(), raw);
            assert_eq!(u64::from(no), raw);
        }
        assert_eq!(FileNo::new(41).next(), FileNo::new(42));
    }

    #[test]
    fn display_is_the_raw_number() {
        assert_eq!(CfId::new(3).to_string(), "3");
        assert_eq!(CfId::DEFAULT.to_string(), "0");
        assert_eq!(FileNo::new(123456).to_string(), "123456");
        // Width and fill apply as they do to the integer (file names zero-pad).
        assert_eq!(format!("{:06}", FileNo::new(42)), "000042");
        assert_eq!(format!("{:>4}", CfId::new(7)), "   7");
    }

    #[test]
    fn ids_order_as_their_numbers() {
        assert!(CfId::new(1) < CfId::new(2));
        assert!(CfId::DEFAULT < CfId::new(1));
        let mut ids = vec![CfId::new(30), CfId::new(4), CfId::new(17)];
        ids.sort();
        assert_eq!(ids, [4, 17, 30].map(CfId::new));
        assert!(FileNo::new(9) < FileNo::new(10));
        let mut nos = vec![FileNo::new(30), FileNo::new(4), FileNo::new(17)];
        nos.sort();
        assert_eq!(nos, [4, 17, 30].map(FileNo::new));
        assert_eq!(FileNo::new(5).max(FileNo::new(8)), FileNo::new(8));
    }

    #[test]
    fn ids_hash_as_values() {
        let set: HashSet<CfId> = [CfId::new(1), CfId::new(1), CfId::new(2)].into();
        assert_eq!(set.len(), 2);
        let set: HashSet<FileNo> = [FileNo::new(1), FileNo::new(1)].into();
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn ids_are_their_integers_in_memory() {
        assert_eq!(std::mem::size_of::<CfId>(), 4);
        assert_eq!(std::mem::size_of::<FileNo>(), 8);
    }
}
