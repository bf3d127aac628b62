//! Leaper's inference over the collector: hand-made models (one split each, so the answer
//! is known) read the right features, aggregate collector ranges into model ranges, use
//! precursors, memoise per slot, and a model that does not fit the collector is refused.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn::access::{Access, AccessOptions, ManualClock, RangeCollector};
use cairn::learned::leaper_model::{LeaperMeta, LeaperModel, FEATURE_NAMES};
use cairn::policy::HotRangePredictor;

/// A span of every key number: the whole key space.
const ALL: (u64, u64) = (0, u64::MAX);

/// A binary model of one stump: hot (p ~ 0.99) iff feature `f` > 0.5.
fn stump_on(f: usize) -> String {
    let names: Vec<String> = FEATURE_NAMES.iter().map(|s| s.to_string()).collect();
    format!(
        "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n\
         max_feature_idx=17\nobjective=binary sigmoid:1\nfeature_names={}\n\
         feature_infos={}\ntree_sizes=100\n\nTree=0\nnum_leaves=2\nnum_cat=0\n\
         split_feature={f}\nsplit_gain=1\nthreshold=0.5\ndecision_type=2\nleft_child=-1\n\
         right_child=-2\nleaf_value=-5 5\nleaf_weight=1 1\nleaf_count=1 1\n\
         internal_value=0\ninternal_weight=0\ninternal_count=2\nis_linear=0\nshrinkage=1\n\n\
         end of trees\n\nparameters:\nend of parameters\n\npandas_categorical:null\n",
        names.join(" "),
        vec!["none"; 18].join(" ")
    )
}

fn bundle(range_width: u64, models: &[String], precursors: BTreeMap<u64, Vec<u64>>) -> LeaperModel {
    let meta = LeaperMeta {
        version: 1,
        range_width,
        fine_range_width: 10,
        key_offset: 0,
        slot_ms: 1000,
        k: models.len() as u32,
        threshold: 0.5,
        history_slots: 6,
        gamma: 3,
        features: FEATURE_NAMES.iter().map(|s| s.to_string()).collect(),
        precursors,
        trained_unix_ms: 0,
        trace_rows: 0,
        report: serde_json::Value::Null,
    };
    LeaperModel::parse(&LeaperModel::encode(&meta, models), "test").unwrap()
}

fn collector(clock: &ManualClock) -> Arc<RangeCollector> {
    Arc::new(RangeCollector::new(
        cairn::CfId::DEFAULT,
        AccessOptions {
            range_width: 10,
            slot_ms: 1000,
            sample_p: 1.0,
            clock: Arc::new(clock.clone()),
            ..AccessOptions::default()
        },
    ))
}

#[test]
fn steps_read_their_features_over_aggregated_ranges() {
    let clock = ManualClock::new(0);
    let c = collector(&clock);
    // Model 1: hot next slot iff r1 > 0.5; model 2: iff w1 > 0.5; model 3: iff p1 > 0.5.
    let models = [stump_on(0), stump_on(6), stump_on(15)];
    let precursors = BTreeMap::from([(7, vec![0])]);
    let p = HotRangePredictor::new(Arc::new(bundle(20, &models, precursors)), c.clone()).unwrap();
    // Slot 0: reads in collector range 1 (model range 0), writes in 4 (model range 2),
    // a write in 15 (model range 7, whose precursor is model range 0).
    c.record_range(1, Access::Read);
    c.record_range(4, Access::Write);
    c.record_range(15, Access::Write);
    assert_eq!(
        p.hot_intervals(0..3, ALL),
        Some(vec![]),
        "slot 0 has not ended"
    );
    clock.advance(1000);
    assert_eq!(p.hot_ranges_next(), vec![0]);
    // A question runs only its steps' models: three ranges (0, 2, 7) through model 1.
    assert_eq!(p.inference_cost().0, 3);
    assert_eq!(p.hot_intervals(0..1, ALL), Some(vec![(0, 19)]));
    assert_eq!(p.inference_cost().0, 3);
    assert_eq!(p.hot_intervals(1..2, ALL), Some(vec![(40, 59), (140, 159)]));
    assert_eq!(p.inference_cost().0, 6);
    assert_eq!(p.hot_intervals(2..3, ALL), Some(vec![(140, 159)]));
    assert_eq!(
        p.hot_intervals(0..3, ALL),
        Some(vec![(0, 19), (40, 59), (140, 159)])
    );
    // Memoised: accesses in the running slot change nothing until it ends.
    c.record_range(30, Access::Read);
    assert_eq!(p.hot_ranges_next(), vec![0]);
    clock.advance(1000);
    assert_eq!(p.hot_ranges_next(), vec![15]);
    // Slot 0 is now two slots back: r1 of range 0 is 0.
    clock.advance(1000);
    assert!(p.hot_ranges_next().is_empty());
    assert_eq!(p.steps_for(2500), 3);
    assert_eq!(p.steps_for(1), 1);
    assert_eq!(p.steps_for(1 << 40), 3);
}

#[test]
fn an_idle_range_is_predicted_from_its_precursors_and_ranked_by_their_reads() {
    let clock = ManualClock::new(0);
    let c = collector(&clock);
    // Hot iff the first precursor read in the last slot (p1 > 0.5). Range 9 (keys
    // 180..=199) follows range 0; range 5 follows range 2.
    let precursors = BTreeMap::from([(9, vec![0]), (5, vec![2])]);
    let p = HotRangePredictor::new(Arc::new(bundle(20, &[stump_on(15)], precursors)), c.clone())
        .unwrap();
    // Range 0 read six times, range 2 once; ranges 9 and 5 never.
    for _ in 0..6 {
        c.record_range(1, Access::Read);
    }
    c.record_range(4, Access::Read);
    clock.advance(1000);
    assert_eq!(
        p.hot_intervals(0..1, ALL),
        Some(vec![(100, 119), (180, 199)])
    );
    let scores = p.hot_scores(0..1, ALL).unwrap();
    assert_eq!(scores.len(), 2);
    assert_eq!((scores[0].0, scores[1].0), ((100, 119), (180, 199)));
    // Each scores its precursor's reads per slot (over the 6-slot window) times the
    // probability: range 9's precursor read six times as often.
    let ratio = scores[1].1 / scores[0].1;
    assert!((ratio - 6.0).abs() < 1e-6, "{scores:?}");
}

#[test]
fn only_the_ranges_a_job_involves_are_inferred_once_per_slot() {
    let clock = ManualClock::new(0);
    let c = collector(&clock);
    let p = HotRangePredictor::new(
        Arc::new(bundle(20, &[stump_on(0)], BTreeMap::new())),
        c.clone(),
    )
    .unwrap();
    // Reads in model ranges 0, 3 and 7 (keys 0..=19, 60..=79, 140..=159), one, two and
    // three of them (rows that differ: equal rows share an evaluation).
    for (n, r) in [1, 6, 14].into_iter().enumerate() {
        for _ in 0..=n {
            c.record_range(r, Access::Read);
        }
    }
    clock.advance(1000);
    // A job over keys 50..=100 involves range 3 only (and ranges 2, 4, 5, never read).
    assert_eq!(p.hot_intervals(0..1, (50, 100)), Some(vec![(60, 79)]));
    assert_eq!(p.inference_cost().0, 1);
    // The same span again in the same slot: answered from the memo.
    assert_eq!(p.hot_scores(0..1, (50, 100)).map(|s| s.len()), Some(1));
    assert_eq!(p.inference_cost().0, 1);
    // The whole key space adds the two ranges not inferred yet.
    assert_eq!(
        p.hot_intervals(0..1, ALL),
        Some(vec![(0, 19), (60, 79), (140, 159)])
    );
    assert_eq!(p.inference_cost().0, 3);
    // A new slot infers afresh.
    clock.advance(1000);
    let _ = p.hot_intervals(0..1, (0, 10));
    assert_eq!(p.inference_cost().0, 4);
}

/// Ranges with equal features share one evaluation per step and slot, and each keeps
/// its own answer and read rate.
#[test]
fn ranges_with_equal_features_share_one_evaluation() {
    let clock = ManualClock::new(0);
    let c = collector(&clock);
    let p = HotRangePredictor::new(
        Arc::new(bundle(20, &[stump_on(0), stump_on(6)], BTreeMap::new())),
        c.clone(),
    )
    .unwrap();
    // Model ranges 0, 3 and 7 read once each; range 5 written once.
    for r in [1, 6, 14] {
        c.record_range(r, Access::Read);
    }
    c.record_range(10, Access::Write);
    clock.advance(1000);
    assert_eq!(
        p.hot_intervals(0..1, ALL),
        Some(vec![(0, 19), (60, 79), (140, 159)])
    );
    // Two distinct rows (read once; written once) through the first model.
    assert_eq!(p.inference_cost().0, 2);
    // The second step: the same two rows through the second model.
    assert_eq!(p.hot_intervals(1..2, ALL), Some(vec![(100, 119)]));
    assert_eq!(p.inference_cost().0, 4);
    let scores = p.hot_scores(0..1, ALL).unwrap();
    assert_eq!(scores.len(), 3);
    assert!(scores.windows(2).all(|w| w[0].1 == w[1].1), "{scores:?}");
}

#[test]
fn a_model_that_calls_idle_ranges_hot_means_everything() {
    let clock = ManualClock::new(0);
    let c = collector(&clock);
    // Hot iff r1 <= 0.5 ... inverted by a negative split: leaf values swapped.
    let inverted = stump_on(0).replace("leaf_value=-5 5", "leaf_value=5 -5");
    let p = HotRangePredictor::new(Arc::new(bundle(10, &[inverted], BTreeMap::new())), c).unwrap();
    clock.advance(1000);
    assert_eq!(p.hot_intervals(0..1, ALL), None);
}

#[test]
fn a_model_that_does_not_fit_the_collector_is_refused() {
    // The collector counts 15-key ranges; the model's 20-key ranges are not made of them.
    let c = Arc::new(RangeCollector::new(
        cairn::CfId::DEFAULT,
        AccessOptions {
            range_width: 15,
            ..AccessOptions::default()
        },
    ));
    let err = HotRangePredictor::new(Arc::new(bundle(20, &[stump_on(0)], BTreeMap::new())), c)
        .unwrap_err();
    assert!(matches!(err, cairn::Error::InvalidArgument(_)), "{err}");
}

#[test]
fn hundreds_of_ranges_predict_quickly() {
    let clock = ManualClock::new(0);
    let c = collector(&clock);
    let p = HotRangePredictor::new(
        Arc::new(bundle(10, &[stump_on(0), stump_on(1)], BTreeMap::new())),
        c.clone(),
    )
    .unwrap();
    for r in 0..500 {
        c.record_range(r * 3, Access::Read);
    }
    clock.advance(1000);
    let hot = p.hot_ranges_next();
    assert_eq!(hot.len(), 500);
    // Time is reported, not asserted (shared machines are noisy).
    let t = std::time::Instant::now();
    clock.advance(1000);
    let _ = p.hot_ranges_next();
    eprintln!(
        "500 ranges, 2 models: {:?} for a slot's predictions",
        t.elapsed()
    );
}

/// Files written by the Python learner (`python -m cairn.learn.leaper synth` and `train`,
/// see docs/papers/leaper.md) read back on the Rust side: the trace decodes and
/// re-encodes to the same bytes (so each side reads what the other writes), and the
/// bundle loads and predicts through a collector of the trace's width.
#[test]
fn files_from_the_python_learner_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/leaper");
    let bytes = std::fs::read(dir.join("synth.trace")).unwrap();
    let (h, rows, transfers) = cairn::access::trace::decode(&bytes, "synth.trace").unwrap();
    assert!(!rows.is_empty() && !transfers.is_empty());
    assert_eq!(cairn::access::trace::encode(&h, &rows, &transfers), bytes);
    let model = LeaperModel::load(dir.join("synth.bundle")).unwrap();
    assert_eq!(model.meta().fine_range_width, h.range_width);
    assert!(model.meta().range_width.is_multiple_of(h.range_width));
    // Replay the last slots of the trace into a collector and predict.
    let clock = ManualClock::new(h.start_unix_ms);
    let c = Arc::new(RangeCollector::new(
        cairn::CfId::DEFAULT,
        AccessOptions {
            range_width: h.range_width,
            slot_ms: h.slot_ms,
            sample_p: 1.0,
            clock: Arc::new(clock.clone()),
            ..AccessOptions::default()
        },
    ));
    let last = rows.iter().map(|r| r.slot).max().unwrap();
    let p = HotRangePredictor::new(Arc::new(model), c.clone()).unwrap();
    for slot in 0..=last {
        for r in rows.iter().filter(|r| r.slot == slot && slot + 6 > last) {
            for _ in 0..r.reads {
                c.record_range(r.range, Access::Read);
            }
            for _ in 0..r.writes {
                c.record_range(r.range, Access::Write);
            }
        }
        clock.advance(h.slot_ms);
    }
    let hot = p
        .hot_intervals(0..1, ALL)
        .expect("a real model does not call idle ranges hot");
    assert!(!hot.is_empty(), "the synthetic trace has hot ranges");
}
