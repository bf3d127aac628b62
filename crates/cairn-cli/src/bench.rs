//! `cairn bench`: the benchmark harness is its own binary; this finds and runs it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

const BENCH: &str = "cairn-bench";

/// `cairn-bench` next to this executable (a cargo build puts both in target/...), else on
/// PATH.
fn find() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(BENCH)))
        .filter(|p| p.is_file());
    beside.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join(BENCH))
            .find(|p| p.is_file())
    })
}

pub fn run(args: &[OsString]) -> Result<ExitCode> {
    let Some(bin) = find() else {
        bail!(
            "{BENCH} not found next to this executable or on PATH; build it with \
             `cargo build --release -p cairn-bench` (then run target/release/cairn bench, \
             or put target/release on PATH)"
        );
    };
    let status = std::process::Command::new(&bin)
        .args(args)
        .status()
        .with_context(|| format!("cannot run {}", bin.display()))?;
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        // Killed by a signal: the shell's convention.
        (None, Some(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        (None, None) => ExitCode::from(1),
    }
}
