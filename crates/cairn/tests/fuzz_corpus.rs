//! The fuzz targets of `fuzz/` on stable Rust: every file of `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/` is replayed through `cairn::fuzzing::<target>`, then a
//! seeded mutation loop (bit flips, truncations, splices, length fields set to huge
//! values...) runs each target for a bounded number of inputs. A panic is a failure: the
//! engine must answer corrupt bytes with a typed error.
//!
//! * `CAIRN_FUZZ_ITERS=<n>` sets the mutation count per target (default: 8,000 to 25,000
//!   by the target's cost, a few seconds in all for a debug build on two cores);
//!   `CAIRN_FUZZ_SECONDS=<s>` runs each target's loop for that long instead
//!   (`scripts/fuzz.sh` uses it without cargo-fuzz);
//!   `CAIRN_FUZZ_SEED=<n>` changes the seed.
//! * A failing mutated input is written to the temporary directory and its path printed;
//!   minimized, it belongs in `fuzz/regressions/<target>/`.
//! * `cargo test -p cairn --test fuzz_corpus -- --ignored regenerate_seed_corpus` rewrites
//!   the engine-made seeds of `fuzz/corpus/` (a database written here, the test fixtures
//!   of `tests/data`, and `cairn::fuzzing::seeds`).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn::fuzzing::{self, Target, TARGETS};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Regression inputs that still crash, as `<target>/<file>`: the replay skips them, and
/// each has an `#[ignore]`d test below that fails until the engine is fixed. Empty: no
/// open crash.
const OPEN_CRASHES: &[&str] = &[];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, sorted by name (none if the directory is absent).
fn inputs(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = fuzz_dir().join(kind).join(target);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .map(|e| e.expect("read corpus directory").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, b)
        })
        .collect()
}

/// Names what was running when a target panics (the panic message alone does not say).
struct Running<'a> {
    what: &'a dyn Fn() -> String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("fuzz_corpus: the panic above happened on {}", (self.what)());
        }
    }
}

/// Runs `f` on `input`, naming `what` if it panics.
fn run_one(f: Target, input: &[u8], what: &dyn Fn() -> String) {
    let _guard = Running { what };
    f(input);
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Default mutations per target, by its cost in a debug build.
fn default_iters(target: &str) -> u64 {
    match target {
        "table" => 8_000,
        "plr_model" | "log_reader" | "leaper_bundle" | "gbdt_text" => 12_000,
        _ => 25_000,
    }
}

// ---------------------------------------------------------------------------------------
// Mutations.

/// Values that make length, count and offset fields interesting.
const BIG32: [u32; 8] = [
    0,
    1,
    0x7f,
    0xff,
    0xffff,
    0x7fff_ffff,
    0xffff_fffe,
    0xffff_ffff,
];
const BIG64: [u64; 6] = [0, 1, 1 << 32, 1 << 56, i64::MAX as u64, u64::MAX];
/// Replacements for numbers in text formats.
const TEXT_NUMBERS: [&str; 12] = [
    "0",
    "-1",
    "1",
    "2",
    "18446744073709551615",
    "4294967296",
    "99999999999",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "",
];

/// One random edit of `b`, sometimes with bytes of `other`.
fn mutate_once(rng: &mut SmallRng, b: &mut Vec<u8>, other: &[u8]) {
    let len = b.len();
    let pos = |rng: &mut SmallRng| rng.random_range(0..len.max(1));
    match rng.random_range(0..13) {
        0 if len > 0 => {
            let i = pos(rng);
            b[i] ^= 1 << rng.random_range(0..8);
        }
        1 if len > 0 => {
            let i = pos(rng);
            b[i] = rng.random();
        }
        2 => b.truncate(rng.random_range(0..=len)),
        3 if len > 0 => {
            let start = pos(rng);
            let end = (start + rng.random_range(1..=64)).min(len);
            b.drain(start..end);
        }
        4 => {
            let at = rng.random_range(0..=len);
            let n = rng.random_range(1..=16);
            let ins: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            b.splice(at..at, ins);
        }
        5 if len > 0 => {
            // Duplicate a range somewhere else.
            let start = pos(rng);
            let end = (start + rng.random_range(1..=128)).min(len);
            let chunk = b[start..end].to_vec();
            let at = rng.random_range(0..=len);
            b.splice(at..at, chunk);
        }
        6 if !other.is_empty() => {
            // Splice: our prefix, the other's suffix.
            let cut = rng.random_range(0..=len);
            let from = rng.random_range(0..other.len());
            b.truncate(cut);
            b.extend_from_slice(&other[from..]);
        }
        7 if len >= 4 => {
            let i = rng.random_range(0..=len - 4);
            let v = BIG32[rng.random_range(0..BIG32.len())];
            b[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        8 if len >= 8 => {
            let i = rng.random_range(0..=len - 8);
            let v = BIG64[rng.random_range(0..BIG64.len())];
            b[i..i + 8].copy_from_slice(&v.to_le_bytes());
        }
        9 if len > 0 => {
            // A huge varint (u64::MAX, ten bytes) or a u32-sized one over a byte.
            let i = pos(rng);
            let v: &[u8] = if rng.random_bool(0.5) {
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
            } else {
                &[0xff, 0xff, 0xff, 0xff, 0x0f]
            };
            b.splice(i..i + 1, v.iter().copied());
        }
        10 if len > 0 => {
            // A number in a text format replaced.
            let start = pos(rng);
            if let Some(d) = b[start..].iter().position(u8::is_ascii_digit) {
                let s = start + d;
                let e = s + b[s..].iter().take_while(|c| c.is_ascii_digit()).count();
                let n = TEXT_NUMBERS[rng.random_range(0..TEXT_NUMBERS.len())];
                b.splice(s..e, n.bytes());
            }
        }
        11 if len > 0 => {
            // A line of a text format dropped or repeated.
            let start = pos(rng);
            if let Some(nl) = b[start..].iter().position(|&c| c == b'\n') {
                let s = start + nl + 1;
                let e = s + b[s..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(len - s, |x| x + 1);
                if rng.random_bool(0.5) {
                    b.drain(s..e);
                } else {
                    let line = b[s..e].to_vec();
                    b.splice(s..s, line);
                }
            }
        }
        _ => {
            // Overwrite a run with one byte value (zeros, 0xff...).
            if len > 0 {
                let start = pos(rng);
                let end = (start + rng.random_range(1..=32)).min(len);
                let v = [0u8, 0xff, 0x80, b'\n'][rng.random_range(0..4)];
                b[start..end].fill(v);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Running a target.

/// Replays the corpus and regressions of `name`, then mutates them; returns the number of
/// inputs run.
fn run_target(name: &str) -> u64 {
    let f = fuzzing::target(name).unwrap_or_else(|| panic!("no target {name}"));
    let mut bases: Vec<(String, Vec<u8>)> = Vec::new();
    let mut runs = 0u64;
    for kind in ["corpus", "regressions"] {
        for (path, data) in inputs(kind, name) {
            let rel = format!(
                "{name}/{}",
                path.file_name().unwrap_or_default().to_string_lossy()
            );
            if kind == "regressions" && OPEN_CRASHES.contains(&rel.as_str()) {
                continue;
            }
            run_one(f, &data, &|| path.display().to_string());
            runs += 1;
            bases.push((rel, data));
        }
    }
    for (i, s) in fuzzing::seeds(name).into_iter().enumerate() {
        run_one(f, &s, &|| {
            format!("seed {i} of cairn::fuzzing::seeds({name:?})")
        });
        runs += 1;
        bases.push((format!("seed {i}"), s));
    }
    assert!(!bases.is_empty(), "{name}: nothing to mutate");

    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    let seed = h.finish() ^ env_u64("CAIRN_FUZZ_SEED").unwrap_or(0);
    let mut rng = SmallRng::seed_from_u64(seed);
    let deadline = env_u64("CAIRN_FUZZ_SECONDS").map(|s| Instant::now() + Duration::from_secs(s));
    let iters = env_u64("CAIRN_FUZZ_ITERS").unwrap_or_else(|| default_iters(name));
    let mut i = 0u64;
    loop {
        match deadline {
            Some(d) if Instant::now() >= d => break,
            None if i >= iters => break,
            _ => {}
        }
        let (base_name, base) = &bases[rng.random_range(0..bases.len())];
        let other = &bases[rng.random_range(0..bases.len())].1;
        let mut input = base.clone();
        for _ in 0..rng.random_range(1..=4) {
            mutate_once(&mut rng, &mut input, other);
        }
        let save = || {
            let path = std::env::temp_dir().join(format!("cairn-fuzz-crash-{name}-{seed:x}-{i}"));
            let saved = std::fs::write(&path, &input).map_or_else(
                |e| format!("(not saved: {e})"),
                |()| format!("saved to {}", path.display()),
            );
            format!("mutation {i} of {base_name} (seed {seed:#x}), {saved}")
        };
        run_one(f, &input, &save);
        i += 1;
    }
    runs += i;
    // A line scripts/fuzz.sh reads for its table.
    eprintln!("fuzz-stat {name} {runs}");
    runs
}

macro_rules! target_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_target(stringify!($name));
            }
        )*

        /// Every target of `cairn::fuzzing` has a test here, a cargo-fuzz target and a
        /// corpus, and every corpus or regression directory names a target.
        #[test]
        fn targets_are_wired() {
            let here = [$(stringify!($name)),*];
            let all: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
            assert_eq!(here.to_vec(), all, "tests and cairn::fuzzing::TARGETS differ");
            for n in &all {
                let t = fuzz_dir().join("fuzz_targets").join(format!("{n}.rs"));
                let src = std::fs::read_to_string(&t)
                    .unwrap_or_else(|e| panic!("{}: {e}", t.display()));
                assert!(src.contains(&format!("cairn::fuzzing::{n}(")), "{}", t.display());
                assert!(!inputs("corpus", n).is_empty(), "{n} has no corpus");
            }
            for kind in ["corpus", "regressions"] {
                let Ok(rd) = std::fs::read_dir(fuzz_dir().join(kind)) else { continue };
                for e in rd {
                    let e = e.unwrap();
                    if !e.path().is_dir() {
                        continue;
                    }
                    let name = e.file_name().to_string_lossy().into_owned();
                    assert!(all.contains(&name.as_str()), "fuzz/{kind}/{name} is no target");
                }
            }
        }
    };
}

target_tests!(
    block,
    compressed_block,
    index_block,
    bloom,
    table,
    log_reader,
    write_batch,
    version_edit,
    vlog_record,
    value_pointer,
    table_properties,
    range_del_block,
    plr_model,
    leaper_bundle,
    gbdt_text,
    access_trace,
    record_trace,
    cold_set,
);

/// The corpus stays small enough to keep in the repository.
#[test]
fn corpus_is_small() {
    let mut total = 0u64;
    for kind in ["corpus", "regressions"] {
        for (name, _) in TARGETS {
            total += inputs(kind, name)
                .iter()
                .map(|(_, b)| b.len() as u64)
                .sum::<u64>();
        }
    }
    assert!(total < 3 << 20, "fuzz corpus is {total} bytes");
}

// ---------------------------------------------------------------------------------------
// Seeds made by the engine.

mod regenerate {
    use std::path::Path;

    use cairn::access::trace;
    use cairn::iter::InternalIterator;
    use cairn::log::LogReader;
    use cairn::storage::{FileKind, StorageEnv};
    use cairn::table::{Footer, Table, FOOTER_LEN};
    use cairn::types::{parse_internal_key, ValueKind};
    use cairn::{Db, IndexPolicy, LearnMode, Options, WriteBatch, WriteOptions};

    use super::{fuzz_dir, TARGETS};

    fn put(target: &str, name: &str, bytes: &[u8]) {
        let dir = fuzz_dir().join("corpus").join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    }

    fn files(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .collect();
        v.sort();
        v
    }

    fn records(bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut r = LogReader::new(bytes.to_vec(), "log", false);
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            out.push(rec);
        }
        out
    }

    /// A LightGBM model cut to its first `trees` trees (the `tree_sizes` line dropped).
    fn first_trees(text: &str, trees: usize) -> String {
        let mut out = String::new();
        let mut n = 0;
        for section in text.split("\n\n") {
            let section = section.trim_start_matches('\n');
            if section.starts_with("Tree=") {
                n += 1;
                if n > trees {
                    continue;
                }
            }
            let s: Vec<&str> = section
                .lines()
                .filter(|l| !l.starts_with("tree_sizes="))
                .collect();
            out.push_str(&s.join("\n"));
            out.push_str("\n\n");
            if section.starts_with("end of trees") {
                break;
            }
        }
        out
    }

    /// Writes a small database with every kind of file (tables with filters, a value log,
    /// saved models, a WAL, a manifest) and copies them, and parts cut from them, to the
    /// corpus.
    fn database() {
        let dir = tempfile::tempdir().unwrap();
        let opts = || Options {
            write_buffer_size: 32 << 10,
            block_size: 1024,
            value_threshold: Some(48),
            index: IndexPolicy::Learned {
                delta: 8,
                mode: LearnMode::Always,
                wait_ms: 0,
            },
            background_work: false,
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts()).unwrap();
        let wo = WriteOptions::default();
        for i in 0..300u32 {
            let v = format!("value-{i}-{}", "x".repeat((i % 7 * 13) as usize));
            db.put(&wo, format!("key{:06}", i * 7).as_bytes(), v.as_bytes())
                .unwrap();
            if i % 29 == 0 {
                db.delete(&wo, format!("key{:06}", i * 5).as_bytes())
                    .unwrap();
            }
        }
        db.delete_range(&wo, b"key000100", b"key000140").unwrap();
        db.flush().unwrap();
        for i in 0..300u32 {
            let _ = db.get(format!("key{:06}", i * 7).as_bytes()).unwrap();
        }
        db.run_background_work().unwrap();
        db.close().unwrap();

        // Reopen and write a little more, synced, so that the WAL holds records.
        let db = Db::open(dir.path(), opts()).unwrap();
        let sync = WriteOptions {
            sync: true,
            query_column: None,
            disable_wal: false,
        };
        let mut b = WriteBatch::new();
        b.put(b"batch-a", b"1").unwrap();
        b.delete(b"batch-b").unwrap();
        b.delete_range(b"c", b"d").unwrap();
        db.write(&sync, b).unwrap();
        for i in 0..20u32 {
            db.put(&sync, format!("wal{i}").as_bytes(), &[b'w'; 20])
                .unwrap();
        }
        let root = dir.path();
        for (i, p) in files(root, ".log").iter().enumerate() {
            let bytes = std::fs::read(p).unwrap();
            if bytes.is_empty() {
                continue;
            }
            put("log_reader", &format!("engine-wal-{i}"), &bytes);
            for (j, r) in records(&bytes).iter().take(3).enumerate() {
                put("write_batch", &format!("engine-wal-{i}-record-{j}"), r);
            }
        }
        for (i, p) in files(root, "").iter().enumerate() {
            if !p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
            {
                continue;
            }
            let bytes = std::fs::read(p).unwrap();
            put("log_reader", &format!("engine-manifest-{i}"), &bytes);
            for (j, r) in records(&bytes).iter().take(6).enumerate() {
                put(
                    "version_edit",
                    &format!("engine-manifest-{i}-record-{j}"),
                    r,
                );
            }
        }
        for (i, p) in files(root, ".plr").iter().take(2).enumerate() {
            put(
                "plr_model",
                &format!("engine-model-{i}"),
                &std::fs::read(p).unwrap(),
            );
        }
        for (i, p) in files(root, ".vlog").iter().take(1).enumerate() {
            let bytes = std::fs::read(p).unwrap();
            put(
                "vlog_record",
                &format!("engine-vlog-{i}"),
                &bytes[..bytes.len().min(4096)],
            );
        }
        let env = StorageEnv::new(root, &[], 0.0).unwrap();
        let mut pointers = 0;
        for (i, p) in files(root, ".sst").iter().take(2).enumerate() {
            let bytes = std::fs::read(p).unwrap();
            put("table", &format!("engine-table-{i}"), &bytes);
            // Meta blocks and data blocks cut out (trailers stripped).
            let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..], "t").unwrap();
            let cut = |h: cairn::table::BlockHandle| {
                bytes[h.offset as usize..(h.offset + h.size) as usize].to_vec()
            };
            put(
                "table_properties",
                &format!("engine-table-{i}"),
                &cut(footer.properties),
            );
            if footer.filter.size > 0 {
                put("bloom", &format!("engine-table-{i}"), &cut(footer.filter));
            }
            let f = env
                .open_read(p, FileKind::Table, 0, Some(0), false)
                .unwrap();
            let t = std::sync::Arc::new(Table::open(f, cairn::FileNo::new(1), None).unwrap());
            let data_end = if footer.filter.size > 0 {
                footer.filter.offset
            } else {
                footer.index.offset
            };
            let mut index = Vec::new();
            cairn::coding::put_varint(&mut index, data_end);
            cairn::coding::put_varint(&mut index, t.properties().num_entries);
            index.extend_from_slice(&cut(footer.index));
            put("index_block", &format!("engine-table-{i}"), &index);
            let idx = t.index().unwrap();
            for b in (0..idx.num_blocks()).step_by(4).take(3) {
                put(
                    "block",
                    &format!("engine-table-{i}-block-{b}"),
                    &cut(idx.block(b).handle),
                );
            }
            let mut it = t.iter();
            it.seek_to_first();
            while it.valid() && pointers < 3 {
                let k = parse_internal_key(it.key()).unwrap();
                if k.value_kind() == Some(ValueKind::ValuePointer) {
                    put(
                        "value_pointer",
                        &format!("engine-pointer-{pointers}"),
                        it.value(),
                    );
                    pointers += 1;
                }
                it.next();
            }
        }
        db.close().unwrap();
    }

    /// Copies the model and trace fixtures of `tests/data` (cut down where large).
    fn fixtures() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        for name in [
            "binary_constant",
            "regression_zero",
            "binary_categorical",
            "binary_nan",
        ] {
            let text = std::fs::read_to_string(data.join(format!("gbdt/{name}.txt"))).unwrap();
            let cut = first_trees(&text, 6);
            cairn::learned::GbdtModel::parse(&cut).expect("a cut model still parses");
            put("gbdt_text", &format!("fixture-{name}"), cut.as_bytes());
        }
        put(
            "leaper_bundle",
            "fixture-python_bundle",
            &std::fs::read(data.join("gbdt/python_bundle.model")).unwrap(),
        );
        let t = std::fs::read(data.join("leaper/synth.trace")).unwrap();
        let (h, rows, transfers) = trace::decode(&t, "synth.trace").unwrap();
        let short = trace::encode(
            &h,
            &rows[..rows.len().min(40)],
            &transfers[..transfers.len().min(10)],
        );
        put("access_trace", "fixture-synth", &short);
    }

    #[test]
    #[ignore = "writes fuzz/corpus; run by hand when a format changes"]
    fn regenerate_seed_corpus() {
        for (name, _) in TARGETS {
            for (i, s) in cairn::fuzzing::seeds(name).iter().enumerate() {
                put(name, &format!("seed-{i}"), s);
            }
        }
        database();
        fixtures();
    }
}
