//! Where each piece of Raft state lives: the keys of the meta family and the encodings of
//! log and data keys (the column families themselves: [`crate::engine::Family`]).

pub(crate) const VOTE: &[u8] = b"vote";
pub(crate) const COMMITTED: &[u8] = b"committed";
pub(crate) const LAST_PURGED: &[u8] = b"last_purged";
pub(crate) const APPLIED: &[u8] = b"applied";
pub(crate) const MEMBERSHIP: &[u8] = b"membership";

/// A log index as a key: big-endian, so that key order is index order.
pub(crate) fn log_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

/// The index of a log key, if it is one.
pub(crate) fn log_index(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.try_into().ok()?))
}

/// An exclusive end past every log key (nine bytes sort after every eight-byte key).
pub(crate) const LOG_END: [u8; 9] = [0xff; 9];

/// Data keys carry one prefix byte, so that the whole state machine is the range
/// `[DATA_START, DATA_END)` (an application key may be empty).
const DATA_PREFIX: u8 = b'k';
pub(crate) const DATA_START: &[u8] = &[DATA_PREFIX];
pub(crate) const DATA_END: &[u8] = &[DATA_PREFIX + 1];

/// The stored key of an application key.
pub(crate) fn data_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(DATA_PREFIX);
    k.extend_from_slice(key);
    k
}

/// The application key of a stored key.
pub(crate) fn app_key(stored: &[u8]) -> &[u8] {
    stored.get(1..).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keys_sort_as_their_indexes_and_read_back() {
        let idx = [0u64, 1, 255, 256, 1 << 40, u64::MAX];
        for w in idx.windows(2) {
            assert!(log_key(w[0]) < log_key(w[1]));
        }
        for i in idx {
            assert_eq!(log_index(&log_key(i)), Some(i));
            assert!(log_key(i).as_slice() < LOG_END.as_slice());
        }
        assert_eq!(log_index(b"short"), None);
    }

    #[test]
    fn data_keys_stay_in_their_range() {
        for k in [&b""[..], b"\x00", b"\xff\xff\xff", b"k"] {
            let d = data_key(k);
            assert!(d.as_slice() >= DATA_START && d.as_slice() < DATA_END);
            assert_eq!(app_key(&d), k);
        }
    }
}
