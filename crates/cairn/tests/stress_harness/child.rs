//! Kill cycles: the running binary re-executes itself as a child process that opens the
//! directory and runs the actors until the parent kills it with SIGKILL (crash.rs's
//! pattern). Before each write the child prints an intent line with everything the write
//! sets, after it `@A` (acknowledged) or `@F` (failed); each line is one `write(2)`
//! smaller than `PIPE_BUF`, so it reaches the pipe whole or not at all. A write with an
//! intent and no outcome is uncertain. Wrong answers its readers find come as `@W`,
//! panics as `@P`. The parent then reopens and checks as after a clean close: every
//! acknowledged write had reached the OS, which a kill does not undo.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use cairn::storage::FaultInjector;

use super::actors::{print_line, Journal};
use super::cycle::{
    current_manifest, open_db, read_state, run_actors, verify_phase, ChildCmd, CycleStats, DirCtx,
};
use super::model::{Durability, OpRec, Outcome, WRITERS};
use super::setup::{self, Knobs, Spec};

/// Set in a child's environment: `root|preset|dir seed|cycle seed|cycle`.
pub const CHILD_ENV: &str = "CAIRN_STRESS_CHILD";
/// A child that is not killed gives up after this long.
const CHILD_LIFETIME_MS: u64 = 30_000;

/// In a child process, runs the child's cycle (it never returns); else returns false.
pub fn child_main_if_requested() -> bool {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return false;
    };
    std::panic::set_hook(Box::new(|info| {
        print_line(&format!("@P {info}").replace('\n', " "));
    }));
    let code = match child_main(&spec) {
        Ok(()) => 4, // not killed in time
        Err(e) => {
            print_line(&format!("@W child: {e}"));
            3
        }
    };
    std::process::exit(code);
}

fn child_main(arg: &str) -> Result<(), String> {
    let parts: Vec<&str> = arg.split('|').collect();
    let [root, preset, dir_seed, seed, cycle] = parts[..] else {
        return Err(format!("bad {CHILD_ENV}: {arg}"));
    };
    let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
    let root = PathBuf::from(root);
    let dir_seed = num(dir_seed)?;
    let opts = setup::dir_options(preset, &root, dir_seed);
    let knobs = Knobs {
        run_ms: (CHILD_LIFETIME_MS, CHILD_LIFETIME_MS),
        steps: (1, 1),
        deterministic: false,
    };
    let vlog = opts.value_threshold.is_some();
    let spec = Spec::new(num(seed)?, &knobs, true, vlog);
    let mut ctx = DirCtx {
        dir: root.join("db"),
        root,
        preset: preset.to_string(),
        dir_seed,
        opts,
        base: Vec::new(),
        cycle: num(cycle)? as u32,
    };
    let faults = Arc::new(FaultInjector::new());
    let db = open_db(&ctx.dir, spec.options(&ctx.opts, Some(faults.clone())))
        .map_err(|e| format!("open: {e}"))?;
    ctx.base = read_state(&db)?;
    spec.faults.apply(&faults, &current_manifest(&ctx.dir));
    print_line("@S");
    let run = run_actors(&ctx, &spec, &db, &faults, Journal::Pipe)?;
    drop(run);
    Ok(())
}

/// A kill cycle in the parent: start the child, let it run, kill it, check.
pub fn kill_cycle(ctx: &mut DirCtx, spec: &Spec, cmd: &ChildCmd) -> CycleStats {
    let mut stats = CycleStats::default();
    let lines = match run_child(ctx, spec, cmd) {
        Ok(lines) => lines,
        Err(e) => {
            stats.failures.push(format!("child: {e}"));
            stats.wrong += 1;
            return stats;
        }
    };
    stats.kills += 1;
    let logs = parse_lines(&lines, &mut stats);
    if stats.panics > 0 {
        return stats; // the panicking writer's last op may be missing
    }
    verify_phase(ctx, &logs, Durability::All, &mut stats);
    stats
}

/// Runs the child until it started and then for the cycle's time; returns its lines.
fn run_child(ctx: &DirCtx, spec: &Spec, cmd: &ChildCmd) -> Result<Vec<String>, String> {
    let arg = format!(
        "{}|{}|{}|{}|{}",
        ctx.root.display(),
        ctx.preset,
        ctx.dir_seed,
        spec.seed,
        ctx.cycle
    );
    let mut child = Command::new(&cmd.exe)
        .args(&cmd.args)
        .env(CHILD_ENV, arg)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut r = BufReader::new(stdout);
        let mut buf = Vec::new();
        while r.read_until(b'\n', &mut buf).unwrap_or(0) > 0 {
            // Only a whole line counts: a kill may cut the last one.
            if buf.last() == Some(&b'\n') {
                let line = String::from_utf8_lossy(&buf[..buf.len() - 1]).into_owned();
                if line.contains("@S") {
                    let _ = tx.send(());
                }
                lines.push(line);
            }
            buf.clear();
        }
        lines
    });
    let started = rx.recv_timeout(Duration::from_secs(20)).is_ok();
    if started {
        std::thread::sleep(Duration::from_millis(spec.run_ms));
    }
    let _ = child.kill(); // SIGKILL
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    let lines = reader.join().map_err(|_| "reader thread panicked")?;
    if !started {
        let tail: Vec<&String> = lines.iter().rev().take(3).collect();
        return Err(format!("did not start ({status}): {tail:?}"));
    }
    Ok(lines)
}

/// Builds the writers' logs from the protocol lines; counts what the child reported.
fn parse_lines(lines: &[String], stats: &mut CycleStats) -> Vec<Vec<OpRec>> {
    let mut logs: Vec<Vec<OpRec>> = (0..WRITERS).map(|_| Vec::new()).collect();
    for line in lines {
        // The test harness prints "test <name> ... " without a newline before the
        // child's first line: protocol lines start at their marker.
        let Some(at) = line.find('@') else { continue };
        let body = &line[at + 1..];
        let (tag, rest) = body.split_once(' ').unwrap_or((body, ""));
        match tag {
            "I" => {
                if let Some((w, op)) = parse_intent(rest) {
                    stats.ops += 1;
                    logs[w].push(op);
                }
            }
            "A" | "F" => {
                let w: usize = rest
                    .split(' ')
                    .next()
                    .and_then(|w| w.parse().ok())
                    .unwrap_or(0);
                if let (Some(op), "A") = (logs[w.min(WRITERS - 1)].last_mut(), tag) {
                    op.outcome = Outcome::Acked(0);
                    stats.acked += 1;
                } else {
                    stats.failed += 1;
                }
            }
            "J" => {
                let n = rest.trim().parse().unwrap_or(0);
                stats.faults = stats.faults.max(n);
            }
            "W" => {
                stats.wrong += 1;
                stats.failures.push(format!("in the child: {rest}"));
            }
            "P" => {
                stats.panics += 1;
                stats.failures.push(format!("panic in the child: {rest}"));
            }
            _ => {}
        }
    }
    logs
}

/// `<writer> <counter> <sync> <key>=<stamp hex or ->,...`
fn parse_intent(rest: &str) -> Option<(usize, OpRec)> {
    let mut p = rest.split(' ');
    let w: usize = p.next()?.parse().ok()?;
    let _counter: u32 = p.next()?.parse().ok()?;
    let sync = p.next()? == "1";
    let entries = p
        .next()
        .unwrap_or("")
        .split(',')
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (g, v) = e.split_once('=')?;
            let v = match v {
                "-" => None,
                s => Some(u64::from_str_radix(s, 16).ok()?),
            };
            Some((g.parse().ok()?, v))
        })
        .collect::<Option<Vec<_>>>()?;
    (w < WRITERS).then_some((
        w,
        OpRec {
            entries,
            sync,
            issued: 0,
            outcome: Outcome::Failed,
        },
    ))
}
