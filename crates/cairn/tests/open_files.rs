//! `Options::max_open_files`: a tree of many more tables and value-log files than the
//! bound keeps the process's descriptors within it while gets, iterators and compactions
//! run; a process whose descriptor limit is below the tree's file count reads every key
//! with a bound and fails with `EMFILE` (an error, not a panic) without one; a learned
//! table closed by the bound keeps its model; bounds too small to work are refused.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn::options::MIN_OPEN_FILES;
use cairn::{Compression, Db, Error, IndexPolicy, Options, ReadOptions, WriteOptions};

use support::key_no;

/// Tests here count the process's descriptors: they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Descriptors the process holds now.
fn open_fds() -> usize {
    // The directory's own descriptor is counted too, every time alike.
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

/// A value naming its key and round: 100 bytes (separated into a value log), or 20 for
/// every seventh key (kept in the table).
fn val(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("v{i}-{round}|").into_bytes();
    v.resize(
        if i.is_multiple_of(7) { 20 } else { 100 },
        b'a' + (i % 26) as u8,
    );
    v
}

/// The round a value was written in, checking that it is `i`'s.
fn round_of(i: u32, v: &[u8]) -> u32 {
    let s = std::str::from_utf8(v).unwrap();
    let (name, _) = s.split_once('|').unwrap();
    let (k, r) = name[1..].split_once('-').unwrap();
    assert_eq!(k.parse::<u32>().unwrap(), i, "value of another key");
    let r = r.parse().unwrap();
    assert_eq!(v, val(i, r).as_slice(), "damaged value of key {i}");
    r
}

/// Tiny tables and memtables, values separated: a few thousand keys make hundreds of
/// tables and value-log files.
fn small_tree(max_open_files: Option<usize>) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size: 4 << 10,
        block_size: 1024,
        level1_bytes: 16 << 10,
        block_cache_bytes: 256 << 10,
        value_threshold: Some(64),
        max_open_files,
        ..Options::default()
    }
    // The file counts these tests need are of uncompressed tables.
    .with_compression(Compression::None)
}

fn tree_files(db: &Db) -> (usize, u64) {
    let s = db.stats();
    (s.levels.iter().map(|l| l.files).sum(), s.vlog.files_live)
}

/// Checks every key of `model` with gets and a forward scan.
fn check_all(db: &Db, model: &BTreeMap<u32, u32>) {
    for (&i, &r) in model {
        assert_eq!(db.get(&key(i)).unwrap(), Some(val(i, r)), "get key {i}");
    }
    let mut n = 0;
    for item in db.scan::<&[u8], _>(..).unwrap() {
        let (k, v) = item.unwrap();
        let i = key_no(&k);
        assert_eq!(Some(&round_of(i, &v)), model.get(&i), "scan key {i}");
        n += 1;
    }
    assert_eq!(n, model.len(), "scan saw every key once");
}

/// Samples the process's descriptors until stopped; returns the most seen.
struct FdMonitor {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FdMonitor {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicUsize::new(0));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(open_fds(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(500));
            }
        });
        FdMonitor {
            stop,
            peak,
            thread: Some(thread),
        }
    }

    fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed).max(open_fds())
    }
}

impl Drop for FdMonitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Descriptors allowed above the bound, which leaves 10 for the lock file, manifest, WAL
/// and the files flushes and compactions write and read: the test's own (the monitor's
/// directory, the test harness's pipes), and files in use beyond the reserve (tables an
/// iterator or get holds while the cache is full of others in use, compaction inputs, a
/// value-log file being written). Seen: 23 to 27 above the descriptors open before, for a
/// bound of 20; unbounded, 760. Twice the margin seen, for a loaded machine where level 0
/// runs deeper (an iterator holds a table per run).
const SLACK: usize = 32;

/// A bound of 20 on a tree of hundreds of tables and value-log files: the descriptors
/// stay within the bound (plus a few) while writers, compactions, value-log GC, gets and
/// scans run, and every key reads back right, before, during and after.
#[test]
fn bounded_tree_keeps_descriptors_within_bound() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let bound = MIN_OPEN_FILES;
    let base = open_fds();
    let monitor = FdMonitor::start();
    let db = Arc::new(Db::open(dir.path(), small_tree(Some(bound))).unwrap());
    const N: u32 = 36_000;
    let wo = WriteOptions::default();
    let mut model = BTreeMap::new();
    for i in 0..N {
        db.put(&wo, &key(i), &val(i, 0)).unwrap();
        model.insert(i, 0);
    }
    db.flush().unwrap();
    check_all(&db, &model);
    let (tables, vlogs) = tree_files(&db);
    assert!(
        tables >= 150 && tables + vlogs as usize >= 10 * bound,
        "the tree is not much larger than the bound: {tables} tables, {vlogs} value logs"
    );

    // Overwrites (flushes, compactions, GC) beside gets and scans of every key.
    let done = Arc::new(AtomicBool::new(false));
    let scans = AtomicUsize::new(0);
    let gets = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..2u32 {
            let (db, done, gets) = (&db, &done, &gets);
            s.spawn(move || {
                let mut i = t * 7919 % N;
                while !done.load(Ordering::Relaxed) {
                    let v = db.get(&key(i)).unwrap().expect("every key is there");
                    assert!(round_of(i, &v) <= 1);
                    gets.fetch_add(1, Ordering::Relaxed);
                    i = (i + 104_729) % N;
                }
            });
        }
        let (db, done, scans) = (&db, &done, &scans);
        s.spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let mut n = 0u32;
                let mut it = db.iter(&ReadOptions::default(), &db.default_cf()).unwrap();
                it.seek_to_first();
                while it.valid() {
                    assert_eq!(key_no(it.key()), n, "scan skipped or repeated a key");
                    assert!(round_of(n, it.value()) <= 1);
                    n += 1;
                    it.next();
                }
                it.status().unwrap();
                assert_eq!(n, N);
                scans.fetch_add(1, Ordering::Relaxed);
            }
        });
        for i in (0..N).step_by(2) {
            db.put(&wo, &key(i), &val(i, 1)).unwrap();
        }
        db.compact_range(None, None).unwrap();
        // Readers see the compacted tree too.
        let t0 = Instant::now();
        while scans.load(Ordering::Relaxed) < 2 && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
        done.store(true, Ordering::Relaxed);
    });
    assert!(scans.load(Ordering::Relaxed) >= 2 && gets.load(Ordering::Relaxed) > 0);
    for i in (0..N).step_by(2) {
        model.insert(i, 1);
    }
    check_all(&db, &model);

    let s = db.stats();
    let peak = monitor.peak();
    eprintln!(
        "{tables} tables and {vlogs} value logs at first; {} compactions; open files \
         {} ({} closed by the bound); descriptors: {base} before open, peak {peak}",
        s.compactions, s.open_files, s.open_file_evictions
    );
    assert!(s.compactions > 0, "compactions ran");
    // Its share is the bound less 10; files in use may hold a few more a while.
    assert!(
        s.open_files as usize <= bound,
        "the cache holds {}",
        s.open_files
    );
    assert!(s.open_file_evictions > 0, "the bound closed files");
    assert!(
        peak <= base + bound + SLACK,
        "descriptors peaked at {peak}, more than {base} + {bound} + {SLACK}"
    );
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
}

const CHILD_ENV: &str = "CAIRN_OPEN_FILES_CHILD";
const CHILD_LIMIT: u64 = 128;

fn is_emfile(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.raw_os_error() == Some(libc::EMFILE))
}

/// Opens `dir` with `o` and reads every key of `model` (gets and a scan), stopping at the
/// first error, which comes with what was being done.
fn try_read_all(dir: &Path, o: Options, model: &BTreeMap<u32, u32>) -> Result<Db, (String, Error)> {
    let db = Db::open(dir, o).map_err(|e| ("open".to_string(), e))?;
    for (n, (&i, &r)) in model.iter().enumerate() {
        let v = db
            .get(&key(i))
            .map_err(|e| (format!("get, after {n} keys read"), e))?;
        assert_eq!(v, Some(val(i, r)), "key {i}");
    }
    let mut n = 0;
    let scan_err = |e| ("scan".to_string(), e);
    for item in db.scan::<&[u8], _>(..).map_err(scan_err)? {
        let (k, v) = item.map_err(scan_err)?;
        assert_eq!(Some(&round_of(key_no(&k), &v)), model.get(&key_no(&k)));
        n += 1;
    }
    assert_eq!(n, model.len());
    Ok(db)
}

/// Writes keys `0..n` to a new database at `dir` (values separated at `threshold`),
/// unbounded; returns the model.
fn build(dir: &Path, threshold: Option<usize>, n: u32) -> BTreeMap<u32, u32> {
    let o = Options {
        value_threshold: threshold,
        ..small_tree(None)
    };
    let db = Db::open(dir, o).unwrap();
    let wo = WriteOptions::default();
    let mut model = BTreeMap::new();
    for i in 0..n {
        db.put(&wo, &key(i), &val(i, 0)).unwrap();
        model.insert(i, 0);
    }
    db.flush().unwrap();
    let (tables, vlogs) = tree_files(&db);
    db.close().unwrap();
    assert!(
        tables + vlogs as usize > 2 * CHILD_LIMIT as usize,
        "{tables} tables and {vlogs} value logs fit the limit"
    );
    println!("{}: {tables} tables, {vlogs} value logs", dir.display());
    model
}

/// Under the lowered limit: reading every key of the database at `dir` fails with
/// EMFILE unbounded, and works with `max_open_files = 64`, as do overwrites and a
/// compaction of every table.
fn read_under_limit(dir: &Path, threshold: Option<usize>, mut model: BTreeMap<u32, u32>) {
    let o = |bound| Options {
        value_threshold: threshold,
        ..small_tree(bound)
    };
    match try_read_all(dir, o(None), &model) {
        Ok(_) => panic!("every file fit under the limit without a bound"),
        Err((what, e)) => {
            assert!(is_emfile(&e), "not EMFILE: {e}");
            println!("unbounded: error at {what}: {e}");
        }
    }
    // The failed database is gone (dropped): its descriptors with it.
    let db = match try_read_all(dir, o(Some(64)), &model) {
        Ok(db) => db,
        Err((what, e)) => panic!("bounded: {what}: {e}"),
    };
    println!(
        "bounded 64: every key read, {} descriptors open",
        open_fds()
    );
    let wo = WriteOptions::default();
    let n = model.len() as u32;
    for i in (0..n).step_by(3) {
        db.put(&wo, &key(i), &val(i, 1)).unwrap();
        model.insert(i, 1);
    }
    db.compact_range(None, None).unwrap();
    check_all(&db, &model);
    println!(
        "bounded 64: full compaction and reads again, {} files closed by the bound",
        db.stats().open_file_evictions
    );
    db.close().unwrap();
}

/// In a child process (the descriptor limit is the process's): builds two trees of more
/// files than `CHILD_LIMIT`, one with values in value logs (more of them than the limit)
/// and one with values in its tables, lowers `RLIMIT_NOFILE` to the limit, then reads
/// each without a bound and with one.
fn child_main(dir: &Path) {
    let (sep, inline) = (dir.join("separated"), dir.join("inline"));
    let sep_model = build(&sep, Some(64), 36_000);
    let inline_model = build(&inline, None, 12_000);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = CHILD_LIMIT.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    println!(
        "RLIMIT_NOFILE {}, {} descriptors open",
        lim.rlim_cur,
        open_fds()
    );
    println!("separated values:");
    read_under_limit(&sep, Some(64), sep_model);
    println!("values in tables:");
    read_under_limit(&inline, None, inline_model);
    println!("CHILD-OK");
}

/// The test that fails without a bound: with `RLIMIT_NOFILE` at 128 and a tree of more
/// files, reads fail with `EMFILE` unbounded and all work with `max_open_files = 64`.
#[test]
fn low_descriptor_limit_needs_max_open_files() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child_main(Path::new(&dir));
        return;
    }
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "low_descriptor_limit_needs_max_open_files",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("child stdout:\n{stdout}");
    assert!(
        out.status.success() && stdout.contains("CHILD-OK"),
        "child failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert_eq!(stdout.matches("unbounded: error").count(), 2, "{stdout}");
}

/// A learned table closed by the bound gets its saved model back when it is opened
/// again: nothing is learned twice, and reads keep using the models.
#[test]
fn learned_models_survive_closing() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        index: IndexPolicy::learn_all(8),
        background_work: false,
        value_threshold: None,
        ..small_tree(Some(MIN_OPEN_FILES))
    };
    let db = Db::open(dir.path(), o).unwrap();
    const N: u32 = 4_000;
    let wo = WriteOptions::default();
    for i in 0..N {
        db.put(&wo, &key(i), &val(i, 0)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let (tables, _) = tree_files(&db);
    assert!(tables > 3 * MIN_OPEN_FILES, "only {tables} tables");
    // Read a slice of the keys at a time and let the learner run: the tables read are
    // still open then (the cache holds 10).
    let read = |range: std::ops::Range<u32>| {
        for i in range {
            assert_eq!(db.get(&key(i)).unwrap(), Some(val(i, 0)), "key {i}");
        }
    };
    let step = N / tables as u32 * 4;
    let mut i = 0;
    while i < N {
        read(i..(i + step).min(N));
        db.run_background_work().unwrap();
        i += step;
    }
    let learned = db.stats();
    assert_eq!(
        learned.learned_tables, tables as u64,
        "every table learned: {learned:?}"
    );
    assert!(learned.open_file_evictions > 0);
    // Every table has been closed and is opened again: models come from their files.
    read(0..N);
    db.run_background_work().unwrap();
    let s = db.stats();
    assert_eq!(
        s.learned_tables, learned.learned_tables,
        "nothing relearned"
    );
    assert!(
        s.learned_models_loaded >= tables as u64 - 10,
        "models loaded again: {} of {tables}",
        s.learned_models_loaded
    );
    assert!(
        s.learned_lookups - learned.learned_lookups >= u64::from(N) / 2,
        "reads after reopening used models: {} of {N}",
        s.learned_lookups - learned.learned_lookups
    );
    db.close().unwrap();
}

/// Bounds below `MIN_OPEN_FILES` are refused with `InvalidArgument`; `None` (unbounded)
/// and the minimum are accepted.
#[test]
fn invalid_bounds_are_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    for n in [0, 1, 10, MIN_OPEN_FILES - 1] {
        let o = Options {
            max_open_files: Some(n),
            ..Options::small()
        };
        assert!(
            matches!(o.validate(), Err(Error::InvalidArgument(_))),
            "{n} validated"
        );
        match Db::open(dir.path(), o) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("max_open_files"), "{m}"),
            Err(e) => panic!("{n}: not InvalidArgument: {e}"),
            Ok(_) => panic!("{n}: opened"),
        }
    }
    for n in [None, Some(MIN_OPEN_FILES), Some(100_000)] {
        let o = Options {
            max_open_files: n,
            ..Options::small()
        };
        let db = Db::open(dir.path(), o).unwrap();
        db.put(&WriteOptions::default(), b"k", b"v").unwrap();
        assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
        db.close().unwrap();
    }
}
