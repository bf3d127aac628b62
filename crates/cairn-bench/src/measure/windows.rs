//! Background-job windows, Leaper's T1 + T2: a flush or compaction runs (T1) and the
//! cache recovers from what it invalidated (T2 = T after the job ends). The timeline's
//! intervals are split into those inside a window and those outside, and the hit ratio,
//! QPS and p95 spikes are compared between the two.
//!
//! - An interval is inside when its midpoint lies in `[job start, job end + T]` of a flush
//!   or compaction (trivial moves rewrite nothing and make no window).
//! - Recovery time of one job (cluster of overlapping jobs): from its end until the
//!   interval hit ratio is back within 10% of the dip (the lowest ratio after the end)
//!   below the level before (the last three intervals before the job began, after the
//!   previous job ended); 0 when the dip is under half a percentage point; cut short at
//!   the next job's start. The median over jobs is the run's recovery time.
//! - A p95 spike interval has a p95 latency above twice the median over the run's
//!   intervals.

use super::timeline::TimelineRow;
use crate::engines::{JobKind, JobSpan};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// A flush or compaction in the measured phase, seconds from its start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackgroundJob {
    pub kind: JobKind,
    /// Negative when it began before the measured phase.
    pub start_s: f64,
    /// The end of the run when it had not finished.
    pub end_s: f64,
    #[serde(default)]
    pub detail: String,
}

impl BackgroundJob {
    /// Flushes and compactions rewrite blocks; moves do not.
    pub fn rewrites(&self) -> bool {
        self.kind != JobKind::Move
    }
}

/// The engine's job spans that overlap `[t0, t0 + end_s]`, relative to `t0`.
pub fn from_spans(spans: &[JobSpan], t0: Instant, end_s: f64) -> Vec<BackgroundJob> {
    let rel = |t: Instant| {
        if t >= t0 {
            t.duration_since(t0).as_secs_f64()
        } else {
            -t0.duration_since(t).as_secs_f64()
        }
    };
    let mut v: Vec<BackgroundJob> = spans
        .iter()
        .map(|s| BackgroundJob {
            kind: s.kind,
            start_s: rel(s.start),
            end_s: s.end.map_or(end_s, rel).min(end_s),
            detail: s.detail.clone(),
        })
        .filter(|j| j.end_s >= 0.0 && j.start_s <= end_s)
        .collect();
    v.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    v
}

/// For engines that do not report jobs: intervals whose end saw a flush or compaction
/// running, merged (coarse: a job shorter than an interval can go unseen).
pub fn from_timeline(rows: &[TimelineRow]) -> Vec<BackgroundJob> {
    let mut v: Vec<BackgroundJob> = Vec::new();
    for (start, r) in spans(rows) {
        for (kind, on) in [
            (JobKind::Flush, r.flushes_running > 0),
            (JobKind::Compaction, r.compactions_running > 0),
        ] {
            if !on {
                continue;
            }
            match v.iter_mut().rev().find(|j| j.kind == kind) {
                Some(j) if (j.end_s - start).abs() < 1e-9 => j.end_s = r.second,
                _ => v.push(BackgroundJob {
                    kind,
                    start_s: start,
                    end_s: r.second,
                    detail: "from the timeline".into(),
                }),
            }
        }
    }
    v.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    v
}

/// (interval start, row) pairs.
fn spans(rows: &[TimelineRow]) -> impl Iterator<Item = (f64, &TimelineRow)> {
    rows.iter().scan(0.0, |prev, r| {
        let start = *prev;
        *prev = r.second;
        Some((start, r))
    })
}

/// Sorted, merged `[start, end + t_s]` of the jobs that rewrite blocks.
pub fn windows(jobs: &[BackgroundJob], t_s: f64) -> Vec<(f64, f64)> {
    merge(
        jobs.iter()
            .filter(|j| j.rewrites())
            .map(|j| (j.start_s, j.end_s + t_s))
            .collect(),
        0.0,
    )
}

fn merge(mut v: Vec<(f64, f64)>, gap: f64) -> Vec<(f64, f64)> {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 + gap => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

pub fn inside(windows: &[(f64, f64)], t: f64) -> bool {
    let i = windows.partition_point(|w| w.0 <= t);
    i > 0 && t <= windows[i - 1].1
}

/// Lookup-weighted hit ratio of some rows.
fn hit_ratio<'a>(rows: impl Iterator<Item = &'a TimelineRow>) -> Option<f64> {
    let (h, m) = rows.fold((0u64, 0u64), |(h, m), r| {
        (h + r.cache_hits, m + r.cache_misses)
    });
    (h + m > 0).then(|| h as f64 / (h + m) as f64)
}

fn ratio(r: &TimelineRow) -> Option<f64> {
    if r.cache_hits + r.cache_misses > 0 {
        Some(r.cache_hits as f64 / (r.cache_hits + r.cache_misses) as f64)
    } else {
        r.cache_hit_ratio
    }
}

/// Recovery time in seconds of each job cluster (see the module docs).
pub fn recoveries(rows: &[TimelineRow], jobs: &[BackgroundJob], period_s: f64) -> Vec<f64> {
    let clusters = merge(
        jobs.iter()
            .filter(|j| j.rewrites())
            .map(|j| (j.start_s, j.end_s))
            .collect(),
        period_s,
    );
    let run_end = rows.last().map_or(0.0, |r| r.second);
    let mid: Vec<(f64, f64, &TimelineRow)> = spans(rows)
        .filter(|(_, r)| ratio(r).is_some())
        .map(|(s, r)| ((s + r.second) / 2.0, r.second, r))
        .collect();
    let mut out = Vec::new();
    for (i, &(s, e)) in clusters.iter().enumerate() {
        let prev_end = if i > 0 {
            clusters[i - 1].1
        } else {
            f64::NEG_INFINITY
        };
        let next_start = clusters.get(i + 1).map_or(run_end, |c| c.0);
        let before: Vec<&TimelineRow> = mid
            .iter()
            .filter(|(m, _, _)| *m > prev_end && *m <= s)
            .map(|x| x.2)
            .collect();
        let before = &before[before.len().saturating_sub(3)..];
        let Some(pre) = hit_ratio(before.iter().copied()) else {
            continue;
        };
        let after: Vec<&(f64, f64, &TimelineRow)> = mid
            .iter()
            .filter(|(m, _, _)| *m > e && *m <= next_start)
            .collect();
        let Some((dip_at, dip)) = after
            .iter()
            .enumerate()
            .filter_map(|(k, x)| Some((k, ratio(x.2)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
        else {
            continue;
        };
        if pre - dip < 0.005 {
            out.push(0.0);
            continue;
        }
        let target = pre - 0.1 * (pre - dip);
        let back = after[dip_at..]
            .iter()
            .find(|x| ratio(x.2).is_some_and(|h| h >= target))
            .map_or(next_start, |x| x.1);
        out.push((back - e).max(0.0));
    }
    out
}

pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Inside-window and outside-window totals of a run's timeline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WindowStats {
    pub inside_s: f64,
    pub outside_s: f64,
    pub ops_in: u64,
    pub ops_out: u64,
    pub hits_in: u64,
    pub misses_in: u64,
    pub hits_out: u64,
    pub misses_out: u64,
    pub median_p95_us: f64,
    pub spike_s: f64,
    pub spike_s_in: f64,
    /// p95 and p99 of every op inside the windows (rows that kept their latencies).
    pub p95_in_us: Option<f64>,
    pub p99_in_us: Option<f64>,
}

impl WindowStats {
    pub fn qps_in(&self) -> Option<f64> {
        (self.inside_s > 0.0).then(|| self.ops_in as f64 / self.inside_s)
    }
    pub fn qps_out(&self) -> Option<f64> {
        (self.outside_s > 0.0).then(|| self.ops_out as f64 / self.outside_s)
    }
    pub fn hit_in(&self) -> Option<f64> {
        let n = self.hits_in + self.misses_in;
        (n > 0).then(|| self.hits_in as f64 / n as f64)
    }
    pub fn hit_out(&self) -> Option<f64> {
        let n = self.hits_out + self.misses_out;
        (n > 0).then(|| self.hits_out as f64 / n as f64)
    }
}

pub fn stats(rows: &[TimelineRow], windows: &[(f64, f64)]) -> WindowStats {
    let mut s = WindowStats::default();
    let p95: Vec<f64> = rows
        .iter()
        .filter(|r| r.ops > 0)
        .map(|r| r.p95_us)
        .collect();
    s.median_p95_us = median(&p95).unwrap_or(0.0);
    let mut lat_in = crate::measure::latency::new_histogram();
    for (start, r) in spans(rows) {
        let dt = (r.second - start).max(0.0);
        let inw = inside(windows, (start + r.second) / 2.0);
        let spike = r.ops > 0 && r.p95_us > 2.0 * s.median_p95_us;
        if spike {
            s.spike_s += dt;
        }
        if inw {
            if let Some(h) = &r.latencies {
                h.add_to(&mut lat_in);
            }
            s.inside_s += dt;
            s.ops_in += r.ops;
            s.hits_in += r.cache_hits;
            s.misses_in += r.cache_misses;
            if spike {
                s.spike_s_in += dt;
            }
        } else {
            s.outside_s += dt;
            s.ops_out += r.ops;
            s.hits_out += r.cache_hits;
            s.misses_out += r.cache_misses;
        }
    }
    if !lat_in.is_empty() {
        let us = |q| lat_in.value_at_quantile(q) as f64 / 1000.0;
        (s.p95_in_us, s.p99_in_us) = (Some(us(0.95)), Some(us(0.99)));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(second: f64, hits: u64, misses: u64, p95: f64) -> TimelineRow {
        TimelineRow {
            second,
            ops: 100,
            qps: 100.0,
            p95_us: p95,
            cache_hits: hits,
            cache_misses: misses,
            ..Default::default()
        }
    }

    fn job(kind: JobKind, a: f64, b: f64) -> BackgroundJob {
        BackgroundJob {
            kind,
            start_s: a,
            end_s: b,
            detail: String::new(),
        }
    }

    #[test]
    fn windows_merge_and_moves_make_none() {
        let jobs = [
            job(JobKind::Flush, 1.0, 1.5),
            job(JobKind::Compaction, 2.0, 3.0),
            job(JobKind::Move, 10.0, 10.1),
        ];
        let w = windows(&jobs, 1.0);
        assert_eq!(w, vec![(1.0, 4.0)]);
        assert!(inside(&w, 1.0) && inside(&w, 3.9) && !inside(&w, 4.1) && !inside(&w, 0.5));
    }

    #[test]
    fn recovery_runs_from_the_job_end_to_the_level_before() {
        // Level 0.9; a job over [3, 4]; dip to 0.5 in (4, 5], back at 0.88 by 7.
        let hr = [0.9, 0.9, 0.9, 0.9, 0.5, 0.7, 0.8, 0.88, 0.9, 0.9];
        let rows: Vec<TimelineRow> = hr
            .iter()
            .enumerate()
            .map(|(i, h)| {
                row(
                    i as f64 + 1.0,
                    (h * 1000.0) as u64,
                    ((1.0 - h) * 1000.0) as u64,
                    10.0,
                )
            })
            .collect();
        let r = recoveries(&rows, &[job(JobKind::Compaction, 3.0, 4.0)], 1.0);
        assert_eq!(r, vec![4.0]);
        // No dip: recovered at once.
        let flat: Vec<TimelineRow> = (1..10).map(|i| row(i as f64, 900, 100, 10.0)).collect();
        assert_eq!(
            recoveries(&flat, &[job(JobKind::Flush, 3.0, 4.0)], 1.0),
            vec![0.0]
        );
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    }

    #[test]
    fn stats_split_by_window_and_count_spikes() {
        let rows: Vec<TimelineRow> = (1..=10)
            .map(|i| row(i as f64, 90, 10, if i == 5 { 100.0 } else { 10.0 }))
            .collect();
        let w = windows(&[job(JobKind::Flush, 4.0, 5.0)], 1.0);
        let s = stats(&rows, &w);
        assert_eq!((s.inside_s, s.outside_s), (2.0, 8.0));
        assert_eq!(s.ops_in, 200);
        assert_eq!(s.median_p95_us, 10.0);
        assert_eq!((s.spike_s, s.spike_s_in), (1.0, 1.0));
        assert_eq!(s.hit_in(), Some(0.9));
        assert_eq!(s.qps_out(), Some(100.0));
        assert_eq!(s.p99_in_us, None, "no latencies kept");
    }

    #[test]
    fn p99_in_windows_merges_the_ops_of_the_rows_inside() {
        let lat = |slow: u64| {
            let mut h = crate::measure::latency::new_histogram();
            for i in 0..100u64 {
                h.record(if i < slow { 1_000_000 } else { 10_000 }).unwrap();
            }
            Some(Box::new(crate::measure::timeline::RowLatencies::of(&h)))
        };
        let mut rows: Vec<TimelineRow> = (1..=10).map(|i| row(i as f64, 90, 10, 10.0)).collect();
        for (i, r) in rows.iter_mut().enumerate() {
            // Inside the window (rows 5 and 6): 1 and 3 slow ops of 100; outside: 50.
            r.latencies = lat(match i {
                4 => 1,
                5 => 3,
                _ => 50,
            });
        }
        let w = windows(&[job(JobKind::Flush, 4.0, 5.0)], 1.0);
        let s = stats(&rows, &w);
        // 4 slow of 200: p95 fast (10 us), p99 slow (1 ms), whatever happens outside.
        assert_eq!(s.p95_in_us.map(|v| v.round()), Some(10.0));
        assert_eq!(s.p99_in_us.map(|v| (v / 1000.0).round()), Some(1.0));
    }

    #[test]
    fn jobs_from_the_timeline_gauges() {
        let mut rows: Vec<TimelineRow> = (1..=5).map(|i| row(i as f64, 1, 1, 1.0)).collect();
        rows[1].flushes_running = 1;
        rows[2].flushes_running = 1;
        rows[4].compactions_running = 1;
        let j = from_timeline(&rows);
        assert_eq!(j.len(), 2);
        assert_eq!((j[0].start_s, j[0].end_s), (1.0, 3.0));
        assert_eq!(j[1].kind, JobKind::Compaction);
    }
}
