//! Compaction jobs side by side (RocksDB's `max_background_compactions`): each running job
//! holds the levels its task spans ([`Task::levels`]), and a compaction thread picks only
//! among tasks whose levels no running job holds ([`picker::pick_free`]).
//!
//! Work that reshapes a column family across levels (manual and proactive compactions,
//! value-log GC, dropping a family) takes the compaction lock for writing and so runs
//! alone; the jobs hold it for reading.

use std::sync::atomic::Ordering;

use parking_lot::Mutex;

use super::{CfState, DbInner};
use crate::compaction::{picker, Task};
use crate::ids::CfId;

/// The levels one running job holds in one column family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Claim {
    cf: CfId,
    first: usize,
    last: usize,
}

/// The claims of the running jobs.
#[derive(Default)]
pub(crate) struct Jobs {
    held: Mutex<Vec<Claim>>,
}

impl Jobs {
    /// Jobs running now.
    pub(crate) fn running(&self) -> usize {
        self.held.lock().len()
    }
}

/// A running job's hold on its levels, released on drop (however the job ends).
pub(crate) struct JobClaim<'a> {
    db: &'a DbInner,
    claim: Claim,
}

impl Drop for JobClaim<'_> {
    fn drop(&mut self) {
        let mut held = self.db.jobs.held.lock();
        if let Some(i) = held.iter().position(|c| *c == self.claim) {
            held.swap_remove(i);
        }
        drop(held);
        // A thread that found every due task held may take it now.
        self.db.bg_cv.notify_all();
    }
}

impl DbInner {
    /// Picks the next task of `cf` whose levels no running job holds, and claims them.
    /// The caller holds the compaction lock for reading.
    pub(crate) fn claim_task(&self, cf: &CfState) -> Option<(Task, JobClaim<'_>)> {
        let same_tier =
            |a: usize, b: usize| self.env.tier_for_level(a) == self.env.tier_for_level(b);
        let shape = self.shape_for(cf);
        let mut held = self.jobs.held.lock();
        // Loaded under the claims: a job releases its claim after installing its edit, so
        // a version loaded before the lock could still hold the inputs of a job that
        // finished meanwhile, on levels that now look free.
        let v = cf.sv.load().version.clone();
        let busy = |l: usize| {
            held.iter()
                .any(|c| c.cf == cf.id && (c.first..=c.last).contains(&l))
        };
        let task = picker::pick_free(&v, &shape, &same_tier, &busy)?;
        let (first, last) = task.levels();
        let claim = Claim {
            cf: cf.id,
            first,
            last,
        };
        held.push(claim);
        let running = held.len() as u64;
        drop(held);
        self.stats
            .compaction_jobs_peak
            .fetch_max(running, Ordering::Relaxed);
        Some((task, JobClaim { db: self, claim }))
    }
}
