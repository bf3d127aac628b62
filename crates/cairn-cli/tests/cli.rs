//! The `cairn` binary against real databases built with the engine.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cairn::{Db, Options, WriteOptions};

fn cairn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run cairn")
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the exit code, and that nothing panicked.
fn expect(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
}

fn opts() -> Options {
    Options {
        write_buffer_size: 32 << 10,
        target_file_size: 8 << 10,
        block_size: 1024,
        level1_bytes: 32 << 10,
        background_work: false,
        value_threshold: Some(64),
        ..Options::small()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn val(i: u32) -> Vec<u8> {
    let n = if i.is_multiple_of(2) { 1 } else { 12 };
    format!("val{i:05}").repeat(n).into_bytes()
}

/// Tables on two levels (some values in value logs), a column family `logs`, and writes
/// left in the WAL.
fn build(dir: &Path) {
    let wo = WriteOptions::default();
    let db = Db::open(dir, opts()).unwrap();
    let logs = db.create_cf("logs").unwrap();
    for i in 0..500 {
        db.put(&wo, &key(i), &val(i)).unwrap();
    }
    db.put_cf(&logs, &wo, b"l1", b"first").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..500).step_by(7) {
        db.put(&wo, &key(i), &val(i + 1)).unwrap();
    }
    db.flush().unwrap();
    db.put(&wo, b"unflushed", b"in the wal").unwrap();
    db.close().unwrap();
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// The largest table (of the default column family: `logs` holds one small one).
fn big_table(dir: &Path) -> PathBuf {
    files(dir, ".sst")
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
}

fn flip(path: &Path, pos: usize) {
    let mut data = std::fs::read(path).unwrap();
    data[pos] ^= 0x20;
    std::fs::write(path, data).unwrap();
}

#[test]
fn info_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let o = cairn(&["info", p(dir.path())]);
    expect(&o, 0);
    let text = stdout(&o);
    for want in [
        "column family \"default\"",
        "column family \"logs\"",
        "tables (*.sst)",
        "value logs (*.vlog)",
        "write-ahead logs (*.log)",
        "statistics of the last session (STATS.json, written at close",
        "read cache block",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }

    let o = cairn(&["info", "--json", p(dir.path())]);
    expect(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cfs: Vec<&str> = v["column_families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cfs, ["default", "logs"]);
    let levels = v["column_families"][0]["levels"].as_array().unwrap();
    assert_eq!(levels.len(), opts().num_levels.max(levels.len()));
    let runs: usize = levels
        .iter()
        .map(|l| l["runs"].as_array().unwrap().len())
        .sum();
    assert!(runs >= 2, "{v}");
    assert!(levels[1]["capacity"].as_u64().unwrap() > 0);
    let kinds: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    for k in ["table", "vlog", "wal", "manifest", "current", "stats"] {
        assert!(kinds.contains(&k), "{kinds:?}");
    }
    assert_eq!(v["stats"]["present"], true);
    // The session in `build` wrote 500 + 72 + 2 batches.
    assert!(
        v["stats"]["value"]["writes"].as_u64().unwrap() >= 570,
        "{v}"
    );
    assert!(v["stats"]["modified_unix"].as_u64().unwrap() > 0);
    assert_eq!(v["options"]["read_cache"], "block");
}

#[test]
fn info_says_when_stats_are_absent_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    std::fs::remove_file(dir.path().join("STATS.json")).unwrap();
    let before = files(dir.path(), "");
    let o = cairn(&["info", p(dir.path())]);
    expect(&o, 0);
    assert!(
        stdout(&o).contains("statistics: none saved"),
        "{}",
        stdout(&o)
    );
    let o = cairn(&["info", "--json", p(dir.path())]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["stats"]["present"], false);
    assert!(v["stats"]["value"].is_null());
    // Read-only: no log replayed, no file written.
    assert_eq!(before, files(dir.path(), ""));
    assert!(!dir.path().join("STATS.json").exists());
}

#[test]
fn put_get_delete_scan_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let d = p(&db);
    // No database yet: put refuses without --create-if-missing.
    expect(&cairn(&["put", d, "a", "1"]), 1);
    assert!(!db.exists());
    expect(&cairn(&["put", "--create-if-missing", d, "a", "1"]), 0);
    // An escaped key with a NUL, a newline and a backslash; an escaped value.
    expect(&cairn(&["put", d, "b\\x00\\n\\\\", "v\\x01"]), 0);
    // Hex in, hex out.
    expect(
        &cairn(&["put", "--hex", "--sync", d, "0x6300ff", "0xff00beef"]),
        0,
    );

    let o = cairn(&["get", d, "a"]);
    expect(&o, 0);
    assert_eq!(stdout(&o), "1\n");
    let o = cairn(&["get", d, "b\\x00\\n\\\\"]);
    expect(&o, 0);
    assert_eq!(stdout(&o), "v\\x01\n");
    let o = cairn(&["get", "--value-hex", d, "b\\x00\\n\\\\"]);
    assert_eq!(stdout(&o), "0x7601\n");
    let o = cairn(&["get", "--key-hex", d, "0x6300ff"]);
    assert_eq!(stdout(&o), "\\xff\\x00\\xbe\\xef\n");

    let o = cairn(&["scan", d]);
    expect(&o, 0);
    assert_eq!(
        stdout(&o),
        "a ==> 1\nb\\x00\\n\\\\ ==> v\\x01\nc\\x00\\xff ==> \\xff\\x00\\xbe\\xef\n"
    );
    let o = cairn(&["scan", "--hex", "--from", "0x62", "--to", "0x63", d]);
    assert_eq!(stdout(&o), "0x62000a5c ==> 0x7601\n");
    let o = cairn(&["scan", "--reverse", "--limit", "2", d]);
    let lines: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("c\\x00\\xff ==> "), "{lines:?}");

    // Whatever scan prints as a key reads back with get.
    let printed = lines[0].split(" ==> ").next().unwrap().to_string();
    expect(&cairn(&["get", d, &printed]), 0);

    expect(&cairn(&["delete", d, "a"]), 0);
    let o = cairn(&["get", d, "a"]);
    expect(&o, 1);
    assert!(stderr(&o).contains("NotFound: a"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());

    // Bad escapes and bad hex are errors before anything is opened.
    let o = cairn(&["get", d, "bad\\q"]);
    expect(&o, 1);
    assert!(stderr(&o).contains("unknown escape"), "{}", stderr(&o));
    expect(&cairn(&["get", "--hex", d, "0x123"]), 1);
}

#[test]
fn column_families_and_scan_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let d = p(dir.path());
    let o = cairn(&["get", "--cf", "logs", d, "l1"]);
    expect(&o, 0);
    assert_eq!(stdout(&o), "first\n");
    expect(&cairn(&["put", "--cf", "logs", d, "l2", "second"]), 0);
    let o = cairn(&["scan", "--cf", "logs", d]);
    assert_eq!(stdout(&o), "l1 ==> first\nl2 ==> second\n");
    // Not in the default family.
    expect(&cairn(&["get", d, "l1"]), 1);
    let o = cairn(&["get", "--cf", "nope", d, "l1"]);
    expect(&o, 1);
    assert!(
        stderr(&o).contains("no column family \"nope\""),
        "{}",
        stderr(&o)
    );

    let out = dir.path().join("dump.txt");
    let o = cairn(&["scan", d, "--out", p(&out)]);
    expect(&o, 0);
    let dumped = std::fs::read_to_string(&out).unwrap();
    assert_eq!(dumped.lines().count(), 501); // 500 keys and "unflushed"
    assert!(dumped.contains(&format!(
        "key00007 ==> {}\n",
        String::from_utf8(val(8)).unwrap()
    )));
}

#[test]
fn a_missing_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    for args in [
        vec!["get", p(&missing), "k"],
        vec!["info", p(&missing)],
        vec!["check", p(&missing)],
        vec!["scan", p(&missing)],
    ] {
        let o = cairn(&args);
        expect(&o, 1);
        assert!(
            stderr(&o).contains("does not exist"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!missing.exists(), "{args:?} created the database");
    }
}

#[test]
fn dump_table_shows_a_real_table() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let t = big_table(dir.path());
    let o = cairn(&["dump-table", "--entries", "--json", p(&t)]);
    expect(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = v["properties"]["entries"].as_u64().unwrap();
    assert!(n > 0);
    assert_eq!(v["entries"].as_array().unwrap().len() as u64, n);
    assert_eq!(
        v["index"].as_array().unwrap().len() as u64,
        v["properties"]["data_blocks"].as_u64().unwrap()
    );
    assert_eq!(v["filter"]["kind"], "bloom");
    assert_eq!(v["learned_model"]["present"], false);
    let first = &v["entries"][0];
    assert!(first["key"].as_str().unwrap().starts_with("key"), "{first}");
    assert!(first["seq"].as_u64().unwrap() > 0);
    // Long values are value pointers; short ones inline.
    let kinds: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"pointer") && kinds.contains(&"value"),
        "{kinds:?}"
    );

    let o = cairn(&["dump-table", "--entries", "--limit", "3", p(&t)]);
    expect(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("entries (3 shown)"), "{text}");
    assert!(text.contains("filter: bloom"), "{text}");
    assert!(text.contains("-> vlog "), "{text}");

    // Not a table: a clear error, not a panic.
    let o = cairn(&["dump-table", p(&dir.path().join("CURRENT"))]);
    expect(&o, 1);
    assert!(
        stderr(&o).contains("not a readable cairn table"),
        "{}",
        stderr(&o)
    );
    // A table with a damaged footer.
    let len = std::fs::metadata(&t).unwrap().len() as usize;
    flip(&t, len - 10);
    expect(&cairn(&["dump-table", p(&t)]), 1);
}

#[test]
fn check_of_a_clean_database_passes() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let o = cairn(&["check", p(dir.path())]);
    expect(&o, 0);
    assert!(stdout(&o).contains("OK"), "{}", stdout(&o));
    let o = cairn(&["check", "--json", p(dir.path())]);
    expect(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert!(v["tables"].as_u64().unwrap() >= 2);
    assert!(v["value_logs"].as_u64().unwrap() >= 1);
}

#[test]
fn get_and_scan_read_beside_an_open_database() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let db = Db::open(dir.path(), opts()).unwrap();
    db.put(&WriteOptions::default(), b"live", b"written by the holder")
        .unwrap();
    let o = cairn(&["get", p(dir.path()), "live"]);
    expect(&o, 0);
    assert_eq!(stdout(&o).trim(), "written by the holder");
    let o = cairn(&["scan", p(dir.path()), "--limit", "3"]);
    expect(&o, 0);
    assert_eq!(stdout(&o).lines().count(), 3);
    // Writing commands still take the lock.
    let o = cairn(&["put", p(dir.path()), "k", "v"]);
    expect(&o, 1);
    assert!(stderr(&o).contains("locked"), "{}", stderr(&o));
    db.close().unwrap();
}

#[test]
fn delete_range_compact_and_dump_wal() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let k = |i: u32| String::from_utf8(key(i)).unwrap();
    let count = |d: &Path| stdout(&cairn(&["scan", p(d)])).lines().count();
    let before = count(dir.path());
    expect(
        &cairn(&["delete-range", p(dir.path()), &k(100), &k(200)]),
        0,
    );
    assert_eq!(count(dir.path()), before - 100);
    expect(&cairn(&["get", p(dir.path()), &k(150)]), 1);
    // One record: flushed, its table shows it as a range deletion.
    let db = Db::open(dir.path(), opts()).unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let newest = files(dir.path(), ".sst").into_iter().max().unwrap();
    let o = cairn(&["dump-table", "--json", p(&newest)]);
    expect(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let dels = v["range_deletions"].as_array().unwrap();
    assert_eq!(dels.len(), 1, "{v}");
    assert_eq!(dels[0]["start"], k(100).as_str());
    assert_eq!(dels[0]["end"], k(200).as_str());
    let o = cairn(&["dump-table", p(&newest)]);
    assert!(
        stdout(&o).contains("range deletions: 1 fragments"),
        "{}",
        stdout(&o)
    );
    let o = cairn(&["compact", p(dir.path())]);
    expect(&o, 0);
    assert!(stdout(&o).contains("compacted in"), "{}", stdout(&o));
    assert_eq!(count(dir.path()), before - 100);
    // The log the puts below land in, decoded.
    let db = Db::open(dir.path(), opts()).unwrap();
    for i in 0..50 {
        db.put(&WriteOptions::default(), format!("w{i}").as_bytes(), b"x")
            .unwrap();
    }
    db.put(&WriteOptions::default(), b"walkey", b"walvalue")
        .unwrap();
    db.close().unwrap();
    let logs = files(dir.path(), ".log");
    let dumps: Vec<String> = logs
        .iter()
        .map(|l| stdout(&cairn(&["dump-wal", p(l)])))
        .collect();
    assert!(
        dumps.iter().any(|d| d.contains("PUT walkey ==> walvalue")),
        "{dumps:?}"
    );
    // Damage in the middle of a log is an error, not a silent stop.
    let log = logs
        .iter()
        .find(|l| std::fs::metadata(l).unwrap().len() > 200)
        .cloned();
    let log = log.expect("a log holds the 51 puts");
    flip(&log, 20);
    expect(&cairn(&["dump-wal", p(&log)]), 1);
}

#[test]
fn commands_open_with_the_saved_options_unless_told_a_preset() {
    let dir = tempfile::tempdir().unwrap();
    // Two tiers (hot/, cold/): the defaults would not find the cold tables.
    let opts = cairn::presets::by_name("age-tier").unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..2000 {
        db.put(&WriteOptions::default(), &key(i), &val(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let o = cairn(&["get", p(dir.path()), std::str::from_utf8(&key(5)).unwrap()]);
    expect(&o, 0);
    expect(&cairn(&["check", p(dir.path())]), 0);
    // A preset that contradicts the saved tiers is refused, naming the options file.
    let o = cairn(&["get", "--preset", "default", p(dir.path()), "k"]);
    expect(&o, 1);
    assert!(stderr(&o).contains("options file"), "{}", stderr(&o));
}

#[test]
fn checkpoint_makes_a_copy_that_checks_clean_and_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    build(&db);
    let copy = dir.path().join("copy");
    let o = cairn(&["checkpoint", p(&db), p(&copy)]);
    expect(&o, 0);
    assert!(stdout(&o).contains("checkpoint of"), "{}", stdout(&o));
    expect(&cairn(&["check", p(&copy)]), 0);
    let scan = |d: &Path| stdout(&cairn(&["scan", p(d)]));
    assert_eq!(scan(&copy), scan(&db));
    let o = cairn(&["get", p(&copy), "unflushed"]);
    expect(&o, 0);
    // A second checkpoint into the same place is refused.
    let o = cairn(&["checkpoint", p(&db), p(&copy)]);
    expect(&o, 1);
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
}

#[test]
fn ingest_loads_sst_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    build(&db);
    let file = dir.path().join("load.sst");
    let mut w = cairn::SstFileWriter::create(&file, &opts()).unwrap();
    for i in 0..100u32 {
        w.put(format!("loaded{i:03}").as_bytes(), b"bulk").unwrap();
    }
    w.finish().unwrap();
    let o = cairn(&["ingest", p(&db), p(&file)]);
    expect(&o, 0);
    assert!(stdout(&o).contains("ingested 1 file"), "{}", stdout(&o));
    let o = cairn(&["get", p(&db), "loaded042"]);
    expect(&o, 0);
    assert!(stdout(&o).contains("bulk"), "{}", stdout(&o));
    expect(&cairn(&["check", p(&db)]), 0);
    // A file that is no table is refused.
    std::fs::write(dir.path().join("junk.sst"), b"not a table").unwrap();
    expect(
        &cairn(&["ingest", p(&db), p(&dir.path().join("junk.sst"))]),
        1,
    );
}

/// Damage `what` in a fresh database; `check` must exit 2 naming `expect_in_output`.
fn check_finds(damage: impl FnOnce(&Path) -> String) {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let name = damage(dir.path());
    let o = cairn(&["check", p(dir.path())]);
    expect(&o, 2);
    let out = stdout(&o);
    assert!(out.contains("CORRUPT"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains(&name) && l.starts_with("  ")),
        "no problem line names {name}:\n{out}"
    );
}

#[test]
fn check_finds_a_flipped_table_byte() {
    check_finds(|dir| {
        let t = big_table(dir);
        flip(&t, 200);
        t.file_name().unwrap().to_string_lossy().into_owned()
    });
}

#[test]
fn check_finds_a_flipped_value_log_byte() {
    check_finds(|dir| {
        let v = files(dir, ".vlog")[0].clone();
        flip(&v, 50);
        v.file_name().unwrap().to_string_lossy().into_owned()
    });
}

#[test]
fn check_finds_a_flipped_manifest_byte() {
    check_finds(|dir| {
        let m = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("MANIFEST-")
            })
            .unwrap();
        flip(&m, 30);
        m.file_name().unwrap().to_string_lossy().into_owned()
    });
}

#[test]
fn check_finds_a_missing_current() {
    check_finds(|dir| {
        std::fs::remove_file(dir.join("CURRENT")).unwrap();
        "CURRENT".into()
    });
}

#[test]
fn repair_after_losing_current_brings_the_data_back() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let d = p(dir.path());
    std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
    // Opening refuses, pointing at repair.
    let o = cairn(&["get", d, "key00001"]);
    expect(&o, 1);
    assert!(stderr(&o).contains("CURRENT"), "{}", stderr(&o));
    let o = cairn(&["repair", d]);
    expect(&o, 0);
    assert!(stdout(&o).starts_with("repaired:"), "{}", stdout(&o));
    expect(&cairn(&["check", d]), 0);
    let o = cairn(&["get", d, "key00001"]);
    expect(&o, 0);
    assert_eq!(stdout(&o).trim_end().as_bytes(), val(1));
    let o = cairn(&["get", d, "key00007"]);
    assert_eq!(stdout(&o).trim_end().as_bytes(), val(8));
    let o = cairn(&["get", d, "unflushed"]);
    assert_eq!(stdout(&o), "in the wal\n");
    let o = cairn(&["get", "--cf", "logs", d, "l1"]);
    assert_eq!(stdout(&o), "first\n");
}

#[test]
fn help_completions_and_usage_errors() {
    for cmd in [
        "info",
        "get",
        "put",
        "delete",
        "scan",
        "dump-table",
        "check",
        "repair",
        "bench",
        "completions",
    ] {
        let o = cairn(&["help", cmd]);
        expect(&o, 0);
        assert!(stdout(&o).contains("Usage: cairn"), "{cmd}: {}", stdout(&o));
    }
    let o = cairn(&["completions", "bash"]);
    expect(&o, 0);
    assert!(stdout(&o).contains("_cairn"));
    // A usage error exits 1: 2 is kept for "check found damage".
    expect(&cairn(&["get"]), 1);
    expect(&cairn(&["frobnicate"]), 1);
}

#[test]
fn bench_forwards_or_says_how_to_build_it() {
    let o = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["bench", "--help"])
        .env("PATH", "")
        .output()
        .unwrap();
    assert!(!stderr(&o).contains("panicked"));
    if o.status.success() {
        // cairn-bench was built next to cairn: its help came through.
        assert!(!o.stdout.is_empty());
    } else {
        assert!(
            stderr(&o).contains("cargo build --release -p cairn-bench"),
            "{}",
            stderr(&o)
        );
    }
}

/// `cairn info DB | head -1`: a reader that goes away ends the command quietly (as SIGPIPE
/// ends other Unix tools), never with a panic.
#[test]
fn a_closed_stdout_ends_quietly() {
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    for args in [vec!["info", p(dir.path())], vec!["scan", p(dir.path())]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(&args)
            .env_remove("RUST_BACKTRACE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run cairn");
        // The read end closes before the child has written anything.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(
            !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_ne!(
            out.status.code(),
            Some(101),
            "{args:?}: exit code of a panic"
        );
    }
}

/// The engine's warnings reach stderr through the tool's logger: a damaged options file
/// is advisory, so a read goes on and says why the options were not checked.
#[test]
fn engine_warnings_reach_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    db.put(&WriteOptions::default(), &key(1), &val(1)).unwrap();
    db.close().unwrap();
    let options = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("OPTIONS-")
        })
        .expect("an options file");
    std::fs::write(&options, b"not an options file").unwrap();
    let o = cairn(&["get", "--preset", "default", p(dir.path()), "key00001"]);
    expect(&o, 0);
    assert_eq!(stdout(&o).trim_end().as_bytes(), &val(1)[..]);
    assert!(
        stderr(&o).contains("options file is unreadable"),
        "{}",
        stderr(&o)
    );
    // RUST_LOG=error keeps warnings out.
    let quiet = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["get", "--preset", "default", p(dir.path()), "key00001"])
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    assert!(!stderr(&quiet).contains("unreadable"), "{}", stderr(&quiet));
}

/// `cairn metrics DB`: the statistics of the last close in the Prometheus text format.
#[test]
fn metrics_prints_the_saved_statistics_as_prometheus_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    for i in 0..100 {
        db.put(&WriteOptions::default(), &key(i), &val(i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let o = cairn(&["metrics", p(dir.path()), "--label", "main"]);
    expect(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("# TYPE cairn_writes_total counter"), "{text}");
    assert!(
        text.contains("cairn_writes_total{db=\"main\"} 100\n"),
        "{text}"
    );
    assert!(
        text.contains("cairn_flushes_total{db=\"main\"} 1\n"),
        "{text}"
    );
    // No statistics file: a clear error, exit 1.
    let empty = tempfile::tempdir().unwrap();
    let o = cairn(&["metrics", p(empty.path())]);
    expect(&o, 1);
    assert!(stderr(&o).contains("STATS.json"), "{}", stderr(&o));
}
