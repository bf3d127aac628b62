//! Cost of Leaper's access collector per request (Leaper Table 5 / Table 1): nanoseconds
//! per `record` call at sampling probabilities 1 and 0.1, on 1 and 2 threads, over a
//! Zipf-like mix of ranges. Run with
//! `cargo run --release -p cairn --example access_cost`.

use std::sync::Arc;
use std::time::Instant;

use cairn::access::{Access, AccessOptions, RangeCollector};

fn main() {
    let ops: u64 = 4_000_000;
    let ranges: u64 = 100_000;
    println!("| P | threads | ns/record | ranges |");
    println!("|---:|---:|---:|---:|");
    for p in [1.0, 0.1] {
        for threads in [1usize, 2] {
            let c = Arc::new(RangeCollector::new(
                0,
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
}
