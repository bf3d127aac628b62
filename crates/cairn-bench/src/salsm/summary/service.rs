//! The service's side of the summary: the workloads' shapes, Table 3, Fig. 12 at
//! Algorithm 3's count, the cold-reads curve and the Figs. 13-14 sweeps.

use super::{all, below, count, f, pct, Goal, TraceDir, METHODS, REFERENCE};
use serde_json::Value;
use std::fmt::Write;

/// Fig. 13's censored shares (labelling windows of 10 and 65 days after 20 feature days).
fn fig13_target(profile: &str) -> Option<(f64, f64)> {
    match profile {
        "logistics" => Some((0.412, 0.334)),
        "order" => Some((0.629, 0.560)),
        _ => None,
    }
}

fn evals(traces: &[TraceDir]) -> Vec<(&TraceDir, &Value)> {
    traces
        .iter()
        .filter_map(|t| Some((t, t.eval.as_ref()?)))
        .collect()
}

fn row<'a>(e: &'a Value, m: &str) -> &'a Value {
    &e["methods"][m]
}

pub fn workloads(s: &mut String, traces: &[TraceDir]) {
    s.push_str("## Workloads (Table 2's and Fig. 13's shapes)\n\nCensored %: the paper's labels (tau-events over reads, tau = 1 day, 10 pivots) on the trace window, from the generator (in expectation over the pivots), beside Table 2's; `service`: among the samples the service drew, with the tau its cross-validation chose. Fig. 13: 20 feature days, labels over 10 and 65 days (a longer stream of the same profile and seed), beside the paper's where it gives them.\n\n| profile | records | ops | r/w (Table 2) | censored % (Table 2) | service censored % (tau d) | Fig. 13 % 10 d -> 65 d (paper) | point ops % | read in replay % | life <= 1 d % | decay d1 / d7 / d14 |\n|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|\n");
    for t in traces {
        let st = &t.info["stats"];
        let g = |k: &str| st[k].as_f64();
        let d = |i: usize| st["decay"].get(i).and_then(Value::as_f64);
        let fig = &t.info["fig13"];
        let paper = fig13_target(&t.profile).map_or("-".into(), |(a, b)| {
            format!("{} -> {}", pct(Some(a)), pct(Some(b)))
        });
        let e = t.eval.as_ref();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} ({}) | {} ({}) | {} ({}) | {} -> {} ({paper}) | {} | {} | {} | {} / {} / {} |",
            t.profile,
            st["records"],
            g("trace_ops").unwrap_or(0.0) + g("replay_ops").unwrap_or(0.0),
            f(g("rw_ratio"), 1),
            f(g("table2_rw"), 1),
            pct(g("censored_share")),
            pct(g("table2_censored")),
            pct(e.and_then(|e| e["samples"]["censored_share"].as_f64())),
            f(e.and_then(|e| e["tau_days"].as_f64()), 2),
            pct(fig["label10"].as_f64()),
            pct(fig["label65"].as_f64()),
            pct(g("point_share")),
            pct(g("replay_hot_share")),
            pct(g("lifetime_1d")),
            f(d(1), 2),
            f(d(7), 2),
            f(d(14), 2),
        );
    }
    s.push('\n');
}

pub fn table3(s: &mut String, traces: &[TraceDir], goals: &mut Vec<Goal>) {
    let ev = evals(traces);
    if ev.is_empty() {
        return;
    }
    s.push_str("## Table 3: c-index on held-out records (service `evaluate`)\n\nHarrell's c-index / Uno's C (IPCW, truncated at the horizon). Gains in the paper's units against its censoring-naive GBDT (`gbdt-naive`): the relative gain (C / C_gbdt - 1, the paper's \"+8.9%\") and the share of GBDT's discordant pairs removed ((C - C_gbdt) / (1 - C_gbdt)). `gbdt-h` is cairn's censoring-aware GBDT (drops samples censored before the horizon).\n\n| method |");
    for (t, _) in &ev {
        let _ = write!(s, " {} |", t.profile);
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(ev.len()));
    s.push('\n');
    for m in METHODS.iter().filter(|&&m| m != "oracle") {
        let _ = write!(s, "| {m} |");
        for (_, e) in &ev {
            let r = row(e, m);
            let _ = write!(
                s,
                " {} / {} |",
                f(r["c_index"].as_f64(), 3),
                f(r["uno_c"].as_f64(), 3)
            );
        }
        s.push('\n');
    }
    let mut ok = Vec::new();
    for (label, gain, removed) in [
        (
            "RSF gain (Harrell)",
            "c_index_gain_vs_gbdt_naive",
            "discordant_removed_vs_gbdt_naive",
        ),
        (
            "RSF gain (Uno)",
            "uno_c_gain_vs_gbdt_naive",
            "uno_discordant_removed_vs_gbdt_naive",
        ),
    ] {
        let _ = write!(s, "| {label}: relative / discordant removed |");
        for (_, e) in &ev {
            let r = row(e, "rsf");
            let rm = r[removed].as_f64();
            if label.contains("Harrell") {
                if let Some(x) = rm {
                    ok.push(x >= 0.27);
                }
            }
            let _ = write!(s, " {} % / {} % |", pct(r[gain].as_f64()), pct(rm));
        }
        s.push('\n');
    }
    s.push('\n');
    goals.push((
        format!("Table 3: RSF removes >= 27% of {REFERENCE}'s discordant pairs (Harrell), every profile"),
        all(&ok),
        count(&ok),
    ));
}

pub fn fig12(s: &mut String, traces: &[TraceDir], goals: &mut Vec<Goal>) {
    let ev = evals(traces);
    if ev.is_empty() {
        return;
    }
    s.push_str("## Fig. 12: cold_fir at Algorithm 3's count (service `evaluate`, held-out records)\n\nRSF's Algorithm 3 (alpha days) decides how many held-out records are cold; every method migrates that many, its coldest first. cold_fir = FP / (FP + TP): the share of the migrated records read within the horizon after T_cut. `read %`: that share among all held-out records (a random pick's expected cold_fir).\n\n| profile | alpha d | migrated % | read % |");
    for m in METHODS {
        let _ = write!(s, " {m} |");
    }
    s.push_str(" RSF vs gbdt-naive | RSF vs LRU |\n|---|---:|---:|---:|");
    s.push_str(&"---:|".repeat(METHODS.len() + 2));
    s.push('\n');
    let (mut vs_gbdt, mut vs_lru) = (Vec::new(), Vec::new());
    for (t, e) in &ev {
        let fir = |m: &str| row(e, m)["alpha"]["cold_fir"].as_f64();
        let _ = write!(
            s,
            "| {} | {} | {} | {} |",
            t.profile,
            f(e["alpha"]["alpha_days"].as_f64(), 0),
            pct(e["alpha"]["migrated_share"].as_f64()),
            pct(e["cut"]["hot_share"].as_f64())
        );
        for m in METHODS {
            let _ = write!(s, " {} |", pct(fir(m)));
        }
        let (g, l) = (
            below(fir("rsf"), fir(REFERENCE)),
            below(fir("rsf"), fir("lru")),
        );
        if let (Some(g), Some(l)) = (g, l) {
            vs_gbdt.push(g >= 0.31);
            vs_lru.push(l > 0.0);
        }
        let _ = writeln!(s, " {} % lower | {} % lower |", pct(g), pct(l));
    }
    s.push('\n');
    goals.push((
        "Fig. 12 (service): RSF's cold_fir >= 31% below gbdt-naive's at Algorithm 3's count".into(),
        all(&vs_gbdt),
        count(&vs_gbdt),
    ));
    goals.push((
        "Fig. 12 (service): RSF's cold_fir below LRU's at that count".into(),
        all(&vs_lru),
        count(&vs_lru),
    ));
}

/// The cold-tier reads each method's placement would cause, against the migrated share.
pub fn curve(s: &mut String, traces: &[TraceDir]) {
    let shares = [0.1, 0.3, 0.5, 0.7, 0.9];
    let mut head = false;
    for (t, e) in evals(traces) {
        let c = &e["curve"];
        let Some(xs) = c["migrated_share"].as_array() else {
            continue;
        };
        if !head {
            s.push_str("## Cold-tier reads against the migrated share (service `evaluate`)\n\nThe held-out records' reads in the horizon that would hit the cold tier if each method migrated that share, coldest first (fewer is better; `oracle` is the bound).\n\n| profile | method |");
            for x in shares {
                let _ = write!(s, " {:.0} % |", x * 100.0);
            }
            s.push_str("\n|---|---|");
            s.push_str(&"---:|".repeat(shares.len()));
            s.push('\n');
            head = true;
        }
        let idx: Vec<Option<usize>> = shares
            .iter()
            .map(|x| {
                xs.iter()
                    .position(|v| v.as_f64().is_some_and(|v| (v - x).abs() < 1e-6))
            })
            .collect();
        for m in METHODS {
            let reads = &c["methods"][m]["cold_reads"];
            if reads.is_null() {
                continue;
            }
            let _ = write!(s, "| {} | {m} |", t.profile);
            for i in &idx {
                let v = i.and_then(|i| reads.get(i)).and_then(Value::as_u64);
                let _ = write!(s, " {} |", v.map_or("-".into(), |v| v.to_string()));
            }
            s.push('\n');
        }
    }
    if head {
        s.push('\n');
    }
}

/// Figs. 13-14: the labelling window and the sample share.
pub fn sweeps(s: &mut String, traces: &[TraceDir]) {
    for (kind, title, what) in [
        (
            "label-window",
            "Fig. 13: the labelling window",
            "label days",
        ),
        (
            "sample-share",
            "Fig. 14: RSF on a share of GBDT's samples",
            "RSF's share",
        ),
    ] {
        let rows: Vec<(&str, &Value)> = traces
            .iter()
            .flat_map(|t| {
                t.sweeps
                    .iter()
                    .filter(|(k, _)| k == kind)
                    .flat_map(|(_, v)| v["rows"].as_array().into_iter().flatten())
                    .map(|r| (t.profile.as_str(), r))
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = write!(s, "## {title} (service `sweep`)\n\n| profile | {what} | censored % | rsf c-index | gbdt-naive c-index | rsf Uno | gbdt-naive Uno |\n|---|---:|---:|---:|---:|---:|---:|\n");
        for (p, r) in rows {
            let _ = writeln!(
                s,
                "| {p} | {} | {} | {} | {} | {} | {} |",
                f(r["value"].as_f64(), 2),
                pct(r["censored_share"].as_f64()),
                f(r["rsf"]["c_index"].as_f64(), 3),
                f(r[REFERENCE]["c_index"].as_f64(), 3),
                f(r["rsf"]["uno_c"].as_f64(), 3),
                f(r[REFERENCE]["uno_c"].as_f64(), 3),
            );
        }
        s.push('\n');
    }
}
