//! The ground truth and the shape statistics of a generated stream.

use super::{AwpiKind, AwpiOp, AwpiSpec, AwpiStats, Targets, DAY_MS, PIVOTS, TAU_MS};

/// The expected share of censored samples of the paper's labels: pivots (Alg. 1, up to
/// `PIVOTS` of a record's intervals, drawn without replacement, each interval after an
/// access up to `pivot_end`, the last one open to it), tau-events over reads only (a read
/// within tau of the previous read) up to `label_end`.
pub(super) fn censored_share(records: &[Vec<(u64, bool)>], pivot_end: u64, label_end: u64) -> f64 {
    let (mut cens, mut samples) = (0.0, 0.0);
    for a in records {
        let k = a.partition_point(|x| x.0 <= pivot_end);
        // Intervals with zero length cannot hold a pivot (two accesses in one ms).
        let valid: Vec<bool> = (0..k)
            .map(|j| a.get(j + 1).map_or(pivot_end, |x| x.0.min(pivot_end)) > a[j].0)
            .collect();
        let kv = valid.iter().filter(|&&v| v).count();
        if kv == 0 {
            continue;
        }
        // event_after[j]: a tau-event read with index > j, by label_end.
        let mut prev_read: Option<u64> = None;
        let mut last_event = None;
        for (j, &(t, read)) in a.iter().enumerate() {
            if t > label_end {
                break;
            }
            if read {
                if prev_read.is_some_and(|p| t - p < TAU_MS) {
                    last_event = Some(j);
                }
                prev_read = Some(t);
            }
        }
        let c = (0..k)
            .filter(|&j| valid[j] && last_event.is_none_or(|e| e <= j))
            .count();
        let drawn = PIVOTS.min(kv) as f64;
        cens += drawn * c as f64 / kv as f64;
        samples += drawn;
    }
    if samples > 0.0 {
        cens / samples
    } else {
        0.0
    }
}

/// Records of the trace read in the replay days (point reads and the records a scan
/// covers), and each trace record's last write before the trace's end.
pub(super) fn truth(
    ops: &[AwpiOp],
    replay_start: usize,
    trace_records: u64,
    insert_ms: &[u64],
) -> (Vec<bool>, Vec<u64>) {
    let n = trace_records as usize;
    let mut hot = vec![false; n];
    for o in &ops[replay_start..] {
        let r = o.rec as usize;
        let last = match o.kind {
            // A scan reads the `len` records from its start that exist by then.
            AwpiKind::Scan => {
                let exist = insert_ms.partition_point(|&t| t <= o.t_ms);
                (r + o.len as usize).min(exist)
            }
            // A write never reads the cold tier.
            AwpiKind::Insert | AwpiKind::Update => continue,
            _ => r + 1,
        };
        for h in hot.iter_mut().take(last.min(n)).skip(r) {
            *h = true;
        }
    }
    let mut last_write = insert_ms[..n].to_vec();
    for o in &ops[..replay_start] {
        if o.kind == AwpiKind::Update {
            last_write[o.rec as usize] = o.t_ms;
        }
    }
    (hot, last_write)
}

pub(super) fn stats(
    spec: &AwpiSpec,
    p: Targets,
    ops: &[AwpiOp],
    replay_start: usize,
    trace_records: u64,
    insert_ms: &[u64],
) -> AwpiStats {
    let count = |k: AwpiKind| ops.iter().filter(|o| o.kind == k).count() as u64;
    let (reads, scans, inserts, updates) = (
        count(AwpiKind::Read),
        count(AwpiKind::Scan),
        count(AwpiKind::Insert),
        count(AwpiKind::Update),
    );
    let writes = inserts + updates;
    let trace_end = spec.trace_end_ms();
    // Per record: its accesses (time, is_read); scans are not traced per record by the
    // query store either.
    let n = spec.records as usize;
    let mut acc: Vec<Vec<(u64, bool)>> = vec![Vec::new(); n];
    for o in ops.iter().filter(|o| o.kind != AwpiKind::Scan) {
        acc[o.rec as usize].push((o.t_ms, o.kind == AwpiKind::Read));
    }
    let trace = &acc[..trace_records as usize];
    let censored = censored_share(trace, trace_end, trace_end);
    let (l10, l65) = if spec.end_ms() >= 85 * DAY_MS {
        let f = 20 * DAY_MS;
        let early = &acc[..insert_ms.partition_point(|&t| t < f)];
        (
            Some(censored_share(early, f, f + 10 * DAY_MS)),
            Some(censored_share(early, f, f + 65 * DAY_MS)),
        )
    } else {
        (None, None)
    };
    let times: Vec<Vec<u64>> = acc
        .iter()
        .map(|a| a.iter().map(|x| x.0).collect())
        .collect();
    // Lifetimes (last access - insert) of records inserted in the first half of the trace.
    let half = trace_end / 2;
    let early: Vec<&Vec<u64>> = times
        .iter()
        .zip(insert_ms)
        .filter(|(_, &i)| i < half)
        .map(|(t, _)| t)
        .collect();
    let life = |d: f64| {
        early
            .iter()
            .filter(|t| {
                let (a, b) = (t[0], *t.last().expect("the insert"));
                ((b - a) as f64) <= d * DAY_MS as f64
            })
            .count() as f64
            / early.len().max(1) as f64
    };
    let (l1, l7) = (life(1.0), life(7.0));
    let mut per_day = [0u64; 15];
    for t in &early {
        for &x in t.iter().skip(1) {
            let d = ((x - t[0]) / DAY_MS) as usize;
            if d < per_day.len() {
                per_day[d] += 1;
            }
        }
    }
    let d0 = per_day[0].max(1) as f64;
    let mut value = vec![0u16; trace_records as usize];
    for o in &ops[..replay_start] {
        if o.kind.writes() {
            value[o.rec as usize] = o.len;
        }
    }
    let live_bytes = value
        .iter()
        .map(|&v| (spec.key_size + v as usize) as u64)
        .sum();
    AwpiStats {
        profile: p.name.to_string(),
        generator: String::new(),
        read_scale: 0.0,
        steady_read_scale: 0.0,
        records: spec.records,
        trace_records,
        trace_ops: replay_start as u64,
        replay_ops: (ops.len() - replay_start) as u64,
        reads,
        scans,
        writes,
        inserts,
        updates,
        rw_ratio: (reads + scans) as f64 / writes.max(1) as f64,
        table2_rw: p.table2_rw,
        point_share: (reads + writes) as f64 / ops.len().max(1) as f64,
        censored_share: censored,
        censored_label10: l10,
        censored_label65: l65,
        table2_censored: p.table2_censored,
        true_cold_share: 0.0,
        replay_hot_share: 0.0,
        lifetime_1d: l1,
        lifetime_7d: l7 - l1,
        lifetime_longer: 1.0 - l7,
        decay: per_day.iter().map(|&x| x as f64 / d0).collect(),
        live_bytes,
    }
}
