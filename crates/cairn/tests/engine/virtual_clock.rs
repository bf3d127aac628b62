//! The virtual device clock at the engine level: bad device models refused at open, I/O
//! charged to the foreground or queued as background work, and a rerun of the same
//! operations giving the same times.

use cairn::clock::{IoOp, VirtualStats};
use cairn::{Clock, Db, DeviceModel, DeviceProfile, Options, TierConfig, WriteOptions};

use crate::support::key8 as key;

fn options(model: DeviceModel) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        block_cache_bytes: 64 << 10,
        level1_bytes: 256 << 10,
        target_file_size: 64 << 10,
        background_work: false,
        mmap_reads: true, // refused on the virtual clock: every read is a device read
        clock: Clock::Virtual(model),
        ..Options::default()
    }
}

/// Writes, flushes and reads a fixed sequence; returns the clock's statistics.
fn workload(db: &Db) -> VirtualStats {
    for i in 0..3000u32 {
        db.put(
            &WriteOptions::default(),
            &key(i * 7 % 3000),
            &[i as u8; 200],
        )
        .unwrap();
        if i % 500 == 499 {
            db.run_background_work().unwrap();
        }
    }
    db.flush().unwrap();
    db.run_background_work().unwrap();
    for i in 0..500u32 {
        assert!(db.get(&key(i * 13 % 3000)).unwrap().is_some());
    }
    db.virtual_clock().unwrap().stats()
}

#[test]
fn bad_device_models_are_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let bad = [
        DeviceModel {
            read_mib_per_sec: 0.0,
            ..DeviceModel::nvme()
        },
        DeviceModel {
            write_mib_per_sec: -5.0,
            ..DeviceModel::nvme()
        },
        DeviceModel {
            access_us: -1.0,
            ..DeviceModel::ssd()
        },
        DeviceModel {
            sync_us: f64::NAN,
            ..DeviceModel::hdd()
        },
    ];
    for m in bad {
        let Err(e) = Db::open(dir.path(), options(m.clone())) else {
            panic!("{m:?} was accepted");
        };
        assert!(matches!(e, cairn::Error::InvalidArgument(_)), "{m:?}: {e}");
        assert!(e.to_string().contains("device model"), "{e}");
    }
    // A tier whose custom profile has no bandwidth becomes a device the clock refuses.
    let mut o = options(DeviceModel::nvme());
    o.tiers = vec![TierConfig {
        dir: ".".into(),
        first_level: 0,
        profile: DeviceProfile::Custom {
            read_us: 10.0,
            write_us: 10.0,
            mib_per_sec: 0.0,
        },
    }];
    let Err(e) = Db::open(dir.path(), o) else {
        panic!("a tier without bandwidth was accepted");
    };
    assert!(e.to_string().contains("bandwidth"), "{e}");
}

#[test]
fn a_rerun_gives_the_same_times_and_the_wall_clock_has_none() {
    let runs: Vec<VirtualStats> = (0..2)
        .map(|_| {
            let dir = tempfile::tempdir().unwrap();
            let db = Db::open(dir.path(), options(DeviceModel::nvme())).unwrap();
            let s = workload(&db);
            db.close().unwrap();
            s
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
    let s = &runs[0];
    let d = &s.devices[0];
    assert!(d.foreground[IoOp::RandomRead.index()].ops > 0, "{s:?}");
    assert!(d.background[IoOp::Write.index()].bytes > 0, "{s:?}");
    assert!(s.now_ns > 0);
    let dir = tempfile::tempdir().unwrap();
    let mut wall = options(DeviceModel::nvme());
    wall.clock = Clock::Wall;
    let db = Db::open(dir.path(), wall).unwrap();
    assert!(db.virtual_clock().is_none());
}

#[test]
fn background_writes_delay_foreground_reads_by_their_queue_time() {
    let run = |drain: bool| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options(DeviceModel::hdd())).unwrap();
        for i in 0..2000u32 {
            db.put(&WriteOptions::default(), &key(i), &[1u8; 200])
                .unwrap();
        }
        // The flush runs at once in this thread; its writes queue on the device.
        db.flush().unwrap();
        let c = db.virtual_clock().unwrap().clone();
        assert!(c.backlog_ns() > 0, "the flush left no queued I/O");
        if drain {
            c.wait_for_background();
        }
        // A microsecond of work later (at the instant a job is queued, the foreground
        // would go first).
        c.charge_cpu(1_000);
        let before = c.stats();
        assert!(db.get(&key(1234)).unwrap().is_some());
        c.stats().since(&before)
    };
    let queued = run(false);
    let drained = run(true);
    assert!(queued.queue_wait_ns > 0, "{queued:?}");
    assert_eq!(drained.queue_wait_ns, 0, "{drained:?}");
    assert!(queued.now_ns > drained.now_ns);
    // The read itself cost the same device time either way.
    assert_eq!(queued.foreground_io_ns(), drained.foreground_io_ns());
}

#[test]
fn a_slow_tier_keeps_its_own_device() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(DeviceModel::nvme());
    o.tiers = vec![
        TierConfig {
            dir: "hot".into(),
            first_level: 0,
            profile: DeviceProfile::None,
        },
        TierConfig {
            dir: "cold".into(),
            first_level: 1,
            profile: DeviceProfile::Hdd,
        },
    ];
    let db = Db::open(dir.path(), o).unwrap();
    workload(&db);
    let s = db.virtual_clock().unwrap().stats();
    let names: Vec<_> = s
        .devices
        .iter()
        .map(|d| d.model.as_ref().unwrap().name.clone())
        .collect();
    assert_eq!(names, ["nvme", "hdd"]);
    assert!(
        s.devices[1].background[IoOp::Write.index()].bytes > 0,
        "{s:?}"
    );
}
