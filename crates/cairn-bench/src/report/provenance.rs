//! Where a result came from: the commit, the machine, the date (the header of every
//! `docs/results` file).

use std::process::Command;

/// A command's trimmed output, if it ran.
fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let o = Command::new(cmd).args(args).output().ok()?;
    let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}

/// The short hash of HEAD, with `+dirty` when the tree has changes.
pub fn commit() -> String {
    let hash = output("git", &["rev-parse", "--short", "HEAD"]).unwrap_or("unknown".into());
    let dirty = output("git", &["status", "--porcelain", "--untracked-files=no"]).is_some();
    if dirty {
        format!("{hash}+dirty")
    } else {
        hash
    }
}

/// The CPU model, core count and architecture.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores, {}", std::env::consts::ARCH)
}

/// The UTC date and time.
pub fn date() -> String {
    output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or("unknown".into())
}

/// The command, the commit, the machine and the date after the page's first heading (a
/// `docs/results` page's head).
pub fn with_provenance(md: String, command: &str) -> String {
    let head = format!(
        "- command: `{command}`\n- commit: `{}`\n- machine: {}\n- date: {}\n\n",
        commit(),
        machine(),
        date()
    );
    match md.split_once('\n') {
        Some((h, rest)) if h.starts_with('#') => {
            format!("{h}\n\n{head}{}", rest.trim_start_matches('\n'))
        }
        _ => head + &md,
    }
}
