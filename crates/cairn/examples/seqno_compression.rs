//! How much the sequence numbers in table keys cost once blocks are compressed: 200k
//! entries of 16-byte keys and 100-byte values compressible to half (db_bench's), written
//! as one table with random sequence numbers (as cairn keeps them) and with every sequence
//! number 0 (as RocksDB writes entries at the bottommost level that no snapshot needs),
//! raw and with LZ4.
//!
//!     cargo run --release -p cairn --example seqno_compression

use cairn::storage::{FileKind, StorageEnv};
use cairn::table::{TableBuildOptions, TableBuilder};
use cairn::types::{make_internal_key, ValueKind};
use cairn::Compression;
use rand::{Rng, SeedableRng};

fn main() -> cairn::Result<()> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let env = StorageEnv::new(dir.path(), &[], 0.0)?;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let mut keys: Vec<u64> = (0..200_000).map(|_| rng.random()).collect();
    keys.sort_unstable();
    keys.dedup();
    let entries: Vec<(u64, u64, Vec<u8>)> = keys
        .iter()
        .map(|&k| {
            let half: Vec<u8> = (0..50).map(|_| rng.random()).collect();
            (
                k,
                rng.random_range(1..400_000),
                [half.clone(), half].concat(),
            )
        })
        .collect();
    println!("| compression | sequence numbers | table bytes |");
    println!("|---|---|---:|");
    for c in [Compression::None, Compression::Lz4] {
        for zero in [false, true] {
            let path = dir.path().join(format!("{}-{zero}.sst", c.name()));
            let f = env.create(&path, FileKind::Table, 0, None)?;
            let opts = TableBuildOptions {
                compression: c,
                ..Default::default()
            };
            let mut b = TableBuilder::new(f, opts);
            for (k, seq, v) in &entries {
                let mut user = [0u8; 16];
                user[..8].copy_from_slice(&k.to_be_bytes());
                let seq = if zero { 0 } else { *seq };
                b.add(&make_internal_key(&user, seq, ValueKind::Value), v)?;
            }
            let size = b.finish()?.file_size;
            let seqs = if zero { "all 0" } else { "random" };
            println!("| {} | {seqs} | {size} |", c.name());
        }
    }
    Ok(())
}
