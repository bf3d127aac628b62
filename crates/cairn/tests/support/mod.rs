//! Helpers shared by the integration tests: `mod support;` in a test binary of one file,
//! `#[path = "../support/mod.rs"] mod support;` in the `main.rs` of a folded one. Each
//! binary uses a few of them. Keys keep each test's own format: a test whose keys differ
//! from these (another prefix or width) builds them itself.

// Every binary compiles this whole module and uses only part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cairn::{Db, ReadOptions, Snapshot};

/// What a model says the default column family holds, or what it does hold: key to value.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// `key` followed by `i` zero-padded to 6 digits: `key000042`.
pub fn key6(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// `key` followed by `i` zero-padded to 8 digits: `key00000042`.
pub fn key8(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// 16 bytes: `n` big-endian, then eight zero bytes (keys sort as their numbers do).
pub fn key_be16(n: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&n.to_be_bytes());
    k
}

/// The number of a `key…` key (the decimal digits after its three-byte prefix).
pub fn key_no(k: &[u8]) -> u32 {
    std::str::from_utf8(&k[3..]).unwrap().parse().unwrap()
}

/// The environment variable `name` as a number, or `default` when unset or not a number.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The paths in `dir` (not below it) whose file name satisfies `pred`, sorted.
pub fn files_where(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| pred(p.file_name().unwrap().to_str().unwrap()))
        .collect();
    v.sort();
    v
}

/// Replaces directory `to` with a copy of the files directly in `from`, less `LOCK`.
pub fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// XORs byte `pos` of the file at `path` with `mask`, in place.
pub fn flip(path: &Path, pos: usize, mask: u8) {
    let mut data = std::fs::read(path).unwrap();
    data[pos] ^= mask;
    std::fs::write(path, data).unwrap();
}

/// Every key and value of the default column family, as of `snapshot` (or now), by a
/// forward iterator whose status must be clean.
pub fn contents(db: &Db, snapshot: Option<&Snapshot>) -> Model {
    let ro = ReadOptions {
        snapshot: snapshot.cloned(),
        ..Default::default()
    };
    let mut it = db.iter(&ro, &db.default_cf()).unwrap();
    it.seek_to_first();
    let mut out = Model::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}
