//! Names the RocksDB this build links, for every report's version line, and tells the
//! shared sources which crate API they compile against.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(rocksdb_latest)");
    println!("cargo::rustc-cfg=rocksdb_latest");
    println!(
        "cargo::rustc-env=CAIRN_ROCKSDB_PEER=RocksDB 11.8.1 (bundled build, crate rocksdb 0.25.0)"
    );
}
