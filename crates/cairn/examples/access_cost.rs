//! Cost of the access statistics per request: Leaper's range collector (Leaper Table 5 /
//! Table 1), nanoseconds per `record` call at sampling probabilities 1 and 0.1, and
//! SA-LSM's query store (record-level trace), nanoseconds per recorded read or write at
//! sample rates 1 and 0.1; on 1 and 2 threads, over a skewed mix. Run with
//! `cargo run --release -p cairn --example access_cost`.

use std::sync::Arc;
use std::time::Instant;

use cairn::access::{Access, AccessOptions, RangeCollector, RecordOptions, RecordStore};

fn main() {
    let ops: u64 = 4_000_000;
    let ranges: u64 = 100_000;
    println!("| P | threads | ns/record | ranges |");
    println!("|---:|---:|---:|---:|");
    for p in [1.0, 0.1] {
        for threads in [1usize, 2] {
            let c = Arc::new(RangeCollector::new(
                cairn::CfId::DEFAULT,
                AccessOptions {
                    sample_p: p,
                    ..AccessOptions::default()
                },
            ));
            let t = Instant::now();
            std::thread::scope(|s| {
                for th in 0..threads {
                    let c = c.clone();
                    s.spawn(move || {
                        let mut x: u64 = 0x9e37_79b9 + th as u64;
                        for i in 0..ops / threads as u64 {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            // Skewed: half the requests on 1% of the ranges.
                            let r = if x & 1 == 0 {
                                x % (ranges / 100)
                            } else {
                                x % ranges
                            };
                            let kind = if i % 4 == 0 {
                                Access::Write
                            } else {
                                Access::Read
                            };
                            c.record_range(r, kind);
                        }
                    });
                }
            });
            let ns = t.elapsed().as_nanos() as f64 / (ops as f64 / threads as f64);
            println!("| {p} | {threads} | {ns:.0} | {} |", c.num_ranges());
        }
    }
    query_store_cost();
}

/// SA-LSM's query store: a hash per request, and for a tracked record a shard lock, a
/// map lookup and a bounded append.
fn query_store_cost() {
    let ops: u64 = 2_000_000;
    let records: u64 = 200_000;
    println!();
    println!("| query store sample rate | threads | ns/request | records tracked |");
    println!("|---:|---:|---:|---:|");
    for rate in [1.0, 0.1] {
        for threads in [1usize, 2] {
            let s = Arc::new(RecordStore::new(
                cairn::CfId::DEFAULT,
                RecordOptions {
                    sample_rate: rate,
                    ..RecordOptions::default()
                },
            ));
            let t = Instant::now();
            std::thread::scope(|sc| {
                for th in 0..threads {
                    let s = s.clone();
                    sc.spawn(move || {
                        let mut x: u64 = 0x51ed_2701 + th as u64;
                        for i in 0..ops / threads as u64 {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let r = if x & 1 == 0 {
                                x % (records / 100)
                            } else {
                                x % records
                            };
                            let key = format!("user{r:012}");
                            if i % 4 == 0 {
                                s.record_write(key.as_bytes(), false, None);
                            } else {
                                s.record_read(key.as_bytes());
                            }
                        }
                    });
                }
            });
            let ns = t.elapsed().as_nanos() as f64 / (ops as f64 / threads as f64);
            println!("| {rate} | {threads} | {ns:.0} | {} |", s.len());
        }
    }
}
