//! Typed ids: a column family id ([`CfId`]).
//!
//! It was a bare `u32` before; wrapping it keeps a column family id from being passed
//! where a level, a count or another integer is expected. The encodings are unchanged:
//! wherever one is written (WAL batches, manifest edits, trace files, file names) the raw
//! integer is written, taken with `get`.

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

impl From<u32> for CfId {
    fn from(id: u32) -> Self {
        CfId(id)
    }
}

impl From<CfId> for u32 {
    fn from(id: CfId) -> Self {
        id.0
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
            assert_eq!(CfId::from(raw), id);
        }
        assert_eq!(CfId::DEFAULT.get(), 0);
        assert_eq!(CfId::default(), CfId::DEFAULT);
    }

    #[test]
    fn display_is_the_raw_number() {
        assert_eq!(CfId::new(3).to_string(), "3");
        assert_eq!(CfId::DEFAULT.to_string(), "0");
        // Width and fill apply as they do to the integer.
        assert_eq!(format!("{:>4}", CfId::new(7)), "   7");
    }

    #[test]
    fn ids_order_as_their_numbers() {
        assert!(CfId::new(1) < CfId::new(2));
        assert!(CfId::DEFAULT < CfId::new(1));
        let mut ids = vec![CfId::new(30), CfId::new(4), CfId::new(17)];
        ids.sort();
        assert_eq!(ids, [4, 17, 30].map(CfId::new));
    }

    #[test]
    fn ids_hash_as_values() {
        let set: HashSet<CfId> = [CfId::new(1), CfId::new(1), CfId::new(2)].into();
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn ids_are_their_integers_in_memory() {
        assert_eq!(std::mem::size_of::<CfId>(), 4);
    }
}
