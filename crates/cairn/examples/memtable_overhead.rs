//! Memory a memtable really holds per entry beyond key and value, measured as the process's
//! resident-set growth while N entries (16-byte keys, 100-byte values) go in; compare with
//! what the memtable charges per entry (`approximate_memory_usage`, which the write path
//! weighs against the write buffer size).
//! `cargo run --release -p cairn --example memtable_overhead -- [N]`

use cairn::memtable::Memtable;
use cairn::types::ValueKind;
use std::sync::Arc;

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let value = [7u8; 100];
    let before = rss_bytes();
    let mem = Arc::new(Memtable::new(1));
    for i in 0..n {
        let mut key = [0u8; 16];
        key[8..].copy_from_slice(&(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes());
        mem.add(i + 1, ValueKind::Value, &key, &value);
    }
    let grown = rss_bytes().saturating_sub(before);
    let payload = n * (16 + 8 + 100);
    println!(
        "{n} entries: RSS grew {grown} B, {:.1} B/entry, {:.1} B/entry beyond key+trailer+value; \
         charged {:.1} B/entry beyond them; charged total {} B",
        grown as f64 / n as f64,
        (grown as f64 - payload as f64) / n as f64,
        (mem.approximate_memory_usage() as f64 - payload as f64) / n as f64,
        mem.approximate_memory_usage()
    );
}
