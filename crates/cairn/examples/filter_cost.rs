//! Cost of a bloom filter probe in each layout (a micro-benchmark, not a check): TABLES
//! filters of 50,000 keys at 10 bits per key (a 2 MiB table's key + pointer entries),
//! probed with random keys of random tables, half of them present; each layout twice in
//! alternation. The classic layout spreads a key's 7 bits over the whole filter, the
//! cache-local one keeps them in one 64-byte line. With 36 filters (2.2 MiB) the filters
//! sit in the CPU caches; with 360 (22 MiB) most probes miss them.
//! `cargo run --release -p cairn --example filter_cost -- [TABLES] [PROBES]`

use std::time::Instant;

use cairn::table::bloom::{BloomBuilder, BloomFilter};

const KEYS: u64 = 50_000;

/// splitmix64: the probe stream.
fn next(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let tables: u64 = args.next().map_or(Ok(36), |a| a.parse())?;
    let probes: u64 = args.next().map_or(Ok(4_000_000), |a| a.parse())?;
    println!("{tables} filters of {KEYS} keys, {probes} probes, half of present keys");
    for local in [false, true, false, true] {
        let filters = (0..tables)
            .map(|t| {
                let mut b = BloomBuilder::new(10.0, local);
                for i in 0..KEYS {
                    b.add(&(t * 1_000_000 + i).to_be_bytes());
                }
                BloomFilter::decode(b.finish(), "filter")
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut x = 42u64;
        let (mut present, mut positive, mut false_positive) = (0u64, 0u64, 0u64);
        let t0 = Instant::now();
        for _ in 0..probes {
            let r = next(&mut x);
            let t = r % tables;
            let i = (r >> 32) % (2 * KEYS);
            let hit = filters[t as usize].may_contain(&(t * 1_000_000 + i).to_be_bytes());
            present += u64::from(i < KEYS);
            positive += u64::from(hit);
            false_positive += u64::from(hit && i >= KEYS);
        }
        let ns = t0.elapsed().as_nanos() as f64 / probes as f64;
        println!(
            "{:<12} {ns:6.1} ns/probe   false positives {:.2}% of absent keys ({positive} positive)",
            if local { "cache-local" } else { "classic" },
            100.0 * false_positive as f64 / (probes - present) as f64
        );
    }
    Ok(())
}
