//! How `cairn top` draws a [`Feed`]: the headline rates, a sparkline of operations, the
//! levels (runs, K, learned lookups) and one paragraph per learned part.

use cairn::{DbStats, LevelStats};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Sparkline, Table, Wrap};
use ratatui::Frame;

use super::feed::Feed;
use crate::fmt;

/// What the view is of, beside the feed: the database's name and the time now (seconds,
/// the feed's origin), for the age of the last dump.
pub struct Context<'a> {
    pub db: &'a str,
    pub now: f64,
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, feed: &Feed, cx: &Context) {
    let [head, spark, body, foot] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(5),
        Constraint::Min(8),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    let Some(latest) = feed.latest() else {
        let wait = Paragraph::new(format!(
            "waiting for {} (the engine writes it every stats_dump_period_ms, and at close)",
            feed.file().display()
        ))
        .block(titled(&format!("cairn top {}", cx.db)))
        .wrap(Wrap { trim: true });
        frame.render_widget(wait, head.union(body));
        footer(frame, foot, feed);
        return;
    };
    headline(frame, head, feed, &latest.stats, cx, cx.now - latest.at);
    sparkline(frame, spark, feed);
    let [levels_area, parts_area] =
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(body);
    levels(frame, levels_area, &latest.stats);
    learned_parts(frame, parts_area, feed, &latest.stats);
    footer(frame, foot, feed);
}

fn titled(title: &str) -> Block<'static> {
    Block::default().borders(Borders::ALL).title(Span::styled(
        title.to_string(),
        Style::default().add_modifier(Modifier::BOLD),
    ))
}

/// A count with thousands separators.
fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn rate(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| count(r.round() as u64))
}

fn delta(d: Option<u64>) -> String {
    d.map_or_else(|| "-".into(), |d| format!("+{}", count(d)))
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".into();
    }
    format!("{:.1}%", 100.0 * part as f64 / whole as f64)
}

fn headline(frame: &mut Frame, area: Rect, feed: &Feed, s: &DbStats, cx: &Context, age: f64) {
    let lines = vec![
        Line::from(format!(
            "gets {}/s · writes {}/s · get p99 {:.1} us · write p99 {:.1} us · dump {:.1} s ago",
            rate(feed.rate(|s| s.gets)),
            rate(feed.rate(|s| s.writes)),
            s.get_latency.p99,
            s.write_latency.p99,
            age.max(0.0),
        )),
        Line::from(format!(
            "flushes {} · compactions {} (running {}) · trivial moves {} · stalled {} ms · background errors {}",
            count(s.flushes),
            count(s.compactions),
            s.compactions_running,
            count(s.trivial_moves),
            count(s.stall_micros / 1000),
            s.background_errors,
        )),
    ];
    let title = format!("cairn top {}", cx.db);
    frame.render_widget(Paragraph::new(lines).block(titled(&title)), area);
}

fn sparkline(frame: &mut Frame, area: Rect, feed: &Feed) {
    let data = feed.series(|s| s.gets + s.writes);
    // The newest intervals that fit, right-aligned as time flows.
    let width = area.width.saturating_sub(2) as usize;
    let shown = &data[data.len().saturating_sub(width)..];
    let spark = Sparkline::default()
        .block(titled(
            "operations per second (gets + writes), one bar per dump",
        ))
        .data(shown);
    frame.render_widget(spark, area);
}

fn levels(frame: &mut Frame, area: Rect, s: &DbStats) {
    let header = Row::new(["L", "runs", "files", "size", "K", "gets", "learned"])
        .style(Style::default().add_modifier(Modifier::BOLD));
    let rows = s
        .levels
        .iter()
        .enumerate()
        .filter(|(i, l)| *i == 0 || l.files > 0 || l.k > 0)
        .map(|(i, l)| level_row(i, l));
    let widths = [
        Constraint::Length(2),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(3),
        Constraint::Length(10),
        Constraint::Length(8),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .block(titled("levels (learned: lookups by a model)"));
    frame.render_widget(table, area);
}

fn level_row(i: usize, l: &LevelStats) -> Row<'static> {
    let lookups = l.learned_lookups + l.learned_fallbacks;
    Row::new(vec![
        i.to_string(),
        l.runs.to_string(),
        l.files.to_string(),
        fmt::bytes(l.bytes),
        l.k.to_string(),
        count(l.gets_served),
        if lookups == 0 {
            "-".into()
        } else {
            percent(l.learned_lookups, lookups)
        },
    ])
}

fn learned_parts(frame: &mut Frame, area: Rect, feed: &Feed, s: &DbStats) {
    let mut lines = Vec::new();
    lines.extend(bourbon(s));
    lines.extend(ac_key(feed, s));
    lines.extend(leaper(feed, s));
    lines.extend(ruskey(s));
    lines.extend(sa_lsm(feed, s));
    let p = Paragraph::new(lines)
        .block(titled("learned parts (+N: since the previous dump)"))
        .wrap(Wrap { trim: true });
    frame.render_widget(p, area);
}

fn part(name: &str) -> Span<'static> {
    Span::styled(
        format!("{name}: "),
        Style::default().add_modifier(Modifier::BOLD),
    )
}

fn bourbon(s: &DbStats) -> Vec<Line<'static>> {
    let lookups = s.learned_lookups + s.learned_fallbacks;
    vec![Line::from(vec![
        part("Bourbon"),
        Span::raw(format!(
            "{} tables learned ({} segments, {} entries) · {} of model lookups answered ({} fell back)",
            count(s.learned_tables),
            count(s.learned_segments),
            count(s.learned_entries),
            percent(s.learned_lookups, lookups),
            count(s.learned_fallbacks),
        )),
    ])]
}

fn ac_key(feed: &Feed, s: &DbStats) -> Vec<Line<'static>> {
    let r = &s.read_cache;
    let point = |s: &DbStats| s.read_cache.kv_hits + s.read_cache.kp_hits;
    let blocks = |s: &DbStats| s.read_cache.block_hits + s.read_cache.block_misses;
    vec![Line::from(vec![
        part(&format!("AC-Key ({})", r.policy)),
        Span::raw(format!(
            "KV {} · KP {} · block {} · ghosts {} of {} (point target {}, KV target {}) · \
             hits KV {} KP {} block {} of {} lookups",
            fmt::bytes(r.kv_bytes),
            fmt::bytes(r.kp_bytes),
            fmt::bytes(r.block_bytes),
            fmt::bytes(r.ghost_bytes),
            fmt::bytes(r.capacity),
            fmt::bytes(r.point_target_bytes),
            fmt::bytes(r.kv_target_bytes),
            delta(feed.delta(|s| s.read_cache.kv_hits)),
            delta(feed.delta(|s| s.read_cache.kp_hits)),
            delta(feed.delta(|s| s.read_cache.block_hits)),
            delta(feed.delta(blocks)),
        )),
        Span::raw(format!(" (point hits {} in all)", count(point(s)))),
    ])]
}

fn leaper(feed: &Feed, s: &DbStats) -> Vec<Line<'static>> {
    let p = &s.prefetch;
    vec![Line::from(vec![
        part("Leaper"),
        Span::raw(format!(
            "warmed blocks {} ({} in all), hit {} · invalidation misses {} · jobs with a model {} · \
             rollbacks {}{}",
            delta(feed.delta(|s| s.prefetch.warmed_blocks)),
            count(p.warmed_blocks),
            delta(feed.delta(|s| s.prefetch.warmed_hits)),
            delta(feed.delta(|s| s.prefetch.invalidation_misses)),
            count(p.jobs_with_model),
            p.rollbacks,
            if p.rolled_back { " (rolled back now)" } else { "" },
        )),
    ])]
}

fn ruskey(s: &DbStats) -> Vec<Line<'static>> {
    let t = &s.tuner;
    let k: Vec<String> = t.last_k.iter().map(|k| k.to_string()).collect();
    vec![Line::from(vec![
        part(&format!("RusKey ({})", t.policy)),
        Span::raw(format!(
            "{} missions, {} K changes · K chosen last per level [{}] · {} errors",
            count(t.missions),
            count(t.changes),
            k.join(", "),
            t.errors,
        )),
    ])]
}

fn sa_lsm(feed: &Feed, s: &DbStats) -> Vec<Line<'static>> {
    // Tiers that saw any I/O (the counters have room for more tiers than a database has).
    let tiers = s.io.by_kind_tier.iter().map(Vec::len).max().unwrap_or(0);
    let reads: Vec<String> = (0..tiers)
        .filter(|&t| s.io.tier(t) != Default::default())
        .map(|t| {
            let d = feed.delta(|s| s.io.tier(t).read_ops);
            format!("tier {t} {}", delta(d))
        })
        .collect();
    vec![Line::from(vec![
        part("SA-LSM"),
        Span::raw(format!(
            "{} proactive compactions ({} backed off) · {} records moved cold · reads {}",
            count(s.proactive_compactions),
            count(s.proactive_backoffs),
            count(s.proactive_cold_records),
            reads.join(", "),
        )),
    ])]
}

fn footer(frame: &mut Frame, area: Rect, feed: &Feed) {
    let text = match &feed.problem {
        Some(p) => format!("! {p}"),
        None => "q quits · redrawn when STATS.json changes".into(),
    };
    frame.render_widget(Paragraph::new(text), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1234567), "1,234,567");
    }
}
