//! Leaper's model bundle (learner -> engine), as specified in `docs/design/formats/leaper.md`:
//!
//! ```text
//! CAIRN-LEAPER-MODEL 1\n
//! <metadata: one line of JSON>\n
//! MODEL 1 <byte length>\n<LightGBM text model, exactly that many bytes>
//! ...
//! MODEL k <byte length>\n<...>
//! CRC32C <8 lowercase hex digits>\n
//! ```
//!
//! The CRC32C covers every byte before the `CRC32C` line. The reader checks the magic and
//! version, then the checksum (so a damaged file is reported as such rather than by the
//! first field that happens to look wrong), then the structure, the metadata and every
//! model; any problem is a typed error ([`Error::Corruption`], or
//! [`Error::UnsupportedVersion`] for a well-formed header of another version), never a
//! panic.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::gbdt::GbdtModel;
use crate::error::{Error, Result};

/// First line of a bundle, before the version number.
pub const MAGIC: &str = "CAIRN-LEAPER-MODEL";
/// The bundle version this build reads and writes.
pub const VERSION: u32 = 1;
/// The model inputs, in order (see the format document).
pub const FEATURE_NAMES: [&str; 18] = [
    "r1", "r2", "r3", "r4", "r5", "r6", "w1", "w2", "w3", "w4", "w5", "w6", "hour", "minute",
    "second", "p1", "p2", "p3",
];
/// Number of model inputs.
pub const NUM_FEATURES: usize = FEATURE_NAMES.len();
/// `history_slots` of the feature set above (r1..r6, w1..w6).
pub const HISTORY_SLOTS: u32 = 6;
/// The most precursors per range the features hold (p1..p3); `gamma` may be smaller (the
/// learner takes 1..3, default 3), and absent precursors read as 0.
pub const MAX_GAMMA: u32 = 3;

/// Length of the trailing `CRC32C xxxxxxxx\n` line.
const CRC_LINE_LEN: usize = "CRC32C ".len() + 8 + 1;

/// The bundle's metadata line. Unknown JSON fields are ignored (newer learners may add
/// some); all listed fields are required except `report`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeaperMeta {
    /// Metadata version (1).
    pub version: u32,
    /// A*, the width of the key ranges the models predict for.
    pub range_width: u64,
    /// A0, the width the trace was counted at (`range_width` is a multiple of it).
    pub fine_range_width: u64,
    /// Offset in the key of its 8-byte big-endian integer.
    pub key_offset: u32,
    /// Length of one time slot in milliseconds.
    pub slot_ms: u64,
    /// Number of models: model `i` (1-based) predicts slot `s + i`.
    pub k: u32,
    /// Probability at or above which a range is predicted hot.
    pub threshold: f64,
    /// Slots of history in the features (6).
    pub history_slots: u32,
    /// Precursors per range (at most 3, usually 3).
    pub gamma: u32,
    /// Feature names, [`FEATURE_NAMES`].
    pub features: Vec<String>,
    /// Range id -> its precursor ranges (at most `gamma`, most important first). JSON
    /// object keys are the ids as decimal strings.
    pub precursors: BTreeMap<u64, Vec<u64>>,
    /// When the models were trained (ms since the Unix epoch).
    pub trained_unix_ms: u64,
    /// Count rows of the trace the models were trained on.
    pub trace_rows: u64,
    /// The learner's offline metrics, free-form.
    #[serde(default)]
    pub report: serde_json::Value,
}

impl LeaperMeta {
    /// Checks the fields against the format (widths, slot length, feature set...).
    fn validate(&self) -> std::result::Result<(), String> {
        if self.version != VERSION {
            return Err(format!(
                "metadata version {} (expected {VERSION})",
                self.version
            ));
        }
        if self.range_width == 0 || self.fine_range_width == 0 {
            return Err("range_width and fine_range_width must be positive".into());
        }
        if !self.range_width.is_multiple_of(self.fine_range_width) {
            return Err(format!(
                "range_width {} is not a multiple of fine_range_width {}",
                self.range_width, self.fine_range_width
            ));
        }
        if self.slot_ms == 0 {
            return Err("slot_ms must be positive".into());
        }
        if self.k == 0 {
            return Err("k must be positive".into());
        }
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(format!("threshold {} is not a probability", self.threshold));
        }
        if self.history_slots != HISTORY_SLOTS {
            return Err(format!(
                "history_slots {} (the features hold {HISTORY_SLOTS})",
                self.history_slots
            ));
        }
        if self.gamma > MAX_GAMMA {
            return Err(format!(
                "gamma {} (the features hold at most {MAX_GAMMA} precursors)",
                self.gamma
            ));
        }
        if self.features.len() != NUM_FEATURES {
            return Err(format!(
                "{} features, expected {NUM_FEATURES}",
                self.features.len()
            ));
        }
        if self.features.iter().zip(FEATURE_NAMES).any(|(a, b)| a != b) {
            return Err(format!(
                "features {:?}, expected {FEATURE_NAMES:?}",
                self.features
            ));
        }
        if let Some((r, p)) = self
            .precursors
            .iter()
            .find(|(_, p)| p.len() > self.gamma as usize)
        {
            return Err(format!(
                "range {r} has {} precursors (gamma is {})",
                p.len(),
                self.gamma
            ));
        }
        Ok(())
    }
}

/// A loaded, verified model bundle.
#[derive(Clone, Debug)]
pub struct LeaperModel {
    meta: LeaperMeta,
    models: Vec<GbdtModel>,
}

impl LeaperModel {
    /// Reads and verifies the bundle at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<LeaperModel> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| Error::io(name.clone(), e))?;
        Self::parse(&bytes, &name)
    }

    /// Verifies and parses a bundle's bytes; `name` (a path or description) goes into
    /// error messages.
    pub fn parse(bytes: &[u8], name: &str) -> Result<LeaperModel> {
        let corrupt = |d: String| Error::corruption(name, d);

        // Magic and version.
        let first = bytes
            .iter()
            .take(64)
            .position(|&b| b == b'\n')
            .map(|i| &bytes[..i])
            .ok_or_else(|| corrupt("not a Leaper model bundle (no header line)".into()))?;
        let version = first
            .strip_prefix(MAGIC.as_bytes())
            .and_then(|v| v.strip_prefix(b" "))
            .ok_or_else(|| corrupt("not a Leaper model bundle (bad magic)".into()))?;
        let version: u32 = parse_decimal(version)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| corrupt(format!("bad version {:?}", ascii(version))))?;
        if version != VERSION {
            return Err(Error::UnsupportedVersion {
                file: name.to_string(),
                found: version,
                supported: VERSION,
            });
        }

        // Checksum: the last line, over everything before it.
        let body_end = bytes
            .len()
            .checked_sub(CRC_LINE_LEN)
            .filter(|&e| e > first.len())
            .ok_or_else(|| corrupt("truncated (no CRC32C line)".into()))?;
        let crc_line = &bytes[body_end..];
        let stored = crc_line
            .strip_prefix(b"CRC32C ")
            .and_then(|l| l.strip_suffix(b"\n"))
            .filter(|h| h.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .and_then(|h| u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok())
            .ok_or_else(|| corrupt("truncated or damaged CRC32C line".into()))?;
        let computed = crc32c::crc32c(&bytes[..body_end]);
        if stored != computed {
            return Err(corrupt(format!(
                "checksum mismatch (stored {stored:08x}, computed {computed:08x})"
            )));
        }

        // Metadata line.
        let mut rest = &bytes[first.len() + 1..body_end];
        let meta_len = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| corrupt("no metadata line".into()))?;
        let meta: LeaperMeta = serde_json::from_slice(&rest[..meta_len])
            .map_err(|e| corrupt(format!("metadata: {e}")))?;
        meta.validate()
            .map_err(|e| corrupt(format!("metadata: {e}")))?;
        rest = &rest[meta_len + 1..];

        // MODEL sections, up to the CRC line.
        let mut models = Vec::new();
        while !rest.is_empty() {
            let i = models.len() + 1;
            if i > meta.k as usize {
                return Err(corrupt(format!(
                    "{} unexpected bytes after the last of k = {} models",
                    rest.len(),
                    meta.k
                )));
            }
            let header_len = rest
                .iter()
                .take(64)
                .position(|&b| b == b'\n')
                .ok_or_else(|| corrupt(format!("model {i}: bad MODEL line")))?;
            let header = &rest[..header_len];
            let len = parse_model_header(header, i).ok_or_else(|| {
                corrupt(format!(
                    "model {i}: bad MODEL line {:?} (expected \"MODEL {i} <length>\")",
                    ascii(header)
                ))
            })?;
            rest = &rest[header_len + 1..];
            if len > rest.len() {
                return Err(corrupt(format!(
                    "model {i}: truncated ({len} bytes declared, {} left)",
                    rest.len()
                )));
            }
            let text = std::str::from_utf8(&rest[..len])
                .map_err(|e| corrupt(format!("model {i}: not UTF-8: {e}")))?;
            let model =
                GbdtModel::parse_detail(text).map_err(|e| corrupt(format!("model {i}: {e}")))?;
            if model.num_features() != NUM_FEATURES {
                return Err(corrupt(format!(
                    "model {i}: {} features, expected {NUM_FEATURES}",
                    model.num_features()
                )));
            }
            models.push(model);
            rest = &rest[len..];
        }
        if models.len() != meta.k as usize {
            return Err(corrupt(format!(
                "{} MODEL sections, metadata k = {}",
                models.len(),
                meta.k
            )));
        }
        Ok(LeaperModel { meta, models })
    }

    /// Writes a bundle: the exact bytes [`parse`](Self::parse) reads and the learner must
    /// produce (its JSON may differ in spacing and key order; any one-line JSON object is
    /// accepted). Nothing is validated, so tests can also build bad bundles.
    pub fn encode<S: AsRef<str>>(meta: &LeaperMeta, model_texts: &[S]) -> Vec<u8> {
        // Serializing plain fields to a String cannot fail (map keys are integers, which
        // serde_json writes as strings); a failure would be a bug.
        let json = serde_json::to_string(meta).expect("metadata serializes to JSON");
        let mut out = format!("{MAGIC} {VERSION}\n{json}\n").into_bytes();
        for (i, text) in model_texts.iter().enumerate() {
            let text = text.as_ref();
            out.extend_from_slice(format!("MODEL {} {}\n", i + 1, text.len()).as_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(format!("CRC32C {crc:08x}\n").as_bytes());
        out
    }

    /// The metadata.
    pub fn meta(&self) -> &LeaperMeta {
        &self.meta
    }

    /// The k models; `models()[i]` predicts slot `s + i + 1`.
    pub fn models(&self) -> &[GbdtModel] {
        &self.models
    }

    /// The precursor ranges of `range` (empty when it has none).
    pub fn precursors(&self, range: u64) -> &[u64] {
        self.meta.precursors.get(&range).map_or(&[], Vec::as_slice)
    }
}

/// `MODEL <i> <len>`, with exactly the expected `i`; returns `len`.
fn parse_model_header(line: &[u8], expected: usize) -> Option<usize> {
    let mut parts = line.split(|&b| b == b' ');
    if parts.next()? != b"MODEL" || parse_decimal(parts.next()?)? != expected as u64 {
        return None;
    }
    let len = usize::try_from(parse_decimal(parts.next()?)?).ok()?;
    parts.next().is_none().then_some(len)
}

/// A canonical decimal number: digits only (no sign, spaces or leading zeros), at most 19.
fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if s.len() > 1 && s[0] == b'0' {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Bytes for an error message: lossy UTF-8, at most 40 characters.
fn ascii(b: &[u8]) -> String {
    String::from_utf8_lossy(b).chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A LightGBM text model over the 18 features: a stump on r1 and a constant tree.
    fn stump_text(leaf: f64) -> String {
        format!(
            "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n\
             max_feature_idx=17\nobjective=binary sigmoid:1\nfeature_names={}\n\
             feature_infos={}\ntree_sizes=1 1\n\n\
             Tree=0\nnum_leaves=2\nnum_cat=0\nsplit_feature=0\nsplit_gain=1\nthreshold=0.5\n\
             decision_type=2\nleft_child=-1\nright_child=-2\nleaf_value=-2 {leaf}\n\
             is_linear=0\nshrinkage=1\n\n\
             Tree=1\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nthreshold=\ndecision_type=\n\
             left_child=\nright_child=\nleaf_value=0.5\nis_linear=0\nshrinkage=0.05\n\n\
             end of trees\n\nfeature_importances:\nr1=1\n",
            FEATURE_NAMES.join(" "),
            vec!["none"; 18].join(" ")
        )
    }

    fn meta(k: u32) -> LeaperMeta {
        LeaperMeta {
            version: 1,
            range_width: 40,
            fine_range_width: 10,
            key_offset: 0,
            slot_ms: 1000,
            k,
            threshold: 0.5,
            history_slots: 6,
            gamma: 3,
            features: FEATURE_NAMES.iter().map(|s| s.to_string()).collect(),
            precursors: BTreeMap::from([(7, vec![3, 9, 1]), (12, vec![7])]),
            trained_unix_ms: 1_700_000_000_000,
            trace_rows: 1234,
            report: serde_json::json!({"auc": [0.9, 0.8], "note": "line\nbreak"}),
        }
    }

    fn bundle() -> Vec<u8> {
        LeaperModel::encode(&meta(2), &[stump_text(1.0), stump_text(3.0)])
    }

    /// Replaces the CRC line of `b` (or appends one) so that only the structure is tested.
    fn reseal(mut body: Vec<u8>) -> Vec<u8> {
        let crc = crc32c::crc32c(&body);
        body.extend_from_slice(format!("CRC32C {crc:08x}\n").as_bytes());
        body
    }

    fn body(b: &[u8]) -> Vec<u8> {
        b[..b.len() - CRC_LINE_LEN].to_vec()
    }

    fn refused(b: &[u8]) -> Error {
        match LeaperModel::parse(b, "test bundle") {
            Ok(_) => panic!("accepted: {}", String::from_utf8_lossy(b)),
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                e
            }
        }
    }

    #[test]
    fn round_trip() {
        let b = bundle();
        let text = String::from_utf8(b.clone()).unwrap();
        assert!(text.starts_with("CAIRN-LEAPER-MODEL 1\n{"));
        assert!(text.contains("\nMODEL 1 "));
        assert_eq!(
            text.lines().nth(1).unwrap(),
            serde_json::to_string(&meta(2)).unwrap()
        );
        let m = LeaperModel::parse(&b, "test").unwrap();
        assert_eq!(m.meta(), &meta(2));
        assert_eq!(m.models().len(), 2);
        assert_eq!(m.precursors(7), [3, 9, 1]);
        assert_eq!(m.precursors(12), [7]);
        assert_eq!(m.precursors(8), [] as [u64; 0]);
        let mut x = [0.0; NUM_FEATURES];
        x[0] = 1.0;
        assert_eq!(m.models()[0].predict_raw(&x), 1.5);
        assert_eq!(m.models()[1].predict_raw(&x), 3.5);
        x[0] = 0.0;
        assert_eq!(m.models()[1].predict_raw(&x), -1.5);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("leaper.model");
        std::fs::write(&path, &b).unwrap();
        assert_eq!(LeaperModel::load(&path).unwrap().meta(), &meta(2));
        let missing = LeaperModel::load(dir.path().join("none")).unwrap_err();
        assert!(matches!(missing, Error::Io { .. }), "{missing}");
    }

    #[test]
    fn json_as_python_writes_it() {
        // json.dumps() defaults: ", " and ": " separators, other key order, extra fields.
        let json = r#"{"version": 1, "k": 1, "range_width": 20, "fine_range_width": 10, "key_offset": 2, "slot_ms": 500, "threshold": 0.25, "history_slots": 6, "gamma": 3, "features": ["r1", "r2", "r3", "r4", "r5", "r6", "w1", "w2", "w3", "w4", "w5", "w6", "hour", "minute", "second", "p1", "p2", "p3"], "precursors": {"5": [1, 2], "18446744073709551615": []}, "trained_unix_ms": 1, "trace_rows": 2, "report": {"x": null}, "learner": "0.1"}"#;
        let text = stump_text(1.0);
        let body = format!(
            "CAIRN-LEAPER-MODEL 1\n{json}\nMODEL 1 {}\n{text}",
            text.len()
        );
        let m = LeaperModel::parse(&reseal(body.into_bytes()), "py").unwrap();
        assert_eq!(m.meta().key_offset, 2);
        assert_eq!(m.precursors(5), [1, 2]);
        assert!(m.precursors(u64::MAX).is_empty());
        // Without the free-form report.
        let json2 = json.replace(r#", "report": {"x": null}"#, "");
        let body = format!(
            "CAIRN-LEAPER-MODEL 1\n{json2}\nMODEL 1 {}\n{text}",
            text.len()
        );
        let m = LeaperModel::parse(&reseal(body.into_bytes()), "py").unwrap();
        assert_eq!(m.meta().report, serde_json::Value::Null);
        // Range ids must be decimal strings of u64.
        for bad in [
            r#""x": [1]"#,
            r#""-5": [1]"#,
            r#""18446744073709551616": []"#,
        ] {
            let json3 = json.replace(r#""5": [1, 2]"#, bad);
            let body = format!(
                "CAIRN-LEAPER-MODEL 1\n{json3}\nMODEL 1 {}\n{text}",
                text.len()
            );
            let e = refused(&reseal(body.into_bytes()));
            assert!(e.to_string().contains("metadata"), "{e}");
        }
    }

    #[test]
    fn every_flipped_byte_is_refused() {
        let b = bundle();
        for i in 0..b.len() {
            for mask in [0x01, 0x20, 0x80, 0xff] {
                let mut c = b.clone();
                c[i] ^= mask;
                refused(&c);
            }
        }
    }

    #[test]
    fn every_truncation_is_refused() {
        let b = bundle();
        for len in 0..b.len() {
            refused(&b[..len]);
            // Also with a valid CRC over the truncated body: the structure catches it.
            if len < b.len() - CRC_LINE_LEN {
                refused(&reseal(b[..len].to_vec()));
            }
        }
        refused(&[b.as_slice(), b"\n"].concat());
        refused(&[b.as_slice(), b.as_slice()].concat());
    }

    #[test]
    fn malformed_bundles_are_refused_with_a_reason() {
        let text = stump_text(1.0);
        let expect = |b: Vec<u8>, what: &str| {
            let e = refused(&b);
            assert!(e.to_string().contains(what), "expected {what:?} in {e}");
        };
        let b = bundle();
        let mut wrong_magic = b.clone();
        wrong_magic[..5].copy_from_slice(b"CAIRM");
        expect(wrong_magic, "bad magic");
        expect(b"CAIRNLTR\x01\x00\x00\x00".to_vec(), "no header line");
        let v2 = reseal([b"CAIRN-LEAPER-MODEL 2", &body(&b)[20..]].concat());
        assert!(matches!(
            LeaperModel::parse(&v2, "x"),
            Err(Error::UnsupportedVersion {
                found: 2,
                supported: 1,
                ..
            })
        ));
        let v_bad = reseal([b"CAIRN-LEAPER-MODEL +1", &body(&b)[20..]].concat());
        expect(v_bad, "bad version");
        let mut crc = b.clone();
        let n = crc.len();
        crc[n - 2] = if crc[n - 2] == b'0' { b'1' } else { b'0' };
        expect(crc, "checksum mismatch");
        let mut upper = b.clone();
        upper[n - 9..n - 1].copy_from_slice(b"ABCDEF00");
        expect(upper, "CRC32C line");

        let with = |m: &LeaperMeta, texts: &[&str]| LeaperModel::encode(m, texts);
        expect(with(&meta(2), &[&text]), "1 MODEL sections, metadata k = 2");
        expect(with(&meta(1), &[&text, &text]), "after the last of k = 1");
        let mut m = meta(1);
        m.range_width = 0;
        expect(with(&m, &[&text]), "range_width");
        let mut m = meta(1);
        m.range_width = 45;
        expect(with(&m, &[&text]), "multiple");
        let mut m = meta(1);
        m.slot_ms = 0;
        expect(with(&m, &[&text]), "slot_ms");
        let mut m = meta(0);
        m.k = 0;
        expect(with(&m, &[] as &[&str]), "k must be positive");
        let mut m = meta(1);
        m.features.pop();
        expect(with(&m, &[&text]), "17 features, expected 18");
        let mut m = meta(1);
        m.features.swap(0, 1);
        expect(with(&m, &[&text]), "features");
        let mut m = meta(1);
        m.version = 2;
        expect(with(&m, &[&text]), "metadata version 2");
        let mut m = meta(1);
        m.threshold = 1.5;
        expect(with(&m, &[&text]), "threshold");
        let mut m = meta(1);
        m.gamma = 4;
        expect(with(&m, &[&text]), "gamma 4");
        let mut m = meta(1);
        m.history_slots = 5;
        expect(with(&m, &[&text]), "history_slots 5");
        let mut m = meta(1);
        m.gamma = 1;
        expect(with(&m, &[&text]), "range 7 has 3 precursors (gamma is 1)");
        m.precursors = BTreeMap::from([(7, vec![3])]);
        assert_eq!(
            LeaperModel::parse(&with(&m, &[&text]), "g1")
                .unwrap()
                .precursors(7),
            [3]
        );
        let mut m = meta(1);
        m.precursors.insert(1, vec![1, 2, 3, 4]);
        expect(with(&m, &[&text]), "precursors");

        // The model must have 18 features and parse.
        let narrow = text
            .replace("max_feature_idx=17", "max_feature_idx=16")
            .replace("feature_names=r1 ", "feature_names=");
        expect(with(&meta(1), &[&narrow]), "model 1: 17 features");
        let broken = text.replace("left_child=-1", "left_child=0");
        expect(
            with(&meta(1), &[&broken]),
            "model 1: tree 0: node 0 reached twice",
        );

        // Section framing: wrong index, wrong lengths, extra bytes, bad metadata line.
        let body_of = |s: String| reseal(s.into_bytes());
        let json = serde_json::to_string(&meta(1)).unwrap();
        let hdr = "CAIRN-LEAPER-MODEL 1";
        let l = text.len();
        expect(
            body_of(format!("{hdr}\n{json}\nMODEL 2 {l}\n{text}")),
            "bad MODEL line",
        );
        expect(
            body_of(format!("{hdr}\n{json}\nMODEL 1 {l} \n{text}")),
            "bad MODEL line",
        );
        expect(
            body_of(format!("{hdr}\n{json}\nMODEL 1 0{l}\n{text}")),
            "bad MODEL line",
        );
        expect(
            body_of(format!("{hdr}\n{json}\nMODEL 1 -{l}\n{text}")),
            "bad MODEL line",
        );
        expect(
            body_of(format!("{hdr}\n{json}\nMODEL 1 {}\n{text}", l + 1)),
            "truncated",
        );
        expect(
            body_of(format!("{hdr}\n{json}\nMODEL 1 {}\n{text}", l - 1)),
            "1 unexpected",
        );
        expect(
            body_of(format!("{hdr}\n{json}\nMODEL 1 {l}\n{text}x")),
            "1 unexpected",
        );
        expect(body_of(format!("{hdr}\n{json}\n")), "0 MODEL sections");
        expect(body_of(format!("{hdr}\n{json}")), "no metadata line");
        expect(body_of(format!("{hdr}\n\n")), "metadata");
        expect(body_of(format!("{hdr}\n[]\n")), "metadata");
        let no_k = json.replace("\"k\":1,", "");
        expect(
            body_of(format!("{hdr}\n{no_k}\nMODEL 1 {l}\n{text}")),
            "missing field `k`",
        );
        let mut latin1 = format!("{hdr}\n{json}\nMODEL 1 {l}\n{text}").into_bytes();
        let n = latin1.len();
        latin1[n - 3] = 0xe9;
        expect(reseal(latin1), "not UTF-8");
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..5_000 {
            let len = rng.random_range(0..200);
            let g: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            refused(&g);
            refused(&[b"CAIRN-LEAPER-MODEL 1\n".as_slice(), &g].concat());
            // Garbage behind a valid header and checksum reaches the structural checks.
            let _ = LeaperModel::parse(
                &reseal([b"CAIRN-LEAPER-MODEL 1\n".as_slice(), &g].concat()),
                "g",
            );
        }
        // Mutations of a valid body, resealed so that they get past the checksum.
        let b = body(&bundle());
        let alphabet = b"0123456789 -\n{}[]\":,MODEL";
        for _ in 0..5_000 {
            let mut c = b.clone();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..c.len());
                match rng.random_range(0..3) {
                    0 => c[i] = alphabet[rng.random_range(0..alphabet.len())],
                    1 => {
                        c.remove(i);
                    }
                    _ => c.insert(i, alphabet[rng.random_range(0..alphabet.len())]),
                }
            }
            if let Ok(m) = LeaperModel::parse(&reseal(c), "mutant") {
                for model in m.models() {
                    model.predict(&[f64::NAN; NUM_FEATURES]);
                    model.predict(&[1.0; NUM_FEATURES]);
                }
            }
        }
    }
}
