//! PNG plots with plotters' bitmap backend. Text uses DejaVu Sans embedded in the binary
//! (ab_glyph), so plots render the same on machines without fontconfig or system fonts.

use super::json::RunResult;
use crate::measure::timeline::TimelineRow;
use anyhow::{anyhow, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;

pub(super) const SIZE: (u32, u32) = (1000, 600);
const FONT: &str = "sans-serif";

pub(super) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Registration only fails on an unparsable font, and this one is fixed at build time.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

fn color(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 6] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
    ];
    PALETTE[i % PALETTE.len()]
}

pub(super) fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting: {e:?}")
}

/// A chart over missions: x from 0 to `x_max`, y from 0 to `y_max`.
pub(super) type MissionChart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart over missions on `area`, its mesh drawn (y labels with `y_digits` decimals).
pub(super) fn mission_chart<'a, 'b>(
    area: &'a DrawingArea<BitMapBackend<'b>, Shift>,
    caption: &str,
    x_max: f64,
    y_max: f64,
    y_desc: &str,
    y_digits: usize,
) -> Result<MissionChart<'a, 'b>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 22))
        .margin(12)
        .x_label_area_size(35)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(err)?;
    // With no decimals (K), one tick per integer and none between: a fractional tick
    // rounded to an integer label repeated labels (0, 0, 1, 1, 2, ...).
    let integer = y_digits == 0;
    let ticks = if integer {
        (y_max.floor() as usize + 1).clamp(2, 12)
    } else {
        10
    };
    chart
        .configure_mesh()
        .x_desc("mission")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc(y_desc)
        .y_labels(ticks)
        .y_label_formatter(&|y| {
            if integer && (y - y.round()).abs() > 1e-9 {
                String::new()
            } else {
                format!("{y:.y_digits$}")
            }
        })
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 14))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// Dashed vertical lines from 0 to `y_max` at each of `xs` (session starts, a K change).
pub(super) fn dashed_verticals(chart: &mut MissionChart, xs: &[f64], y_max: f64) -> Result<()> {
    for &x in xs {
        chart
            .draw_series(DashedLineSeries::new(
                [(x, 0.0), (x, y_max)],
                6,
                4,
                BLACK.mix(0.6).stroke_width(1),
            ))
            .map_err(err)?;
    }
    Ok(())
}

/// A line of colour `i` and `width`, labelled in the legend.
pub(super) fn labelled_line(
    chart: &mut MissionChart,
    points: impl IntoIterator<Item = (f64, f64)>,
    i: usize,
    width: u32,
    label: String,
) -> Result<()> {
    let c = color(i);
    chart
        .draw_series(LineSeries::new(points, c.stroke_width(width)))
        .map_err(err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    Ok(())
}

/// The legend in the upper right corner.
pub(super) fn legend_upper_right<'a, 'b: 'a>(chart: &mut MissionChart<'a, 'b>) -> Result<()> {
    chart
        .configure_series_labels()
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Throughput bar per engine.
pub fn throughput(results: &[RunResult], path: &Path) -> Result<()> {
    register_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let n = results.len().max(1);
    let max = results
        .iter()
        .map(|r| r.ops_per_sec)
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.15;
    let workload = results.first().map_or("", |r| r.workload.as_str());
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("Throughput: {workload}"), (FONT, 28))
        .margin(20)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                results
                    .get(i as usize)
                    .map_or(String::new(), |r| r.engine.clone())
            } else {
                String::new()
            }
        })
        .y_desc("ops/s")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(err)?;
    for (i, r) in results.iter().enumerate() {
        let x = i as f64;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x - 0.3, 0.0), (x + 0.3, r.ops_per_sec)],
                color(i).filled(),
            )))
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{:.0}", r.ops_per_sec),
                (x - 0.15, r.ops_per_sec + max * 0.02),
                (FONT, 16),
            )))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Latency CDF of all ops per engine, latency on a log axis.
pub fn latency_cdf(results: &[RunResult], path: &Path) -> Result<()> {
    register_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let pts = || results.iter().flat_map(|r| r.latency_cdf_us.iter());
    let lo = pts().map(|p| p[1]).fold(f64::INFINITY, f64::min).max(0.01);
    let hi = pts().map(|p| p[1]).fold(0.0, f64::max).max(lo * 10.0);
    let lo = if lo.is_finite() { lo } else { 0.01 };
    let mut chart = ChartBuilder::on(&root)
        .caption("Latency CDF (all operations)", (FONT, 28))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d((lo * 0.8..hi * 1.25).log_scale(), 0f64..100.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("latency (us, log)")
        .y_desc("percentile")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(err)?;
    for (i, r) in results.iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(
                r.latency_cdf_us.iter().map(|p| (p[1].max(lo), p[0])),
                c.stroke_width(2),
            ))
            .map_err(err)?
            .label(r.engine.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .label_font((FONT, 16))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Per-interval panels per engine: QPS, p95 latency, block cache hit ratio, and background
/// flushes + compactions running (the jobs that explain dips in the first two).
pub fn timeline(series: &[(String, Vec<TimelineRow>)], path: &Path) -> Result<()> {
    register_font();
    const PANEL_H: u32 = 330;
    type Metric = fn(&TimelineRow) -> Option<f64>;
    let panels: [(&str, Metric); 4] = [
        ("ops/s", |r| Some(r.qps)),
        ("p95 latency (us)", |r| Some(r.p95_us)),
        ("cache hit ratio (%)", |r| {
            r.cache_hit_ratio.map(|x| x * 100.0)
        }),
        ("flushes + compactions running", |r| {
            Some((r.flushes_running + r.compactions_running) as f64)
        }),
    ];
    let root =
        BitMapBackend::new(path, (SIZE.0, PANEL_H * panels.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let areas = root.split_evenly((panels.len(), 1));
    let t_max = series
        .iter()
        .flat_map(|(_, r)| r.iter().map(|x| x.second))
        .fold(1.0, f64::max);
    for (area, (label, f)) in areas.iter().zip(panels) {
        let y_max = series
            .iter()
            .flat_map(|(_, r)| r.iter().filter_map(f))
            .fold(0.0, f64::max)
            .max(1.0)
            * 1.1;
        let mut chart = ChartBuilder::on(area)
            .caption(format!("Timeline: {label}"), (FONT, 20))
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(90)
            .build_cartesian_2d(0f64..t_max, 0f64..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc(label)
            // Small ranges (job counts) need a decimal or labels repeat.
            .y_label_formatter(&|y| {
                if y_max < 10.0 {
                    format!("{y:.1}")
                } else {
                    format!("{y:.0}")
                }
            })
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(err)?;
        for (i, (name, rows)) in series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(
                    rows.iter().filter_map(|r| Some((r.second, f(r)?))),
                    c.stroke_width(2),
                ))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// AC-Key's Fig. 12: the KV, KP and block components' sizes over time, one panel per engine
/// that reports them, each panel with its QPS on a second axis. Returns false (and writes
/// nothing) when no engine reports cache sizes.
pub fn cache_sizes(series: &[(String, Vec<TimelineRow>)], path: &Path) -> Result<bool> {
    let with: Vec<&(String, Vec<TimelineRow>)> = series
        .iter()
        .filter(|(_, rows)| rows.iter().any(|r| r.cache_sizes.is_some()))
        .collect();
    if with.is_empty() {
        return Ok(false);
    }
    register_font();
    const PANEL_H: u32 = 360;
    let root = BitMapBackend::new(path, (SIZE.0, PANEL_H * with.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let areas = root.split_evenly((with.len(), 1));
    type Part = fn(&crate::measure::timeline::CacheSizes) -> u64;
    let parts: [(&str, Part); 4] = [
        ("block", |c| c.block),
        ("KV", |c| c.kv),
        ("KP", |c| c.kp),
        ("ghost", |c| c.ghost),
    ];
    const MIB: f64 = 1024.0 * 1024.0;
    for (area, (name, rows)) in areas.iter().zip(with) {
        let t_max = rows.iter().map(|r| r.second).fold(1.0, f64::max);
        let y_max = rows
            .iter()
            .filter_map(|r| r.cache_sizes)
            .map(|c| (c.kv + c.kp + c.block + c.ghost) as f64 / MIB)
            .fold(0.0, f64::max)
            .max(0.01)
            * 1.1;
        let q_max = rows.iter().map(|r| r.qps).fold(1.0, f64::max) * 1.1;
        let mut chart = ChartBuilder::on(area)
            .caption(format!("Read cache components: {name}"), (FONT, 20))
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(80)
            .right_y_label_area_size(80)
            .build_cartesian_2d(0f64..t_max, 0f64..y_max)
            .map_err(err)?
            .set_secondary_coord(0f64..t_max, 0f64..q_max);
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc("MiB")
            .y_label_formatter(&|y| format!("{y:.2}"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(err)?;
        chart
            .configure_secondary_axes()
            .y_desc("ops/s (dashed)")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(err)?;
        for (i, (label, f)) in parts.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(
                    rows.iter()
                        .filter_map(|r| Some((r.second, f(&r.cache_sizes?) as f64 / MIB))),
                    c.stroke_width(2),
                ))
                .map_err(err)?
                .label(*label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .draw_secondary_series(DashedLineSeries::new(
                rows.iter().map(|r| (r.second, r.qps)),
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(err)?
            .label("ops/s")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));
        chart
            .configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

/// Leaper's Figs. 10 and 11: per interval, each engine's block-cache hit ratio, QPS, p95
/// latency and invalidation misses, over a strip marking every engine's flushes (thin
/// bars) and compactions (thick bars). Returns false (and writes nothing) when no run
/// reports background jobs or invalidation counts.
pub fn invalidation_timeline(
    results: &[RunResult],
    series: &[(String, Vec<TimelineRow>)],
    path: &Path,
) -> Result<bool> {
    if !results
        .iter()
        .any(|r| r.invalidation.is_some() && r.spec.workload.is_leaper())
    {
        return Ok(false);
    }
    register_font();
    const PANEL_H: u32 = 260;
    type Metric = fn(f64, &TimelineRow) -> Option<f64>;
    let panels: [(&str, Metric); 4] = [
        ("cache hit ratio (%)", |_, r| {
            let n = r.cache_hits + r.cache_misses;
            (n > 0)
                .then(|| 100.0 * r.cache_hits as f64 / n as f64)
                .or(r.cache_hit_ratio.map(|x| x * 100.0))
        }),
        ("ops/s", |_, r| Some(r.qps)),
        ("p95 latency (us)", |_, r| Some(r.p95_us)),
        ("invalidation misses/s", |dt, r| {
            (dt > 0.0).then(|| r.invalidation_misses as f64 / dt)
        }),
    ];
    let strip_h = 60 + 30 * series.len() as u32;
    let root = BitMapBackend::new(path, (SIZE.0, PANEL_H * panels.len() as u32 + strip_h))
        .into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (top, strip) = root.split_vertically(PANEL_H * panels.len() as u32);
    let areas = top.split_evenly((panels.len(), 1));
    let t_max = series
        .iter()
        .flat_map(|(_, r)| r.iter().map(|x| x.second))
        .fold(1.0, f64::max);
    let with_dt = |rows: &[TimelineRow]| -> Vec<(f64, TimelineRow)> {
        let mut prev = 0.0;
        rows.iter()
            .map(|r| {
                let dt = r.second - prev;
                prev = r.second;
                (dt, r.clone())
            })
            .collect()
    };
    let dts: Vec<Vec<(f64, TimelineRow)>> = series.iter().map(|(_, r)| with_dt(r)).collect();
    for (area, (label, f)) in areas.iter().zip(panels) {
        let vals = || {
            dts.iter()
                .flat_map(|v| v.iter().filter_map(|(dt, r)| f(*dt, r)))
        };
        let y_max = vals().fold(0.0, f64::max).max(1.0) * 1.1;
        // Hit ratios sit high: zoom in on the range they use.
        let y_min = if label.starts_with("cache") {
            (vals().fold(100.0, f64::min) - 5.0).clamp(0.0, 95.0)
        } else {
            0.0
        };
        let y_max = if label.starts_with("cache") {
            y_max.min(100.5)
        } else {
            y_max
        };
        let mut chart = ChartBuilder::on(area)
            .caption(label, (FONT, 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..t_max, y_min..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 13))
            .draw()
            .map_err(err)?;
        for (i, ((name, _), rows)) in series.iter().zip(&dts).enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(
                    rows.iter()
                        .filter_map(|(dt, r)| Some((r.second, f(*dt, r)?))),
                    c.stroke_width(2),
                ))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .label_font((FONT, 13))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    let n = series.len().max(1);
    let mut chart = ChartBuilder::on(&strip)
        .caption(
            "background jobs (thin: flush, thick: compaction)",
            (FONT, 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..t_max, 0f64..n as f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("seconds")
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 13))
        .draw()
        .map_err(err)?;
    let min_w = t_max / 400.0;
    for (i, (name, _)) in series.iter().enumerate() {
        let c = color(i);
        let y = (n - 1 - i) as f64;
        let Some(r) = results.iter().find(|r| &r.engine == name) else {
            continue;
        };
        let bars = r.background_jobs.iter().filter(|j| j.rewrites()).map(|j| {
            let (a, b) = (j.start_s.max(0.0), j.end_s.max(j.start_s.max(0.0) + min_w));
            let (lo, hi) = if j.kind == crate::engines::JobKind::Compaction {
                (y + 0.15, y + 0.85)
            } else {
                (y + 0.4, y + 0.6)
            };
            Rectangle::new([(a, lo), (b, hi)], c.filled())
        });
        chart.draw_series(bars).map_err(err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                name.clone(),
                (0.0, y + 0.95),
                (FONT, 12),
            )))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(true)
}

/// RusKey's Fig. 7 from the per-mission series: each engine's mean latency per op per
/// mission over the whole run, session starts dashed; below, the K_i of `primary` (else the
/// first engine whose K changes, else the first that reports K) per level. Latencies above
/// 1.3 x the 98th percentile are drawn at the top edge.
pub fn missions(results: &[RunResult], primary: Option<&str>, path: &Path) -> Result<()> {
    register_font();
    let with: Vec<&RunResult> = results.iter().filter(|r| !r.missions.is_empty()).collect();
    let ks_of = |r: &RunResult| r.missions.iter().any(|m| m.ks.is_some());
    let varies = |r: &RunResult| {
        let mut k = r.missions.iter().filter_map(|m| m.ks.as_ref());
        k.next().is_some_and(|f| k.any(|x| x != f))
    };
    let k_run = primary
        .and_then(|p| with.iter().find(|r| r.engine == p && ks_of(r)))
        .or_else(|| with.iter().find(|r| varies(r)))
        .or_else(|| with.iter().find(|r| ks_of(r)))
        .copied();
    const PANEL_H: u32 = 380;
    let panels = 1 + u32::from(k_run.is_some());
    let root = BitMapBackend::new(path, (SIZE.0 + 200, PANEL_H * panels)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let areas = root.split_evenly((panels as usize, 1));
    let x_max = with
        .iter()
        .map(|r| r.missions.len())
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    // Session starts: the first mission of each later phase (of the longest series).
    let starts: Vec<f64> = with
        .iter()
        .max_by_key(|r| r.missions.len())
        .map(|r| {
            r.missions
                .windows(2)
                .filter(|w| w[1].phase != w[0].phase)
                .map(|w| w[1].index as f64)
                .collect()
        })
        .unwrap_or_default();
    let mut all: Vec<f64> = with
        .iter()
        .flat_map(|r| r.missions.iter().map(|m| m.mean_ns / 1e3))
        .collect();
    all.sort_by(f64::total_cmp);
    let p98 = all
        .get(((all.len() as f64 * 0.98) as usize).min(all.len().saturating_sub(1)))
        .copied()
        .unwrap_or(1.0);
    let y_max = (p98 * 1.3).max(1e-3);
    let mut chart = mission_chart(
        &areas[0],
        "Mean latency per op per mission",
        x_max,
        y_max,
        "us / op",
        1,
    )?;
    dashed_verticals(&mut chart, &starts, y_max)?;
    for (i, r) in with.iter().enumerate() {
        labelled_line(
            &mut chart,
            r.missions
                .iter()
                .map(|m| (m.index as f64, (m.mean_ns / 1e3).min(y_max))),
            i,
            1,
            r.engine.clone(),
        )?;
    }
    legend_upper_right(&mut chart)?;
    if let Some(r) = k_run {
        let levels = r
            .missions
            .iter()
            .filter_map(|m| m.ks.as_ref().map(Vec::len))
            .max()
            .unwrap_or(1);
        let k_max = r
            .missions
            .iter()
            .filter_map(|m| m.ks.as_ref()?.iter().max().copied())
            .max()
            .unwrap_or(1) as f64;
        let mut chart = mission_chart(
            &areas[1],
            &format!("{}: run limit K_i per level", r.engine),
            x_max,
            k_max + 1.0,
            "K",
            0,
        )?;
        dashed_verticals(&mut chart, &starts, k_max + 1.0)?;
        for level in 0..levels {
            // Levels drawn slightly apart so equal K's stay visible.
            let off = level as f64 * 0.06;
            labelled_line(
                &mut chart,
                r.missions.iter().filter_map(|m| {
                    let k = *m.ks.as_ref()?.get(level)?;
                    Some((m.index as f64, k as f64 + off))
                }),
                level,
                2,
                format!("L{}", level + 1),
            )?;
        }
        legend_upper_right(&mut chart)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Writes the plots into `dir`; returns their file names. `cache_sizes.png` only when an
/// engine reports its read cache's components; `invalidation_timeline.png` for Leaper
/// workloads; `ruskey_missions.png` when runs have a per-mission series; `transition.png`
/// when runs changed K (`--set-k-at`).
pub fn all(
    results: &[RunResult],
    timelines: &[(String, Vec<TimelineRow>)],
    dir: &Path,
) -> Result<Vec<String>> {
    let mut names = vec!["throughput.png", "latency_cdf.png", "timeline.png"];
    throughput(results, &dir.join(names[0]))?;
    latency_cdf(results, &dir.join(names[1]))?;
    timeline(timelines, &dir.join(names[2]))?;
    if cache_sizes(timelines, &dir.join("cache_sizes.png"))? {
        names.push("cache_sizes.png");
    }
    if invalidation_timeline(results, timelines, &dir.join("invalidation_timeline.png"))? {
        names.push("invalidation_timeline.png");
    }
    if results.iter().any(|r| !r.missions.is_empty()) {
        let engines: Vec<&str> = results.iter().map(|r| r.engine.as_str()).collect();
        let primary = crate::ruskey::primary(&engines, None);
        missions(results, primary, &dir.join("ruskey_missions.png"))?;
        names.push("ruskey_missions.png");
    }
    if super::transition::plot(results, &dir.join("transition.png"))? {
        names.push("transition.png");
    }
    Ok(names.iter().map(|s| s.to_string()).collect())
}
