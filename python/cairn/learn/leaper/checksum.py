"""CRC32C (Castagnoli), the checksum of both files that cross the Rust/Python line."""

from __future__ import annotations

import crc32c as _crc32c


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC32C of ``data`` as an unsigned 32-bit integer (``crc32c(b"123456789") == 0xE3069283``)."""
    return _crc32c.crc32c(data) & 0xFFFFFFFF
