//! Table bytes on disk for N records of 16-byte big-endian integer keys and 100-byte random
//! values, loaded in random order, then flushed and compacted into one sorted run.
//! `cargo run --release -p cairn --example table_size -- [N] [DIR]`

use cairn::table::{Footer, TableProperties, BLOCK_TRAILER_LEN, FOOTER_LEN};
use cairn::{Db, Options, WriteOptions};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("cairn-table-size"));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Db::open(&dir, Options::default())?;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut order: Vec<u64> = (0..n).collect();
    order.shuffle(&mut rng);
    let wo = WriteOptions::default();
    let mut value = [0u8; 100];
    for i in order {
        rng.fill(&mut value[..]);
        db.put(&wo, &u128::from(i).to_be_bytes(), &value)?;
    }
    db.flush()?;
    db.compact_range(None, None)?;
    db.close()?;

    let (mut files, mut total, mut data, mut blocks, mut entries) = (0, 0u64, 0u64, 0u64, 0u64);
    for e in std::fs::read_dir(&dir)? {
        let path = e?.path();
        if path.extension().is_none_or(|x| x != "sst") {
            continue;
        }
        let bytes = std::fs::read(&path)?;
        let name = path.display().to_string();
        let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..], &name)?;
        let data_end = if footer.filter.size != 0 {
            footer.filter.offset
        } else {
            footer.index.offset
        };
        let p = footer.properties;
        let props = TableProperties::decode(
            &bytes[p.offset as usize..(p.offset + p.size) as usize],
            &name,
        )?;
        files += 1;
        total += bytes.len() as u64;
        blocks += props.num_data_blocks;
        entries += props.num_entries;
        data += data_end - props.num_data_blocks * BLOCK_TRAILER_LEN as u64;
    }
    println!(
        "{n} records: {files} tables, {total} bytes on disk ({:.2} per record); \
         {blocks} data blocks, {data} data-block bytes ({:.2} per entry, {:.1} entries per block)",
        total as f64 / n as f64,
        data as f64 / entries as f64,
        entries as f64 / blocks as f64
    );
    Ok(())
}
