//! RusKey's missions: the measured phase cut every M operations (counted over all
//! threads), with each mission's latency and the engine's run limits K_i at its end; and
//! the scripted change of K (`--set-k-at`, RusKey's Fig. 10) at a mission's end.

use crate::engines::{Engine, KChange};
use crate::report::json::MissionRow;
use parking_lot::Mutex;
use std::time::Instant;

#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    ops: u64,
    ns: u64,
    read_ops: u64,
    read_ns: u64,
    write_ops: u64,
    write_ns: u64,
}

struct State {
    acc: Acc,
    phase: usize,
    start: Instant,
    /// The virtual clock at the last mission's end (virtual runs).
    last_io: Option<cairn::clock::VirtualStats>,
    rows: Vec<MissionRow>,
    change: Option<KChange>,
    /// Why the K change failed (the run then fails).
    change_error: Option<String>,
}

/// Shared by the workers of one run. A mission closes after `size` ops or when an op of a
/// later phase arrives (the last mission of a phase can be short), so a mission never
/// spans two sessions with one thread; with several, ops of a worker still finishing the
/// previous phase count toward the next phase's first mission.
pub struct Missions<'a> {
    size: u64,
    engine: Option<&'a dyn Engine>,
    state: Mutex<State>,
}

/// Mean in nanoseconds, to a tenth (the JSON holds thousands of them).
fn mean(ns: u64, n: u64) -> Option<f64> {
    (n > 0).then(|| (ns as f64 / n as f64 * 10.0).round() / 10.0)
}

impl<'a> Missions<'a> {
    /// `engine` is asked for its K_i at each mission's end (None: no K column).
    pub fn new(size: u64, engine: Option<&'a dyn Engine>, start: Instant) -> Self {
        Missions {
            size: size.max(1),
            engine,
            state: Mutex::new(State {
                acc: Acc::default(),
                phase: 0,
                start,
                last_io: engine.and_then(|e| e.virtual_clock()).map(|c| c.stats()),
                rows: Vec::new(),
                change: None,
                change_error: None,
            }),
        }
    }

    /// Sets the engine's K at every level below 0 to `c.k` when mission `c.mission` ends.
    pub fn with_k_change(self, c: Option<KChange>) -> Self {
        self.state.lock().change = c;
        self
    }

    /// One op of `phase` that took `nanos`; `write` for updates, inserts and
    /// read-modify-writes.
    pub fn record(&self, phase: usize, write: bool, nanos: u64) {
        let mut st = self.state.lock();
        if phase > st.phase {
            if st.acc.ops > 0 {
                st.close(self.engine);
            }
            st.phase = phase;
        }
        let a = &mut st.acc;
        a.ops += 1;
        a.ns += nanos;
        if write {
            a.write_ops += 1;
            a.write_ns += nanos;
        } else {
            a.read_ops += 1;
            a.read_ns += nanos;
        }
        if a.ops >= self.size {
            st.close(self.engine);
        }
    }

    /// The series, with the last (partial) mission closed; an error when the K change
    /// failed, or the run ended before the mission it was due after.
    pub fn finish(self) -> anyhow::Result<Vec<MissionRow>> {
        let engine = self.engine;
        let mut st = self.state.into_inner();
        if st.acc.ops > 0 {
            st.close(engine);
        }
        if let Some(e) = st.change_error {
            anyhow::bail!(e);
        }
        if let Some(c) = st.change {
            if st.rows.len() < c.mission as usize {
                anyhow::bail!(
                    "--set-k-at {}:{}: the measured phase ended after {} missions",
                    c.mission,
                    c.k,
                    st.rows.len()
                );
            }
        }
        Ok(st.rows)
    }
}

impl State {
    fn close(&mut self, engine: Option<&dyn Engine>) {
        let now = super::clock::now();
        let a = std::mem::take(&mut self.acc);
        let ks = engine.and_then(|e| e.level_ks());
        let runs = engine.and_then(|e| e.level_run_counts());
        let io_now = engine.and_then(|e| e.virtual_clock()).map(|c| c.stats());
        let io = match (&io_now, &self.last_io) {
            (Some(n), Some(l)) => Some(n.since(l)),
            _ => None,
        };
        self.last_io = io_now;
        self.rows.push(MissionRow {
            index: self.rows.len(),
            phase: self.phase,
            ops: a.ops,
            wall_ns: now.duration_since(self.start).as_nanos() as u64,
            mean_ns: mean(a.ns, a.ops).unwrap_or(0.0),
            read_ops: a.read_ops,
            read_mean_ns: mean(a.read_ns, a.read_ops),
            write_ops: a.write_ops,
            write_mean_ns: mean(a.write_ns, a.write_ops),
            ks,
            runs,
            k_set: None,
            io,
        });
        if let (Some(c), Some(e)) = (self.change, engine) {
            if self.rows.len() as u64 == c.mission {
                match e.set_run_limits(c.k) {
                    Ok(set) => {
                        if let Some(r) = self.rows.last_mut() {
                            r.k_set = set;
                        }
                    }
                    Err(err) => {
                        self.change_error =
                            Some(format!("--set-k-at {}:{}: {err:#}", c.mission, c.k))
                    }
                }
            }
        }
        self.start = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missions_cut_every_m_ops_and_at_phase_ends() {
        let m = Missions::new(4, None, Instant::now());
        // Phase 0: 10 ops (4 + 4 + 2), phase 1: 5 ops (4 + 1), phase 3 (2 skipped): 1 op.
        for i in 0..10u64 {
            m.record(0, i % 2 == 0, 1000 + i);
        }
        for _ in 0..5 {
            m.record(1, true, 500);
        }
        m.record(3, false, 7);
        let rows = m.finish().unwrap();
        let shape: Vec<(usize, usize, u64)> =
            rows.iter().map(|r| (r.index, r.phase, r.ops)).collect();
        assert_eq!(
            shape,
            vec![
                (0, 0, 4),
                (1, 0, 4),
                (2, 0, 2),
                (3, 1, 4),
                (4, 1, 1),
                (5, 3, 1)
            ]
        );
        // Mission 0: 1000..=1003, writes at 1000 and 1002.
        assert_eq!(rows[0].mean_ns, 1001.5);
        assert_eq!(rows[0].write_ops, 2);
        assert_eq!(rows[0].write_mean_ns, Some(1001.0));
        assert_eq!(rows[0].read_mean_ns, Some(1002.0));
        assert_eq!(rows[3].read_mean_ns, None);
        assert!(rows.iter().all(|r| r.ks.is_none()));
    }

    /// An engine that only answers K and records the K changes asked of it.
    #[derive(Default)]
    struct KEngine {
        k: Mutex<usize>,
        calls: Mutex<Vec<usize>>,
    }

    impl Engine for KEngine {
        fn open(_: &std::path::Path, _: &crate::engines::BenchConfig) -> anyhow::Result<Self> {
            Ok(KEngine::default())
        }
        fn put(&self, _: &[u8], _: &[u8]) -> anyhow::Result<()> {
            Ok(())
        }
        fn get(&self, _: &[u8]) -> anyhow::Result<Option<usize>> {
            Ok(None)
        }
        fn delete(&self, _: &[u8]) -> anyhow::Result<()> {
            Ok(())
        }
        fn delete_range(&self, _: &[u8], _: &[u8]) -> anyhow::Result<()> {
            Ok(())
        }
        fn scan(&self, _: &[u8], _: usize) -> anyhow::Result<usize> {
            Ok(0)
        }
        fn flush(&self) -> anyhow::Result<()> {
            Ok(())
        }
        fn counters(&self) -> crate::engines::EngineCounters {
            Default::default()
        }
        fn level_ks(&self) -> Option<Vec<usize>> {
            let k = (*self.k.lock()).max(1);
            Some(vec![k, k])
        }
        fn set_run_limits(&self, k: usize) -> anyhow::Result<Option<usize>> {
            if k > 9 {
                anyhow::bail!("K {k} too large");
            }
            let k = k.min(8); // as cairn clamps to T
            *self.k.lock() = k;
            self.calls.lock().push(k);
            Ok(Some(k))
        }
        fn close(self: Box<Self>) -> anyhow::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_k_change_happens_once_at_its_missions_end() {
        let e = KEngine::default();
        let m = Missions::new(3, Some(&e), Instant::now())
            .with_k_change(Some(KChange { mission: 2, k: 7 }));
        for _ in 0..12 {
            m.record(0, true, 10);
        }
        let rows = m.finish().unwrap();
        assert_eq!(*e.calls.lock(), vec![7], "exactly one change");
        let ks: Vec<usize> = rows.iter().map(|r| r.ks.as_ref().unwrap()[0]).collect();
        // K is read before the change: mission 2 (index 1) still ends with K = 1.
        assert_eq!(ks, vec![1, 1, 7, 7]);
        let set: Vec<Option<usize>> = rows.iter().map(|r| r.k_set).collect();
        assert_eq!(set, vec![None, Some(7), None, None]);

        // The K the engine set is recorded (clamped: 9 -> 8).
        let e = KEngine::default();
        let m = Missions::new(3, Some(&e), Instant::now())
            .with_k_change(Some(KChange { mission: 1, k: 9 }));
        for _ in 0..6 {
            m.record(0, true, 10);
        }
        assert_eq!(m.finish().unwrap()[0].k_set, Some(8));

        // A failed change fails the run, and so does a change the run never reached.
        for (c, ops, want) in [
            (KChange { mission: 1, k: 10 }, 6, "too large"),
            (KChange { mission: 5, k: 2 }, 6, "ended after 2 missions"),
        ] {
            let e = KEngine::default();
            let m = Missions::new(3, Some(&e), Instant::now()).with_k_change(Some(c));
            for _ in 0..ops {
                m.record(0, true, 10);
            }
            let err = m.finish().unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
    }
}
