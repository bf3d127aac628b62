//! The expected state (the oracle): keys and values that name themselves, the history of
//! every key during a cycle with the logical times at which each version was issued and
//! acknowledged, the window of versions a read may return, and the check of the state a
//! reopen finds against the writers' logs.
//!
//! Each key has one owner writer, so a key's history is sequential. A read that began at
//! logical time `t0` and ended at `t1` may return a version issued before `t1` that no
//! version acknowledged before `t0` superseded, and nothing older than a version some read
//! that finished before `t0` returned (reads never go back in time). A failed call is
//! uncertain: its versions stay allowed until an acknowledged one supersedes them.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Writer threads; each owns `KEYS_PER_WRITER` keys.
pub const WRITERS: usize = 4;
/// Keys per writer: few enough that keys are overwritten and deleted often.
pub const KEYS_PER_WRITER: usize = 48;
/// All keys.
pub const KEYS: usize = WRITERS * KEYS_PER_WRITER;

/// What a key holds: the stamp of the write that put its value, or `None` (absent).
pub type Obs = Option<u64>;

/// A key's bytes: `w<writer>k<index>`, so that key order is the order of global ids.
pub fn key_bytes(g: usize) -> Vec<u8> {
    format!("w{}k{:04}", g / KEYS_PER_WRITER, g % KEYS_PER_WRITER).into_bytes()
}

/// The global id of a key, if it is one of ours.
pub fn parse_key(k: &[u8]) -> Option<usize> {
    let s = std::str::from_utf8(k).ok()?;
    let (w, i) = s.strip_prefix('w')?.split_once('k')?;
    let (w, i): (usize, usize) = (w.parse().ok()?, i.parse().ok()?);
    (w < WRITERS && i < KEYS_PER_WRITER && key_bytes(w * KEYS_PER_WRITER + i) == k)
        .then_some(w * KEYS_PER_WRITER + i)
}

/// The writer that owns key `g`.
pub fn owner(g: usize) -> usize {
    g / KEYS_PER_WRITER
}

/// Column family of key `g` (0: `default`, 1: `b`): a writer's batches span both.
pub fn cf_of(g: usize) -> usize {
    (g % KEYS_PER_WRITER) % 2
}

/// A write's stamp: the cycle (of its directory) and the writer's op counter in it.
pub fn stamp(cycle: u32, counter: u32) -> u64 {
    (u64::from(cycle) << 32) | u64::from(counter)
}

/// The writer's op index (from 0) of a stamp written in `cycle`, if it was.
pub fn op_index(stamp: u64, cycle: u32) -> Option<usize> {
    ((stamp >> 32) as u32 == cycle && stamp as u32 > 0).then(|| (stamp as u32 - 1) as usize)
}

pub fn mix(mut x: u64) -> u64 {
    // splitmix64's finaliser.
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The value stamp `s` wrote to key `g`: `key=stamp|` and padding of a length and byte
/// derived from both (now and then larger than a 32 KiB log block or a data block), so a
/// read can be traced to its key and write, and any damaged byte shows.
pub fn value_bytes(g: usize, s: u64) -> Vec<u8> {
    let mut v = key_bytes(g);
    v.extend_from_slice(format!("={s:x}|").as_bytes());
    let h = mix(s ^ ((g as u64) << 48));
    let pad = match h % 1024 {
        0 => 40_000,
        1..=15 => 3_000,
        _ => ((h >> 16) % 180) as usize,
    };
    v.resize(v.len() + pad, b'a' + ((h >> 40) % 26) as u8);
    v
}

/// The stamp of a value read for key `g`, or why it is no value ever written to `g`.
pub fn decode_value(g: usize, v: &[u8]) -> Result<u64, String> {
    let bad = || {
        let head = String::from_utf8_lossy(&v[..v.len().min(40)]).into_owned();
        format!(
            "key {}: value {head:?} ({} bytes) was never written to it",
            String::from_utf8_lossy(&key_bytes(g)),
            v.len()
        )
    };
    let k = key_bytes(g);
    let rest = v.strip_prefix(k.as_slice()).ok_or_else(bad)?;
    let rest = rest.strip_prefix(b"=").ok_or_else(bad)?;
    let end = rest.iter().position(|&b| b == b'|').ok_or_else(bad)?;
    let s = std::str::from_utf8(&rest[..end]).map_err(|_| bad())?;
    let s = u64::from_str_radix(s, 16).map_err(|_| bad())?;
    if value_bytes(g, s) != v {
        return Err(bad());
    }
    Ok(s)
}

/// Shows an observation for messages.
pub fn show(o: Obs) -> String {
    match o {
        Some(s) => format!("{}.{}", s >> 32, s as u32),
        None => "absent".into(),
    }
}

const PENDING: u64 = u64::MAX;
const FAILED: u64 = u64::MAX - 1;

/// One version of a key: its value, when it was issued and when acknowledged.
struct Ver {
    value: Obs,
    issued: u64,
    /// Logical time of the acknowledgement, `PENDING` or `FAILED`.
    acked: u64,
}

#[derive(Default)]
struct KeyHist {
    vers: Vec<Ver>,
    /// (time a read finished, index of the version it returned): later reads may not
    /// return older versions.
    seen: Vec<(u64, usize)>,
}

/// A read's window in logical time: started at `t0`, its state fixed by `t1`.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub t0: u64,
    pub t1: u64,
}

/// The live expected state of one cycle.
pub struct Expected {
    clock: AtomicU64,
    keys: Vec<Mutex<KeyHist>>,
}

impl Expected {
    /// Every key at its verified value from the last reopen.
    pub fn new(base: &[Obs]) -> Self {
        let keys = base
            .iter()
            .map(|&value| {
                Mutex::new(KeyHist {
                    vers: vec![Ver {
                        value,
                        issued: 0,
                        acked: 0,
                    }],
                    seen: Vec::new(),
                })
            })
            .collect();
        Expected {
            clock: AtomicU64::new(1),
            keys,
        }
    }

    /// The next logical time.
    pub fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    /// Records a write's new versions before it is called; returns its issue time.
    pub fn issue(&self, entries: &[(usize, Obs)]) -> u64 {
        let t = self.tick();
        for &(g, value) in entries {
            self.keys[g].lock().vers.push(Ver {
                value,
                issued: t,
                acked: PENDING,
            });
        }
        t
    }

    /// Records a write's outcome; returns the time of its acknowledgement.
    pub fn settle(&self, entries: &[(usize, Obs)], ok: bool) -> u64 {
        let t = self.tick();
        for &(g, _) in entries {
            let mut k = self.keys[g].lock();
            let last = k.vers.last_mut().expect("issued");
            last.acked = if ok { t } else { FAILED };
        }
        t
    }

    /// When the version `s` of key `g` was issued (0 for the verified base).
    pub fn issued_at(&self, g: usize, s: u64) -> u64 {
        let k = self.keys[g].lock();
        k.vers
            .iter()
            .rev()
            .find(|v| v.value == Some(s))
            .map_or(0, |v| v.issued)
    }

    /// Checks that a read of key `g` in `w` may return `got`; with `monotonic`, also that
    /// no read that finished before it began saw a newer version, and records this one.
    pub fn check(&self, g: usize, w: Window, got: Obs, monotonic: bool) -> Result<(), String> {
        let mut k = self.keys[g].lock();
        let floor = match monotonic {
            true => k
                .seen
                .iter()
                .rev()
                .find(|&&(t, _)| t < w.t0)
                .map_or(0, |&(_, i)| i),
            false => 0,
        };
        let mut allowed = Vec::new();
        for (i, v) in k.vers.iter().enumerate().rev() {
            if i < floor {
                break;
            }
            if v.issued > w.t1 {
                continue;
            }
            allowed.push((i, v.value));
            if v.acked < w.t0 {
                break; // acknowledged before the read began: older ones are gone
            }
        }
        match allowed.iter().find(|&&(_, v)| v == got) {
            Some(&(i, _)) => {
                // Kept increasing in time and index: only a newer version raises a floor.
                if monotonic && got.is_some() && k.seen.last().is_none_or(|&(_, j)| j < i) {
                    let t = self.tick();
                    k.seen.push((t, i));
                }
                Ok(())
            }
            None => Err(format!(
                "key {}: read {} in window {}..{}, allowed {}",
                String::from_utf8_lossy(&key_bytes(g)),
                show(got),
                w.t0,
                w.t1,
                allowed
                    .iter()
                    .map(|&(_, v)| show(v))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// How a writer's call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged at this logical time.
    Acked(u64),
    /// Failed, or its end is unknown (a kill): uncertain.
    Failed,
}

/// One write of a writer, in its order: the keys it set (a delete sets `None`).
#[derive(Clone, Debug)]
pub struct OpRec {
    pub entries: Vec<(usize, Obs)>,
    pub sync: bool,
    pub issued: u64,
    pub outcome: Outcome,
}

/// What recovery must keep of the acknowledged writes.
#[derive(Clone, Copy, Debug)]
pub enum Durability {
    /// Every acknowledged write (clean close, drop, kill: the bytes reached the OS).
    All,
    /// Power loss: writes acknowledged with `sync`, and those acknowledged before a sync
    /// point (the issue of a synced write or the start of a successful flush) at `t`.
    SyncedBefore(u64),
}

/// The verdict on a reopened state.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Acknowledged writes that had to survive and did not.
    pub lost_acked: u64,
    /// Acknowledged writes a power loss took, as it may.
    pub dropped_unsynced: u64,
    /// Wrong answers: states no allowed history gives.
    pub errors: Vec<String>,
}

/// Checks the state found after a reopen: per writer, it must be the state after some
/// prefix of the writer's ops that keeps every write `durability` names (failed writes in
/// it may or may not have taken effect), and no write may show without its batch.
pub fn check_recovered(
    base: &[Obs],
    logs: &[Vec<OpRec>],
    found: &[Obs],
    durability: Durability,
    cycle: u32,
) -> Verdict {
    let mut verdict = Verdict::default();
    for (w, ops) in logs.iter().enumerate() {
        let keys = w * KEYS_PER_WRITER..(w + 1) * KEYS_PER_WRITER;
        let floor = durable_floor(ops, durability);
        match best_prefix(base, ops, found, keys.clone(), floor) {
            Ok(p) => {
                verdict.dropped_unsynced += acked_in(&ops[p..]);
                if let Err(e) = check_batches(ops, found, keys, cycle) {
                    verdict.errors.push(format!("writer {w}: {e}"));
                }
            }
            Err(Some(p)) => {
                verdict.lost_acked += acked_in(&ops[p..floor]);
                let lost: Vec<String> = ops[p..floor]
                    .iter()
                    .filter_map(|o| match o.outcome {
                        Outcome::Acked(t) => Some(format!(
                            "{}sync issued {} acked {t}",
                            if o.sync { "" } else { "un" },
                            o.issued
                        )),
                        Outcome::Failed => None,
                    })
                    .take(3)
                    .collect();
                verdict.errors.push(format!(
                    "writer {w}: only its first {p} of {} ops survived, {floor} had to \
                     ({} acknowledged writes lost: {})",
                    ops.len(),
                    acked_in(&ops[p..floor]),
                    lost.join("; ")
                ));
            }
            Err(None) => verdict.errors.push(format!(
                "writer {w}: the state matches no prefix of its {} ops: {}",
                ops.len(),
                first_diffs(base, ops, found, keys)
            )),
        }
    }
    verdict
}

fn acked_in(ops: &[OpRec]) -> u64 {
    ops.iter()
        .filter(|o| matches!(o.outcome, Outcome::Acked(_)))
        .count() as u64
}

/// Number of leading ops that must have survived.
fn durable_floor(ops: &[OpRec], d: Durability) -> usize {
    let must = |o: &OpRec| match (o.outcome, d) {
        (Outcome::Failed, _) => false,
        (Outcome::Acked(_), Durability::All) => true,
        (Outcome::Acked(t), Durability::SyncedBefore(sp)) => o.sync || t < sp,
    };
    ops.iter().rposition(must).map_or(0, |i| i + 1)
}

/// The longest prefix length `p >= floor` whose allowed state is the one found; else
/// `Err(Some(p))` for the longest shorter one (acknowledged writes lost) or `Err(None)`.
fn best_prefix(
    base: &[Obs],
    ops: &[OpRec],
    found: &[Obs],
    keys: std::ops::Range<usize>,
    floor: usize,
) -> Result<usize, Option<usize>> {
    let start = keys.start;
    // Per key, the values the state after the prefix may hold: the last acknowledged one
    // and those of failed writes after it.
    let mut allowed: Vec<Vec<Obs>> = keys.clone().map(|g| vec![base[g]]).collect();
    let ok = |allowed: &Vec<Vec<Obs>>, g: usize| allowed[g - start].contains(&found[g]);
    let mut mismatches = keys.clone().filter(|&g| !ok(&allowed, g)).count();
    let mut best = (mismatches == 0).then_some(0);
    let mut best_at_floor = best.filter(|_| floor == 0);
    for (i, op) in ops.iter().enumerate() {
        for &(g, v) in &op.entries {
            mismatches -= usize::from(!ok(&allowed, g));
            let a = &mut allowed[g - start];
            match op.outcome {
                Outcome::Acked(_) => *a = vec![v],
                Outcome::Failed => a.push(v),
            }
            mismatches += usize::from(!ok(&allowed, g));
        }
        if mismatches == 0 {
            best = Some(i + 1);
            if i + 1 >= floor {
                best_at_floor = Some(i + 1);
            }
        }
    }
    best_at_floor.ok_or(best)
}

/// A write that shows on one key shows on every key of its batch (or a later write of
/// the writer replaced it there).
fn check_batches(
    ops: &[OpRec],
    found: &[Obs],
    keys: std::ops::Range<usize>,
    cycle: u32,
) -> Result<(), String> {
    let visible: std::collections::BTreeSet<usize> = keys
        .clone()
        .filter_map(|g| found[g].and_then(|s| op_index(s, cycle)))
        .collect();
    for &i in &visible {
        for &(g, v) in &ops[i].entries {
            let later = |j: usize| j >= i;
            let fine = match found[g] {
                Some(s) => op_index(s, cycle).is_some_and(later),
                // Absent: the batch deleted it, or a later write of the writer did.
                None => {
                    v.is_none()
                        || ops[i + 1..]
                            .iter()
                            .any(|o| o.entries.iter().any(|&(h, x)| h == g && x.is_none()))
                }
            };
            if !fine {
                return Err(format!(
                    "op {i} shows on some keys but not on key {} (found {})",
                    String::from_utf8_lossy(&key_bytes(g)),
                    show(found[g])
                ));
            }
        }
    }
    Ok(())
}

/// The first keys on which the state after every op differs from the one found.
fn first_diffs(base: &[Obs], ops: &[OpRec], found: &[Obs], keys: std::ops::Range<usize>) -> String {
    let mut last: Vec<Obs> = base.to_vec();
    for op in ops {
        for &(g, v) in &op.entries {
            last[g] = v;
        }
    }
    keys.filter(|&g| last[g] != found[g])
        .take(4)
        .map(|g| {
            format!(
                "{} (base {}, last written {}, found {})",
                String::from_utf8_lossy(&key_bytes(g)),
                show(base[g]),
                show(last[g]),
                show(found[g])
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(entries: &[(usize, Obs)], sync: bool, outcome: Outcome) -> OpRec {
        OpRec {
            entries: entries.to_vec(),
            sync,
            issued: 0,
            outcome,
        }
    }

    /// Writer 0's history: put k0, batch (k1, k2), put k0 again; `last` is the third.
    fn logs(last: Outcome) -> Vec<Vec<OpRec>> {
        let mut l: Vec<Vec<OpRec>> = vec![Vec::new(); WRITERS];
        l[0] = vec![
            op(&[(0, Some(stamp(1, 1)))], false, Outcome::Acked(2)),
            op(
                &[(1, Some(stamp(1, 2))), (2, Some(stamp(1, 2)))],
                true,
                Outcome::Acked(4),
            ),
            op(&[(0, Some(stamp(1, 3)))], false, last),
        ];
        l
    }

    fn state(pairs: &[(usize, u64)]) -> Vec<Obs> {
        let mut s = vec![None; KEYS];
        for &(g, v) in pairs {
            s[g] = Some(v);
        }
        s
    }

    #[test]
    fn values_name_their_key_and_write() {
        for s in [stamp(1, 1), stamp(7, 40_000), stamp(3, 1023)] {
            let v = value_bytes(5, s);
            assert_eq!(decode_value(5, &v), Ok(s));
            assert!(decode_value(6, &v).is_err());
            let mut bad = v.clone();
            *bad.last_mut().unwrap() ^= 1;
            assert!(decode_value(5, &bad).is_err());
        }
        assert_eq!(parse_key(&key_bytes(KEYS - 1)), Some(KEYS - 1));
        assert_eq!(parse_key(b"w9k0001"), None);
    }

    #[test]
    fn recovery_keeps_what_it_must() {
        let base = vec![None; KEYS];
        let all = state(&[(0, stamp(1, 3)), (1, stamp(1, 2)), (2, stamp(1, 2))]);
        let v = check_recovered(&base, &logs(Outcome::Acked(6)), &all, Durability::All, 1);
        assert!(v.errors.is_empty() && v.lost_acked == 0, "{v:?}");
        // The last acknowledged write gone: lost after a clean close...
        let lost = state(&[(0, stamp(1, 1)), (1, stamp(1, 2)), (2, stamp(1, 2))]);
        let v = check_recovered(&base, &logs(Outcome::Acked(6)), &lost, Durability::All, 1);
        assert_eq!(v.lost_acked, 1, "{v:?}");
        // ... allowed after a power loss (it was not synced), and so when it failed.
        let v = check_recovered(
            &base,
            &logs(Outcome::Acked(6)),
            &lost,
            Durability::SyncedBefore(0),
            1,
        );
        assert!(v.errors.is_empty() && v.dropped_unsynced == 1, "{v:?}");
        let v = check_recovered(&base, &logs(Outcome::Failed), &lost, Durability::All, 1);
        assert!(v.errors.is_empty(), "{v:?}");
        // A sync point after it was acknowledged makes it durable.
        let v = check_recovered(
            &base,
            &logs(Outcome::Acked(6)),
            &lost,
            Durability::SyncedBefore(7),
            1,
        );
        assert_eq!(v.lost_acked, 1, "{v:?}");
        // The synced batch must survive a power loss.
        let v = check_recovered(
            &base,
            &logs(Outcome::Acked(6)),
            &state(&[(0, stamp(1, 1))]),
            Durability::SyncedBefore(0),
            1,
        );
        assert_eq!(v.lost_acked, 1, "{v:?}");
    }

    #[test]
    fn recovery_finds_wrong_states() {
        let base = vec![None; KEYS];
        // Half a batch.
        let half = state(&[(0, stamp(1, 3)), (1, stamp(1, 2))]);
        let v = check_recovered(&base, &logs(Outcome::Acked(6)), &half, Durability::All, 1);
        assert!(!v.errors.is_empty(), "{v:?}");
        // A later write without an earlier one (no prefix).
        let gap = state(&[(0, stamp(1, 3))]);
        let v = check_recovered(
            &base,
            &logs(Outcome::Acked(6)),
            &gap,
            Durability::SyncedBefore(0),
            1,
        );
        assert!(!v.errors.is_empty(), "{v:?}");
        // A value never written.
        let never = state(&[(0, stamp(1, 9)), (1, stamp(1, 2)), (2, stamp(1, 2))]);
        let v = check_recovered(&base, &logs(Outcome::Acked(6)), &never, Durability::All, 1);
        assert!(!v.errors.is_empty(), "{v:?}");
    }

    #[test]
    fn reads_fall_in_their_window() {
        let exp = Expected::new(&vec![None; KEYS]);
        let t0 = exp.tick();
        let e1 = [(3, Some(stamp(1, 1)))];
        exp.issue(&e1);
        let w = Window { t0, t1: exp.tick() };
        // In flight: either.
        assert!(exp.check(3, w, None, true).is_ok());
        assert!(exp.check(3, w, Some(stamp(1, 1)), true).is_ok());
        exp.settle(&e1, true);
        let after = Window {
            t0: exp.tick(),
            t1: exp.tick(),
        };
        assert!(exp.check(3, after, None, true).is_err());
        assert!(exp.check(3, after, Some(stamp(1, 1)), true).is_ok());
        // Issued after the read ended: not yet.
        let e2 = [(3, Some(stamp(1, 2)))];
        exp.issue(&e2);
        exp.settle(&e2, false);
        assert!(exp.check(3, after, Some(stamp(1, 2)), true).is_err());
        // A failed write may or may not show.
        let late = Window {
            t0: exp.tick(),
            t1: exp.tick(),
        };
        assert!(exp.check(3, late, Some(stamp(1, 2)), true).is_ok());
        // Once a read saw it, later reads may not go back.
        let later = Window {
            t0: exp.tick(),
            t1: exp.tick(),
        };
        assert!(exp.check(3, later, Some(stamp(1, 1)), true).is_err());
    }
}
