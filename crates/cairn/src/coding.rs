//! Varint and length-prefixed encodings shared by the manifest and other formats.
//! Decoders take a cursor and never panic: truncated or oversized input is `None`.

/// Appends a LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes a canonical LEB128 varint at `*pos`, advancing it. `None` if truncated, over
/// 64 bits, or overlong (a zero final byte after the first): every value has exactly one
/// encoding, so a decoded structure re-encodes to the same bytes.
#[inline]
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    // One byte (a key or value length under 128) is the common case on the read path:
    // inlined there, the loop below is not.
    match buf.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            Some(u64::from(b))
        }
        _ => get_varint_long(buf, pos),
    }
}

#[inline(never)]
fn get_varint_long(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(pos.checked_add(i)?)?;
        if i == 9 && b > 1 {
            return None; // would overflow 64 bits
        }
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            if b == 0 && i > 0 {
                return None;
            }
            *pos += i + 1;
            return Some(v);
        }
    }
    None
}

/// Splits the first `n` bytes off `input`; `None` (and `input` untouched) when it is
/// shorter.
pub fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if input.len() < n {
        return None;
    }
    let (head, tail) = input.split_at(n);
    *input = tail;
    Some(head)
}

/// Appends a varint length followed by the bytes.
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A reading cursor over a byte slice.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    /// True when everything was read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
    /// Reads one byte.
    pub fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }
    /// Reads a varint.
    pub fn varint(&mut self) -> Option<u64> {
        get_varint(self.buf, &mut self.pos)
    }
    /// Reads a varint that must fit in `u32`.
    pub fn varint32(&mut self) -> Option<u32> {
        self.varint().and_then(|v| u32::try_from(v).ok())
    }
    /// Reads a length-prefixed byte string.
    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut b = Vec::new();
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            put_varint(&mut b, v);
        }
        put_bytes(&mut b, b"hello");
        let mut r = Reader::new(&b);
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            assert_eq!(r.varint(), Some(v));
        }
        assert_eq!(r.bytes(), Some(&b"hello"[..]));
        assert!(r.is_empty());
        for cut in 0..b.len() {
            let mut r = Reader::new(&b[..cut]);
            while r.varint().is_some() {}
        }
        assert_eq!(Reader::new(&[0xff; 11]).varint(), None);
        assert_eq!(Reader::new(&[0x80, 0x00]).varint(), None, "overlong");
        assert_eq!(get_varint(&[0x81, 0x01], &mut 0), Some(129));
    }
}
