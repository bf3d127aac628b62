//! RusKey's Fig. 10 from runs with a scripted change of K (`--set-k-at`): per engine, the
//! write and read latency per mission before the change, in the missions right after it
//! and after those; the worst mission; when the new K was in force at every level (the
//! delay of a lazy transition); and what compactions wrote (the cost of a greedy one).

use super::json::{MissionRow, RunResult};
use super::plots::{
    dashed_verticals, err, labelled_line, legend_upper_right, mission_chart, register_font, SIZE,
};
use anyhow::Result;
use plotters::prelude::*;
use std::fmt::Write;
use std::path::Path;

/// Missions right after the change that count as "the transition".
pub const WINDOW: usize = 10;

/// One engine's figures around its K change.
#[derive(Clone, Debug, PartialEq)]
pub struct Around {
    pub engine: String,
    /// Index of the mission at whose end K was set.
    pub at: usize,
    pub k: usize,
    /// K per level (level 1 first) at the end of the mission K was set after.
    pub from_ks: Option<Vec<usize>>,
    pub missions: usize,
    /// Mean write / read latency (us) before, in the WINDOW missions after, and later.
    pub write_us: [Option<f64>; 3],
    pub read_us: [Option<f64>; 3],
    /// The worst mission before the change and in the WINDOW after it: its number (from
    /// 1) and mean write latency (us).
    pub worst_write: [Option<(usize, f64)>; 2],
    /// Missions after the change until every level from 1 to the deepest holding data
    /// reported K = k (0: the next one).
    pub in_force_after: Option<usize>,
    pub seconds: f64,
    pub compaction_mib: f64,
    pub stall_seconds: f64,
}

fn weighted(rows: &[MissionRow], f: impl Fn(&MissionRow) -> (u64, Option<f64>)) -> Option<f64> {
    let (mut n, mut sum) = (0u64, 0.0);
    for r in rows {
        if let (ops, Some(ns)) = f(r) {
            n += ops;
            sum += ns * ops as f64;
        }
    }
    (n > 0).then(|| sum / n as f64 / 1e3)
}

fn worst(rows: &[MissionRow]) -> Option<(usize, f64)> {
    rows.iter()
        .filter_map(|r| Some((r.index + 1, r.write_mean_ns? / 1e3)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The figures of a run whose K was changed; None when it was not.
pub fn around(r: &RunResult) -> Option<Around> {
    let m = &r.missions;
    let at = m.iter().position(|x| x.k_set.is_some())?;
    let k = m[at].k_set?;
    let parts = [
        &m[..=at],
        &m[at + 1..(at + 1 + WINDOW).min(m.len())],
        &m[(at + 1 + WINDOW).min(m.len())..],
    ];
    let w = |p: &[MissionRow]| weighted(p, |x| (x.write_ops, x.write_mean_ns));
    let rd = |p: &[MissionRow]| weighted(p, |x| (x.read_ops, x.read_mean_ns));
    let in_force_after = m[at + 1..]
        .iter()
        .position(|x| x.ks.as_ref().is_some_and(|ks| ks.iter().all(|&v| v == k)));
    Some(Around {
        engine: r.engine.clone(),
        at,
        k,
        from_ks: m[at].ks.clone(),
        missions: m.len(),
        write_us: [w(parts[0]), w(parts[1]), w(parts[2])],
        read_us: [rd(parts[0]), rd(parts[1]), rd(parts[2])],
        worst_write: [worst(parts[0]), worst(parts[1])],
        in_force_after,
        seconds: r.seconds,
        compaction_mib: r.compaction_bytes_written as f64 / (1 << 20) as f64,
        stall_seconds: r.stall_seconds,
    })
}

fn us(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}"))
}

fn worst_str(x: Option<(usize, f64)>) -> String {
    x.map_or("-".into(), |(m, v)| format!("{v:.2} (m{m})"))
}

/// K per level before the change: one number when every level had it.
fn from_str(ks: &Option<Vec<usize>>) -> String {
    match ks.as_deref() {
        Some([first, rest @ ..]) if rest.iter().all(|k| k == first) => first.to_string(),
        Some(ks) => format!("{ks:?}"),
        None => "?".into(),
    }
}

/// The report's section, or None when no run changed K.
pub fn section(results: &[RunResult]) -> Option<String> {
    let rows: Vec<Around> = results.iter().filter_map(around).collect();
    let first = rows.first()?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "K set from {} to {} at every level at the end of mission {} (of {}), by each \
         engine's transition. Latency in us per op, weighted by ops: before the change, in \
         the {WINDOW} missions after it, and after those.\n",
        from_str(&first.from_ks),
        first.k,
        first.at + 1,
        first.missions
    );
    s.push_str(
        "| engine | measured s | write before | write +1..10 | write later | read before | \
         read +1..10 | read later | worst write mission before / +1..10 | K in force everywhere | \
         compaction MiB | stall s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for a in &rows {
        let _ = writeln!(
            s,
            "| {} | {:.1} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {:.0} | {:.2} |",
            a.engine,
            a.seconds,
            us(a.write_us[0]),
            us(a.write_us[1]),
            us(a.write_us[2]),
            us(a.read_us[0]),
            us(a.read_us[1]),
            us(a.read_us[2]),
            worst_str(a.worst_write[0]),
            worst_str(a.worst_write[1]),
            a.in_force_after
                .map_or("never".into(), |n| format!("+{} missions", n + 1)),
            a.compaction_mib,
            a.stall_seconds,
        );
    }
    s.push_str(
        "\nWorst write mission: the mission (mN) with the highest mean write latency. K in \
         force everywhere: the first mission after the change at whose end every level from \
         1 to the deepest holding data reported the new K (a lazy transition waits for each \
         level to empty; a greedy one sets K at once and merges the level down meanwhile). \
         Compaction MiB: bytes compactions wrote over the measured phase.\n",
    );
    Some(s)
}

/// Fig. 10's two panels: write and read latency per mission per engine, the change
/// dashed. False (and no file) when no run changed K.
pub fn plot(results: &[RunResult], path: &Path) -> Result<bool> {
    let runs: Vec<(&RunResult, Around)> = results
        .iter()
        .filter_map(|r| around(r).map(|a| (r, a)))
        .collect();
    let Some((_, first)) = runs.first() else {
        return Ok(false);
    };
    register_font();
    let x_change = first.at as f64 + 1.0;
    let x_max = runs
        .iter()
        .map(|(r, _)| r.missions.len())
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    let root = BitMapBackend::new(path, (SIZE.0 + 200, 760)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let areas = root.split_evenly((2, 1));
    type Pick = fn(&MissionRow) -> Option<f64>;
    let panels: [(&str, Pick); 2] = [
        ("(a) write latency per mission", |m| m.write_mean_ns),
        ("(b) read latency per mission", |m| m.read_mean_ns),
    ];
    for (area, (title, pick)) in areas.iter().zip(panels) {
        let y_max = runs
            .iter()
            .flat_map(|(r, _)| r.missions.iter().filter_map(pick))
            .fold(0.0f64, f64::max)
            / 1e3
            * 1.05;
        let y_max = y_max.max(1e-3);
        let caption = format!(
            "{title}; K {} -> {} after mission {}",
            from_str(&first.from_ks),
            first.k,
            first.at + 1
        );
        let mut chart = mission_chart(area, &caption, x_max, y_max, "us / op", 1)?;
        dashed_verticals(&mut chart, &[x_change], y_max)?;
        for (i, (r, _)) in runs.iter().enumerate() {
            labelled_line(
                &mut chart,
                r.missions
                    .iter()
                    .filter_map(|m| Some((m.index as f64 + 1.0, pick(m)? / 1e3))),
                i,
                1,
                r.engine.clone(),
            )?;
        }
        legend_upper_right(&mut chart)?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(engine: &str, ks: &[usize], write_ns: &[f64], k_set_at: Option<usize>) -> RunResult {
        RunResult {
            engine: engine.into(),
            seconds: 2.0,
            compaction_bytes_written: 3 << 20,
            missions: write_ns
                .iter()
                .zip(ks)
                .enumerate()
                .map(|(i, (&w, &k))| MissionRow {
                    index: i,
                    ops: 100,
                    // Writes vary per mission, so only a weighted mean gives the figures.
                    write_ops: 20 + 10 * (i as u64 % 3),
                    write_mean_ns: Some(w),
                    read_ops: 50,
                    read_mean_ns: Some(1000.0),
                    ks: Some(vec![k, if i >= 14 { k } else { 1 }]),
                    k_set: (Some(i) == k_set_at).then_some(10),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn figures_around_the_change() {
        // 20 missions, K set after mission 3 (index 2); level 1 takes K at once, level 2
        // from index 14 (12 missions after the change). Writes per mission: 20, 30, 40, ...
        let mut ks = vec![1; 3];
        ks.extend(vec![10; 17]);
        let mut w = vec![2000.0; 3];
        w.extend(vec![8000.0; 10]);
        w.extend(vec![4000.0; 7]);
        w[1] = 3000.0;
        w[2] = 1000.0;
        w[5] = 9000.0;
        w[15] = 20000.0; // after the window: not the transition's worst
        let a = around(&run("cairn:transition-lazy", &ks, &w, Some(2))).unwrap();
        assert_eq!((a.at, a.k, a.missions), (2, 10, 20));
        assert_eq!(a.from_ks, Some(vec![1, 1]));
        // Weighted by each mission's writes, 20 + 10 (i mod 3).
        let wmean = |r: std::ops::Range<usize>| {
            let n: f64 = r.clone().map(|i| (20 + 10 * (i % 3)) as f64).sum();
            r.map(|i| w[i] * (20 + 10 * (i % 3)) as f64).sum::<f64>() / n / 1e3
        };
        // Before: (20 x 2000 + 30 x 3000 + 40 x 1000) / 90 ns.
        assert!(
            (a.write_us[0].unwrap() - 170.0 / 90.0).abs() < 1e-9,
            "{a:?}"
        );
        assert!((a.write_us[0].unwrap() - wmean(0..3)).abs() < 1e-9, "{a:?}");
        assert!(
            (a.write_us[1].unwrap() - wmean(3..13)).abs() < 1e-9,
            "{a:?}"
        );
        assert!(
            (a.write_us[2].unwrap() - wmean(13..20)).abs() < 1e-9,
            "{a:?}"
        );
        // An unweighted mean would differ.
        assert!((a.write_us[1].unwrap() - 8.1).abs() > 1e-3, "{a:?}");
        assert_eq!(a.read_us, [Some(1.0); 3]);
        assert_eq!(a.worst_write, [Some((2, 3.0)), Some((6, 9.0))]);
        assert_eq!(
            a.in_force_after,
            Some(11),
            "index 14 is the 12th mission after"
        );
        assert_eq!(a.compaction_mib, 3.0);
        assert!(around(&run("cairn", &ks, &w, None)).is_none());
        let s = section(&[run("cairn:x", &ks, &w, Some(2))]).unwrap();
        assert!(s.contains("K set from 1 to 10"), "{s}");
        assert!(s.contains("| cairn:x | 2.0 | 1.89 |"), "{s}");
        assert!(s.contains("3.00 (m2) / 9.00 (m6)"), "{s}");
        assert!(s.contains("+12 missions"), "{s}");
        assert!(section(&[run("cairn", &ks, &w, None)]).is_none());
    }

    #[test]
    fn the_plot_is_drawn_only_for_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.png");
        let ks = vec![1; 5];
        let w = vec![1000.0; 5];
        assert!(!plot(&[run("a", &ks, &w, None)], &p).unwrap());
        assert!(!p.exists());
        assert!(plot(
            &[run("a", &ks, &w, Some(1)), run("b", &ks, &w, Some(1))],
            &p
        )
        .unwrap());
        assert!(std::fs::metadata(&p).unwrap().len() > 1000);
    }
}
