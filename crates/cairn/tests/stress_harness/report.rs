//! Totals per preset, the table printed at the end, and the markdown report.

use super::cycle::CycleStats;

/// One preset's cycles: their counts summed, and what only a whole run has (hangs, time).
#[derive(Clone, Debug, Default)]
pub struct PresetStats {
    pub preset: String,
    pub cycles: u64,
    pub hangs: u64,
    pub secs: f64,
    /// The cycles' counts and work, added up (no failure text).
    pub sum: CycleStats,
}

impl PresetStats {
    pub fn new(preset: &str) -> Self {
        PresetStats {
            preset: preset.to_string(),
            ..Default::default()
        }
    }

    pub fn add(&mut self, c: &CycleStats) {
        self.cycles += 1;
        self.sum.add_counts(c);
    }

    fn add_all(&mut self, o: &PresetStats) {
        self.cycles += o.cycles;
        self.hangs += o.hangs;
        self.secs += o.secs;
        self.sum.add_counts(&o.sum);
    }

    /// A one-line summary.
    pub fn line(&self) -> String {
        format!(
            "{}: {} cycles, {} ops, {} acked writes, {} failed calls, {} faults, {} power \
             losses, {} kills, {} reopen checks, {} lost acked, {} wrong, {} hangs, {} panics \
             ({:.1} s)",
            self.preset,
            self.cycles,
            self.sum.ops,
            self.sum.acked,
            self.sum.failed,
            self.sum.faults,
            self.sum.power_losses,
            self.sum.kills,
            self.sum.reopen_checks,
            self.sum.lost_acked,
            self.sum.wrong,
            self.hangs,
            self.sum.panics,
            self.secs
        )
    }

    fn row(&self) -> String {
        format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
            self.preset,
            self.cycles,
            self.sum.ops,
            self.sum.acked,
            self.sum.failed,
            self.sum.faults,
            self.sum.power_losses,
            self.sum.kills,
            self.sum.reopen_checks,
            self.sum.lost_acked,
            self.sum.dropped_unsynced,
            self.sum.wrong,
            self.hangs,
            self.sum.panics,
            self.secs
        )
    }
}

/// Failures the markdown report lists (a run with a bug can fail thousands of reads).
const SHOWN_FAILURES: usize = 40;

#[derive(Debug, Default)]
pub struct Report {
    pub presets: Vec<PresetStats>,
    /// One line per failure, each with the command that replays it.
    pub failures: Vec<String>,
    /// The hang that stopped the run.
    pub aborted: Option<String>,
}

impl Report {
    pub fn total(&self) -> PresetStats {
        let mut t = PresetStats::new("total");
        for p in &self.presets {
            t.add_all(p);
        }
        t
    }

    /// No lost acknowledged write, wrong answer, hang or panic.
    pub fn clean(&self) -> bool {
        let t = self.total();
        self.failures.is_empty() && t.sum.lost_acked + t.sum.wrong + t.hangs + t.sum.panics == 0
    }

    /// The table, in markdown.
    pub fn table(&self) -> String {
        let mut s = String::from(
            "| preset | cycles | ops | acked writes | failed calls | faults injected | power \
             losses | kills | reopen checks | lost acked writes | unsynced writes a power loss \
             took (allowed) | wrong answers | hangs | panics | seconds |\n",
        );
        s.push_str(&format!("|{}\n", "---|".repeat(15)));
        for p in &self.presets {
            s.push_str(&p.row());
            s.push('\n');
        }
        let t = self.total();
        s.push_str(&t.row().replace("| total |", "| **total** |"));
        s.push('\n');
        s
    }

    /// What the engine did, in markdown: the cycles reach each preset's machinery.
    pub fn work_table(&self) -> String {
        let mut s = String::from(
            "| preset | flushes | compactions | subcompactions | most parallel jobs | \
             background errors | tables learned | value-log GC rewrites | tuner missions | \
             blocks warmed | proactive compactions |\n",
        );
        s.push_str(&format!("|{}\n", "---|".repeat(11)));
        let mut all = self.presets.clone();
        all.push(self.total());
        for p in &all {
            let w = &p.sum.work;
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                p.preset,
                w.flushes,
                w.compactions,
                w.subcompactions,
                w.jobs_peak,
                w.background_errors,
                w.learned_tables,
                w.vlog_gc_rewrites,
                w.tuner_missions,
                w.warmed_blocks,
                w.proactive_compactions
            ));
        }
        s
    }

    /// The whole report: how it was run, where, and what it found.
    pub fn markdown(&self, command: &str, commit: &str, machine: &str, date: &str) -> String {
        let t = self.total();
        let mut s = format!(
            "# Reliability: db_stress-style runs\n\n\
             - command: `{command}`\n- commit: `{commit}`\n- machine: {machine}\n\
             - date: {date}\n- wall time: {:.0} s ({:.2} s per cycle)\n\n",
            t.secs,
            t.secs / t.cycles.max(1) as f64
        );
        s.push_str(&self.table());
        s.push_str(
            "\nWhat the engine did in those cycles (kill cycles' children not counted):\n\n",
        );
        s.push_str(&self.work_table());
        s.push('\n');
        match (&self.aborted, self.failures.is_empty()) {
            (Some(h), _) => s.push_str(&format!("Stopped by a hang: {h}\n")),
            (None, true) => {
                s.push_str("No acknowledged write lost, no wrong answer, no hang, no panic.\n")
            }
            (None, false) => {}
        }
        if !self.failures.is_empty() {
            s.push_str(&format!(
                "\n{} failures; the first {} (each with the command that replays it):\n\n",
                self.failures.len(),
                self.failures.len().min(SHOWN_FAILURES)
            ));
            for f in self.failures.iter().take(SHOWN_FAILURES) {
                s.push_str(&format!("- {f}\n"));
            }
        }
        s
    }
}
