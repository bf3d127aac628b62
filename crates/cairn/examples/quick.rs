//! A quick smoke benchmark: fill N random keys, then read them back at random.
//! `cargo run --release -p cairn --example quick -- [N] [DIR]`

use std::time::Instant;

use cairn::{Db, Options, WriteOptions};

fn main() -> cairn::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("cairn-quick"));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = Options {
        write_buffer_size: 8 << 20,
        block_cache_bytes: 8 << 20,
        level1_bytes: 32 << 20,
        target_file_size: 8 << 20,
        ..Options::default()
    };
    let db = Db::open(&dir, opts)?;
    let wo = WriteOptions::default();
    let key = |i: u64| {
        let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
        format!("{:016x}", x % (n * 4)).into_bytes()
    };
    let value = vec![b'v'; 100];
    let t = Instant::now();
    for i in 0..n {
        db.put(&wo, &key(i), &value)?;
    }
    let fill = t.elapsed().as_secs_f64();
    db.flush()?;
    let t = Instant::now();
    let mut found = 0;
    for i in 0..n {
        let j = i.wrapping_mul(7919) % n;
        if db.get(&key(j))?.is_some() {
            found += 1;
        }
    }
    let read = t.elapsed().as_secs_f64();
    let s = db.stats();
    println!(
        "fillrandom {:.0} ops/s, readrandom {:.0} ops/s, found {found}/{n}, wamp {:.2}, flushes {}, compactions {}, moves {}, stall {} ms",
        n as f64 / fill,
        n as f64 / read,
        s.write_amplification(),
        s.flushes,
        s.compactions,
        s.trivial_moves,
        s.stall_micros / 1000
    );
    for (i, l) in s.levels.iter().enumerate() {
        if l.files > 0 {
            println!(
                "L{i}: runs {} files {} bytes {} K {} probes {} bloom- {} data hit/miss {}/{}",
                l.runs,
                l.files,
                l.bytes,
                l.k,
                l.tables_probed,
                l.bloom_negatives,
                l.data_block_hits,
                l.data_block_misses
            );
        }
    }
    db.close()
}
