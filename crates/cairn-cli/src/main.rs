//! `cairn`: inspect, query, check and repair cairn databases from the shell, in the
//! manner of RocksDB's `ldb` and `sst_dump`.
//!
//! Exit codes: 0 success; 1 an error (bad arguments, no such database or key); 2 `check`
//! found damage. Other commands' exit codes are `cairn-bench`'s under `cairn bench`.

mod bench;
mod check;
mod codec;
mod dump_wal;
mod fmt;
mod info;
mod kv;
mod open;
mod table_dump;
mod top;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

const AFTER_HELP: &str = "\
Exit codes: 0 success, 1 error (including a key not found), 2 `check` found damage.
Keys and values are UTF-8 text with C-style escapes (\\x00, \\n, \\\\) unless --hex is given.
See docs/guide/cli.md for examples.";

#[derive(Parser)]
#[command(
    name = "cairn",
    version,
    about = "Inspect, query, check and repair cairn databases",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// How to open the database.
#[derive(Args, Clone, Debug, Default)]
pub struct OpenArgs {
    /// Options preset to open with (see `cairn::presets`; e.g. bourbon, ac-key, wisckey).
    /// Level counts and storage tiers must match the database's. Without it, the options
    /// the database saved in its options file (the defaults where it has none).
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
}

/// Encodings of keys and values on the command line.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct EncodingArgs {
    /// Keys and values, in and out, as 0x-prefixed hex.
    #[arg(long)]
    pub hex: bool,
    /// Keys, in and out, as 0x-prefixed hex.
    #[arg(long, alias = "key_hex")]
    pub key_hex: bool,
    /// Values, in and out, as 0x-prefixed hex.
    #[arg(long, alias = "value_hex")]
    pub value_hex: bool,
}

impl EncodingArgs {
    pub fn key(&self) -> codec::Encoding {
        codec::Encoding::from_flag(self.hex || self.key_hex)
    }
    pub fn value(&self) -> codec::Encoding {
        codec::Encoding::from_flag(self.hex || self.value_hex)
    }
}

/// Arguments every key-value command takes.
#[derive(Args, Clone, Debug)]
pub struct KvArgs {
    /// Database directory.
    pub db: PathBuf,
    /// Column family.
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub cf: String,
    #[command(flatten)]
    pub enc: EncodingArgs,
    #[command(flatten)]
    pub open: OpenArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Describe a database: column families, levels and runs, files on disk by kind,
    /// learned parts, cache policy, and the statistics saved at the last close.
    ///
    /// Reads the manifest without opening the database: no lock is taken, no log is
    /// replayed and nothing is written, so it works while another process has the
    /// database open.
    Info {
        /// Database directory.
        db: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        open: OpenArgs,
    },
    /// Print the value of a key (exit 1, "NotFound" on stderr, if it has none).
    ///
    /// Opens the database read-only: no lock is taken and nothing is written, so it works
    /// beside a process that has the database open (it sees the writes made before it).
    Get {
        #[command(flatten)]
        kv: KvArgs,
        /// The key.
        key: String,
    },
    /// Write a key.
    Put {
        #[command(flatten)]
        kv: KvArgs,
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Sync the write-ahead log before returning.
        #[arg(long)]
        sync: bool,
        /// Create the database if it does not exist.
        #[arg(long, alias = "create_if_missing")]
        create_if_missing: bool,
    },
    /// Delete a key (no error if it has no value).
    Delete {
        #[command(flatten)]
        kv: KvArgs,
        /// The key.
        key: String,
        /// Sync the write-ahead log before returning.
        #[arg(long)]
        sync: bool,
    },
    /// Delete every key in [FROM, TO) with one range tombstone batch.
    DeleteRange {
        #[command(flatten)]
        kv: KvArgs,
        /// First key deleted.
        from: String,
        /// First key kept (exclusive end).
        to: String,
        /// Sync the write-ahead log before returning.
        #[arg(long)]
        sync: bool,
    },
    /// Compact a key range of a column family down through every level (after a flush),
    /// and wait for it: the whole key space unless --from or --to is given.
    Compact {
        #[command(flatten)]
        kv: KvArgs,
        /// First key (inclusive).
        #[arg(long, value_name = "KEY")]
        from: Option<String>,
        /// Last key (inclusive).
        #[arg(long, value_name = "KEY")]
        to: Option<String>,
    },
    /// Print the write batches of a write-ahead log file (NNNNNN.log): each batch's first
    /// sequence number, then one operation a line (`SEQ cf=ID PUT KEY ==> VALUE`).
    DumpWal {
        /// The log file.
        file: PathBuf,
        /// At most this many batches.
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        #[command(flatten)]
        enc: EncodingArgs,
    },
    /// Print key-value pairs in key order, one `KEY ==> VALUE` a line (a read-only open,
    /// as `get`).
    Scan {
        #[command(flatten)]
        kv: KvArgs,
        /// First key (inclusive).
        #[arg(long, value_name = "KEY")]
        from: Option<String>,
        /// End key (exclusive).
        #[arg(long, value_name = "KEY")]
        to: Option<String>,
        /// Newest key first.
        #[arg(long)]
        reverse: bool,
        /// At most this many pairs.
        #[arg(long, value_name = "N", alias = "max_keys")]
        limit: Option<u64>,
        /// Write to FILE instead of stdout (with a progress bar on a terminal).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Describe a table file (.sst): properties, index, bloom filter, learned model,
    /// and with --entries its entries.
    DumpTable {
        /// The table file.
        file: PathBuf,
        /// Also print entries (key @ sequence number, kind, value or value pointer).
        #[arg(long)]
        entries: bool,
        /// At most this many entries (with --entries).
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        enc: EncodingArgs,
    },
    /// Verify every checksum of every file and the manifest's consistency, changing
    /// nothing. Exit 0 when clean (warnings allowed), 2 when damaged, 1 on other errors.
    ///
    /// Reads CURRENT and the manifest, every table whole, every value log record by
    /// record and the write-ahead logs; checks that runs hold sorted, disjoint files that
    /// agree with the manifest. Files no manifest names are warnings (an open removes
    /// them). Takes the database's lock: close other users first.
    Check {
        /// Database directory.
        db: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        open: OpenArgs,
    },
    /// Bring back a database whose CURRENT or manifest is lost or damaged (RocksDB's
    /// RepairDB): point CURRENT at an intact manifest, or rebuild one from the tables
    /// and logs. Unreadable tables are moved to lost/, never deleted.
    Repair {
        /// Database directory.
        db: PathBuf,
        #[command(flatten)]
        open: OpenArgs,
    },
    /// Make an openable copy of a database at one moment in DIR (which must not exist):
    /// tables and value logs hard-linked, the logs still needed copied, with a manifest
    /// of the current state (the engine's `Db::checkpoint`). Takes the database's lock:
    /// close other users first.
    Checkpoint {
        /// Database directory.
        db: PathBuf,
        /// Directory of the copy.
        dir: PathBuf,
        #[command(flatten)]
        open: OpenArgs,
    },
    /// Load table files written by the engine's SstFileWriter (Rust `cairn::SstFileWriter`,
    /// Python `cairn.SstFileWriter`) as one write: their entries replace what the column
    /// family held for their keys (the engine's `Db::ingest_external_file`). The files
    /// must not overlap one another; they are copied in and left where they are.
    Ingest {
        /// Database directory.
        db: PathBuf,
        /// Table files to load.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Column family.
        #[arg(long, value_name = "NAME", default_value = "default")]
        cf: String,
        #[command(flatten)]
        open: OpenArgs,
    },
    /// Run the benchmark harness: forwards every argument to `cairn-bench` (found next
    /// to this executable, else on PATH). `cairn bench --help` shows its help.
    #[command(disable_help_flag = true)]
    Bench {
        /// Arguments for cairn-bench.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Print a database's statistics in the Prometheus text format, from its `STATS.json`
    /// (written at close, and every `stats_dump_period_ms` while it runs), for
    /// node_exporter's textfile collector or a scrape script.
    Metrics {
        /// Database directory.
        db: PathBuf,
        /// Label every sample `db="NAME"`.
        #[arg(long, value_name = "NAME")]
        label: Option<String>,
    },
    /// Follow a running database live: rates and latency, the levels (runs, K, learned
    /// lookups) and what each learned part is doing, from the `STATS.json` the engine
    /// writes every `stats_dump_period_ms`. Never opens the database. q quits.
    Top {
        /// Database directory.
        db: PathBuf,
        /// How often to look for a new dump, milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 250,
              value_parser = clap::value_parser!(u64).range(10..=60_000))]
        interval_ms: u64,
        /// Print one frame as text, WIDTHxHEIGHT (e.g. 120x40), and exit.
        #[arg(long, value_name = "WxH", value_parser = parse_size)]
        once: Option<(u16, u16)>,
    },
    /// Print a shell completion script (e.g. `cairn completions bash > /etc/bash_completion.d/cairn`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `120x40` as (120, 40).
fn parse_size(s: &str) -> Result<(u16, u16), String> {
    let (w, h) = s
        .split_once('x')
        .ok_or("expected WIDTHxHEIGHT, e.g. 120x40")?;
    let n = |v: &str| v.parse::<u16>().ok().filter(|&n| (20..=1000).contains(&n));
    match (n(w), n(h)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err("width and height must be numbers from 20 to 1000".into()),
    }
}

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of stdout goes away
    // (`cairn scan DB | head`): Rust ignores SIGPIPE, which would turn it into a panic.
    // SAFETY: restores the default disposition before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // The engine's warnings (a damaged options file, a refused model) reach the user on
    // stderr; RUST_LOG sets the level (`RUST_LOG=info`, `RUST_LOG=cairn=debug`).
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp(None)
        .init();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // Usage errors exit 1, so that 2 means only "check found damage".
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cairn: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Info { db, json, open } => info::run(&db, &open, json),
        Command::Get { kv, key } => kv::get(&kv, &key),
        Command::Put {
            kv,
            key,
            value,
            sync,
            create_if_missing,
        } => kv::put(&kv, &key, &value, sync, create_if_missing),
        Command::Delete { kv, key, sync } => kv::delete(&kv, &key, sync),
        Command::DeleteRange { kv, from, to, sync } => kv::delete_range(&kv, &from, &to, sync),
        Command::Compact { kv, from, to } => kv::compact(&kv, from.as_deref(), to.as_deref()),
        Command::DumpWal { file, limit, enc } => dump_wal::run(&file, limit, &enc),
        Command::Scan {
            kv,
            from,
            to,
            reverse,
            limit,
            out,
        } => kv::scan(
            &kv,
            &kv::ScanArgs {
                from,
                to,
                reverse,
                limit,
                out,
            },
        ),
        Command::DumpTable {
            file,
            entries,
            limit,
            json,
            enc,
        } => table_dump::run(&file, entries, limit, json, &enc),
        Command::Check { db, json, open } => check::run(&db, &open, json),
        Command::Repair { db, open } => check::repair(&db, &open),
        Command::Checkpoint { db, dir, open } => check::checkpoint(&db, &dir, &open),
        Command::Ingest {
            db,
            files,
            cf,
            open,
        } => kv::ingest(&db, &files, &cf, &open),
        Command::Bench { args } => bench::run(&args),
        Command::Metrics { db, label } => info::metrics(&db, label.as_deref()),
        Command::Top {
            db,
            interval_ms,
            once,
        } => top::run(&db, std::time::Duration::from_millis(interval_ms), once),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "cairn", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    }
}
