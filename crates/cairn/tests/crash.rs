//! Crash tests: a child process (this test binary, re-executed) writes to a database
//! while the parent kills it with SIGKILL at a random moment, then reopens the database
//! and checks what survived.
//!
//! Protocol: before each write the child prints an intent line `@I <thread> <counter>
//! <ops>` to stdout (a pipe; each line is one `write(2)` smaller than `PIPE_BUF`, so it is
//! either wholly in the pipe or not at all), and after the write is acknowledged an ack
//! line `@A <thread> <counter>`. Any write that may have reached the engine therefore has
//! its intent in the pipe; the parent reads everything up to EOF after the kill and drops
//! a last partial line. Each writer thread owns its keys, so per thread the database must
//! hold the state after some prefix of its ops: with sync writes, a prefix that includes
//! every acknowledged op (the single in-flight op may or may not be there); without sync,
//! any prefix. Batches are atomic, so a half-applied batch fails the check.
//!
//! `CAIRN_CRASH_CYCLES` sets the number of kill/reopen cycles (default 50),
//! `CAIRN_CRASH_SEED` the seed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::{CfId, Db, Options, WriteBatch, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const THREADS: usize = 3;
const KEYS_PER_THREAD: u32 = 120;
const CHILD_ENV: &str = "CAIRN_CRASH_CHILD";

/// Tiny memtables, files and levels so that a few hundred writes flush and compact.
fn crash_options() -> Options {
    Options {
        write_buffer_size: 4096,
        target_file_size: 4096,
        level1_bytes: 16 << 10,
        size_ratio: 4,
        num_levels: 4,
        l0_compaction_trigger: 2,
        l0_slowdown_trigger: 4,
        l0_stop_trigger: 8,
        block_size: 512,
        // Every level compressed (Zstandard at the bottom), so kills land while
        // compressed tables are written.
        compression: cairn::Compression::Lz4,
        compression_per_level: Vec::new(),
        ..Options::small()
    }
}

/// Opens the database, retrying while it reads as locked. The two crash tests run in
/// parallel in one process: a child forked by one test holds a copy of every descriptor of
/// the process (the other test's LOCK file included) until it execs, so for a moment after
/// the other test closed its database, its flock still looks taken.
fn open_db(dir: &Path) -> cairn::Result<Db> {
    if dir.file_name().is_some_and(|n| n == VLOG_DB) {
        open_with(dir, vlog_crash_options)
    } else if dir.file_name().is_some_and(|n| n == LEAPER_DB) {
        open_with(dir, leaper_crash_options)
    } else if dir.file_name().is_some_and(|n| n == MIXED_DB) {
        open_with(dir, mixed_crash_options)
    } else if dir.file_name().is_some_and(|n| n == RUSKEY_DB) {
        open_with(dir, ruskey_crash_options)
    } else if dir.file_name().is_some_and(|n| n == SALSM_DB) {
        open_with(dir, salsm_crash_options)
    } else if dir.file_name().is_some_and(|n| n == CF_DB) {
        open_with(dir, cf_crash_options)
    } else {
        open_with(dir, crash_options)
    }
}

/// Directory name that selects key-value separation, so that the child process (which
/// gets only the directory) opens the database with the same options as its parent.
const VLOG_DB: &str = "db-vlog";

/// [`crash_options`] with every value in value logs and an eager value-log GC, so that
/// kills land in flushes that write value logs and in GC rewrites.
fn vlog_crash_options() -> Options {
    Options {
        value_threshold: Some(0),
        vlog_gc_space_amp: Some(1.1),
        ..crash_options()
    }
}

/// Directory name that selects Leaper (access statistics and the prefetcher with a model
/// the Python learner wrote), so kills land while blocks are warmed and evicted.
const LEAPER_DB: &str = "db-leaper";

fn leaper_crash_options() -> Options {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/leaper/synth.bundle");
    Options {
        access: Some(cairn::access::AccessOptions {
            slot_ms: 5,
            ..Default::default()
        }),
        prefetch: cairn::policy::PrefetchPolicy::Leaper(cairn::policy::LeaperParams {
            model: Some(model),
            ..Default::default()
        }),
        ..crash_options()
    }
}

/// Directory name that selects the learned index (every table learned in the
/// background, fixed-width blocks read through memory maps), AC-Key's read cache and
/// tiering, with run limits changed while writes
/// run (the child changes them every few milliseconds).
const MIXED_DB: &str = "db-mixed";

fn mixed_crash_options() -> Options {
    Options {
        index: cairn::IndexPolicy::learn_all(4),
        fixed_width_entries: true,
        mmap_reads: true,
        read_cache: cairn::ReadCachePolicy::AcKey(Default::default()),
        level_runs: vec![4, 4, 1],
        ..crash_options()
    }
}

/// Directory name that selects RusKey's tuner: missions of 40 operations, so Lerp
/// changes K_i (flexible transitions) and writes its checkpoint while the writers run and
/// kills land in both.
const RUSKEY_DB: &str = "db-ruskey";

fn ruskey_crash_options() -> Options {
    Options {
        tuner: cairn::policy::TunerOptions {
            policy: cairn::policy::TunerPolicy::Lerp(cairn::policy::LerpParams {
                propagation: cairn::policy::Propagation::None,
                ..Default::default()
            }),
            mission_ops: 40,
            checkpoint_every: 3,
            ..Default::default()
        },
        ..crash_options()
    }
}

/// Directory name that selects SA-LSM: two tiers, the query store (persisted at each
/// close), and proactive compactions with changing cold-key sets while the writers run,
/// so kills land mid-migration.
const SALSM_DB: &str = "db-salsm";

fn salsm_crash_options() -> Options {
    Options {
        tiers: vec![
            cairn::TierConfig {
                dir: "hot".into(),
                first_level: 0,
                profile: cairn::DeviceProfile::None,
            },
            cairn::TierConfig {
                dir: "cold".into(),
                first_level: 2,
                profile: cairn::DeviceProfile::None,
            },
        ],
        records: Some(Default::default()),
        placement: cairn::policy::PlacementOptions {
            policy: cairn::policy::PlacementPolicy::ColdSet,
            hot_level_slack: 2.0,
            ..Default::default()
        },
        ..crash_options()
    }
}

/// Directory name that selects two column families sharing the WAL: a thread's keys with
/// an odd index live in column family `odd`, the others in `default`, so a batch of a
/// thread's operations spans both and recovery must keep it whole across them. Both trees
/// flush and compact on their own (the WAL is freed only when both have flushed).
const CF_DB: &str = "db-cf";
const ODD_CF: &str = "odd";

fn cf_crash_options() -> Options {
    crash_options()
}

/// The column family key index `i` lives in (`db-cf` only); `None` when `odd` does not
/// exist (yet: nothing was written to it).
fn cf_of(db: &Db, i: u32) -> Option<cairn::ColumnFamily> {
    if i.is_multiple_of(2) {
        Some(db.default_cf())
    } else {
        db.cf(ODD_CF)
    }
}

fn open_with(dir: &Path, o: impl Fn() -> Options) -> cairn::Result<Db> {
    let t = Instant::now();
    loop {
        match Db::open(dir, o()) {
            Err(cairn::Error::Locked(_)) if t.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            r => return r,
        }
    }
}

fn key(tid: usize, idx: u32) -> Vec<u8> {
    format!("t{tid}k{idx:04}").into_bytes()
}

/// The value written by op `ctr` of thread `tid` to key `idx`: checkable, and of varied
/// length so that memtables fill at different points.
fn value(tid: usize, idx: u32, ctr: u64) -> Vec<u8> {
    let mut v = format!("t{tid}k{idx:04}={ctr}|").into_bytes();
    // Now and then a value larger than a 32 KiB log block: its WAL record has first,
    // middle and last fragments, which a kill can tear between.
    let pad = if ctr % 64 == 13 {
        40_000
    } else {
        (ctr.wrapping_mul(2654435761) % 300) as usize
    };
    v.extend(std::iter::repeat_n(b'a' + (ctr % 26) as u8, pad));
    v
}

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Put(u32),
    Delete(u32),
    /// Deletes the thread's keys with index in `[lo, hi)`.
    DeleteRange(u32, u32),
    /// Puts the thread's keys with index in `[lo, hi)` by an ingested table (alone, never
    /// in a batch).
    Ingest(u32, u32),
}

fn encode_ops(ops: &[Op]) -> String {
    ops.iter()
        .map(|op| match op {
            Op::Put(i) => format!("P{i}"),
            Op::Delete(i) => format!("D{i}"),
            Op::DeleteRange(a, b) => format!("R{a}-{b}"),
            Op::Ingest(a, b) => format!("I{a}-{b}"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn decode_ops(s: &str) -> Vec<Op> {
    s.split(',')
        .map(|e| {
            let (t, rest) = e.split_at(1);
            match t {
                "P" => Op::Put(rest.parse().unwrap()),
                "D" => Op::Delete(rest.parse().unwrap()),
                "R" | "I" => {
                    let (a, b) = rest.split_once('-').unwrap();
                    let (a, b) = (a.parse().unwrap(), b.parse().unwrap());
                    if t == "R" {
                        Op::DeleteRange(a, b)
                    } else {
                        Op::Ingest(a, b)
                    }
                }
                _ => panic!("bad op {e:?}"),
            }
        })
        .collect()
}

/// A random op group; `ingest` allows ingests (2% of the groups, each alone).
fn random_ops(rng: &mut SmallRng, ingest: bool) -> Vec<Op> {
    if ingest && rng.random_bool(0.02) {
        let a = rng.random_range(0..KEYS_PER_THREAD);
        return vec![Op::Ingest(
            a,
            (a + rng.random_range(1..20)).min(KEYS_PER_THREAD),
        )];
    }
    let one = |rng: &mut SmallRng| {
        let r = rng.random_range(0..100);
        if r < 75 {
            Op::Put(rng.random_range(0..KEYS_PER_THREAD))
        } else if r < 95 {
            Op::Delete(rng.random_range(0..KEYS_PER_THREAD))
        } else {
            // Mostly a few keys; one in four spans up to half the thread's keys (one
            // record, whatever it covers).
            let a = rng.random_range(0..KEYS_PER_THREAD);
            let width = if rng.random_bool(0.25) {
                rng.random_range(1..KEYS_PER_THREAD / 2)
            } else {
                rng.random_range(1..6)
            };
            Op::DeleteRange(a, (a + width).min(KEYS_PER_THREAD))
        }
    };
    if rng.random_bool(0.25) {
        (0..rng.random_range(2..6)).map(|_| one(rng)).collect()
    } else {
        vec![one(rng)]
    }
}

/// Applies one op of thread `tid` (counter `ctr`) to a model of its keys.
fn apply(model: &mut BTreeMap<u32, Vec<u8>>, tid: usize, ctr: u64, ops: &[Op]) {
    for op in ops {
        match *op {
            Op::Put(i) => {
                model.insert(i, value(tid, i, ctr));
            }
            Op::Delete(i) => {
                model.remove(&i);
            }
            Op::DeleteRange(a, b) => {
                for i in a..b {
                    model.remove(&i);
                }
            }
            Op::Ingest(a, b) => {
                for i in a..b {
                    model.insert(i, value(tid, i, ctr));
                }
            }
        }
    }
}

/// Writes the thread's keys `[a, b)` at counter `ctr` to a table beside the database
/// and ingests it.
fn ingest(db: &Db, dir: &Path, tid: usize, ctr: u64, a: u32, b: u32) -> cairn::Result<()> {
    let path = dir.with_extension(format!("ingest-{tid}-{ctr}.sst"));
    let _ = std::fs::remove_file(&path); // left by an earlier, killed child
    let mut w = cairn::SstFileWriter::create(&path, &Options::default())?;
    for i in a..b {
        w.put(&key(tid, i), &value(tid, i, ctr))?;
    }
    w.finish()?;
    let r = db.ingest_external_file(&[&path]);
    let _ = std::fs::remove_file(&path);
    r
}

/// The child: writes until killed.
fn child_main(dir: &Path) {
    let sync = std::env::var("CAIRN_CRASH_SYNC").unwrap() == "1";
    let base: u64 = std::env::var("CAIRN_CRASH_BASE").unwrap().parse().unwrap();
    let seed: u64 = std::env::var("CAIRN_CRASH_CHILD_SEED")
        .unwrap()
        .parse()
        .unwrap();
    let db = Arc::new(open_db(dir).expect("child open"));
    let stop = Arc::new(AtomicBool::new(false));
    let two_cfs = dir.file_name().is_some_and(|n| n == CF_DB);
    if two_cfs && db.cf(ODD_CF).is_none() {
        db.create_cf(ODD_CF).expect("child create_cf");
    }
    if dir.file_name().is_some_and(|n| n == MIXED_DB) {
        // K_i changes in flight, with every kind of transition (the kill ends the thread).
        let db = db.clone();
        std::thread::spawn(move || {
            let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed);
            let transitions = [
                cairn::Transition::Greedy,
                cairn::Transition::Lazy,
                cairn::Transition::Flexible,
            ];
            loop {
                std::thread::sleep(Duration::from_millis(rng.random_range(2..15)));
                let level = rng.random_range(1..=3);
                let k = rng.random_range(1..=4);
                let t = transitions[rng.random_range(0..3)];
                let _ = db.set_policy(&db.default_cf(), level, k, t);
            }
        });
    }
    if dir.file_name().is_some_and(|n| n == SALSM_DB) {
        // Proactive compactions with a new random cold-key set each time.
        let db = db.clone();
        std::thread::spawn(move || {
            let mut rng = SmallRng::seed_from_u64(seed ^ 0xc01d);
            loop {
                std::thread::sleep(Duration::from_millis(rng.random_range(2..15)));
                let cf = db.default_cf();
                let keys: Vec<Vec<u8>> = (0..200)
                    .map(|_| {
                        key(
                            rng.random_range(0..THREADS),
                            rng.random_range(0..KEYS_PER_THREAD),
                        )
                    })
                    .collect();
                let set = cairn::learned::ColdSet::new(cf.id(), 0, 0.0, "crash", keys);
                let _ = db.install_cold_set(&cf, set);
                let _ = db.proactive_compact(&cf);
            }
        });
    }
    let threads: Vec<_> = (0..THREADS)
        .map(|tid| {
            let db = db.clone();
            let stop = stop.clone();
            let dir = dir.to_path_buf();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ (tid as u64 * 0x9e37_79b9));
                let wo = WriteOptions {
                    sync,
                    query_column: None,
                    disable_wal: false,
                };
                let mut ctr = base;
                while !stop.load(Ordering::Relaxed) {
                    ctr += 1;
                    let ops = random_ops(&mut rng, !two_cfs);
                    let line = format!("@I {tid} {ctr} {}\n", encode_ops(&ops));
                    std::io::stdout().lock().write_all(line.as_bytes()).unwrap();
                    let r = if two_cfs {
                        let odd = db.cf(ODD_CF).expect("created above").id();
                        let cf = |i: u32| {
                            if i.is_multiple_of(2) {
                                CfId::DEFAULT
                            } else {
                                odd
                            }
                        };
                        let mut b = WriteBatch::new();
                        for op in &ops {
                            match *op {
                                Op::Put(i) => b.put_cf(cf(i), &key(tid, i), &value(tid, i, ctr)),
                                Op::Delete(i) => b.delete_cf(cf(i), &key(tid, i)),
                                Op::DeleteRange(x, y) => b
                                    .delete_range_cf(CfId::DEFAULT, &key(tid, x), &key(tid, y))
                                    .and_then(|_| {
                                        b.delete_range_cf(odd, &key(tid, x), &key(tid, y))
                                    }),
                                Op::Ingest(..) => unreachable!("no ingest with two families"),
                            }
                            .unwrap();
                        }
                        db.write(&wo, b)
                    } else if ops.len() == 1 {
                        match ops[0] {
                            Op::Put(i) => db.put(&wo, &key(tid, i), &value(tid, i, ctr)),
                            Op::Delete(i) => db.delete(&wo, &key(tid, i)),
                            Op::DeleteRange(a, b) => {
                                db.delete_range(&wo, &key(tid, a), &key(tid, b))
                            }
                            Op::Ingest(a, b) => ingest(&db, &dir, tid, ctr, a, b),
                        }
                    } else {
                        let mut b = WriteBatch::new();
                        for op in &ops {
                            match *op {
                                Op::Put(i) => b.put(&key(tid, i), &value(tid, i, ctr)).unwrap(),
                                Op::Delete(i) => b.delete(&key(tid, i)).unwrap(),
                                Op::DeleteRange(x, y) => {
                                    b.delete_range(&key(tid, x), &key(tid, y)).unwrap()
                                }
                                Op::Ingest(..) => unreachable!("an ingest goes alone"),
                            }
                        }
                        db.write(&wo, b)
                    };
                    if let Err(e) = r {
                        eprintln!("child write failed: {e}");
                        std::process::exit(3);
                    }
                    let line = format!("@A {tid} {ctr}\n");
                    std::io::stdout().lock().write_all(line.as_bytes()).unwrap();
                }
            })
        })
        .collect();
    // Runs until the parent kills it; a safety net in case the parent is gone.
    std::thread::sleep(Duration::from_secs(30));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    eprintln!("child was not killed");
    std::process::exit(4);
}

/// A value's head (key and counter) and length, for messages.
fn show(v: &[u8]) -> String {
    let head = String::from_utf8_lossy(&v[..v.len().min(24)]).into_owned();
    format!("{head}..({} bytes)", v.len())
}

/// One intended op of a thread, in order.
struct Intent {
    ctr: u64,
    ops: Vec<Op>,
    acked: bool,
}

/// Runs one child for `run_ms`, kills it, and returns every intent per thread.
fn run_child(
    dir: &Path,
    test_name: &str,
    sync: bool,
    base: u64,
    seed: u64,
    run_ms: u64,
) -> Vec<Vec<Intent>> {
    let exe = std::env::current_exe().unwrap();
    let stderr_path = dir.with_extension("child-stderr");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let mut child = Command::new(exe)
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .env("CAIRN_CRASH_SYNC", if sync { "1" } else { "0" })
        .env("CAIRN_CRASH_BASE", base.to_string())
        .env("CAIRN_CRASH_CHILD_SEED", seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut lines = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = r.read_until(b'\n', &mut buf).unwrap();
            if n == 0 {
                break;
            }
            if buf.last() == Some(&b'\n') {
                // Only a whole line counts; a partial last line is dropped.
                lines.push(String::from_utf8(buf[..buf.len() - 1].to_vec()).unwrap());
            }
        }
        lines
    });
    let deadline = Instant::now() + Duration::from_millis(run_ms);
    let mut exited = None;
    while Instant::now() < deadline {
        if let Some(st) = child.try_wait().unwrap() {
            exited = Some(st);
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if let Some(st) = exited {
        let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        panic!("child exited by itself with {st}: {err}");
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let lines = reader.join().unwrap();
    let mut per_thread: Vec<Vec<Intent>> = (0..THREADS).map(|_| Vec::new()).collect();
    for line in lines {
        // The harness prints "test <name> ... " without a newline before the child's
        // first line: protocol lines start at their '@' marker.
        let Some(at) = line.find('@') else { continue };
        let mut parts = line[at + 1..].splitn(4, ' ');
        match parts.next() {
            Some("I") => {
                let tid: usize = parts.next().unwrap().parse().unwrap();
                let ctr: u64 = parts.next().unwrap().parse().unwrap();
                let ops = decode_ops(parts.next().unwrap());
                let t = &mut per_thread[tid];
                assert!(
                    t.last().is_none_or(|i| i.acked),
                    "thread {tid} started an op before its previous one was acknowledged"
                );
                t.push(Intent {
                    ctr,
                    ops,
                    acked: false,
                });
            }
            Some("A") => {
                let tid: usize = parts.next().unwrap().parse().unwrap();
                let ctr: u64 = parts.next().unwrap().parse().unwrap();
                let last = per_thread[tid].last_mut().expect("ack without intent");
                assert_eq!(last.ctr, ctr);
                last.acked = true;
            }
            _ => {} // test harness output
        }
    }
    per_thread
}

/// Reads the whole database and checks it against the models; advances each model to the
/// prefix of its thread's ops that the database holds.
fn verify(
    dir: &Path,
    models: &mut [BTreeMap<u32, Vec<u8>>],
    intents: &[Vec<Intent>],
    sync: bool,
    cycle: usize,
) -> (usize, usize) {
    let db =
        open_db(dir).unwrap_or_else(|e| panic!("cycle {cycle}: reopen after kill failed: {e}"));
    // Observed state per thread, from point reads and from a full scan (which must agree).
    let two_cfs = dir.file_name().is_some_and(|n| n == CF_DB);
    let mut observed: Vec<BTreeMap<u32, Vec<u8>>> = (0..THREADS).map(|_| BTreeMap::new()).collect();
    for (tid, obs) in observed.iter_mut().enumerate() {
        for i in 0..KEYS_PER_THREAD {
            let cf = if two_cfs {
                match cf_of(&db, i) {
                    Some(cf) => cf,
                    None => continue,
                }
            } else {
                db.default_cf()
            };
            if let Some(v) = db
                .get_cf(&cf, &key(tid, i))
                .unwrap_or_else(|e| panic!("cycle {cycle}: get failed: {e}"))
            {
                obs.insert(i, v);
            }
        }
    }
    let mut scanned = 0;
    let mut families = vec![db.default_cf()];
    if two_cfs {
        families.extend(db.cf(ODD_CF));
    }
    let scans = families.iter().flat_map(|cf| {
        let scan = db
            .scan_opt::<&[u8], _>(&Default::default(), cf, .., false)
            .unwrap();
        scan.map(move |item| (cf.id(), item))
    });
    for (cf_id, item) in scans {
        let (k, v) = item.unwrap_or_else(|e| panic!("cycle {cycle}: scan failed: {e}"));
        let ks = String::from_utf8(k.clone()).expect("utf-8 key");
        let parsed = ks
            .strip_prefix('t')
            .and_then(|r| r.split_once('k'))
            .and_then(|(t, i)| Some((t.parse::<usize>().ok()?, i.parse::<u32>().ok()?)));
        let Some((tid, i)) = parsed.filter(|&(t, i)| t < THREADS && i < KEYS_PER_THREAD) else {
            panic!("cycle {cycle}: scan returned a key that was never written: {ks:?}");
        };
        if two_cfs {
            assert_eq!(
                cf_id == CfId::DEFAULT,
                i.is_multiple_of(2),
                "cycle {cycle}: {ks} found in column family {cf_id}, where it was never written"
            );
        }
        assert_eq!(
            observed[tid].get(&i),
            Some(&v),
            "cycle {cycle}: scan and get disagree on {ks}"
        );
        scanned += 1;
    }
    let total: usize = observed.iter().map(|o| o.len()).sum();
    assert_eq!(
        scanned, total,
        "cycle {cycle}: scan missed keys that get finds"
    );
    let mut lost_inflight = 0;
    for tid in 0..THREADS {
        let ops = &intents[tid];
        let acked = ops.iter().filter(|i| i.acked).count();
        // Find every prefix length p whose state equals what the database holds, tracking
        // the number of keys on which model and database differ.
        let mut state = models[tid].clone();
        let diff = |state: &BTreeMap<u32, Vec<u8>>, i: u32| state.get(&i) != observed[tid].get(&i);
        let mut mismatches = (0..KEYS_PER_THREAD).filter(|&i| diff(&state, i)).count();
        let mut best = (mismatches == 0).then_some(0);
        let mut best_state = state.clone();
        for (p, intent) in ops.iter().enumerate() {
            let touched: Vec<u32> = (0..KEYS_PER_THREAD)
                .filter(|&i| {
                    intent.ops.iter().any(|op| match *op {
                        Op::Put(k) | Op::Delete(k) => k == i,
                        Op::DeleteRange(a, b) | Op::Ingest(a, b) => (a..b).contains(&i),
                    })
                })
                .collect();
            for &i in &touched {
                mismatches -= diff(&state, i) as usize;
            }
            apply(&mut state, tid, intent.ctr, &intent.ops);
            for &i in &touched {
                mismatches += diff(&state, i) as usize;
            }
            if mismatches == 0 {
                best = Some(p + 1);
                best_state = state.clone();
            }
        }
        let Some(p) = best else {
            let first_diff: Vec<_> = (0..KEYS_PER_THREAD)
                .filter(|&i| diff(&state, i))
                .take(5)
                .map(|i| {
                    (
                        i,
                        state.get(&i).map(|v| show(v)),
                        observed[tid].get(&i).map(|v| show(v)),
                    )
                })
                .collect();
            panic!(
                "cycle {cycle}: thread {tid}: the database matches no prefix of the thread's \
                 {} ops ({acked} acknowledged); (key, after all ops, found): {first_diff:?}",
                ops.len()
            );
        };
        if sync {
            assert!(
                p >= acked,
                "cycle {cycle}: thread {tid}: only {p} of {acked} acknowledged sync writes \
                 survived"
            );
            assert!(p <= acked + 1, "more ops applied than intended");
            if p == acked && ops.len() > acked {
                lost_inflight += 1;
            }
        }
        models[tid] = best_state;
    }
    db.close().unwrap();
    (total, lost_inflight)
}

fn crash_cycles(test_name: &str, sync: bool, default_cycles: usize) {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child_main(Path::new(&dir));
        return;
    }
    let cycles: usize = std::env::var("CAIRN_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_cycles);
    let seed: u64 = std::env::var("CAIRN_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("{test_name}: seed {seed} (set CAIRN_CRASH_SEED to repeat), {cycles} cycles");
    let mut rng = SmallRng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(if test_name.contains("vlog") {
        VLOG_DB
    } else if test_name.contains("leaper") {
        LEAPER_DB
    } else if test_name.contains("mixed") {
        MIXED_DB
    } else if test_name.contains("ruskey") {
        RUSKEY_DB
    } else if test_name.contains("salsm") {
        SALSM_DB
    } else if test_name.contains("column_families") {
        CF_DB
    } else {
        "db"
    });
    let mut models: Vec<BTreeMap<u32, Vec<u8>>> = (0..THREADS).map(|_| BTreeMap::new()).collect();
    let start = Instant::now();
    let (mut total_ops, mut ingests) = (0, 0);
    for cycle in 0..cycles {
        let run_ms = rng.random_range(20..=300);
        let base = (cycle as u64 + 1) * 10_000_000;
        let intents = run_child(&dir, test_name, sync, base, rng.random(), run_ms);
        total_ops += intents.iter().map(|t| t.len()).sum::<usize>();
        ingests += intents
            .iter()
            .flatten()
            .filter(|i| i.acked && matches!(i.ops[..], [Op::Ingest(..)]))
            .count();
        verify(&dir, &mut models, &intents, sync, cycle);
    }
    let db = open_db(&dir).unwrap();
    let files: Vec<usize> = db.stats().levels.iter().map(|l| l.files).collect();
    if test_name.contains("vlog") && cycles >= 10 {
        let v = db.stats().vlog;
        assert!(
            v.files_live > 0 && v.live_bytes > 0,
            "nothing separated: {v:?}"
        );
    }
    // Tables live in the directory, or in its tier directories.
    let tables: usize = [dir.clone(), dir.join("hot"), dir.join("cold")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .count();
    drop(db);
    eprintln!(
        "{test_name}: {cycles} cycles, {total_ops} ops ({ingests} ingests acknowledged) in {:.1?}; files per level {files:?}",
        start.elapsed()
    );
    // Every kind of op but two families' ran ingests.
    if cycles >= 10 && !test_name.contains("column_families") {
        assert!(ingests > 0, "no ingest acknowledged in {total_ops} ops");
    }
    // The runs flushed and compacted: tables below level 0 (and the file numbers of
    // tables went far beyond the few that one run makes).
    if cycles >= 10 {
        assert!(
            files.iter().skip(1).sum::<usize>() > 0 && tables > 0,
            "no compaction happened: {files:?}"
        );
    }
}

#[test]
fn crash_sync_writes_survive_sigkill() {
    crash_cycles("crash_sync_writes_survive_sigkill", true, 50);
}

/// Kills during flushes that separate values and during value-log GC lose no
/// acknowledged write.
#[test]
fn crash_vlog_sync_writes_survive_sigkill() {
    crash_cycles("crash_vlog_sync_writes_survive_sigkill", true, 50);
}

/// Kills with the learned index, AC-Key and tiering on, while run limits change, lose no
/// acknowledged write.
#[test]
fn crash_mixed_sync_writes_survive_sigkill() {
    crash_cycles("crash_mixed_sync_writes_survive_sigkill", true, 30);
}

/// Kills while RusKey's tuner changes K_i and checkpoints its agents lose no
/// acknowledged write, and the checkpoint left behind (whole, or a torn temporary file)
/// never stops an open.
#[test]
#[cfg(feature = "ruskey")]
fn crash_ruskey_sync_writes_survive_sigkill() {
    crash_cycles("crash_ruskey_sync_writes_survive_sigkill", true, 20);
}

/// Kills while proactive compactions move records between tiers lose no acknowledged
/// write.
#[test]
fn crash_salsm_sync_writes_survive_sigkill() {
    crash_cycles("crash_salsm_sync_writes_survive_sigkill", true, 20);
}

/// Kills while two column families share the WAL, with batches spanning both, lose no
/// acknowledged write and never keep part of a batch.
#[test]
fn crash_column_families_sync_writes_survive_sigkill() {
    crash_cycles(
        "crash_column_families_sync_writes_survive_sigkill",
        true,
        30,
    );
}

/// Kills while Leaper warms and evicts blocks around flushes and compactions lose no
/// acknowledged write.
#[test]
fn crash_leaper_sync_writes_survive_sigkill() {
    crash_cycles("crash_leaper_sync_writes_survive_sigkill", true, 30);
}

#[test]
fn crash_nosync_writes_stay_prefix_consistent() {
    crash_cycles("crash_nosync_writes_stay_prefix_consistent", false, 50);
}

/// Deterministic form of the first bug the crash test found: a WAL rotation takes a file
/// number without a manifest edit, so the recovered counter can name the newest WAL.
#[test]
fn reopen_after_an_unlogged_wal_rotation_keeps_every_write() {
    let tmp = tempfile::tempdir().unwrap();
    let o = || Options {
        write_buffer_size: 4096,
        background_work: false,
        ..Options::small()
    };
    let wals = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                n.to_string_lossy().ends_with(".log")
            })
            .count()
    };
    let mut n = 0;
    for round in 0..3 {
        let db = open_with(tmp.path(), o).unwrap();
        // Write until the memtable switches (a new WAL) but is not flushed yet.
        let start = wals(tmp.path());
        while wals(tmp.path()) == start {
            db.put(
                &WriteOptions {
                    sync: true,
                    query_column: None,
                    disable_wal: false,
                },
                &key(0, n),
                &value(0, n, n as u64),
            )
            .unwrap();
            n += 1;
        }
        for _ in 0..3 {
            db.put(
                &WriteOptions {
                    sync: true,
                    query_column: None,
                    disable_wal: false,
                },
                &key(0, n),
                &value(0, n, n as u64),
            )
            .unwrap();
            n += 1;
        }
        // Close logs no manifest edit either: the rotation's file number stays unlogged.
        db.close().unwrap();
        let db = open_with(tmp.path(), o).unwrap_or_else(|e| panic!("round {round}: reopen: {e}"));
        for i in 0..n {
            assert_eq!(
                db.get(&key(0, i)).unwrap(),
                Some(value(0, i, i as u64)),
                "round {round}: key {i}"
            );
        }
        db.close().unwrap();
    }
}

/// Deterministic form of the second bug the crash test found (a value from an old cycle
/// came back): a merge judged whether it may drop tombstones over its inputs' key range
/// only, while it also rewrote destination files reaching beyond it, so deleted keys
/// reappeared from deeper levels. Random puts (some larger than a log block) and deletes
/// with tiny memtables, checked against a model after every flush-sized step.
#[test]
fn deleted_keys_stay_deleted_through_compactions() {
    let o = || Options {
        background_work: false,
        ..crash_options()
    };
    // Seeds that resurrected keys before the fix.
    let seeds = [6u64, 10, 16];
    for seed in seeds {
        let mut rng = SmallRng::seed_from_u64(seed);
        let tmp = tempfile::tempdir().unwrap();
        let mut model: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
        let mut db = open_with(tmp.path(), o).unwrap();
        let wo = WriteOptions::default();
        for step in 0..3000u64 {
            let i = rng.random_range(0..KEYS_PER_THREAD);
            if rng.random_bool(0.25) {
                db.delete(&wo, &key(0, i)).unwrap();
                model.remove(&i);
            } else {
                db.put(&wo, &key(0, i), &value(0, i, step)).unwrap();
                model.insert(i, value(0, i, step));
            }
            if step % 100 == 99 {
                if step % 1000 == 999 {
                    drop(db);
                    db = open_with(tmp.path(), o).unwrap();
                }
                for i in 0..KEYS_PER_THREAD {
                    let got = db.get(&key(0, i)).unwrap();
                    assert_eq!(
                        got.as_deref().map(show),
                        model.get(&i).map(|v| show(v)),
                        "seed {seed} step {step} key {i}"
                    );
                }
            }
        }
    }
}
