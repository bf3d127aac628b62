//! Lookup cost of each index path on one warm table (a micro-benchmark, not a check): a
//! table of N entries with 16-byte keys (an evenly spaced integer, zero-padded) and
//! 12-byte values (a value-log pointer's size), then N random gets, each path twice in
//! alternation:
//! - `fence`: fence pointers, every block cached;
//! - `learned`: the learned index reading whole cached blocks (variable-width blocks);
//! - `window`: the learned index on fixed-width blocks of a memory-mapped file, reading
//!   only the chunks around its window (Bourbon's path; no block cache);
//! - `fence-map`: fence pointers on the fixed-width, mapped file with no block cache
//!   (every block copied out of the mapping, checksummed and decoded).
//!
//! Then the steps of a fence get one at a time.
//! `cargo run --release -p cairn --example lookup_cost -- [N] [LOOKUPS] [PATH]`

use std::sync::Arc;
use std::time::Instant;

use cairn::cache::{BlockCache, LruBlockCache};
use cairn::options::IndexPolicy;
use cairn::storage::{FileKind, StorageEnv};
use cairn::table::{ReadTrace, Table, TableBuildOptions, TableBuilder};
use cairn::types::{make_internal_key, make_lookup_key, user_key, ValueKind, MAX_SEQ};
use rand::{Rng, SeedableRng};

fn key(i: u64) -> Vec<u8> {
    let mut k = vec![0u8; 8];
    k.extend_from_slice(&(1_000_000 + i * 977).to_be_bytes());
    k
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let m: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(500_000);
    let only = args.next(); // one path's name: profile it alone
    let dir = tempfile::tempdir()?;
    let env = StorageEnv::new(dir.path(), &[], 0.0)?;
    let mapped_env = StorageEnv::new(dir.path(), &[], 0.0)?.with_mmap_reads(true);
    let build =
        |name: &str, fixed: bool| -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
            let path = dir.path().join(name);
            let f = env.create(&path, FileKind::Table, 0, Some(0))?;
            let mut b = TableBuilder::new(
                f,
                TableBuildOptions {
                    block_size: 4096,
                    bloom_bits_per_key: 10.0,
                    fixed_width_entries: fixed,
                    ..Default::default()
                },
            );
            for i in 0..n {
                b.add(&make_internal_key(&key(i), 1, ValueKind::Value), &[7u8; 12])?;
            }
            b.finish()?;
            Ok(path)
        };
    let (var_path, fixed_path) = (build("v.sst", false)?, build("f.sst", true)?);
    let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(256 << 20, 16));
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    let lookups: Vec<Vec<u8>> = (0..m)
        .map(|_| make_lookup_key(&key(rng.random_range(0..n)), MAX_SEQ))
        .collect();
    let per = |t0: Instant| t0.elapsed().as_nanos() as f64 / lookups.len() as f64;
    println!("{n} entries, {m} lookups, 4 KiB blocks");
    for round in 0..2 {
        for name in ["fence", "learned", "window", "fence-map"] {
            if only.as_deref().is_some_and(|o| o != name) {
                continue;
            }
            let (policy, path, e, cache) = match name {
                "fence" => (IndexPolicy::Fence, &var_path, &env, Some(cache.clone())),
                "learned" => (
                    IndexPolicy::learn_all(8),
                    &var_path,
                    &env,
                    Some(cache.clone()),
                ),
                "window" => (IndexPolicy::learn_all(8), &fixed_path, &mapped_env, None),
                _ => (IndexPolicy::Fence, &fixed_path, &mapped_env, None),
            };
            let f = e.open_read(path, FileKind::Table, 0, Some(0), false)?;
            let no = cairn::FileNo::new(10 * round + name.len() as u64);
            let t = Table::open_with(f, no, cache, policy)?;
            for l in &lookups {
                t.get(l, &mut ReadTrace::default())?; // warm the cache
            }
            let t0 = Instant::now();
            let mut found = 0;
            let mut trace = ReadTrace::default();
            for l in &lookups {
                found += t.get(l, &mut trace)?.is_some() as usize;
            }
            let ns = per(t0);
            let u = t.usage().snapshot();
            let (fence, model) = (
                u.fence_ns as f64 / u.fence_samples.max(1) as f64,
                u.model_ns as f64 / u.model_samples.max(1) as f64,
            );
            println!(
                "{name:9} {ns:6.0} ns/get; sampled search: fence {fence:.0} ns, model {model:.0} ns; \
                 found {found}; {:.0} bytes read per get",
                trace.storage_bytes as f64 / lookups.len() as f64
            );
            if name != "fence" || round > 0 {
                continue;
            }
            // The fence path's steps, each over every lookup.
            let (filter, index) = (t.filter()?, t.index()?);
            let t0 = Instant::now();
            let mut x = 0usize;
            for l in &lookups {
                x += filter.as_ref().is_none_or(|f| f.may_contain(user_key(l))) as usize;
            }
            let bloom = per(t0);
            let t0 = Instant::now();
            let mut blocks = Vec::with_capacity(lookups.len());
            for l in &lookups {
                blocks.push(index.locate(l).unwrap_or(0));
            }
            let locate = per(t0);
            let t0 = Instant::now();
            let mut bs = Vec::with_capacity(lookups.len());
            for &b in &blocks {
                bs.push(t.read_block(b, &mut ReadTrace::default())?);
            }
            let read = per(t0);
            let t0 = Instant::now();
            for (b, l) in bs.iter().zip(&lookups) {
                x += b.seek(l);
            }
            let seek = per(t0);
            println!(
                "          fence steps: bloom {bloom:.0} ns, locate {locate:.0} ns, cached block \
                 {read:.0} ns, block search {seek:.0} ns ({x})"
            );
        }
    }
    Ok(())
}
