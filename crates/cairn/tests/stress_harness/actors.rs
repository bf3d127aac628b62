//! The actors of a cycle, each a state machine with a `step`: writers (puts, deletes,
//! batches across both column families, range deletes over their own keys, synced or
//! not), readers (gets, scans and iterators on the latest state and at snapshots, checked
//! against the oracle and against each other) and the chaos actor (flushes, background
//! work, manual compactions, snapshots held and released, and each preset's own calls).
//! Threads run them concurrently, or one thread interleaves them by the seed.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use cairn::{ColumnFamily, Db, Error, ReadOptions, Snapshot, Transition, WriteBatch, WriteOptions};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::Rng;

use super::model::{
    cf_of, decode_value, key_bytes, owner, parse_key, stamp, Expected, Obs, OpRec, Outcome, Window,
    KEYS, KEYS_PER_WRITER,
};

/// Where writers report their ops: kept in memory, or also printed for the parent of a
/// child process that is killed (see `child`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Journal {
    Local,
    Pipe,
}

/// Counters of a cycle.
#[derive(Default)]
pub struct Counts {
    pub ops: AtomicU64,
    pub acked: AtomicU64,
    pub failed: AtomicU64,
}

/// What the actors of a cycle share.
pub struct Shared<'a> {
    pub db: &'a Db,
    pub faults: &'a cairn::storage::FaultInjector,
    pub exp: Expected,
    pub cfs: [ColumnFamily; 2],
    pub cycle: u32,
    pub preset: &'a str,
    pub bg: bool,
    /// One thread runs every actor: no sleeps, no waiting on others.
    pub det: bool,
    pub journal: Journal,
    pub root: PathBuf,
    pub stop: AtomicBool,
    pub counts: Counts,
    pub wrong: Mutex<Vec<String>>,
    /// Latest sync point: writes acknowledged before it survive a power loss.
    pub sync_point: AtomicU64,
    /// When the power cut was planned (logical time), for messages.
    pub cut_planned: AtomicU64,
}

impl Shared<'_> {
    /// A wrong answer.
    pub fn fail(&self, msg: String) {
        if trace() {
            eprintln!("stress: WRONG: {msg}");
        }
        if self.journal == Journal::Pipe {
            print_line(&format!("@W {}", msg.replace('\n', " ")));
        }
        self.wrong.lock().push(msg);
    }

    fn count<T>(&self, r: &cairn::Result<T>) {
        self.counts.ops.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = r {
            self.counts.failed.fetch_add(1, Ordering::Relaxed);
            if trace() {
                eprintln!("stress: failed call: {e}");
            }
        }
    }

    fn cf(&self, g: usize) -> &ColumnFamily {
        &self.cfs[cf_of(g)]
    }

    /// A pause between steps of a concurrent actor.
    fn pause(&self, rng: &mut SmallRng, max_ms: u64) {
        if !self.det && max_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(
                rng.random_range(0..max_ms),
            ));
        }
    }
}

/// `CAIRN_STRESS_TRACE=1` prints every failed call and wrong answer as it happens.
pub fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("CAIRN_STRESS_TRACE").is_some_and(|v| v == "1"))
}

/// One line on stdout in one `write(2)` (shorter than `PIPE_BUF`), so a kill leaves it
/// whole in the pipe or not at all.
pub fn print_line(line: &str) {
    let mut s = line.to_string();
    s.truncate(3000);
    s.push('\n');
    let _ = std::io::stdout().lock().write_all(s.as_bytes());
}

/// A writer's op, on its own key indices.
#[derive(Clone, Debug)]
enum WriteOp {
    Put(usize),
    Delete(usize),
    /// Distinct keys; `true` puts, `false` deletes.
    Batch(Vec<(usize, bool)>),
    /// Keys `[a, b)`, in the column families marked.
    Range(usize, usize, [bool; 2]),
}

pub struct Writer {
    pub w: usize,
    rng: SmallRng,
    counter: u32,
    pub log: Vec<OpRec>,
    stopped: bool,
}

impl Writer {
    pub fn new(w: usize, rng: SmallRng) -> Self {
        Writer {
            w,
            rng,
            counter: 0,
            log: Vec::new(),
            stopped: false,
        }
    }

    pub fn step(&mut self, sh: &Shared) {
        if self.stopped {
            return sh.pause(&mut self.rng, 3);
        }
        let op = self.pick();
        let sync = self.rng.random_ratio(1, 12);
        self.counter += 1;
        let s = stamp(sh.cycle, self.counter);
        let entries = self.entries(&op, s);
        if sh.journal == Journal::Pipe {
            print_line(&intent_line(self.w, self.counter, sync, &entries));
        }
        let issued = sh.exp.issue(&entries);
        let r = self.call(sh, &op, sync, s);
        let t = sh.exp.settle(&entries, r.is_ok());
        if sh.journal == Journal::Pipe {
            let tag = if r.is_ok() { 'A' } else { 'F' };
            print_line(&format!("@{tag} {} {}", self.w, self.counter));
        }
        sh.count(&r);
        let outcome = match &r {
            Ok(()) => {
                sh.counts.acked.fetch_add(1, Ordering::Relaxed);
                Outcome::Acked(t)
            }
            Err(e) => {
                // Writes stopped until reopen: nothing more to try in this cycle.
                self.stopped = matches!(e, Error::Closed(_));
                sh.pause(&mut self.rng, 2);
                Outcome::Failed
            }
        };
        self.log.push(OpRec {
            entries,
            sync,
            issued,
            outcome,
        });
    }

    fn pick(&mut self) -> WriteOp {
        let rng = &mut self.rng;
        let i = rng.random_range(0..KEYS_PER_WRITER);
        match rng.random_range(0..100) {
            0..=54 => WriteOp::Put(i),
            55..=69 => WriteOp::Delete(i),
            70..=94 => {
                let mut keys: Vec<usize> = (0..rng.random_range(2..7))
                    .map(|_| rng.random_range(0..KEYS_PER_WRITER))
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                WriteOp::Batch(
                    keys.into_iter()
                        .map(|k| (k, rng.random_bool(0.75)))
                        .collect(),
                )
            }
            _ => {
                let b = (i + rng.random_range(1..8)).min(KEYS_PER_WRITER);
                let cfs = [[true, false], [false, true], [true, true]][rng.random_range(0..3)];
                WriteOp::Range(i, b, cfs)
            }
        }
    }

    fn g(&self, i: usize) -> usize {
        self.w * KEYS_PER_WRITER + i
    }

    fn entries(&self, op: &WriteOp, s: u64) -> Vec<(usize, Obs)> {
        match op {
            WriteOp::Put(i) => vec![(self.g(*i), Some(s))],
            WriteOp::Delete(i) => vec![(self.g(*i), None)],
            WriteOp::Batch(keys) => keys
                .iter()
                .map(|&(i, put)| (self.g(i), put.then_some(s)))
                .collect(),
            WriteOp::Range(a, b, cfs) => (*a..*b)
                .map(|i| self.g(i))
                .filter(|&g| cfs[cf_of(g)])
                .map(|g| (g, None))
                .collect(),
        }
    }

    fn call(&self, sh: &Shared, op: &WriteOp, sync: bool, s: u64) -> cairn::Result<()> {
        let wo = WriteOptions {
            sync,
            query_column: None,
            disable_wal: false,
        };
        let db = sh.db;
        match op {
            WriteOp::Put(i) => {
                let g = self.g(*i);
                db.put_cf(
                    sh.cf(g),
                    &wo,
                    &key_bytes(g),
                    &super::model::value_bytes(g, s),
                )
            }
            WriteOp::Delete(i) => db.delete_cf(sh.cf(self.g(*i)), &wo, &key_bytes(self.g(*i))),
            WriteOp::Range(a, b, [true, false]) => {
                db.delete_range(&wo, &key_bytes(self.g(*a)), &key_bytes(self.g(*b)))
            }
            _ => db.write(&wo, self.batch(sh, op, s)),
        }
    }

    fn batch(&self, sh: &Shared, op: &WriteOp, s: u64) -> WriteBatch {
        let mut b = WriteBatch::new();
        match op {
            WriteOp::Batch(keys) => {
                for &(i, put) in keys {
                    let (g, cf) = (self.g(i), sh.cf(self.g(i)).id());
                    match put {
                        true => b.put_cf(cf, &key_bytes(g), &super::model::value_bytes(g, s)),
                        false => b.delete_cf(cf, &key_bytes(g)),
                    }
                    .expect("batch entry");
                }
            }
            WriteOp::Range(a, e, cfs) => {
                for (c, _) in cfs.iter().enumerate().filter(|(_, on)| **on) {
                    let (lo, hi) = (key_bytes(self.g(*a)), key_bytes(self.g(*e)));
                    b.delete_range_cf(sh.cfs[c].id(), &lo, &hi)
                        .expect("range entry");
                }
            }
            _ => unreachable!("single ops are not batched"),
        }
        b
    }
}

/// `@I <writer> <counter> <sync> <key>=<stamp hex or ->,...`
pub fn intent_line(w: usize, counter: u32, sync: bool, entries: &[(usize, Obs)]) -> String {
    let e: Vec<String> = entries
        .iter()
        .map(|&(g, v)| match v {
            Some(s) => format!("{g}={s:x}"),
            None => format!("{g}=-"),
        })
        .collect();
    format!("@I {w} {counter} {} {}", u8::from(sync), e.join(","))
}

/// Why a read gave nothing to check.
enum ReadErr {
    /// The call failed (an injected read fault, the power cut): allowed.
    Call,
    /// It answered, wrongly.
    Wrong(String),
}

/// A snapshot a reader holds across steps, and what it has read at it.
struct Held {
    snap: Snapshot,
    win: Window,
    seen: BTreeMap<usize, Obs>,
}

pub struct Reader {
    rng: SmallRng,
    held: Option<Held>,
}

impl Reader {
    pub fn new(rng: SmallRng) -> Self {
        Reader { rng, held: None }
    }

    pub fn step(&mut self, sh: &Shared) {
        let r = match self.rng.random_range(0..10) {
            0..=3 => self.get_latest(sh),
            4..=5 => self.scan_latest(sh),
            6..=7 => self.snapshot_agreement(sh),
            _ => self.held_snapshot(sh),
        };
        match r {
            Ok(()) => {}
            Err(ReadErr::Call) => {
                sh.counts.failed.fetch_add(1, Ordering::Relaxed);
            }
            Err(ReadErr::Wrong(m)) => sh.fail(m),
        }
        sh.pause(&mut self.rng, 2);
    }

    /// Whether to read backward (with probability `p`).
    fn backward(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn get_latest(&mut self, sh: &Shared) -> Result<(), ReadErr> {
        let g = self.rng.random_range(0..KEYS);
        let t0 = sh.exp.tick();
        let got = get_at(sh, &ReadOptions::default(), g)?;
        let win = Window {
            t0,
            t1: sh.exp.tick(),
        };
        sh.exp
            .check(g, win, got, true)
            .map_err(|e| ReadErr::Wrong(format!("get: {e}")))
    }

    /// A random key range `[lo, hi)` of global ids, and a column family.
    fn range(&mut self) -> (usize, usize, usize) {
        let lo = self.rng.random_range(0..KEYS);
        let hi = (lo + self.rng.random_range(1..80)).min(KEYS);
        (self.rng.random_range(0..2), lo, hi)
    }

    fn scan_latest(&mut self, sh: &Shared) -> Result<(), ReadErr> {
        let (cf, lo, hi) = self.range();
        let reverse = self.backward(0.3);
        let t0 = sh.exp.tick();
        let found = scan_at(sh, &ReadOptions::default(), cf, lo, hi, reverse)?;
        let win = Window {
            t0,
            t1: sh.exp.tick(),
        };
        for g in (lo..hi).filter(|&g| cf_of(g) == cf) {
            sh.exp
                .check(g, win, found.get(&g).copied(), true)
                .map_err(|e| ReadErr::Wrong(format!("scan (reverse: {reverse}): {e}")))?;
        }
        Ok(())
    }

    /// At a fresh snapshot: a scan, then gets, an iterator walk and a reverse scan over
    /// the same range must all agree with it, and it with the oracle.
    fn snapshot_agreement(&mut self, sh: &Shared) -> Result<(), ReadErr> {
        let (cf, lo, hi) = self.range();
        let (snap, win) = take_snapshot(sh);
        let ro = ReadOptions {
            snapshot: Some(snap),
            ..Default::default()
        };
        let scan = scan_at(sh, &ro, cf, lo, hi, false)?;
        let obs: BTreeMap<usize, Obs> = (lo..hi)
            .filter(|&g| cf_of(g) == cf)
            .map(|g| (g, scan.get(&g).copied()))
            .collect();
        check_at_snapshot(sh, win, &BTreeMap::new(), &obs, "snapshot scan")?;
        for _ in 0..4 {
            let g = self.rng.random_range(lo..hi);
            let got = get_at(sh, &ro, g)?;
            match obs.get(&g) {
                Some(&want) if got != want => return Err(wrong_pair("get and scan", g, got, want)),
                Some(_) => {}
                // A key of the other family: the oracle alone judges it.
                None => {
                    let one = BTreeMap::from([(g, got)]);
                    check_at_snapshot(sh, win, &obs, &one, "snapshot get")?
                }
            }
        }
        let start = self.rng.random_range(lo..hi);
        let forward = !self.backward(0.5);
        let walked = iter_walk(sh, &ro, cf, lo, hi, start, forward)?;
        for (g, got) in walked {
            if Some(got) != obs[&g] {
                let what = format!("iterator (forward: {forward}) and scan");
                return Err(wrong_pair(&what, g, Some(got), obs[&g]));
            }
        }
        if self.backward(0.3) {
            let rev = scan_at(sh, &ro, cf, lo, hi, true)?;
            if rev != scan {
                return Err(ReadErr::Wrong(format!(
                    "reverse scan of {lo}..{hi} differs from the forward one at a snapshot"
                )));
            }
        }
        Ok(())
    }

    /// A snapshot held across steps (writes, flushes, compactions in between): every
    /// read at it gives what the first read of a key gave.
    fn held_snapshot(&mut self, sh: &Shared) -> Result<(), ReadErr> {
        if self.held.is_none() || self.rng.random_ratio(1, 8) {
            let (snap, win) = take_snapshot(sh);
            self.held = Some(Held {
                snap,
                win,
                seen: BTreeMap::new(),
            });
            return Ok(());
        }
        let ro = ReadOptions {
            snapshot: self.held.as_ref().map(|h| h.snap.clone()),
            ..Default::default()
        };
        let mut now = BTreeMap::new();
        let mut reverse = false;
        if self.rng.random_bool(0.5) {
            let g = self.rng.random_range(0..KEYS);
            now.insert(g, get_at(sh, &ro, g)?);
        } else {
            let lo = self.rng.random_range(0..KEYS);
            let hi = (lo + self.rng.random_range(1..40)).min(KEYS);
            let cf = self.rng.random_range(0..2);
            reverse = self.backward(0.3);
            let scan = scan_at(sh, &ro, cf, lo, hi, reverse)?;
            for g in (lo..hi).filter(|&g| cf_of(g) == cf) {
                now.insert(g, scan.get(&g).copied());
            }
        }
        let h = self.held.as_mut().expect("held");
        for (&g, &got) in &now {
            if let Some(&before) = h.seen.get(&g) {
                if before != got {
                    let what = format!("held snapshot, read again (reverse: {reverse})");
                    self.held = None; // report it once
                    return Err(wrong_pair(&what, g, got, before));
                }
            }
        }
        let what = format!("held snapshot (reverse: {reverse})");
        let r = check_at_snapshot(sh, h.win, &h.seen, &now, &what);
        match r {
            Ok(()) => h.seen.extend(now),
            Err(_) => self.held = None,
        }
        r
    }
}

fn take_snapshot(sh: &Shared) -> (Snapshot, Window) {
    let t0 = sh.exp.tick();
    let snap = sh.db.snapshot();
    let t1 = sh.exp.tick();
    (snap, Window { t0, t1 })
}

fn wrong_pair(what: &str, g: usize, got: Obs, want: Obs) -> ReadErr {
    ReadErr::Wrong(format!(
        "{what} disagree on key {}: {} against {}",
        String::from_utf8_lossy(&key_bytes(g)),
        super::model::show(got),
        super::model::show(want)
    ))
}

/// Checks reads at one snapshot. A batch is atomic and a writer's ops are ordered, so
/// once the snapshot shows a write of a writer, it shows every write that writer had
/// acknowledged before issuing that one: the window of the writer's keys starts there.
/// `known` holds what earlier reads at the snapshot saw; `obs` is checked.
fn check_at_snapshot(
    sh: &Shared,
    win: Window,
    known: &BTreeMap<usize, Obs>,
    obs: &BTreeMap<usize, Obs>,
    what: &str,
) -> Result<(), ReadErr> {
    let mut start = [win.t0; super::model::WRITERS];
    for (&g, &o) in known.iter().chain(obs) {
        if let Some(s) = o {
            let t = sh.exp.issued_at(g, s);
            start[owner(g)] = start[owner(g)].max(t);
        }
    }
    for (&g, &o) in obs {
        let w = Window {
            t0: start[owner(g)],
            t1: win.t1,
        };
        sh.exp
            .check(g, w, o, false)
            .map_err(|e| ReadErr::Wrong(format!("{what}: {e}")))?;
    }
    Ok(())
}

fn get_at(sh: &Shared, ro: &ReadOptions, g: usize) -> Result<Obs, ReadErr> {
    let r = sh.db.get_opt(ro, sh.cf(g), &key_bytes(g));
    sh.count(&r);
    match r {
        Err(_) => Err(ReadErr::Call),
        Ok(None) => Ok(None),
        Ok(Some(v)) => decode_value(g, &v)
            .map(Some)
            .map_err(|e| ReadErr::Wrong(format!("get: {e}"))),
    }
}

/// Upper bound of global id `hi` (one past the last key when `hi == KEYS`).
fn bound(hi: usize) -> Vec<u8> {
    if hi >= KEYS {
        b"x".to_vec()
    } else {
        key_bytes(hi)
    }
}

/// Scans `[lo, hi)` of column family `cf`: every key ours, of that family, in the range,
/// in order, with a value that belongs to it.
fn scan_at(
    sh: &Shared,
    ro: &ReadOptions,
    cf: usize,
    lo: usize,
    hi: usize,
    reverse: bool,
) -> Result<BTreeMap<usize, u64>, ReadErr> {
    let scan = sh
        .db
        .scan_opt(ro, &sh.cfs[cf], key_bytes(lo)..bound(hi), reverse);
    sh.count(&scan);
    let scan = scan.map_err(|_| ReadErr::Call)?;
    let mut out = BTreeMap::new();
    let mut last: Option<usize> = None;
    for item in scan {
        let (k, v) = item.map_err(|_| {
            sh.counts.failed.fetch_add(1, Ordering::Relaxed);
            ReadErr::Call
        })?;
        let g = check_scanned(&k, cf, lo, hi)?;
        if last.is_some_and(|l| if reverse { g >= l } else { g <= l }) {
            return Err(ReadErr::Wrong(format!(
                "scan of {lo}..{hi} (reverse: {reverse}) out of order at {}",
                String::from_utf8_lossy(&k)
            )));
        }
        last = Some(g);
        let s = decode_value(g, &v).map_err(|e| ReadErr::Wrong(format!("scan: {e}")))?;
        out.insert(g, s);
    }
    Ok(out)
}

fn check_scanned(k: &[u8], cf: usize, lo: usize, hi: usize) -> Result<usize, ReadErr> {
    match parse_key(k) {
        Some(g) if cf_of(g) == cf && (lo..hi).contains(&g) => Ok(g),
        _ => Err(ReadErr::Wrong(format!(
            "scan of {lo}..{hi} in column family {cf} returned key {:?}",
            String::from_utf8_lossy(k)
        ))),
    }
}

/// A raw iterator bounded to `[lo, hi)`: seek to `start` and step forward to the end, or
/// seek_for_prev and step back to the beginning.
fn iter_walk(
    sh: &Shared,
    ro: &ReadOptions,
    cf: usize,
    lo: usize,
    hi: usize,
    start: usize,
    forward: bool,
) -> Result<Vec<(usize, u64)>, ReadErr> {
    let ro = ReadOptions {
        lower_bound: Some(key_bytes(lo)),
        upper_bound: Some(bound(hi)),
        ..ro.clone()
    };
    let it = sh.db.iter(&ro, &sh.cfs[cf]);
    sh.count(&it);
    let mut it = it.map_err(|_| ReadErr::Call)?;
    if forward {
        it.seek(&key_bytes(start));
    } else {
        it.seek_for_prev(&key_bytes(start));
    }
    let mut out = Vec::new();
    while it.valid() {
        let g = check_scanned(it.key(), cf, lo, hi)?;
        let ok = if forward { g >= start } else { g <= start };
        if !ok {
            return Err(ReadErr::Wrong(format!(
                "iterator positioned at {g} from {start} (forward: {forward})"
            )));
        }
        let s = decode_value(g, it.value()).map_err(|e| ReadErr::Wrong(format!("iter: {e}")))?;
        out.push((g, s));
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    it.status().map_err(|_| ReadErr::Call)?;
    Ok(out)
}

pub struct Chaos {
    rng: SmallRng,
    snaps: Vec<Snapshot>,
}

impl Chaos {
    pub fn new(rng: SmallRng) -> Self {
        Chaos {
            rng,
            snaps: Vec::new(),
        }
    }

    pub fn step(&mut self, sh: &Shared) {
        let db = sh.db;
        let pick = self.rng.random_range(0..100);
        if trace() {
            eprintln!("stress: chaos {pick}");
        }
        match pick {
            0..=19 => {
                let t = sh.exp.tick();
                let r = db.flush();
                sh.count(&r);
                if r.is_ok() {
                    sh.sync_point.fetch_max(t, Ordering::SeqCst);
                }
            }
            20..=34 if !sh.bg || self.rng.random_ratio(1, 4) => {
                sh.count(&db.run_background_work());
            }
            35..=44 => self.compact(sh),
            45..=69 if self.snaps.len() < 6 => self.snaps.push(db.snapshot()),
            70..=84 if !self.snaps.is_empty() => {
                let i = self.rng.random_range(0..self.snaps.len());
                self.snaps.swap_remove(i);
            }
            85..=96 => self.preset_call(sh),
            97..=99 => self.scratch_family(sh),
            _ => {}
        }
        if sh.journal == Journal::Pipe {
            // The parent cannot ask a killed child how many faults it injected.
            print_line(&format!("@J {}", sh.faults.injected()));
        }
        sh.pause(&mut self.rng, 8);
    }

    fn compact(&mut self, sh: &Shared) {
        let cf = &sh.cfs[self.rng.random_range(0..2)];
        let lo = self.rng.random_range(0..KEYS);
        let hi = (lo + self.rng.random_range(1..100)).min(KEYS - 1);
        let (lo, hi) = (key_bytes(lo), key_bytes(hi));
        let t = sh.exp.tick();
        let r = if self.rng.random_bool(0.3) {
            sh.db.compact_range_cf(cf, None, None)
        } else {
            sh.db.compact_range_cf(cf, Some(&lo), Some(&hi))
        };
        sh.count(&r);
        if r.is_ok() {
            // It flushed first.
            sh.sync_point.fetch_max(t, Ordering::SeqCst);
        }
    }

    /// What each preset does besides reads and writes: K changes in flight (tiering,
    /// RusKey), cold-key sets and proactive compactions (SA-LSM), a model loaded while
    /// running (Leaper).
    fn preset_call(&mut self, sh: &Shared) {
        let db = sh.db;
        let cf = &sh.cfs[self.rng.random_range(0..2)];
        match sh.preset {
            "tiering" | "ruskey" | "default" => {
                let level = self.rng.random_range(1..=3);
                let k = self.rng.random_range(1..=db.options().size_ratio);
                let t = [Transition::Greedy, Transition::Lazy, Transition::Flexible]
                    [self.rng.random_range(0..3)];
                sh.count(&db.set_policy(cf, level, k, t));
            }
            "sa-lsm" => {
                let keys: Vec<Vec<u8>> = (0..60)
                    .map(|_| key_bytes(self.rng.random_range(0..KEYS)))
                    .collect();
                let set = cairn::learned::ColdSet::new(cf.id(), 0, 0.0, "stress", keys);
                sh.count(&db.install_cold_set(cf, set));
                sh.count(&db.proactive_compact(cf));
            }
            "leaper" => {
                let model = super::setup::leaper_model(&sh.root);
                sh.count(&db.load_leaper_model(&sh.cfs[0], model));
            }
            _ => {}
        }
    }

    /// A column family created, written and dropped while the others run.
    fn scratch_family(&mut self, sh: &Shared) {
        let db = sh.db;
        if let Some(cf) = db.cf("scratch") {
            sh.count(&db.drop_cf(&cf));
            return;
        }
        let r = db.create_cf("scratch");
        sh.count(&r);
        if let Ok(cf) = r {
            sh.count(&db.put_cf(&cf, &WriteOptions::default(), b"s", b"x"));
            sh.count(&db.drop_cf(&cf));
        }
    }
}
