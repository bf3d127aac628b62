//! The compaction-policy tuner in the database: the mission clock (operations counted on
//! the foreground paths, a signal when a mission of M ends), the tuner's thread (reads
//! the mission's statistics, lets the tuner decide and train, applies K changes with the
//! configured transition), and its checkpoint file `TUNER` (framed, checksummed, written
//! to a temporary name and renamed; a damaged one is logged and the tuner starts fresh).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::EngineClock;
use crate::ids::CfId;

use parking_lot::{Condvar, Mutex};

use super::DbInner;
use crate::options::Options;
use crate::policy::cost_model::CostModel;
#[cfg(feature = "ruskey")]
use crate::policy::lerp::Lerp;
use crate::policy::tuner::{
    CompactionTuner, GreedyTuner, LevelMission, MissionStats, TunerPolicy, TunerStats,
};
use crate::{Error, Result};

/// The checkpoint's file name in the database directory.
pub(crate) use crate::filenames::TUNER as CHECKPOINT_FILE;
use crate::filenames::TUNER_TMP as CHECKPOINT_TMP;
const MAGIC: &[u8; 8] = b"CAIRNTUN";
const FRAME_VERSION: u32 = 1;

/// The mean size (key and value bytes) of the entries written since open, once there
/// are enough of them to trust.
fn measured_entry_bytes(c: &Counters) -> Option<f64> {
    (c.updates >= 100).then(|| c.user_bytes as f64 / c.updates as f64)
}

/// Counter values at a mission boundary.
#[derive(Clone, Default)]
struct Counters {
    lookups: u64,
    updates: u64,
    user_bytes: u64,
    op_ns: u64,
    levels: Vec<[u64; 6]>, // lookups, read_ios, write_bytes, write_ios, read_ns, compaction_ns
}

struct Core {
    tuner: Box<dyn CompactionTuner>,
    last: Counters,
    /// When the last mission ended, on the engine's clock.
    last_at: Duration,
    prev_read_fraction: f64,
    stats: TunerStats,
    /// Simulated missions still to run before the first real one.
    pretrain: Option<(CostModel, u32)>,
}

/// The tuner's state shared by the foreground (mission clock) and its thread.
pub(crate) struct TunerRuntime {
    mission_ops: u64,
    ops: AtomicU64,
    due: Mutex<u64>,
    cv: Condvar,
    core: Mutex<Core>,
}

impl TunerRuntime {
    /// The runtime for `opts.tuner`, resumed from the checkpoint in `path` when there is
    /// a usable one; `None` when no tuner is configured.
    // Without RusKey (the `ruskey` feature) nothing is resumed or replaced.
    #[cfg_attr(not(feature = "ruskey"), allow(unused_mut, unused_variables))]
    pub(crate) fn new(opts: &Options, path: &Path, clock: &EngineClock) -> Option<TunerRuntime> {
        let t = &opts.tuner;
        let levels = opts.num_levels;
        let (mut tuner, pretrain): (Box<dyn CompactionTuner>, _) = match &t.policy {
            TunerPolicy::Static => return None,
            TunerPolicy::Greedy { h_bottom, h_top } => {
                (Box::new(GreedyTuner::new(*h_bottom, *h_top)), None)
            }
            #[cfg(feature = "ruskey")]
            TunerPolicy::Lerp(p) => {
                let pre = (p.pretrain_missions > 0).then(|| {
                    (
                        CostModel::for_options(opts, levels.saturating_sub(1).max(1)),
                        p.pretrain_missions,
                    )
                });
                (Box::new(Lerp::new(p.clone(), levels)), pre)
            }
            // Refused at open (`TunerPolicy::validate`): the build has no RusKey.
            #[cfg(not(feature = "ruskey"))]
            TunerPolicy::Lerp(_) => return None,
        };
        let mut stats = TunerStats {
            policy: tuner.name().to_string(),
            ..Default::default()
        };
        let mut pretrain = pretrain;
        #[cfg(feature = "ruskey")]
        if t.checkpoint {
            if let TunerPolicy::Lerp(p) = &t.policy {
                match read_checkpoint(&path.join(CHECKPOINT_FILE)) {
                    Ok(None) => {}
                    Ok(Some(bytes)) => match Lerp::decode(p.clone(), levels, &bytes) {
                        Ok(l) => {
                            tuner = Box::new(l);
                            stats.resumed = true;
                            pretrain = None;
                        }
                        Err(e) => {
                            log::warn!(
                                "cairn: tuner checkpoint not used ({e}); tuning starts fresh"
                            )
                        }
                    },
                    Err(e) => {
                        log::warn!("cairn: tuner checkpoint not used ({e}); tuning starts fresh")
                    }
                }
            }
        }
        Some(TunerRuntime {
            mission_ops: t.mission_ops.max(1),
            ops: AtomicU64::new(0),
            due: Mutex::new(0),
            cv: Condvar::new(),
            core: Mutex::new(Core {
                tuner,
                last: Counters::default(),
                last_at: clock.now(),
                prev_read_fraction: 0.5,
                stats,
                pretrain,
            }),
        })
    }

    /// Counts `n` operations; signals the tuner when a mission ends.
    pub(crate) fn tick(&self, n: u64) {
        let before = self.ops.fetch_add(n, Ordering::Relaxed);
        let ended = (before + n) / self.mission_ops - before / self.mission_ops;
        if ended > 0 {
            *self.due.lock() += ended;
            self.cv.notify_one();
        }
    }

    pub(crate) fn stats(&self) -> TunerStats {
        self.core.lock().stats.clone()
    }

    /// Wakes the thread (at close).
    pub(crate) fn wake(&self) {
        self.cv.notify_all();
    }
}

impl DbInner {
    /// The tuner's thread: runs each mission's decision until shutdown (close writes the
    /// last checkpoint). Pretraining, if asked, waits for the first mission, whose
    /// writes give the simulator its entry size.
    pub(crate) fn tuner_loop(&self) {
        let Some(rt) = &self.tuner else { return };
        while !self.shutdown.load(Ordering::Acquire) {
            {
                let mut due = rt.due.lock();
                if *due == 0 {
                    rt.cv.wait_for(&mut due, Duration::from_millis(200));
                }
            }
            if let Err(e) = self.run_due_missions() {
                self.warn(format_args!("tuner mission failed: {e}"));
            }
        }
    }

    fn tuner_pretrain(&self, rt: &TunerRuntime) {
        let mut core = rt.core.lock();
        let Some((mut model, n)) = core.pretrain.take() else {
            return;
        };
        let seen = self.tuner_counters();
        if let Some(e) = measured_entry_bytes(&seen) {
            model.entry_bytes = e;
        }
        core.stats.pretrain_entry_bytes = model.entry_bytes;
        let t0 = super::thread_cpu_nanos();
        let r = self.pretrained_tuner(&model, n).map(|t| {
            if let Some(t) = t {
                core.tuner = t;
            }
        });
        core.stats.pretrain_cpu_ns += super::thread_cpu_nanos().saturating_sub(t0);
        core.last_at = self.clock.now();
        match r {
            Ok(()) => core.stats.pretrained_missions += n as u64,
            Err(e) => {
                core.stats.errors += 1;
                self.warn(format_args!("tuner pretraining failed: {e}"));
            }
        }
    }

    /// Lerp rebuilt (to reach its pretrain method) and pretrained on `model` for `n`
    /// missions; `None` for the tuners that do not pretrain.
    #[cfg(feature = "ruskey")]
    fn pretrained_tuner(
        &self,
        model: &CostModel,
        n: u32,
    ) -> Result<Option<Box<dyn CompactionTuner>>> {
        let TunerPolicy::Lerp(p) = &self.opts.tuner.policy else {
            return Ok(None);
        };
        let mut lerp = Lerp::new(p.clone(), self.opts.num_levels);
        lerp.pretrain(model, n)?;
        Ok(Some(Box::new(lerp)))
    }

    /// Without RusKey no tuner pretrains.
    #[cfg(not(feature = "ruskey"))]
    fn pretrained_tuner(&self, _: &CostModel, _: u32) -> Result<Option<Box<dyn CompactionTuner>>> {
        Ok(None)
    }

    /// Runs the decision for the missions that ended since the last call (several at
    /// once count as one, the rest as skipped). Used by the tuner's thread and by
    /// `run_background_work`.
    pub(crate) fn run_due_missions(&self) -> Result<()> {
        let Some(rt) = &self.tuner else {
            return Ok(());
        };
        let due = std::mem::take(&mut *rt.due.lock());
        if due == 0 {
            return Ok(());
        }
        let m = {
            let mut core = rt.core.lock();
            core.stats.missions_skipped += due - 1;
            let now = self.tuner_counters();
            let m = self.mission_stats(&core, &now);
            core.last = now;
            core.last_at = self.clock.now();
            core.prev_read_fraction = m.read_fraction();
            m
        };
        // Once, after the first mission's counts are taken: its writes give the
        // simulator's entry size, and the pretraining's time is no mission's.
        self.tuner_pretrain(rt);
        let mut core = rt.core.lock();
        core.stats.missions += 1;
        core.stats.mission_op_ns += m.op_ns;
        let t0 = super::thread_cpu_nanos();
        let decided = core.tuner.decide(&m);
        core.stats.train_cpu_ns += super::thread_cpu_nanos().saturating_sub(t0);
        let mut last_k: Vec<usize> = m.levels.iter().map(|l| l.k).collect();
        match decided {
            Ok(changes) => {
                for (level, k) in changes {
                    if level == 0 || level >= self.opts.num_levels {
                        continue;
                    }
                    if let Some(slot) = last_k.get_mut(level) {
                        *slot = k;
                    }
                    match self.apply_k(level, k) {
                        Ok(n) => {
                            core.stats.changes += n;
                            if n > 0 {
                                self.event(
                                    "ruskey_set_k",
                                    format_args!("level={level} k={k} families={n}"),
                                );
                            }
                        }
                        Err(e) => {
                            core.stats.errors += 1;
                            self.warn(format_args!("tuner could not set K_{level} = {k}: {e}"));
                        }
                    }
                }
            }
            Err(e) => {
                core.stats.errors += 1;
                self.warn(format_args!("tuner decision failed: {e}"));
            }
        }
        core.stats.last_k = last_k;
        let every = self.opts.tuner.checkpoint_every;
        if self.opts.tuner.checkpoint && core.stats.missions % every == 0 {
            drop(core);
            self.save_tuner_checkpoint();
        }
        Ok(())
    }

    /// Sets K of `level` in every column family whose K differs; returns the changes.
    fn apply_k(&self, level: usize, k: usize) -> Result<u64> {
        self.opts.check_runs(level, k)?;
        let ids: Vec<CfId> = self.cfs.read().keys().copied().collect();
        let mut n = 0;
        for cf in ids {
            let Ok(sv) = self.super_version(cf) else {
                continue; // dropped meanwhile
            };
            let current = sv.version.levels.get(level).map(|l| l.policy.k as usize);
            if current != Some(k) {
                self.set_policy(cf, level, k, self.opts.tuner.transition)?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn tuner_counters(&self) -> Counters {
        let s = &self.stats;
        let io = self.env.stats().snapshot();
        let levels = (0..self.opts.num_levels)
            .map(|l| {
                let c = s.level(l);
                let w = io.by_level.get(l).cloned().unwrap_or_default();
                [
                    c.lookups_reached.load(Ordering::Relaxed),
                    c.storage_reads.load(Ordering::Relaxed),
                    w.write_bytes,
                    w.write_ops,
                    c.read_ns.load(Ordering::Relaxed),
                    c.compaction_ns.load(Ordering::Relaxed),
                ]
            })
            .collect();
        Counters {
            lookups: s.gets.load(Ordering::Relaxed) + s.iterators.load(Ordering::Relaxed),
            updates: s.entries_written.load(Ordering::Relaxed),
            user_bytes: s.user_bytes_written.load(Ordering::Relaxed),
            op_ns: s.op_ns.load(Ordering::Relaxed),
            levels,
        }
    }

    fn mission_stats(&self, core: &Core, now: &Counters) -> MissionStats {
        let last = &core.last;
        let sv = self.super_version(CfId::DEFAULT).ok();
        let levels = now
            .levels
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let p = last.levels.get(i).copied().unwrap_or_default();
                let d = |j: usize| c[j].saturating_sub(p[j]);
                let lv = sv.as_ref().and_then(|sv| sv.version.levels.get(i));
                LevelMission {
                    k: lv.map_or(1, |l| l.policy.k as usize),
                    runs: lv.map_or(0, |l| l.runs.len()),
                    bytes: lv.map_or(0, |l| l.size()),
                    capacity: if i == 0 { 0 } else { self.shape.capacity(i) },
                    lookups: d(0),
                    read_ios: d(1),
                    write_bytes: d(2),
                    write_ios: d(3),
                    read_ns: d(4),
                    compaction_ns: d(5),
                }
            })
            .collect();
        MissionStats {
            mission: core.stats.missions + 1,
            lookups: now.lookups.saturating_sub(last.lookups),
            updates: now.updates.saturating_sub(last.updates),
            user_bytes: now.user_bytes.saturating_sub(last.user_bytes),
            op_ns: now.op_ns.saturating_sub(last.op_ns),
            wall_ns: self.clock.now().saturating_sub(core.last_at).as_nanos() as u64,
            prev_read_fraction: core.prev_read_fraction,
            size_ratio: self.opts.size_ratio,
            levels,
        }
    }

    /// Writes the tuner's learned state to `TUNER` (when it has one and checkpoints are
    /// on). Failures are counted and logged: tuning goes on.
    pub(crate) fn save_tuner_checkpoint(&self) {
        let Some(rt) = &self.tuner else { return };
        if !self.opts.tuner.checkpoint {
            return;
        }
        let mut core = rt.core.lock();
        let Some(bytes) = core.tuner.save() else {
            return;
        };
        match write_checkpoint(&self.path, &bytes) {
            Ok(()) => core.stats.checkpoints += 1,
            Err(e) => {
                core.stats.errors += 1;
                self.warn(format_args!("tuner checkpoint not written: {e}"));
            }
        }
    }
}

/// Frames `payload`: magic, version, length, CRC-32C, payload.
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 24);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FRAME_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a framed checkpoint, or an error naming what is wrong.
fn unframe(file: &str, data: &[u8]) -> Result<Vec<u8>> {
    let bad = |d: &str| Error::corruption(file, d);
    if data.len() < 24 || &data[..8] != MAGIC {
        return Err(bad("not a tuner checkpoint"));
    }
    let version = u32::from_le_bytes(data[8..12].try_into().expect("4 bytes"));
    if version != FRAME_VERSION {
        return Err(Error::UnsupportedVersion {
            file: file.into(),
            found: version,
            supported: FRAME_VERSION,
        });
    }
    let len = u64::from_le_bytes(data[12..20].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(data[20..24].try_into().expect("4 bytes"));
    let payload = &data[24..];
    if payload.len() as u64 != len {
        return Err(bad("length mismatch"));
    }
    if crc32c::crc32c(payload) != crc {
        return Err(bad("checksum mismatch"));
    }
    Ok(payload.to_vec())
}

fn write_checkpoint(dir: &Path, payload: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp: PathBuf = dir.join(CHECKPOINT_TMP);
    let io = |e| Error::io(tmp.display().to_string(), e);
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(&frame(payload)).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, dir.join(CHECKPOINT_FILE)).map_err(io)?;
    Ok(())
}

/// The checkpoint's payload; `None` when there is none.
pub(crate) fn read_checkpoint(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(data) => unframe(&path.display().to_string(), &data).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path.display().to_string(), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trip_and_damage() {
        let payload: Vec<u8> = (0..200u8).collect();
        let f = frame(&payload);
        assert_eq!(unframe("t", &f).unwrap(), payload);
        for i in 0..f.len() {
            let mut g = f.clone();
            g[i] ^= 0x10;
            assert!(unframe("t", &g).is_err(), "flip at {i}");
        }
        for cut in 0..f.len() {
            assert!(unframe("t", &f[..cut]).is_err(), "cut at {cut}");
        }
    }
}
