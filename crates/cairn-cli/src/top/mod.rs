//! `cairn top DB`: a live view of a running database and what its learned parts are doing,
//! followed through the statistics the engine dumps (`Options::stats_dump_period_ms`
//! writes `STATS.json` atomically every period). Read-only: it never opens the database,
//! so it runs beside the process that has it open.

pub mod feed;
pub mod view;

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Result};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::{DefaultTerminal, Terminal};

use feed::Feed;
use view::Context;

/// Follows `db` until q, Esc or Ctrl-C, checking for a new dump every `interval`; with
/// `once`, prints one frame of `width` x `height` as text and returns.
pub fn run(db: &Path, interval: Duration, once: Option<(u16, u16)>) -> Result<ExitCode> {
    let mut feed = Feed::new(db);
    feed.poll();
    let name = db.display().to_string();
    if let Some((w, h)) = once {
        // Rates need two dumps: wait for the next one, a few periods at most.
        for _ in 0..20 {
            if feed.latest().is_none() || feed.poll() {
                break;
            }
            std::thread::sleep(interval);
        }
        print!("{}", render_text(&feed, &name, now(), w, h));
        return Ok(ExitCode::SUCCESS);
    }
    if !std::io::stdout().is_terminal() {
        bail!("cairn top needs a terminal; --once prints one frame as text");
    }
    // Killed by SIGTERM or SIGHUP (a closed terminal, `kill`), it still leaves raw mode
    // and the alternate screen: the signals only raise a flag the loop checks.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let mut terminal = ratatui::init();
    let r = follow(&mut terminal, &mut feed, &name, interval, &stop);
    ratatui::restore();
    r.map(|()| ExitCode::SUCCESS)
}

fn follow(
    t: &mut DefaultTerminal,
    feed: &mut Feed,
    name: &str,
    interval: Duration,
    stop: &AtomicBool,
) -> Result<()> {
    // Wakes at least this often to see the flag, however long the interval.
    let tick = interval.min(Duration::from_millis(100));
    let mut next_poll = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if Instant::now() >= next_poll {
            next_poll = Instant::now() + interval;
            feed.poll();
            let cx = Context {
                db: name,
                now: now(),
            };
            t.draw(|f| view::draw(f, feed, &cx))?;
        }
        if event::poll(tick)? && quit_key(event::read()?) {
            return Ok(());
        }
    }
    Ok(())
}

/// q, Esc or Ctrl-C (which raw mode delivers as a key, not a signal).
fn quit_key(e: Event) -> bool {
    let Event::Key(k) = e else {
        return false;
    };
    let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
    k.kind == KeyEventKind::Press && (ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc))
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One frame as text, a line per row (trailing blanks trimmed).
pub fn render_text(feed: &Feed, name: &str, now: f64, width: u16, height: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(width, height)).expect("an in-memory backend");
    let cx = Context { db: name, now };
    t.draw(|f| view::draw(f, feed, &cx))
        .expect("an in-memory backend");
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn::{DbStats, LevelStats};

    /// Two dumps a second apart of a database where every learned part did something.
    fn busy_feed() -> Feed {
        let mut feed = Feed::new(Path::new("/db"));
        let at = |gets: u64, warmed: u64| {
            let mut s = DbStats {
                gets,
                writes: gets / 2,
                flushes: 12,
                compactions: 7,
                learned_tables: 9,
                learned_segments: 120,
                learned_entries: 90_000,
                learned_lookups: 4 * gets / 5,
                learned_fallbacks: gets / 100,
                proactive_compactions: 3,
                proactive_cold_records: 4_200,
                ..Default::default()
            };
            s.get_latency.p99 = 41.5;
            s.write_latency.p99 = 12.25;
            s.levels = (0..4)
                .map(|l| LevelStats {
                    runs: [2, 3, 1, 0][l],
                    files: [2, 6, 14, 0][l],
                    bytes: [1 << 20, 6 << 20, 40 << 20, 0][l],
                    k: [4, 3, 1, 1][l] as u32,
                    gets_served: gets / 4,
                    learned_lookups: if l == 2 { gets / 5 } else { 0 },
                    learned_fallbacks: if l == 2 { gets / 50 } else { 0 },
                    ..Default::default()
                })
                .collect();
            let r = &mut s.read_cache;
            r.policy = "ac-key".into();
            (r.capacity, r.kv_bytes, r.kp_bytes, r.block_bytes) =
                (64 << 20, 20 << 20, 8 << 20, 30 << 20);
            (r.point_target_bytes, r.kv_target_bytes) = (30 << 20, 21 << 20);
            (r.kv_hits, r.kp_hits, r.block_hits, r.block_misses) =
                (gets / 2, gets / 10, gets / 5, gets / 20);
            s.prefetch.warmed_blocks = warmed;
            s.prefetch.warmed_hits = warmed / 2;
            s.prefetch.jobs_with_model = 5;
            s.tuner.policy = "lerp".into();
            (s.tuner.missions, s.tuner.changes, s.tuner.last_k) = (40, 6, vec![4, 3, 1, 1]);
            let tier = |reads| cairn::storage::IoCounts {
                read_ops: reads,
                ..Default::default()
            };
            s.io.by_kind_tier = vec![vec![tier(gets / 3), tier(gets / 30), Default::default()]];
            s
        };
        feed.push(100.0, at(10_000, 300));
        feed.push(101.0, at(25_000, 420));
        feed
    }

    /// The frame the view draws, against the one in tests/data (CAIRN_BLESS=1 rewrites it
    /// after a deliberate change of the view).
    #[test]
    fn the_frame_matches_its_snapshot() {
        let text = render_text(&busy_feed(), "/db", 101.5, 120, 30);
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/top-frame.txt");
        if std::env::var_os("CAIRN_BLESS").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        let want = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            want,
            "the view changed: CAIRN_BLESS=1 rewrites {}",
            path.display()
        );
    }

    #[test]
    fn the_frame_shows_each_learned_part_and_the_rates() {
        // Wide enough that no line wraps.
        let text = render_text(&busy_feed(), "/db", 101.5, 240, 30);
        for want in [
            "gets 15,000/s",
            "writes 7,500/s",
            "dump 0.5 s ago",
            "Bourbon: 9 tables learned",
            "AC-Key (ac-key): KV 20.0 MiB",
            "Leaper: warmed blocks +120",
            "RusKey (lerp): 40 missions, 6 K changes",
            "[4, 3, 1, 1]",
            "SA-LSM: 3 proactive compactions",
            "4,200 records moved cold",
        ] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
        // Only the tiers that saw I/O.
        assert!(
            text.contains("tier 1 +500") && !text.contains("tier 2"),
            "{text}"
        );
    }

    #[test]
    fn before_the_first_dump_it_says_what_it_waits_for() {
        let dir = tempfile::tempdir().unwrap();
        let mut feed = Feed::new(dir.path());
        feed.poll();
        let text = render_text(&feed, "db", 0.0, 100, 20);
        assert!(text.contains("waiting for"), "{text}");
        assert!(text.contains("STATS.json"), "{text}");
    }
}
