//! Keys and values from Python objects: `bytes` borrowed as is, `bytearray` copied, `str`
//! encoded as UTF-8. Anything else is a `TypeError`, so an `int` key never becomes a
//! list of bytes by accident.

use std::borrow::Cow;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};

/// A key or value given from Python.
pub struct Bytes<'a>(pub Cow<'a, [u8]>);

impl<'a, 'py> FromPyObject<'a, 'py> for Bytes<'a> {
    type Error = PyErr;

    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = ob.cast::<PyString>() {
            return Ok(Bytes(Cow::Owned(s.to_cow()?.into_owned().into_bytes())));
        }
        // pyo3's own extraction borrows a `bytes` object's buffer and copies a bytearray.
        if ob.cast::<PyBytes>().is_ok() || ob.cast::<PyByteArray>().is_ok() {
            return Ok(Bytes(Cow::extract(ob)?));
        }
        Err(PyTypeError::new_err(format!(
            "keys and values must be bytes, bytearray or str, not {}",
            ob.get_type().name()?
        )))
    }
}

impl std::ops::Deref for Bytes<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}
