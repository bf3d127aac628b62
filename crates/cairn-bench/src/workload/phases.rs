//! Phased (dynamic) workloads: a sequence of mixes, each run for a number of ops.

use super::mix::{Mix, OpKind};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub mix: Mix,
    pub ops: u64,
}

/// Parses `read=0.9,update=0.1:100000;read=0.5,update=0.5:100000`.
pub fn parse(s: &str) -> Result<Vec<Phase>> {
    let mut out = Vec::new();
    for part in s.split(';').filter(|p| !p.trim().is_empty()) {
        let (mix, ops) = part
            .rsplit_once(':')
            .with_context(|| format!("phase `{part}` is not MIX:OPS"))?;
        let ops: u64 = ops
            .trim()
            .replace('_', "")
            .parse()
            .with_context(|| format!("bad op count in phase `{part}`"))?;
        out.push(Phase {
            mix: Mix::parse(mix)?,
            ops,
        });
    }
    if out.is_empty() {
        bail!("--phases lists no phase");
    }
    Ok(out)
}

/// Splits `total` ops over mixes as evenly as possible (the last phase takes the remainder).
fn split(total: u64, mixes: Vec<Mix>) -> Vec<Phase> {
    let n = mixes.len() as u64;
    mixes
        .into_iter()
        .enumerate()
        .map(|(i, mix)| Phase {
            mix,
            ops: if i as u64 == n - 1 {
                total - (total / n) * (n - 1)
            } else {
                total / n
            },
        })
        .collect()
}

fn lookup_update(read: f64) -> Mix {
    Mix::new(&[(OpKind::Read, read), (OpKind::Update, 1.0 - read)]).expect("sums to 1")
}

/// RusKey's session sequence: read-heavy, balanced, write-heavy, write-inclined, read-inclined.
pub fn ruskey_sessions(total_ops: u64) -> Vec<Phase> {
    split(
        total_ops,
        [0.9, 0.5, 0.1, 0.3, 0.7]
            .into_iter()
            .map(lookup_update)
            .collect(),
    )
}

/// Two phases as in the AC-Key evaluation: range scans, then point lookups.
pub fn ac_key_two_phase(total_ops: u64) -> Vec<Phase> {
    split(
        total_ops,
        vec![
            Mix::new(&[(OpKind::Scan, 1.0)]).expect("sums to 1"),
            Mix::new(&[(OpKind::Read, 1.0)]).expect("sums to 1"),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_phase_lists() {
        let p = parse("read=0.9,update=0.1:100000;read=0.5,update=0.5:1_000").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].ops, 100_000);
        assert_eq!(p[1].ops, 1000);
        assert_eq!(p[1].mix.proportion(OpKind::Update), 0.5);
        assert!(parse("read=1").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn presets_cover_total_ops() {
        let r = ruskey_sessions(1003);
        assert_eq!(r.len(), 5);
        assert_eq!(r.iter().map(|p| p.ops).sum::<u64>(), 1003);
        assert_eq!(r[2].mix.proportion(OpKind::Update), 0.9);
        let a = ac_key_two_phase(10);
        assert_eq!(a[0].mix.proportion(OpKind::Scan), 1.0);
        assert_eq!(a[1].mix.proportion(OpKind::Read), 1.0);
    }
}
