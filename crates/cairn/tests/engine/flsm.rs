//! FLSM transitions (RusKey section 4, Figure 4).
//!
//! The first tests drive the pure compaction picker over hand-built versions (no disk): a
//! small simulator applies each task the picker returns as a version edit, checking on the
//! way that every unit taken from a level is closed over the level's runs and that no older
//! version of a key range ever sits above a newer one. The last test switches K at runtime
//! on a real database and checks the shape through `level_info` and the data through reads.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use cairn::compaction::{pick, pick_free, LevelShape, Task};
use cairn::types::{make_internal_key, ValueKind};
use cairn::version::{CfVersion, FileDesc, FileMeta, PolicyState, VersionEdit};
use cairn::{CfId, Compression, Db, FileNo, Options, ReadOptions, Transition, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::support::key6 as dkey;
use cairn::version::{AddedFile, CompactPointer, DeletedFile, LevelPolicy, SealedRun};

const CF: CfId = CfId::DEFAULT;

fn ukey(i: u32) -> Vec<u8> {
    format!("{i:06}").into_bytes()
}

/// The level under test is level 1 with capacity 600 bytes; level 2 is the last level.
fn shape() -> LevelShape {
    LevelShape {
        level1_bytes: 600,
        size_ratio: 10,
        num_levels: 3,
        held: None,
    }
}

struct Sim {
    v: CfVersion,
    /// What each file holds: (first key, last key, sequence number) of each write in it.
    segments: HashMap<FileNo, Vec<(u32, u32, u64)>>,
    shape: LevelShape,
    next_file: FileNo,
    next_run: u64,
    next_seq: u64,
}

impl Sim {
    /// `ks[l]` is the initial K of level l.
    fn new(ks: &[usize]) -> Sim {
        let shape = shape();
        assert_eq!(ks.len(), shape.num_levels);
        Sim {
            v: CfVersion::empty(|l| ks[l], shape.num_levels),
            segments: HashMap::new(),
            shape,
            next_file: FileNo::new(1),
            next_run: 1,
            next_seq: 1,
        }
    }

    fn apply(&mut self, edit: &VersionEdit) {
        self.v = self
            .v
            .apply(CF, edit, &|d: &FileDesc| {
                Arc::new(FileMeta::new(d.clone(), None))
            })
            .expect("edit applies");
    }

    fn desc(&mut self, lo: u32, hi: u32, size: u64) -> FileDesc {
        let seq = self.next_seq;
        self.next_seq += 1;
        let file_no = self.next_file;
        self.next_file = file_no.next();
        self.segments.insert(file_no, vec![(lo, hi, seq)]);
        FileDesc {
            file_no,
            tier: 0,
            size,
            smallest: make_internal_key(&ukey(lo), seq, ValueKind::Value),
            largest: make_internal_key(&ukey(hi), seq, ValueKind::Value),
            num_entries: (hi - lo + 1) as u64,
            min_seq: seq,
            max_seq: seq,
            vlog_refs: Vec::new(),
            range_dels: 0,
        }
    }

    fn new_run(&mut self) -> u64 {
        let r = self.next_run;
        self.next_run += 1;
        r
    }

    /// A file of new data for keys [lo, hi] lands in the active run of `level` (a new run
    /// if the level has none), as the output of a merge from above would. Returns the
    /// file number.
    fn arrive(&mut self, level: usize, lo: u32, hi: u32, size: u64) -> FileNo {
        let run = match self.v.levels[level].active() {
            Some(r) => r.id,
            None => self.new_run(),
        };
        let d = self.desc(lo, hi, size);
        let no = d.file_no;
        self.apply(&VersionEdit {
            added: vec![AddedFile {
                cf: CF,
                level: level as u32,
                run,
                file: d,
            }],
            ..Default::default()
        });
        no
    }

    fn set_policy(&mut self, level: usize, state: PolicyState) {
        self.apply(&VersionEdit {
            policies: vec![LevelPolicy {
                cf: CF,
                level: level as u32,
                state,
            }],
            ..Default::default()
        });
    }

    fn policy(&self, level: usize) -> PolicyState {
        self.v.levels[level].policy
    }

    /// (bytes, sealed) of each run of `level`, newest first.
    fn runs(&self, level: usize) -> Vec<(u64, bool)> {
        self.v.levels[level]
            .runs
            .iter()
            .map(|r| (r.size(), r.sealed))
            .collect()
    }

    fn level_bytes(&self, level: usize) -> u64 {
        self.v.levels[level].size()
    }

    /// Picks and executes one task.
    fn step(&mut self) -> Option<Task> {
        let task = pick(&self.v, &self.shape, &|_, _| true)?;
        self.execute(&task);
        Some(task)
    }

    /// Steps until the picker has nothing to do; returns the tasks.
    fn settle(&mut self) -> Vec<Task> {
        let mut tasks = Vec::new();
        while let Some(t) = self.step() {
            self.check_order();
            tasks.push(t);
            assert!(
                tasks.len() < 1000,
                "the picker does not converge: {tasks:#?}"
            );
        }
        tasks
    }

    /// Every file of level `from` overlapping the unit's key range must be in the unit.
    fn check_closure(&self, from: usize, inputs: &[Arc<FileMeta>]) {
        let lo = inputs.iter().map(|f| f.smallest_user()).min().unwrap();
        let hi = inputs.iter().map(|f| f.largest_user()).max().unwrap();
        let taken: HashSet<FileNo> = inputs.iter().map(|f| f.file_no()).collect();
        for run in &self.v.levels[from].runs {
            for f in &run.files {
                if f.overlaps(lo, hi) {
                    assert!(
                        taken.contains(&f.file_no()),
                        "unit [{:?}, {:?}] from level {from} leaves file {} of run {} behind",
                        String::from_utf8_lossy(lo),
                        String::from_utf8_lossy(hi),
                        f.file_no(),
                        run.id
                    );
                }
            }
        }
    }

    /// The destination of a unit is the active run of `to`, with exactly its files that
    /// overlap the unit.
    fn check_dest(
        &self,
        to: usize,
        inputs: &[Arc<FileMeta>],
        dest_run: Option<u64>,
        dest_inputs: &[Arc<FileMeta>],
    ) {
        let active = self.v.levels[to].active();
        assert_eq!(
            dest_run,
            active.map(|r| r.id),
            "destination is the active run"
        );
        let lo = inputs.iter().map(|f| f.smallest_user()).min().unwrap();
        let hi = inputs.iter().map(|f| f.largest_user()).max().unwrap();
        let want: Vec<FileNo> = active
            .map(|r| r.overlapping(lo, hi).iter().map(|f| f.file_no()).collect())
            .unwrap_or_default();
        let got: Vec<FileNo> = dest_inputs.iter().map(|f| f.file_no()).collect();
        assert_eq!(got, want, "destination files overlapping the unit");
    }

    fn execute(&mut self, task: &Task) {
        let edit = self.edit_for(task);
        self.apply(&edit);
    }

    /// Checks a task against the current version and returns the edit that does it.
    fn edit_for(&mut self, task: &Task) -> VersionEdit {
        let mut edit = VersionEdit::default();
        match task {
            Task::Seal { level, run } => {
                assert_eq!(
                    self.v.levels[*level].active().map(|r| r.id),
                    Some(*run),
                    "only the active run is sealed"
                );
                edit.sealed.push(SealedRun {
                    cf: CF,
                    level: *level as u32,
                    run: *run,
                });
            }
            Task::Policy { level, state } => {
                edit.policies.push(LevelPolicy {
                    cf: CF,
                    level: *level as u32,
                    state: *state,
                });
            }
            Task::Move {
                from,
                to,
                file,
                dest_run,
                pointer,
                ..
            } => {
                self.check_closure(*from, std::slice::from_ref(file));
                if from != to {
                    self.check_dest(*to, std::slice::from_ref(file), *dest_run, &[]);
                }
                let run = dest_run.unwrap_or_else(|| self.new_run());
                edit.deleted.push(DeletedFile {
                    cf: CF,
                    level: *from as u32,
                    file_no: file.file_no(),
                });
                edit.added.push(AddedFile {
                    cf: CF,
                    level: *to as u32,
                    run,
                    file: file.desc.clone(),
                });
                edit.compact_pointers.push(CompactPointer {
                    cf: CF,
                    level: *from as u32,
                    key: pointer.clone(),
                });
            }
            Task::Merge {
                from,
                to,
                inputs,
                dest_inputs,
                dest_run,
                pointer,
                ..
            } => {
                assert!(!inputs.is_empty());
                if *from > 0 {
                    self.check_closure(*from, inputs);
                } else {
                    assert_eq!(
                        inputs.len(),
                        self.v.levels[0].num_files(),
                        "L0 merges whole"
                    );
                }
                if from != to {
                    self.check_dest(*to, inputs, *dest_run, dest_inputs);
                }
                let all: Vec<&Arc<FileMeta>> = inputs.iter().chain(dest_inputs).collect();
                let lo = all
                    .iter()
                    .map(|f| f.smallest_user())
                    .min()
                    .unwrap()
                    .to_vec();
                let hi = all.iter().map(|f| f.largest_user()).max().unwrap().to_vec();
                let min_seq = all.iter().map(|f| f.desc.min_seq).min().unwrap();
                let max_seq = all.iter().map(|f| f.desc.max_seq).max().unwrap();
                let size = all.iter().map(|f| f.size()).sum();
                let file_no = self.next_file;
                self.next_file = file_no.next();
                let segs = all
                    .iter()
                    .flat_map(|f| self.segments[&f.file_no()].clone())
                    .collect();
                self.segments.insert(file_no, segs);
                let out = FileDesc {
                    file_no,
                    tier: 0,
                    size,
                    smallest: make_internal_key(&lo, max_seq, ValueKind::Value),
                    largest: make_internal_key(&hi, min_seq, ValueKind::Value),
                    num_entries: all.iter().map(|f| f.desc.num_entries).sum(),
                    min_seq,
                    max_seq,
                    vlog_refs: Vec::new(),
                    range_dels: 0,
                };
                for f in inputs {
                    edit.deleted.push(DeletedFile {
                        cf: CF,
                        level: *from as u32,
                        file_no: f.file_no(),
                    });
                }
                for f in dest_inputs {
                    edit.deleted.push(DeletedFile {
                        cf: CF,
                        level: *to as u32,
                        file_no: f.file_no(),
                    });
                }
                let run = dest_run.unwrap_or_else(|| self.new_run());
                edit.added.push(AddedFile {
                    cf: CF,
                    level: *to as u32,
                    run,
                    file: out,
                });
                if *from > 0 {
                    edit.compact_pointers.push(CompactPointer {
                        cf: CF,
                        level: *from as u32,
                        key: pointer.clone(),
                    });
                }
            }
        }
        edit
    }

    /// No older data above newer data: where two files hold writes to the same keys, the
    /// file read first (a higher level, or a newer run of the same level) holds the newer
    /// writes.
    fn check_order(&self) {
        let files: Vec<(usize, usize, FileNo)> =
            self.v
                .levels
                .iter()
                .enumerate()
                .flat_map(|(l, level)| {
                    level.runs.iter().enumerate().flat_map(move |(r, run)| {
                        run.files.iter().map(move |f| (l, r, f.file_no()))
                    })
                })
                .collect();
        for &(l1, r1, a) in &files {
            for &(l2, r2, b) in &files {
                if (l1, r1) >= (l2, r2) {
                    continue;
                }
                for &(alo, ahi, aseq) in &self.segments[&a] {
                    for &(blo, bhi, bseq) in &self.segments[&b] {
                        assert!(
                            alo > bhi || blo > ahi || aseq > bseq,
                            "keys {alo}..={ahi} written at seq {aseq} in file {a} (level {l1} \
                             run #{r1}) sit above keys {blo}..={bhi} written later at seq \
                             {bseq} in file {b} (level {l2} run #{r2})"
                        );
                    }
                }
            }
        }
    }
}

fn is_seal(t: &Task, level: usize) -> bool {
    matches!(t, Task::Seal { level: l, .. } if *l == level)
}

fn units_from(tasks: &[Task], from_level: usize) -> usize {
    tasks
        .iter()
        .filter(|t| {
            matches!(t, Task::Merge { from, .. } | Task::Move { from, .. } if *from == from_level)
        })
        .count()
}

/// Fills a new run of level 1 with files of `size` bytes at key slots shifted by `shift`
/// (so runs overlap each other), settling after each file. Returns the tasks.
fn fill(s: &mut Sim, files: u32, size: u64, shift: u32) -> Vec<Task> {
    let mut tasks = Vec::new();
    let base = match s.v.levels[1].active() {
        Some(r) => r.files.len() as u32,
        None => 0,
    };
    for i in base..base + files {
        let lo = i * 100 + shift;
        s.arrive(1, lo, lo + 79, size);
        tasks.extend(s.settle());
    }
    tasks
}

fn k_state(k: u32) -> PolicyState {
    PolicyState {
        k,
        pending_k: None,
        draining: false,
    }
}

/// RusKey Figure 4: a level of capacity 600 with K = 6 seals runs at 100; a flexible change
/// to K = 10 gives the incoming run capacity 60 and leaves sealed runs as they are; K = 3
/// gives the active run capacity 200; an active run already past the new capacity is sealed
/// at once; when the level is full it drains into the next level.
#[test]
fn figure4_flexible_transitions() {
    let mut s = Sim::new(&[4, 6, 1]);
    assert_eq!(s.shape.run_capacity(1, 6), Some(100));
    for r in 0..3 {
        let t = fill(&mut s, 1, 50, r * 10);
        assert!(t.is_empty(), "half a run: nothing to do, got {t:?}");
        let t = fill(&mut s, 1, 50, r * 10);
        assert_eq!(t.len(), 1, "{t:?}");
        assert!(is_seal(&t[0], 1), "a run of 100 is sealed: {t:?}");
    }
    assert_eq!(s.runs(1), vec![(100, true); 3]);
    assert!(fill(&mut s, 1, 50, 30).is_empty());
    assert_eq!(
        s.runs(1),
        vec![(50, false), (100, true), (100, true), (100, true)]
    );

    // K = 10: the active run (50) is below the new capacity 60 and stays active.
    s.set_policy(1, k_state(10));
    assert!(s.settle().is_empty());
    assert_eq!(s.shape.run_capacity(1, 10), Some(60));
    let t = fill(&mut s, 1, 10, 30);
    assert!(t.len() == 1 && is_seal(&t[0], 1), "sealed at 60: {t:?}");
    let t = fill(&mut s, 1, 60, 40);
    assert!(t.len() == 1 && is_seal(&t[0], 1), "sealed at 60: {t:?}");
    assert_eq!(
        s.runs(1),
        vec![
            (60, true),
            (60, true),
            (100, true),
            (100, true),
            (100, true)
        ],
        "sealed runs untouched by the transition"
    );

    // K = 3: the active run grows to 200.
    s.set_policy(1, k_state(3));
    assert!(s.settle().is_empty());
    for _ in 0..3 {
        assert!(fill(&mut s, 1, 50, 50).is_empty(), "below 200: no seal");
    }
    assert_eq!(s.runs(1)[0], (150, false));
    assert_eq!(s.level_bytes(1), 570);

    // Back to K = 6 (capacity 100): the active run of 150 is already larger: sealed at once.
    s.set_policy(1, k_state(6));
    let t = s.settle();
    assert!(t.len() == 1 && is_seal(&t[0], 1), "{t:?}");
    assert_eq!(s.runs(1)[0], (150, true));
    assert_eq!(
        s.runs(1)[1..],
        [
            (60, true),
            (60, true),
            (100, true),
            (100, true),
            (100, true)
        ]
    );

    // The level reaches its capacity: it drains entirely into level 2, unit by unit.
    let t = fill(&mut s, 1, 30, 60);
    assert!(
        matches!(&t[0], Task::Policy { level: 1, state } if state.draining && state.k == 6),
        "{t:?}"
    );
    assert!(units_from(&t, 1) >= 1);
    assert!(
        matches!(t.last().unwrap(), Task::Policy { level: 1, state } if !state.draining && state.k == 6),
        "{t:?}"
    );
    assert!(s.v.levels[1].is_empty());
    assert_eq!(s.level_bytes(2), 600);
    assert_eq!(s.policy(1), k_state(6));
}

/// Going from K = 3 to K = 10 with an active run of 150: sealed at once (capacity 60).
#[test]
fn shrinking_run_capacity_seals_a_larger_active_run() {
    let mut s = Sim::new(&[4, 3, 1]);
    for _ in 0..3 {
        assert!(fill(&mut s, 1, 50, 0).is_empty());
    }
    assert_eq!(s.runs(1), vec![(150, false)]);
    s.set_policy(1, k_state(10));
    let t = s.settle();
    assert!(t.len() == 1 && is_seal(&t[0], 1), "{t:?}");
    assert_eq!(s.runs(1), vec![(150, true)]);
    // New data starts a new run sealed at 60.
    let t = fill(&mut s, 1, 60, 5);
    assert!(t.len() == 1 && is_seal(&t[0], 1), "{t:?}");
    assert_eq!(s.runs(1), vec![(60, true), (150, true)]);
}

/// Greedy: the level drains entirely into the next one, then the new K applies.
#[test]
fn greedy_transition_drains_then_applies_k() {
    let mut s = Sim::new(&[4, 6, 1]);
    for r in 0..3 {
        fill(&mut s, 2, 50, r * 10);
    }
    fill(&mut s, 1, 50, 30);
    assert_eq!(s.level_bytes(1), 350);
    // What Db::set_policy(.., Greedy) records for a non-empty level.
    s.set_policy(
        1,
        PolicyState {
            k: 3,
            pending_k: None,
            draining: true,
        },
    );
    let t = s.settle();
    assert!(units_from(&t, 1) >= 1, "{t:?}");
    assert!(s.v.levels[1].is_empty(), "greedy empties the level");
    assert_eq!(s.level_bytes(2), 350);
    assert!(
        matches!(t.last().unwrap(), Task::Policy { level: 1, state } if *state == k_state(3)),
        "{t:?}"
    );
    assert_eq!(s.policy(1), k_state(3));
    // Now runs are sealed at 200.
    for _ in 0..3 {
        assert!(fill(&mut s, 1, 50, 0).is_empty());
    }
    let t = fill(&mut s, 1, 50, 0);
    assert!(t.len() == 1 && is_seal(&t[0], 1), "{t:?}");
    assert_eq!(s.runs(1), vec![(200, true)]);
}

/// Lazy: the old K stays in force until the level is empty; then the requested K applies.
#[test]
fn lazy_transition_waits_for_an_empty_level() {
    let mut s = Sim::new(&[4, 6, 1]);
    for r in 0..3 {
        fill(&mut s, 2, 50, r * 10);
    }
    s.set_policy(
        1,
        PolicyState {
            k: 6,
            pending_k: Some(3),
            draining: false,
        },
    );
    assert!(s.settle().is_empty(), "nothing happens at once");
    // Still sealed at 100 (K = 6).
    assert!(fill(&mut s, 1, 50, 40).is_empty());
    let t = fill(&mut s, 1, 50, 40);
    assert!(t.len() == 1 && is_seal(&t[0], 1), "{t:?}");
    assert_eq!(s.policy(1).k, 6);
    assert_eq!(s.policy(1).pending_k, Some(3));
    // Fill up to 600: the level drains, and once it is empty K becomes 3.
    let mut t = Vec::new();
    for r in 0..2 {
        t.extend(fill(&mut s, 2, 50, 50 + r));
    }
    assert!(s.v.levels[1].is_empty(), "{t:?}");
    assert_eq!(s.policy(1), k_state(3), "{t:?}");
    assert!(
        matches!(t.last().unwrap(), Task::Policy { level: 1, state } if *state == k_state(3)),
        "{t:?}"
    );
    for _ in 0..3 {
        assert!(fill(&mut s, 1, 50, 0).is_empty());
    }
    let t = fill(&mut s, 1, 50, 0);
    assert!(
        t.len() == 1 && is_seal(&t[0], 1),
        "sealed at 200 now: {t:?}"
    );
}

/// A level with K > 1 below its capacity is left alone, however many runs it holds (up to
/// the read-amplification guard); at capacity it drains completely, not just below capacity.
#[test]
fn full_tiered_level_drains_completely() {
    let mut s = Sim::new(&[4, 6, 1]);
    for r in 0..5 {
        let t = fill(&mut s, 2, 50, r * 7);
        assert!(
            units_from(&t, 1) == 0,
            "below capacity: no merge down: {t:?}"
        );
    }
    assert_eq!(s.level_bytes(1), 500);
    assert_eq!(s.runs(1).len(), 5);
    let t = fill(&mut s, 2, 50, 99);
    assert!(s.v.levels[1].is_empty(), "the whole level moved: {t:?}");
    assert_eq!(s.level_bytes(2), 600);
    assert!(!s.policy(1).draining);
}

/// Leveled (K = 1): past capacity, one file-closure unit at a time moves down, and only as
/// many as bring the level back under capacity.
#[test]
fn leveled_level_moves_one_unit_at_a_time() {
    let mut s = Sim::new(&[4, 1, 1]);
    for i in 0..8u32 {
        s.arrive(1, i * 100, i * 100 + 50, 100);
    }
    assert_eq!(s.runs(1), vec![(800, false)]);
    let mut sizes = vec![s.level_bytes(1)];
    while let Some(t) = s.step() {
        match &t {
            Task::Move { from: 1, to: 2, .. } => {}
            Task::Merge {
                from: 1,
                to: 2,
                inputs,
                ..
            } => assert_eq!(inputs.len(), 1, "one file per unit"),
            t => panic!("unexpected task {t:?}"),
        }
        sizes.push(s.level_bytes(1));
    }
    // Capacity 600: a level at exactly its capacity still counts as full.
    assert_eq!(sizes, vec![800, 700, 600, 500]);
    assert_eq!(
        s.runs(1),
        vec![(500, false)],
        "a leveled run is never sealed"
    );
    assert_eq!(s.level_bytes(2), 300);
    // Round robin: the next units continue after the last key moved.
    s.arrive(1, 900, 950, 200);
    let t = s.step().unwrap();
    let moved = match &t {
        Task::Move { file, .. } => file.smallest_user().to_vec(),
        Task::Merge { inputs, .. } => inputs[0].smallest_user().to_vec(),
        t => panic!("unexpected task {t:?}"),
    };
    assert_eq!(moved, ukey(300), "round robin after key 000250");
}

/// A unit is closed over all runs of its level: every file of every run that touches the
/// unit's key range joins it (leftover sealed runs after K becomes 1).
#[test]
fn units_are_closed_over_runs() {
    let mut s = Sim::new(&[4, 3, 1]);
    // Run A: [0,99] [200,299] [400,499]; sealed.
    let a0 = s.arrive(1, 0, 99, 70);
    s.arrive(1, 200, 299, 70);
    s.arrive(1, 400, 499, 70);
    let t = s.settle();
    assert!(t.len() == 1 && is_seal(&t[0], 1), "{t:?}");
    // Run B: [50,120] [300,350]; sealed by hand.
    let b0 = s.arrive(1, 50, 120, 80);
    s.arrive(1, 300, 350, 80);
    let b = s.v.levels[1].active().unwrap().id;
    s.apply(&VersionEdit {
        sealed: vec![SealedRun {
            cf: CF,
            level: 1,
            run: b,
        }],
        ..Default::default()
    });
    // Run C, active: [110, 115] and [600, 650].
    let c0 = s.arrive(1, 110, 115, 20);
    s.arrive(1, 600, 650, 20);
    assert_eq!(s.runs(1), vec![(40, false), (160, true), (210, true)]);
    // K = 1 (leveled) with leftover sealed runs; past capacity, units go down.
    s.set_policy(1, k_state(1));
    assert!(s.settle().is_empty());
    s.arrive(1, 700, 799, 200);
    let t = s.step().unwrap();
    let Task::Merge {
        from: 1, inputs, ..
    } = &t
    else {
        panic!("expected a merge from level 1, got {t:?}");
    };
    let mut got: Vec<FileNo> = inputs.iter().map(|f| f.file_no()).collect();
    got.sort_unstable();
    assert_eq!(
        got,
        vec![a0, b0, c0],
        "the unit seeded at [0,99] of the oldest run takes [50,120] and [110,115]"
    );
    // The rest settles with every unit closed (checked in execute) and order kept.
    s.settle();
    assert!(s.level_bytes(1) < 600);
}

/// Random arrivals and random K changes (all three kinds, as Db::set_policy records them)
/// keep units closed and versions ordered.
#[test]
fn random_policies_keep_units_closed() {
    for seed in 0..30u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut s = Sim::new(&[2, 3, 1]);
        for _ in 0..300 {
            if rng.random_ratio(1, 15) {
                let level = rng.random_range(1..3);
                let k = rng.random_range(1..=10u32);
                let p = s.policy(level);
                let empty = s.v.levels[level].is_empty();
                let state = match rng.random_range(0..3) {
                    0 => PolicyState {
                        k,
                        pending_k: None,
                        draining: level < 2 && !empty,
                    },
                    1 if !empty => PolicyState {
                        pending_k: Some(k),
                        ..p
                    },
                    _ => PolicyState {
                        k,
                        pending_k: None,
                        ..p
                    },
                };
                s.set_policy(level, state);
            } else {
                // New data arrives in level 0 as one run (a flush).
                let lo = rng.random_range(0..1000);
                let hi = lo + rng.random_range(0..200);
                let size = rng.random_range(10..80);
                let d = s.desc(lo, hi, size);
                let run = s.new_run();
                s.apply(&VersionEdit {
                    added: vec![AddedFile {
                        cf: CF,
                        level: 0,
                        run,
                        file: d,
                    }],
                    sealed: vec![SealedRun {
                        cf: CF,
                        level: 0,
                        run,
                    }],
                    ..Default::default()
                });
            }
            s.settle();
            for l in 1..2 {
                let p = s.policy(l);
                if !p.draining {
                    assert!(
                        s.level_bytes(l) < s.shape.capacity(l),
                        "seed {seed}: level {l} at rest is over capacity"
                    );
                }
                if let (Some(a), Some(cap)) = (s.v.levels[l].active(), s.shape.run_capacity(l, p.k))
                {
                    assert!(
                        a.size() < cap,
                        "seed {seed}: active run past its capacity at rest"
                    );
                }
            }
        }
    }
}

/// Jobs side by side (`max_background_compactions`): a job is picked with the levels of
/// the running ones held and its edit is computed then; it is applied later, after other
/// jobs and flushes. Running jobs never share a level, and no older data ever sits above
/// newer data.
#[test]
fn parallel_jobs_hold_disjoint_levels_and_keep_order() {
    let mut most = 0;
    for seed in 0..30u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut s = Sim::new(&[2, 1, 2]);
        s.shape = LevelShape {
            level1_bytes: 300,
            size_ratio: 3,
            num_levels: 5,
            held: None,
        };
        s.v = CfVersion::empty(|l| [2, 1, 2, 1, 1][l], 5);
        let mut running: Vec<((usize, usize), VersionEdit)> = Vec::new();
        for _ in 0..400 {
            match rng.random_range(0..3) {
                0 => {
                    let lo = rng.random_range(0..1000);
                    let hi = lo + rng.random_range(0..200);
                    let d = s.desc(lo, hi, rng.random_range(10..80));
                    let run = s.new_run();
                    s.apply(&VersionEdit {
                        added: vec![AddedFile {
                            cf: CF,
                            level: 0,
                            run,
                            file: d,
                        }],
                        sealed: vec![SealedRun {
                            cf: CF,
                            level: 0,
                            run,
                        }],
                        ..Default::default()
                    });
                }
                1 => {
                    let busy = |l: usize| running.iter().any(|((a, b), _)| (*a..=*b).contains(&l));
                    if let Some(t) = pick_free(&s.v, &s.shape, &|_, _| true, &busy) {
                        let (a, b) = t.levels();
                        assert!(
                            !(a..=b).any(busy),
                            "seed {seed}: {t:?} picked on a held level"
                        );
                        let edit = s.edit_for(&t);
                        running.push(((a, b), edit));
                        most = most.max(running.len());
                    }
                }
                _ if !running.is_empty() => {
                    let (_, edit) = running.swap_remove(rng.random_range(0..running.len()));
                    s.apply(&edit);
                    s.check_order();
                }
                _ => {}
            }
        }
        for (_, edit) in running.drain(..) {
            s.apply(&edit);
            s.check_order();
        }
        s.settle();
    }
    assert!(most >= 3, "never more than {most} jobs at once");
}

// ---------------------------------------------------------------------------------------
// On disk.

fn check_data(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan::<&[u8], _>(..)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(
        got == want,
        "{what}: scan differs ({} entries, want {})",
        got.len(),
        want.len()
    );
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{what}");
    }
}

/// At rest, every non-last level is under capacity and not draining, and its active run
/// (if K > 1) is under C / K.
fn check_shape(db: &Db, what: &str) {
    let info = db.level_info(&db.default_cf()).unwrap();
    let last = info.len() - 1;
    for l in &info[1..last] {
        let bytes: u64 = l.runs.iter().map(|r| r.bytes).sum();
        assert!(
            !l.draining,
            "{what}: level {} still draining: {l:?}",
            l.level
        );
        assert!(
            bytes < l.capacity,
            "{what}: level {} over capacity: {l:?}",
            l.level
        );
        if l.k > 1 {
            if let Some(a) = l.runs.first().filter(|r| !r.sealed) {
                assert!(
                    a.bytes < l.capacity / l.k as u64,
                    "{what}: active run too big: {l:?}"
                );
            }
        } else {
            assert!(
                l.runs.len() <= 1 || l.runs[1..].iter().all(|r| r.sealed),
                "{what}: {l:?}"
            );
        }
        if l.runs.is_empty() {
            assert_eq!(
                l.pending_k, None,
                "{what}: lazy K not applied to an empty level"
            );
        }
    }
}

#[test]
fn runtime_transitions_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 16 << 10,
        block_size: 1024,
        block_cache_bytes: 256 << 10,
        size_ratio: 4,
        level1_bytes: 64 << 10,
        num_levels: 4,
        l0_compaction_trigger: 2,
        level_runs: vec![3, 1],
        target_file_size: 8 << 10,
        background_work: false,
        ..Options::default()
    }
    .with_compression(Compression::None);
    let db = Db::open(dir.path(), opts).unwrap();
    let cf = db.default_cf();
    let wo = WriteOptions::default();
    let mut rng = SmallRng::seed_from_u64(7);
    let mut model = BTreeMap::new();
    let mut write = |db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, n: usize| {
        for _ in 0..n {
            let k = dkey(rng.random_range(0..3000));
            let v = vec![b'a' + rng.random_range(0..26u8); rng.random_range(50..250)];
            db.put(&wo, &k, &v).unwrap();
            model.insert(k, v);
        }
        db.run_background_work().unwrap();
    };
    let level1 = |db: &Db| db.level_info(&db.default_cf()).unwrap()[1].clone();

    // Grow level 1 (K = 3) until it holds at least two runs.
    for _ in 0..200 {
        write(&db, &mut model, 100);
        if level1(&db).runs.len() >= 2 && level1(&db).runs[0].bytes > 0 {
            break;
        }
    }
    let l1 = level1(&db);
    assert!(
        l1.runs.len() >= 2,
        "level 1 should be tiered by now: {l1:?}"
    );
    assert_eq!(l1.k, 3);
    check_shape(&db, "K=3");
    check_data(&db, &model, "K=3");

    // Flexible to K = 4 (run capacity 16 KiB): sealed runs untouched; an active run
    // already at or past 16 KiB is sealed by set_policy itself.
    let before = level1(&db);
    db.set_policy(&cf, 1, 4, Transition::Flexible).unwrap();
    let after = level1(&db);
    assert_eq!(after.k, 4);
    assert_eq!(after.runs.len(), before.runs.len());
    for (b, a) in before.runs.iter().zip(&after.runs) {
        assert_eq!((a.id, a.bytes), (b.id, b.bytes));
        if b.sealed {
            assert!(a.sealed);
        } else {
            assert_eq!(
                a.sealed,
                b.bytes >= (64 << 10) / 4,
                "{before:?} -> {after:?}"
            );
        }
    }
    db.run_background_work().unwrap();
    check_shape(&db, "K=4");
    check_data(&db, &model, "K=4");
    write(&db, &mut model, 400);
    check_shape(&db, "K=4 + writes");
    check_data(&db, &model, "K=4 + writes");

    // Flexible to K = 2: larger run capacity; sealed runs stay.
    let before = level1(&db);
    db.set_policy(&cf, 1, 2, Transition::Flexible).unwrap();
    let after = level1(&db);
    assert_eq!(after.k, 2);
    assert_eq!(
        after.runs.iter().filter(|r| r.sealed).count(),
        before.runs.iter().filter(|r| r.sealed).count()
    );
    write(&db, &mut model, 300);
    check_shape(&db, "K=2");
    check_data(&db, &model, "K=2");

    // Make sure level 1 is not empty, then Greedy to K = 3: drains now.
    for _ in 0..50 {
        if !level1(&db).runs.is_empty() {
            break;
        }
        write(&db, &mut model, 50);
    }
    assert!(!level1(&db).runs.is_empty());
    db.set_policy(&cf, 1, 3, Transition::Greedy).unwrap();
    let l1 = level1(&db);
    assert!(l1.draining && l1.k == 3, "{l1:?}");
    db.run_background_work().unwrap();
    let l1 = level1(&db);
    assert!(l1.runs.is_empty() && !l1.draining && l1.k == 3, "{l1:?}");
    check_shape(&db, "greedy K=3");
    check_data(&db, &model, "greedy K=3");

    // Lazy to K = 1 on a non-empty level: pending until the level empties.
    for _ in 0..50 {
        if !level1(&db).runs.is_empty() {
            break;
        }
        write(&db, &mut model, 50);
    }
    assert!(!level1(&db).runs.is_empty());
    db.set_policy(&cf, 1, 1, Transition::Lazy).unwrap();
    let l1 = level1(&db);
    assert_eq!((l1.k, l1.pending_k), (3, Some(1)), "{l1:?}");
    write(&db, &mut model, 100);
    let l1 = level1(&db);
    if !l1.runs.is_empty() {
        assert_eq!((l1.k, l1.pending_k), (3, Some(1)), "{l1:?}");
    }
    db.compact_range(None, None).unwrap();
    db.run_background_work().unwrap();
    let l1 = level1(&db);
    assert_eq!((l1.k, l1.pending_k), (1, None), "{l1:?}");
    check_shape(&db, "lazy K=1");
    check_data(&db, &model, "lazy K=1");
    write(&db, &mut model, 600);
    let l1 = level1(&db);
    assert!(l1.runs.len() <= 1, "leveled: one run: {l1:?}");
    check_shape(&db, "K=1 + writes");
    check_data(&db, &model, "K=1 + writes");

    // Reads at a snapshot survive all of it; the policy state survives reopen.
    let snap = db.snapshot();
    let frozen = model.clone();
    db.set_policy(&cf, 1, 4, Transition::Greedy).unwrap();
    write(&db, &mut model, 300);
    let ro = ReadOptions {
        snapshot: Some(snap),
        ..Default::default()
    };
    let at_snap: BTreeMap<Vec<u8>, Vec<u8>> = db
        .scan_opt::<&[u8], _>(&ro, &cf, .., false)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(at_snap == frozen, "snapshot view changed");
    drop(ro);
    let info = db.level_info(&cf).unwrap();
    let opts = db.options().clone();
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    let info2 = db.level_info(&db.default_cf()).unwrap();
    for (a, b) in info.iter().zip(&info2) {
        assert_eq!(
            (a.k, a.pending_k),
            (b.k, b.pending_k),
            "policy survives reopen"
        );
    }
    check_data(&db, &model, "reopen");
}

/// The deepest level holding data has nothing below it: a greedy change there applies at
/// once instead of moving every entry one level down, and a lazy one applies at once
/// instead of waiting for a level that never empties. With data below, both wait.
#[test]
fn transitions_at_the_bottom_of_the_data_apply_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 16 << 10,
        block_size: 1024,
        size_ratio: 4,
        level1_bytes: 64 << 10,
        num_levels: 5,
        l0_compaction_trigger: 2,
        target_file_size: 8 << 10,
        background_work: false,
        ..Options::default()
    }
    .with_compression(Compression::None);
    let db = Db::open(dir.path(), opts).unwrap();
    let cf = db.default_cf();
    let wo = WriteOptions::default();
    let mut model = BTreeMap::new();
    let mut next = 0u32;
    let mut write = |db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, n: u32| {
        for _ in 0..n {
            let k = dkey(next % 2000);
            next += 1;
            db.put(&wo, &k, &[b'v'; 100]).unwrap();
            model.insert(k, vec![b'v'; 100]);
        }
        db.flush().unwrap();
        db.run_background_work().unwrap();
    };
    let info = |db: &Db| db.level_info(&db.default_cf()).unwrap();
    // Data in level 1 only (about 40 KiB, capacity 64 KiB).
    write(&db, &mut model, 300);
    let l = info(&db);
    assert!(!l[1].runs.is_empty(), "{l:?}");
    assert!(l[2..].iter().all(|x| x.runs.is_empty()), "{l:?}");
    db.set_policy(&cf, 1, 4, Transition::Greedy).unwrap();
    let l1 = &info(&db)[1];
    assert!(
        !l1.draining && l1.k == 4,
        "nothing below to drain into: {l1:?}"
    );
    db.run_background_work().unwrap();
    assert!(!info(&db)[1].runs.is_empty(), "level 1 was not moved down");
    assert!(info(&db)[2].runs.is_empty());
    db.set_policy(&cf, 1, 2, Transition::Lazy).unwrap();
    let l1 = &info(&db)[1];
    assert_eq!((l1.k, l1.pending_k), (2, None), "{l1:?}");
    check_data(&db, &model, "bottom level 1");

    // Grow until level 2 holds data and level 1 is not empty: then both wait.
    for _ in 0..200 {
        let l = info(&db);
        if !l[2].runs.is_empty() && !l[1].runs.is_empty() {
            break;
        }
        write(&db, &mut model, 100);
    }
    let l = info(&db);
    assert!(!l[2].runs.is_empty() && !l[1].runs.is_empty(), "{l:?}");
    db.set_policy(&cf, 1, 3, Transition::Lazy).unwrap();
    let l1 = &info(&db)[1];
    assert_eq!((l1.k, l1.pending_k), (2, Some(3)), "{l1:?}");
    db.set_policy(&cf, 1, 3, Transition::Greedy).unwrap();
    let l1 = &info(&db)[1];
    assert!(l1.draining && l1.k == 3, "{l1:?}");
    db.run_background_work().unwrap();
    let l = info(&db);
    assert!(l[1].runs.is_empty() && !l[1].draining, "{l:?}");
    // Level 2 is now the bottom of the data: a greedy change there applies at once.
    assert!(l[3..].iter().all(|x| x.runs.is_empty()), "{l:?}");
    db.set_policy(&cf, 2, 4, Transition::Greedy).unwrap();
    let l2 = &info(&db)[2];
    assert!(!l2.draining && l2.k == 4, "{l2:?}");
    check_data(&db, &model, "after the drains");
}

/// Regression: a merge rewrites the destination files whole, so whether it may drop
/// tombstones depends on what lies below the union of the unit's and the destination files'
/// key ranges, not on the unit's range alone (deleted keys came back when a level-0 merge
/// dropped the tombstones of a wide level-1 file above older data in a deeper level).
#[test]
fn bottommost_covers_destination_files() {
    // Level 0 into level 1.
    let mut s = Sim::new(&[1, 3, 1]);
    s.arrive(2, 0, 100, 50);
    s.arrive(1, 0, 900, 50);
    let d = s.desc(500, 600, 10);
    let run = s.new_run();
    s.apply(&VersionEdit {
        added: vec![AddedFile {
            cf: CF,
            level: 0,
            run,
            file: d,
        }],
        sealed: vec![SealedRun {
            cf: CF,
            level: 0,
            run,
        }],
        ..Default::default()
    });
    let t = pick(&s.v, &s.shape, &|_, _| true).unwrap();
    let Task::Merge {
        from: 0,
        dest_inputs,
        bottommost,
        ..
    } = &t
    else {
        panic!("expected a level-0 merge, got {t:?}");
    };
    assert_eq!(dest_inputs.len(), 1);
    assert!(
        !bottommost,
        "level 2 holds keys 0..=100 of the level-1 file"
    );

    // A unit from level 1 into level 2's active run, above a sealed run of level 2.
    let mut s = Sim::new(&[4, 1, 2]);
    s.arrive(2, 0, 100, 50);
    let sealed = s.v.levels[2].active().unwrap().id;
    s.apply(&VersionEdit {
        sealed: vec![SealedRun {
            cf: CF,
            level: 2,
            run: sealed,
        }],
        ..Default::default()
    });
    let d = s.desc(0, 900, 50);
    let run = s.new_run();
    s.apply(&VersionEdit {
        added: vec![AddedFile {
            cf: CF,
            level: 2,
            run,
            file: d,
        }],
        ..Default::default()
    });
    s.arrive(1, 400, 450, 700);
    let t = pick(&s.v, &s.shape, &|_, _| true).unwrap();
    let Task::Merge {
        from: 1,
        to: 2,
        dest_inputs,
        bottommost,
        ..
    } = &t
    else {
        panic!("expected a merge from level 1, got {t:?}");
    };
    assert_eq!(dest_inputs.len(), 1);
    assert!(!bottommost, "the sealed run of level 2 holds keys 0..=100");
}

/// The last level has no next level to drain into: a greedy K change there applies at once
/// (runs beyond the new K merge within the level) instead of leaving the level marked as
/// draining forever.
#[test]
fn greedy_on_the_last_level_applies_k() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 16 << 10,
        size_ratio: 4,
        level1_bytes: 64 << 10,
        num_levels: 3,
        target_file_size: 8 << 10,
        background_work: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let cf = db.default_cf();
    let wo = WriteOptions::default();
    for i in 0..2000u32 {
        db.put(&wo, &dkey(i), &[b'x'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let last = db.level_info(&cf).unwrap()[2].clone();
    assert!(!last.runs.is_empty(), "{last:?}");
    db.set_policy(&cf, 2, 3, Transition::Greedy).unwrap();
    db.run_background_work().unwrap();
    let last = db.level_info(&cf).unwrap()[2].clone();
    assert_eq!(last.k, 3);
    assert!(
        !last.draining,
        "the last level stays marked draining: {last:?}"
    );
    assert_eq!(db.scan::<&[u8], _>(..).unwrap().count(), 2000);
}

/// On disk: a flexible change to a K whose run capacity is below the active run's size seals
/// the active run within `set_policy`; sealed runs are never touched by later changes.
#[test]
fn flexible_change_seals_a_larger_active_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 16 << 10,
        size_ratio: 4,
        level1_bytes: 64 << 10,
        num_levels: 4,
        l0_compaction_trigger: 1,
        level_runs: vec![1],
        target_file_size: 8 << 10,
        background_work: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let cf = db.default_cf();
    let wo = WriteOptions::default();
    let level1 = |db: &Db| db.level_info(&db.default_cf()).unwrap()[1].clone();
    let mut i = 0u32;
    // Leveled level 1 grows one run past 20 KiB (below its 64 KiB capacity).
    while level1(&db).runs.first().is_none_or(|r| r.bytes < 20 << 10) {
        for _ in 0..50 {
            db.put(&wo, &dkey(i % 5000), &[b'v'; 100]).unwrap();
            i += 1;
        }
        db.flush().unwrap();
        db.run_background_work().unwrap();
        assert!(i < 100_000);
    }
    let before = level1(&db);
    assert_eq!(before.runs.len(), 1);
    assert!(!before.runs[0].sealed);
    db.set_policy(&cf, 1, 4, Transition::Flexible).unwrap();
    let after = level1(&db);
    assert_eq!(after.k, 4);
    assert_eq!(after.runs.len(), 1);
    assert!(
        after.runs[0].sealed,
        "run of {} bytes > 16 KiB",
        after.runs[0].bytes
    );
    let sealed = after.runs[0].clone();
    // New data goes to a new run; the sealed one stays as it is through another change.
    db.set_policy(&cf, 1, 2, Transition::Flexible).unwrap();
    for _ in 0..50 {
        db.put(&wo, &dkey(i % 5000), &[b'w'; 100]).unwrap();
        i += 1;
    }
    db.flush().unwrap();
    db.run_background_work().unwrap();
    let now = level1(&db);
    if now.runs.iter().map(|r| r.bytes).sum::<u64>() < 64 << 10 {
        assert!(now.runs.contains(&sealed), "{sealed:?} changed: {now:?}");
        assert!(now.runs.len() >= 2, "{now:?}");
    }
}

/// RusKey's tree shape (section 7): every flush merged at once (level-0 trigger 1), level
/// 1 holding T memtables. There K_1 decides how much each merge into level 1 rewrites:
/// K_1 = 1, 2 and 5 must give different compaction work (in the shape the benches used
/// before, level 1 filled and sealed at every merge, so every K_1 >= 2 behaved alike).
#[test]
fn in_ruskeys_shape_k1_changes_the_merge_work() {
    let work = |k1: usize| {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            write_buffer_size: 16 << 10,
            level1_bytes: 160 << 10,
            size_ratio: 10,
            target_file_size: 16 << 10,
            l0_compaction_trigger: 1,
            num_levels: 4,
            level_runs: vec![k1, 1, 1],
            background_work: false,
            ..Options::default()
        }
        .with_compression(Compression::None);
        let db = Db::open(dir.path(), opts).unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        for i in 0..1500u32 {
            let k = rng.random_range(0..100_000u32);
            db.put(&WriteOptions::default(), &ukey(k), &[i as u8; 100])
                .unwrap();
            if i % 100 == 99 {
                db.run_background_work().unwrap();
            }
        }
        db.flush().unwrap();
        db.run_background_work().unwrap();
        let s = db.stats();
        (s.compactions, s.compaction_bytes_written)
    };
    let (c1, b1) = work(1);
    let (c2, b2) = work(2);
    let (c5, b5) = work(5);
    assert!(
        b1 > b2 && b2 > b5,
        "compaction bytes K_1 = 1, 2, 5: {b1}, {b2}, {b5} (compactions {c1}, {c2}, {c5})"
    );
}
