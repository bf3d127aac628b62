//! The event log `LOG` in the database directory: what a session writes there, rotation
//! at each open, nothing from a read-only open or with `info_log` off.

use cairn::{Db, Options, WriteOptions};

use crate::support::key8 as key;

fn read_log(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("LOG")).unwrap_or_default()
}

fn old_logs(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("LOG.old."))
        .count()
}

/// The line of `event` in `log` (the first), split into its key=value fields.
fn fields<'a>(log: &'a str, event: &str) -> Vec<(&'a str, &'a str)> {
    let line = log
        .lines()
        .find(|l| l.split(' ').nth(1) == Some(event))
        .unwrap_or_else(|| panic!("no {event} line in:\n{log}"));
    line.split(' ')
        .skip(2)
        .filter_map(|f| f.split_once('='))
        .collect()
}

fn field<'a>(log: &'a str, event: &str, key: &str) -> &'a str {
    fields(log, event)
        .into_iter()
        .find(|(k, _)| *k == key)
        .unwrap_or_else(|| panic!("{event} has no {key}"))
        .1
}

#[test]
fn a_session_logs_its_options_flushes_compactions_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    for i in 0..5_000u32 {
        db.put(&wo, &key(i), &[7u8; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let log = read_log(dir.path());
    let first = log.lines().next().unwrap();
    assert!(first.split(' ').nth(1) == Some("open"), "{first}");
    assert!(
        first.starts_with("20") && first.contains('T'),
        "a UTC time first: {first}"
    );
    let options = log.lines().nth(1).unwrap();
    assert!(
        options.contains(" options {"),
        "the options at open, as JSON: {options}"
    );
    assert!(options.contains("\"write_buffer_size\":"), "{options}");
    assert!(field(&log, "flush_end", "bytes").parse::<u64>().unwrap() > 0);
    assert_eq!(field(&log, "flush_end", "cf"), "default");
    assert!(field(&log, "flush_end", "micros").parse::<u64>().is_ok());
    let out: u64 = field(&log, "compaction_end", "output_bytes")
        .parse()
        .unwrap();
    assert!(out > 0, "{log}");
    assert!(log.contains(" compaction_begin ") && log.contains(" close ok=true"));
}

#[test]
fn each_open_starts_a_new_log_and_keeps_the_old_ones() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        keep_log_file_num: 2,
        ..Options::small()
    };
    for round in 0..4u32 {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        db.put(&WriteOptions::default(), &key(round), b"v").unwrap();
        db.close().unwrap();
        assert_eq!(old_logs(dir.path()), (round as usize).min(2));
    }
    let log = read_log(dir.path());
    assert_eq!(log.matches(" open ").count(), 1, "one session per LOG");
}

#[test]
fn read_only_opens_and_info_log_off_write_no_log() {
    let dir = tempfile::tempdir().unwrap();
    let off = Options {
        info_log: false,
        ..Options::small()
    };
    let db = Db::open(dir.path(), off.clone()).unwrap();
    db.put(&WriteOptions::default(), &key(1), b"v").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    assert!(!dir.path().join("LOG").exists(), "info_log off");
    let db = Db::open(dir.path(), Options::small()).unwrap();
    db.close().unwrap();
    let before = read_log(dir.path());
    assert!(before.contains(" open "));
    let ro = Db::open_read_only(dir.path(), Options::small()).unwrap();
    assert_eq!(ro.get(&key(1)).unwrap().as_deref(), Some(&b"v"[..]));
    drop(ro);
    assert_eq!(
        read_log(dir.path()),
        before,
        "a read-only open leaves LOG alone"
    );
    assert_eq!(old_logs(dir.path()), 0);
}

#[test]
fn write_stalls_are_logged_with_their_length() {
    let dir = tempfile::tempdir().unwrap();
    // No background threads: the writer does the flushes and compactions it waits for.
    let opts = Options {
        background_work: false,
        ..Options::small()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..50_000u32 {
        db.put(&WriteOptions::default(), &key(i), &[1u8; 64])
            .unwrap();
    }
    db.close().unwrap();
    let log = read_log(dir.path());
    assert!(db_stalled(&log), "{log}");
    assert!(field(&log, "stall_end", "micros").parse::<u64>().is_ok());
}

fn db_stalled(log: &str) -> bool {
    log.contains(" stall_begin ") && log.contains(" stall_end ")
}

#[test]
fn statistics_are_dumped_while_the_database_runs() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        stats_dump_period_ms: 20,
        ..Options::small()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..1000u32 {
        db.put(&WriteOptions::default(), &key(i), b"v").unwrap();
    }
    // A dump after the writes shows them, while the database is still open. The dump
    // writes `STATS.json` first and its event line after, so both are awaited: seeing the
    // file does not mean the line is written yet.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let json = std::fs::read(dir.path().join("STATS.json")).unwrap_or_default();
        let dumped = serde_json::from_slice::<serde_json::Value>(&json)
            .is_ok_and(|v| v["writes"].as_u64() == Some(1000));
        let logged = read_log(dir.path())
            .lines()
            .any(|l| l.contains(" stats gets=") && l.contains(" writes=1000 "));
        if dumped && logged {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no dump with the writes: {}",
            read_log(dir.path())
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    db.close().unwrap();
}
