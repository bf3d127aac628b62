//! How one table's keys become the numbers its model is trained on.
//!
//! [`key_to_u64`] reads a key's first 8 bytes, so keys that agree on those (`user:0001`,
//! `user:0002`, or integers zero-padded to 16 bytes) would all map to one number and the
//! model could not tell them apart. Every key of a table lies between its smallest and its
//! largest key, so it begins with their common prefix: dropping that prefix first loses
//! no order and puts the 8 bytes where the keys differ.

use smallvec::SmallVec;

use super::key_to_u64;

/// The key numbering of one table: the common prefix of its keys is dropped, the next
/// 8 bytes are the number. A prefix of up to 16 bytes is held inline, so numbering a key
/// reads no memory beyond the model's own (with thousands of tables the models are not
/// all in the CPU caches, and each pointer followed is a likely miss).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeySpace {
    prefix: SmallVec<[u8; 16]>,
}

/// The longest prefix common to `a` and `b`.
fn common_prefix<'a>(a: &'a [u8], b: &[u8]) -> &'a [u8] {
    let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    &a[..n]
}

impl KeySpace {
    /// The numbering of keys between `smallest` and `largest` (user keys).
    pub fn spanning(smallest: &[u8], largest: &[u8]) -> Self {
        KeySpace {
            prefix: SmallVec::from_slice(common_prefix(smallest, largest)),
        }
    }

    /// The numbering that drops `prefix` (as saved with a model).
    pub fn with_prefix(prefix: Vec<u8>) -> Self {
        KeySpace {
            prefix: SmallVec::from_slice(&prefix),
        }
    }

    /// The dropped prefix.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// The number of `user_key`, or `None` if it does not begin with the prefix (it lies
    /// outside the table's key range).
    pub fn number(&self, user_key: &[u8]) -> Option<u64> {
        user_key
            .strip_prefix(self.prefix.as_slice())
            .map(key_to_u64)
    }

    /// Bytes held in memory.
    pub fn memory(&self) -> usize {
        if self.prefix.spilled() {
            self.prefix.capacity()
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_the_common_prefix() {
        let s = KeySpace::spanning(b"user:000017", b"user:000942");
        assert_eq!(s.prefix(), b"user:000");
        assert_eq!(s.number(b"user:000500"), Some(key_to_u64(b"500")));
        assert_eq!(s.number(b"user:1"), None);
        assert_eq!(s.number(b"a"), None);
        // Zero-padded integers: the leading zero bytes go, the low bytes count.
        let lo = 17u128.to_be_bytes();
        let hi = 90_000u128.to_be_bytes();
        let s = KeySpace::spanning(&lo, &hi);
        assert_eq!(s.prefix().len(), 13);
        assert!(s.number(&lo) < s.number(&hi));
        assert_eq!(KeySpace::spanning(b"abc", b"abc").number(b"abc"), Some(0));
        assert_eq!(KeySpace::spanning(b"", b"z").prefix(), b"");
    }

    #[test]
    fn numbers_keep_the_order_of_keys_in_range() {
        let mut keys: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| format!("tenant/42/item/{:08}", i * 7919 % 100_003).into_bytes())
            .collect();
        keys.sort();
        let s = KeySpace::spanning(&keys[0], keys.last().unwrap());
        let nums: Vec<u64> = keys.iter().map(|k| s.number(k).unwrap()).collect();
        assert!(
            nums.windows(2).all(|w| w[0] < w[1]),
            "distinct keys stay distinct"
        );
        assert!(keys
            .windows(2)
            .all(|w| key_to_u64(&w[0]) == key_to_u64(&w[1])));
    }
}
