//! Reading and writing the agent's checkpoint bytes (layout: the module documentation).

use super::FILE;
use crate::{Error, Result};

pub(super) fn corrupt(detail: impl Into<String>) -> Error {
    Error::corruption(FILE, detail)
}

pub(super) fn put_f32s(out: &mut Vec<u8>, v: &[f32]) {
    out.reserve(v.len() * 4);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Reads little-endian values off the front of a byte slice, advancing it.
pub(super) struct Reader<'a, 'b>(pub(super) &'a mut &'b [u8]);

impl<'b> Reader<'_, 'b> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'b [u8]> {
        if self.0.len() < n {
            return Err(corrupt(format!(
                "truncated: {n} bytes needed, {} left",
                self.0.len()
            )));
        }
        let (head, tail) = self.0.split_at(n);
        *self.0 = tail;
        Ok(head)
    }

    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub(super) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(super) fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// `n` finite floats; the length is checked against the input before allocating.
    pub(super) fn finite_f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>> {
        let bytes = n
            .checked_mul(4)
            .ok_or_else(|| corrupt(format!("{what} size overflows")))?;
        let raw = self.take(bytes)?;
        let v: Vec<f32> = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if v.iter().any(|x| !x.is_finite()) {
            return Err(corrupt(format!("non-finite {what}")));
        }
        Ok(v)
    }
}
