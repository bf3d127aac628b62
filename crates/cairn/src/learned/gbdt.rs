//! Gradient-boosted decision trees in LightGBM's text model format (what
//! `Booster.save_model()` / `model_to_string()` write, LightGBM 4.x), parsed and evaluated
//! without LightGBM, with the same results.
//!
//! Supported: one output (`num_class=1`, one tree per iteration); objectives `binary
//! sigmoid:X` (prediction `1 / (1 + exp(-X * raw))`) and the regression family
//! (`regression`, `regression_l1`, `huber`, `fair`, `quantile`, `mape`: the raw score, or
//! `sign(raw) * raw^2` with `sqrt`); a model without an `objective` line (a custom
//! objective) predicts the raw score. Numerical and categorical splits, one-leaf trees.
//! Refused with an error: multiclass, random-forest averaging (`average_output`), linear
//! trees, other objectives, and anything malformed.
//!
//! **Semantics**, as in LightGBM's `tree.h` (`NumericalDecision`, `CategoricalDecision`)
//! and `gbdt_prediction.cpp`:
//! * `decision_type` bits: 0 categorical, 1 default-left, 2..3 missing type (0 None,
//!   1 Zero, 2 NaN).
//! * Numerical: NaN becomes 0.0 unless the missing type is NaN. With missing type Zero a
//!   value within `kZeroThreshold` of zero, and with missing type NaN a NaN, takes the
//!   default direction; otherwise `value <= threshold` goes left.
//! * Categorical: NaN and negative values go right; otherwise the value truncated toward
//!   zero is a category, and it goes left iff its bit is set in the node's bitset.
//! * The raw score is the f64 sum of the trees' leaf values in tree order. Leaf values are
//!   saved with the learning rate already applied (`Tree::Shrinkage` scales them before
//!   saving), so the `shrinkage=` line is informational and not applied again.
//!
//! **Layout and speed.** All trees are flattened into one array of 32-byte nodes. Children
//! are global indices; a leaf is a node whose children are itself and whose key is its
//! value. A root-to-leaf walk is a chain of dependent loads with an unpredictable branch
//! per node, so evaluation (a) decides a numerical split with one comparison and no branch
//! (see `Node`), and (b) walks `LANES` trees side by side until all of them are at a
//! leaf, which overlaps the chains' latencies. Leaves are still added in tree order.
//!
//! **Validation.** Parsing checks every field and that every tree is a proper tree (each
//! node and leaf reached exactly once from the root: no cycle, no shared or unreachable
//! node), then `GbdtModel::audit` re-checks on the final arrays that every index is in
//! range. Evaluation relies on that audit to index without bounds checks (about 30%
//! faster), and takes at most a tree's depth in steps, so it cannot loop.

use std::collections::HashMap;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Trees walked side by side (see the module comment).
const LANES: usize = 8;

/// Index of a leaf of value 0.0 that pads the last group of trees to [`LANES`].
const PAD: u32 = 0;

/// LightGBM's `kZeroThreshold`. It is declared `const double kZeroThreshold = 1e-35f`: a
/// *float* literal, so its value is the f32 nearest 1e-35 (1.0000000180025095e-35), not
/// 1e-35. LightGBM also writes this value as the threshold of splits between 0 and the
/// smallest positive bin, so the exact value matters.
const ZERO_THRESHOLD: f64 = 1e-35f32 as f64;

// `decision_type` bits (LightGBM's kCategoricalMask, kDefaultLeftMask; bits 2..3 are the
// missing type).
const DT_CATEGORICAL: u8 = 1;
const DT_DEFAULT_LEFT: u8 = 2;

// Node flags, precomputed from `decision_type` so evaluation needs no bit arithmetic on
// the missing type.
/// Where a NaN goes: the default direction for missing types Zero (NaN is first turned
/// into 0.0, which is "zero") and NaN; for missing type None NaN becomes 0.0 and is
/// compared with the threshold, which depends only on the node, so it is decided here.
const NAN_LEFT: u8 = 1;
/// Direction of missing values when the missing type is Zero or NaN.
const DEFAULT_LEFT: u8 = 2;
/// Missing type Zero: values within `ZERO_THRESHOLD` of 0 take the default direction.
const ZERO_MISSING: u8 = 4;
/// Categorical split (bitset lookup instead of a threshold).
const CATEGORICAL: u8 = 8;
/// Nodes that need [`GbdtModel::rare_left`].
const RARE: u8 = CATEGORICAL | ZERO_MISSING;

/// How the raw score becomes a prediction (LightGBM's `ObjectiveFunction::ConvertOutput`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Objective {
    /// `binary sigmoid:X`: probability `1 / (1 + exp(-X * raw))`.
    Sigmoid(f64),
    /// Regression objectives and models without an objective: the raw score.
    Identity,
    /// Regression objectives trained with `reg_sqrt`: `sign(raw) * raw * raw`.
    SignedSquare,
}

impl Objective {
    /// Applies the transform to a raw score, with LightGBM's operation order.
    pub fn transform(self, raw: f64) -> f64 {
        match self {
            Objective::Sigmoid(s) => 1.0 / (1.0 + (-s * raw).exp()),
            Objective::Identity => raw,
            Objective::SignedSquare => {
                let sign = (raw > 0.0) as i32 - (raw < 0.0) as i32;
                sign as f64 * raw * raw
            }
        }
    }
}

/// One node, 32 bytes (a power of two: indexing is a shift).
///
/// A numerical node (threshold `t`) decides with one comparison, `p = (v ^ mask) <= key`
/// (`^` on the bits: `mask` is 0 or the sign bit), and goes to `children[p]`:
/// * NaN goes right: `v <= t` is false for NaN, so `key = t`, `children = [right, left]`.
/// * NaN goes left: for non-NaN `v`, "goes right" is `v > t`, i.e. `-v < -t`, i.e.
///   `-v <= next_down(-t)`, which is false for NaN; so `mask` = sign,
///   `key = next_down(-t)`, `children = [left, right]`. (If `t` is +inf everything goes
///   left: `key` = NaN, which no comparison passes.)
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Node {
    /// See above. For a leaf, its value; for a [`RARE`] node, the threshold.
    key: f64,
    mask: u64,
    feature: u32,
    /// Global node indices; a leaf's are its own index (it steps to itself).
    children: [u32; 2],
    flags: u8,
}

/// The sign bit of an f64.
const SIGN: u64 = 1 << 63;

impl Node {
    fn leaf(index: u32, value: f64) -> Node {
        Node {
            key: value,
            mask: 0,
            feature: 0,
            children: [index; 2],
            flags: 0,
        }
    }
}

/// A parsed LightGBM model, ready to evaluate.
#[derive(Clone, Debug)]
pub struct GbdtModel {
    num_features: usize,
    feature_names: Vec<String>,
    objective: Objective,
    num_trees: usize,
    /// Whether any node is categorical or zero-as-missing (else a leaner loop runs).
    has_rare: bool,
    /// The trees' roots in groups of [`LANES`], the last padded with [`PAD`], each with the
    /// greatest depth of its trees (steps from the root to the deepest leaf).
    groups: Vec<([u32; LANES], u32)>,
    nodes: Vec<Node>,
    /// Parallel to `nodes`, read only for categorical nodes: (start, words) of the node's
    /// bitset in `cat_bits`. Kept apart so numerical nodes stay small.
    cat_range: Vec<(u32, u32)>,
    cat_bits: Vec<u32>,
}

type Detail<T> = std::result::Result<T, String>;

impl GbdtModel {
    /// Parses a LightGBM text model. Any malformation is an [`Error::Corruption`].
    pub fn parse(text: &str) -> Result<GbdtModel> {
        Self::parse_detail(text).map_err(|d| Error::corruption("LightGBM model", d))
    }

    /// [`parse`](Self::parse) with the bare error message, for callers that name the file.
    pub(crate) fn parse_detail(text: &str) -> Detail<GbdtModel> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).peekable();
        match lines.next() {
            Some((_, "tree")) => {}
            _ => return Err("not a LightGBM tree model (first line is not \"tree\")".into()),
        }

        // Header: `key=value` lines up to the first `Tree=` line.
        let mut header: HashMap<&str, &str> = HashMap::new();
        while let Some(&(no, line)) = lines.peek() {
            if line.starts_with("Tree=") || line == "end of trees" {
                break;
            }
            lines.next();
            if line.is_empty() {
                continue;
            }
            let (key, value) = match line.split_once('=') {
                Some(kv) => kv,
                None if line == "average_output" => {
                    return Err("random-forest models (average_output) are not supported".into())
                }
                None => return Err(format!("line {no}: expected key=value, found {line:?}")),
            };
            if header.insert(key, value).is_some() {
                return Err(format!("line {no}: duplicate header key {key:?}"));
            }
        }
        let num_class: usize = header_value(&header, "num_class")?;
        if num_class != 1 {
            return Err(format!(
                "num_class={num_class}: only one output is supported"
            ));
        }
        if header.contains_key("num_tree_per_iteration") {
            let per_iter: usize = header_value(&header, "num_tree_per_iteration")?;
            if per_iter != 1 {
                return Err(format!("num_tree_per_iteration={per_iter}: expected 1"));
            }
        }
        let max_feature_idx: usize = header_value(&header, "max_feature_idx")?;
        let num_features = max_feature_idx
            .checked_add(1)
            .ok_or("max_feature_idx out of range")?;
        let names = header
            .get("feature_names")
            .ok_or("missing header field feature_names")?;
        let feature_names: Vec<String> = names.split(' ').map(str::to_owned).collect();
        if feature_names.len() != num_features {
            return Err(format!(
                "feature_names has {} names, max_feature_idx={max_feature_idx} wants {num_features}",
                feature_names.len()
            ));
        }
        let objective = match header.get("objective") {
            Some(s) => parse_objective(s)?,
            None => Objective::Identity,
        };

        let mut model = GbdtModel {
            num_features,
            feature_names,
            objective,
            num_trees: 0,
            has_rare: false,
            groups: Vec::new(),
            nodes: vec![Node::leaf(PAD, 0.0)],
            cat_range: vec![(0, 0)],
            cat_bits: Vec::new(),
        };

        // Trees: `Tree=i` then `key=value` lines up to a blank line; `end of trees` ends
        // the list (what follows, feature importances and parameters, is not needed).
        let mut ended = false;
        while let Some((no, line)) = lines.next() {
            if line.is_empty() {
                continue;
            }
            if line == "end of trees" {
                ended = true;
                break;
            }
            let id = line.strip_prefix("Tree=").ok_or_else(|| {
                format!("line {no}: expected Tree= or end of trees, found {line:?}")
            })?;
            if id != model.num_trees.to_string() {
                return Err(format!(
                    "line {no}: found Tree={id}, expected Tree={}",
                    model.num_trees
                ));
            }
            let mut fields: HashMap<&str, &str> = HashMap::new();
            for (no, line) in lines.by_ref() {
                if line.is_empty() {
                    break;
                }
                let (key, value) = line
                    .split_once('=')
                    .ok_or_else(|| format!("line {no}: expected key=value, found {line:?}"))?;
                if fields.insert(key, value).is_some() {
                    return Err(format!("line {no}: duplicate key {key:?}"));
                }
            }
            model
                .add_tree(&fields)
                .map_err(|e| format!("tree {id}: {e}"))?;
        }
        if !ended {
            return Err("truncated: no \"end of trees\" line".into());
        }
        model.audit()?;
        if let Some(sizes) = header.get("tree_sizes") {
            let n = if sizes.is_empty() {
                0
            } else {
                sizes.split(' ').count()
            };
            if n != model.num_trees {
                return Err(format!(
                    "tree_sizes lists {n} trees, the model has {}",
                    model.num_trees
                ));
            }
        }
        Ok(model)
    }

    /// Validates one tree's fields and appends it to the flattened arrays.
    fn add_tree(&mut self, f: &HashMap<&str, &str>) -> Detail<()> {
        let num_leaves: usize = field(f, "num_leaves")?;
        if num_leaves == 0 {
            return Err("num_leaves=0".into());
        }
        let num_cat: usize = field(f, "num_cat")?;
        if f.get("is_linear").is_some_and(|v| *v != "0") {
            return Err("linear trees are not supported".into());
        }
        if f.contains_key("shrinkage") {
            // Already applied to leaf_value by LightGBM; only checked to be a number.
            field::<f64>(f, "shrinkage")?;
        }
        let leaf_value: Vec<f64> = array(f, "leaf_value", num_leaves)?;
        if let Some(v) = leaf_value.iter().find(|v| !v.is_finite()) {
            return Err(format!("leaf_value {v} is not finite"));
        }
        // Global indices are u32.
        if self.nodes.len() + 2 * num_leaves > u32::MAX as usize {
            return Err("model too large".into());
        }
        let base = self.nodes.len() as u32;
        if num_leaves == 1 {
            // A constant tree: LightGBM returns leaf_value[0] without looking at the
            // (empty) split arrays.
            self.nodes.push(Node::leaf(base, leaf_value[0]));
            self.cat_range.push((0, 0));
            self.add_root(base, 0);
            return Ok(());
        }

        let n = num_leaves - 1;
        let split_feature: Vec<u32> = array(f, "split_feature", n)?;
        let threshold: Vec<f64> = array(f, "threshold", n)?;
        let decision_type: Vec<u8> = if f.contains_key("decision_type") {
            array(f, "decision_type", n)?
        } else {
            vec![0; n] // LightGBM's default when the field is absent
        };
        let left: Vec<i64> = array(f, "left_child", n)?;
        let right: Vec<i64> = array(f, "right_child", n)?;
        let (cat_boundaries, cat_threshold): (Vec<usize>, Vec<u32>) = if num_cat > 0 {
            let b: Vec<usize> = array(f, "cat_boundaries", num_cat.saturating_add(1))?;
            if b[0] != 0 || b.windows(2).any(|w| w[0] > w[1]) {
                return Err("cat_boundaries must start at 0 and not decrease".into());
            }
            let t = array(f, "cat_threshold", b[num_cat])?;
            (b, t)
        } else {
            (Vec::new(), Vec::new())
        };

        let depth = tree_depth(&left, &right, num_leaves)?;

        // Nodes 0..n of the tree are at base.., its leaves right after them.
        let global = |c: i64| -> u32 {
            if c >= 0 {
                base + c as u32
            } else {
                base + n as u32 + !c as u32
            }
        };
        let cat_base = self.cat_bits.len();
        if cat_base + cat_threshold.len() > u32::MAX as usize {
            return Err("model too large".into());
        }
        for i in 0..n {
            let dt = decision_type[i];
            let missing = (dt >> 2) & 3;
            if dt > 15 || missing == 3 {
                return Err(format!("node {i}: invalid decision_type {dt}"));
            }
            if split_feature[i] as usize >= self.num_features {
                return Err(format!(
                    "node {i}: split_feature {} >= {} features",
                    split_feature[i], self.num_features
                ));
            }
            let t = threshold[i];
            if t.is_nan() {
                return Err(format!("node {i}: threshold is NaN"));
            }
            let mut flags = if dt & DT_DEFAULT_LEFT != 0 {
                DEFAULT_LEFT
            } else {
                0
            };
            let mut range = (0, 0);
            if dt & DT_CATEGORICAL != 0 {
                // The threshold is the index of the node's bitset (cat_boundaries slot).
                if t < 0.0 || t.fract() != 0.0 || t >= num_cat as f64 {
                    return Err(format!("node {i}: category set {t} out of range"));
                }
                let c = t as usize;
                let start = cat_base + cat_boundaries[c];
                let words = cat_boundaries[c + 1] - cat_boundaries[c];
                range = (start as u32, words as u32);
                flags |= CATEGORICAL;
                self.has_rare = true;
            } else {
                let nan_left = match missing {
                    0 => 0.0 <= t,
                    _ => dt & DT_DEFAULT_LEFT != 0,
                };
                if nan_left {
                    flags |= NAN_LEFT;
                }
                if missing == 1 {
                    flags |= ZERO_MISSING;
                    self.has_rare = true;
                }
            }
            // The one-comparison form of the decision (see `Node`).
            let (l, r) = (global(left[i]), global(right[i]));
            // (rare_left decides at RARE nodes, from the plain threshold.)
            let (key, mask, children) = if flags & (RARE | NAN_LEFT) != NAN_LEFT {
                (t, 0, [r, l])
            } else if t == f64::INFINITY {
                (f64::NAN, 0, [l, r])
            } else {
                ((-t).next_down(), SIGN, [l, r])
            };
            self.nodes.push(Node {
                key,
                mask,
                feature: split_feature[i],
                children,
                flags,
            });
            self.cat_range.push(range);
        }
        for (j, &v) in leaf_value.iter().enumerate() {
            self.nodes.push(Node::leaf(base + (n + j) as u32, v));
            self.cat_range.push((0, 0));
        }
        self.cat_bits.extend_from_slice(&cat_threshold);
        self.add_root(base, depth);
        Ok(())
    }

    /// Re-checks, on the final arrays, the facts that evaluation's unchecked indexing
    /// relies on: every root and child is a node index and every split feature an input
    /// index. `add_tree` already ensures them; this is a short, independent check so that
    /// memory safety does not hang on the tree-validation logic. (Termination needs no
    /// check: evaluation takes at most a group's `depth` steps.)
    fn audit(&self) -> Detail<()> {
        let n = self.nodes.len();
        let roots_ok = self
            .groups
            .iter()
            .all(|(r, _)| r.iter().all(|&a| (a as usize) < n));
        let nodes_ok = self.nodes.iter().all(|node| {
            node.children.iter().all(|&c| (c as usize) < n)
                && (node.feature as usize) < self.num_features
        });
        let cats_ok = self.cat_range.len() == n
            && self
                .cat_range
                .iter()
                .all(|&(start, words)| start as usize + words as usize <= self.cat_bits.len());
        if roots_ok && nodes_ok && cats_ok {
            Ok(())
        } else {
            Err("internal index check failed".into())
        }
    }

    fn add_root(&mut self, root: u32, depth: u32) {
        let lane = self.num_trees % LANES;
        if lane == 0 {
            self.groups.push(([PAD; LANES], 0));
        }
        let group = self.groups.last_mut().expect("pushed above");
        group.0[lane] = root;
        group.1 = group.1.max(depth);
        self.num_trees += 1;
    }

    /// Number of input features (`max_feature_idx + 1`); inputs must have at least this
    /// many values.
    pub fn num_features(&self) -> usize {
        self.num_features
    }

    /// The feature names the model was trained with.
    pub fn feature_names(&self) -> &[String] {
        &self.feature_names
    }

    /// Number of trees.
    pub fn num_trees(&self) -> usize {
        self.num_trees
    }

    /// The output transform.
    pub fn objective(&self) -> Objective {
        self.objective
    }

    /// The raw score (LightGBM's `predict(raw_score=True)`): the sum of the trees' outputs.
    ///
    /// # Panics
    /// If `features` has fewer than [`num_features`](Self::num_features) values (a bug in
    /// the caller).
    pub fn predict_raw(&self, features: &[f64]) -> f64 {
        assert!(
            features.len() >= self.num_features,
            "model needs {} features, got {}",
            self.num_features,
            features.len()
        );
        if self.has_rare {
            self.walk::<true>(features)
        } else {
            self.walk::<false>(features)
        }
    }

    /// [`predict_raw`](Self::predict_raw), compiled for models with (`RARE_NODES`) and
    /// without categorical or zero-as-missing nodes.
    fn walk<const RARE_NODES: bool>(&self, features: &[f64]) -> f64 {
        let mut sum = 0.0f64;
        let mut live = self.num_trees;
        for (roots, depth) in &self.groups {
            let mut at = *roots;
            // Step until every lane is at its leaf (a leaf steps to itself); `depth`
            // steps always get there.
            for _ in 0..*depth {
                let mut moved = 0;
                for a in &mut at {
                    let next = self.step::<RARE_NODES>(*a, features);
                    moved |= next ^ *a;
                    *a = next;
                }
                if moved == 0 {
                    break;
                }
            }
            // Add the leaves in tree order, as LightGBM does (f64 addition is not
            // associative); the padding lanes of the last group are not added.
            for &a in &at[..live.min(LANES)] {
                sum += self.nodes[a as usize].key;
            }
            live = live.saturating_sub(LANES);
        }
        sum
    }

    /// One step down from node `at` (a leaf stays where it is).
    #[inline(always)]
    fn step<const RARE_NODES: bool>(&self, at: u32, features: &[f64]) -> u32 {
        debug_assert!((at as usize) < self.nodes.len());
        // SAFETY: `at` is a root or a child index, all checked to be < nodes.len() by
        // `audit` when the model was parsed (the model is immutable afterwards).
        let node = unsafe { self.nodes.get_unchecked(at as usize) };
        debug_assert!((node.feature as usize) < features.len());
        // SAFETY: `audit` checked feature < num_features, and predict_raw asserted
        // features.len() >= num_features.
        let v = unsafe { *features.get_unchecked(node.feature as usize) };
        let p = if !RARE_NODES || node.flags & RARE == 0 {
            f64::from_bits(v.to_bits() ^ node.mask) <= node.key
        } else {
            self.rare_left(at, v)
        };
        node.children[p as usize]
    }

    /// The decision at categorical and zero-as-missing nodes, out of line so that the
    /// common step stays small enough to unroll across lanes.
    #[inline(never)]
    fn rare_left(&self, at: u32, v: f64) -> bool {
        let node = &self.nodes[at as usize];
        if node.flags & CATEGORICAL != 0 {
            self.category_left(at as usize, v)
        } else if v.is_nan() {
            node.flags & NAN_LEFT != 0
        } else if v.abs() <= ZERO_THRESHOLD {
            node.flags & DEFAULT_LEFT != 0
        } else {
            v <= node.key
        }
    }

    /// The prediction (LightGBM's `predict()`): the raw score through the objective's
    /// transform, e.g. a probability for `binary`.
    pub fn predict(&self, features: &[f64]) -> f64 {
        self.objective.transform(self.predict_raw(features))
    }

    /// LightGBM's `CategoricalDecision`.
    fn category_left(&self, node: usize, v: f64) -> bool {
        if v.is_nan() {
            return false;
        }
        // C++ `static_cast<int>` truncates toward zero, as `as` does. Out of i32 range C++
        // is undefined (x86 gives INT_MIN, which goes right) and Rust saturates (i32::MAX
        // lies beyond any bitset, which also goes right): the same result.
        let c = v as i32;
        if c < 0 {
            return false;
        }
        let (start, words) = self.cat_range[node];
        let word = (c / 32) as u32;
        word < words && (self.cat_bits[(start + word) as usize] >> (c % 32)) & 1 == 1
    }
}

/// Parses `objective=...` (e.g. `binary sigmoid:1`, `regression`, `regression sqrt`).
fn parse_objective(s: &str) -> Detail<Objective> {
    let mut tokens = s.split(' ');
    let name = tokens.next().unwrap_or("");
    match name {
        "binary" => {
            let sigmoid = tokens
                .find_map(|t| t.strip_prefix("sigmoid:"))
                .ok_or("binary objective without sigmoid:")?;
            let sigmoid: f64 = parse_num("sigmoid", sigmoid)?;
            if !(sigmoid > 0.0 && sigmoid.is_finite()) {
                return Err(format!("sigmoid {sigmoid} must be positive"));
            }
            Ok(Objective::Sigmoid(sigmoid))
        }
        "regression" | "regression_l1" | "huber" | "fair" | "quantile" | "mape" => {
            if tokens.any(|t| t == "sqrt") {
                Ok(Objective::SignedSquare)
            } else {
                Ok(Objective::Identity)
            }
        }
        _ => Err(format!("unsupported objective {s:?}")),
    }
}

fn parse_num<T: FromStr>(what: &str, s: &str) -> Detail<T> {
    s.parse()
        .map_err(|_| format!("{what}: bad number {:?}", truncate(s)))
}

fn header_value<T: FromStr>(h: &HashMap<&str, &str>, key: &str) -> Detail<T> {
    let v = h
        .get(key)
        .ok_or_else(|| format!("missing header field {key}"))?;
    parse_num(key, v)
}

fn field<T: FromStr>(f: &HashMap<&str, &str>, key: &str) -> Detail<T> {
    let v = f.get(key).ok_or_else(|| format!("missing field {key}"))?;
    parse_num(key, v)
}

/// A space-separated array of exactly `n` values (LightGBM's `StringToArray`).
fn array<T: FromStr>(f: &HashMap<&str, &str>, key: &str, n: usize) -> Detail<Vec<T>> {
    let v = f.get(key).ok_or_else(|| format!("missing field {key}"))?;
    let values: Vec<T> = if v.is_empty() {
        Vec::new()
    } else {
        v.split(' ')
            .map(|s| parse_num(key, s))
            .collect::<Detail<_>>()?
    };
    if values.len() != n {
        return Err(format!("{key} has {} values, expected {n}", values.len()));
    }
    Ok(values)
}

/// At most 40 characters of `s`, for error messages.
fn truncate(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// A tree's structure, checked by a walk from the root: every node and leaf must be
/// reached exactly once (no out-of-range child, cycle or shared subtree). Returns the
/// depth. `left` and `right` hold `num_leaves - 1` nodes' children (a leaf `l` as `!l`).
fn tree_depth(left: &[i64], right: &[i64], num_leaves: usize) -> Detail<u32> {
    // Structure: walk from the root; every node and leaf must be reached exactly once.
    // This rules out out-of-range children, cycles and shared subtrees, and gives the
    // depth.
    let n = num_leaves - 1;
    let mut seen_node = vec![false; n];
    let mut seen_leaf = vec![false; num_leaves];
    let mut stack = vec![(0usize, 0u32)];
    let mut depth = 0;
    seen_node[0] = true;
    while let Some((i, d)) = stack.pop() {
        for c in [left[i], right[i]] {
            if c >= 0 {
                let c = c as usize;
                match seen_node.get_mut(c) {
                    None => return Err(format!("node {i}: child node {c} out of range")),
                    Some(true) => return Err(format!("node {c} reached twice (cycle)")),
                    Some(s) => *s = true,
                }
                stack.push((c, d + 1));
            } else {
                let l = usize::try_from(!c).unwrap_or(usize::MAX);
                match seen_leaf.get_mut(l) {
                    None => return Err(format!("node {i}: child leaf {l} out of range")),
                    Some(true) => return Err(format!("leaf {l} reached twice")),
                    Some(s) => *s = true,
                }
                depth = depth.max(d + 1);
            }
        }
    }
    if seen_node.contains(&false) || seen_leaf.contains(&false) {
        return Err("unreachable nodes or leaves".into());
    }
    Ok(depth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A model text in LightGBM's layout around the given tree blocks (fields of each
    /// tree, without the `Tree=i` line).
    fn model_text(objective: &str, features: usize, trees: &[&str]) -> String {
        let names: Vec<String> = (0..features).map(|i| format!("f{i}")).collect();
        let mut s = format!(
            "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n\
             max_feature_idx={}\n{objective}feature_names={}\nfeature_infos={}\n\
             tree_sizes={}\n\n",
            features - 1,
            names.join(" "),
            vec!["none"; features].join(" "),
            vec!["100"; trees.len()].join(" "),
        );
        for (i, t) in trees.iter().enumerate() {
            s += &format!("Tree={i}\n{t}\n\n");
        }
        s += "end of trees\n\nfeature_importances:\nf0=1\n\nparameters:\n[boosting: gbdt]\n\
              end of parameters\n\npandas_categorical:null\n";
        s
    }

    /// x[1] <= 0.5 (missing type None, default left) -> -1, else 2.
    const STUMP: &str = "num_leaves=2\nnum_cat=0\nsplit_feature=1\nsplit_gain=1\n\
        threshold=0.5\ndecision_type=2\nleft_child=-1\nright_child=-2\nleaf_value=-1 2\n\
        leaf_weight=1 1\nleaf_count=1 1\ninternal_value=0\ninternal_weight=0\n\
        internal_count=2\nis_linear=0\nshrinkage=1";

    /// Node 0: x[0] <= 1.5, missing type NaN, default right -> leaf 0 (0.25) | node 1.
    /// Node 1: x[1] <= -0.5, missing type Zero, default left -> leaf 1 (0.5) | leaf 2.
    const MISSING: &str = "num_leaves=3\nnum_cat=0\nsplit_feature=0 1\nsplit_gain=1 1\n\
        threshold=1.5 -0.5\ndecision_type=8 6\nleft_child=-1 -2\nright_child=1 -3\n\
        leaf_value=0.25 0.5 -0.75\nleaf_weight=1 1 1\nleaf_count=1 1 1\n\
        internal_value=0 0\ninternal_weight=0 0\ninternal_count=3 2\nis_linear=0\n\
        shrinkage=0.05";

    /// x[2] <= -1, missing type None: NaN becomes 0.0 and goes right. -> 10 | 20.
    const NONE_NEG: &str = "num_leaves=2\nnum_cat=0\nsplit_feature=2\nthreshold=-1\n\
        decision_type=0\nleft_child=-1\nright_child=-2\nleaf_value=10 20\nis_linear=0";

    /// A constant tree as LightGBM writes it (empty split arrays).
    const CONSTANT: &str = "num_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\n\
        threshold=\ndecision_type=\nleft_child=\nright_child=\nleaf_value=0.125\n\
        leaf_weight=\nleaf_count=200\ninternal_value=\ninternal_weight=\ninternal_count=\n\
        is_linear=0\nshrinkage=1";

    /// x[2] in {0, 1, 3, 33} -> 1, else -1 (a two-word bitset: 11 = 0b1011, 2 = bit 33).
    const CATEGORICAL_TREE: &str = "num_leaves=2\nnum_cat=1\nsplit_feature=2\nsplit_gain=1\n\
        threshold=0\ndecision_type=1\nleft_child=-1\nright_child=-2\nleaf_value=1 -1\n\
        leaf_weight=1 1\nleaf_count=1 1\ninternal_value=0\ninternal_weight=0\n\
        internal_count=2\ncat_boundaries=0 2\ncat_threshold=11 2\nis_linear=0\nshrinkage=1";

    const BINARY: &str = "objective=binary sigmoid:1\n";
    const REGRESSION: &str = "objective=regression\n";

    fn one(tree: &str) -> GbdtModel {
        GbdtModel::parse(&model_text(REGRESSION, 3, &[tree])).unwrap()
    }

    #[test]
    fn stump() {
        let m = GbdtModel::parse(&model_text(BINARY, 3, &[STUMP])).unwrap();
        assert_eq!(m.num_features(), 3);
        assert_eq!(m.num_trees(), 1);
        assert_eq!(m.feature_names(), ["f0", "f1", "f2"]);
        assert_eq!(m.objective(), Objective::Sigmoid(1.0));
        assert_eq!(m.predict_raw(&[9.0, 0.5, 9.0]), -1.0); // <= goes left
        assert_eq!(m.predict_raw(&[9.0, 0.6, 9.0]), 2.0);
        assert_eq!(m.predict_raw(&[9.0, f64::NAN, 9.0]), -1.0); // NaN -> 0.0 <= 0.5
        assert_eq!(m.predict(&[0.0, 0.0, 0.0]), 1.0 / (1.0 + 1f64.exp()));
        assert_eq!(m.predict(&[0.0, 1.0, 0.0]), 1.0 / (1.0 + (-2f64).exp()));
        let m = GbdtModel::parse(&model_text("objective=binary sigmoid:0.5\n", 3, &[STUMP]));
        assert_eq!(
            m.unwrap().predict(&[0.0, 1.0, 0.0]),
            1.0 / (1.0 + (-1f64).exp())
        );
    }

    #[test]
    fn missing_values() {
        let m = one(MISSING);
        let p = |a: f64, b: f64| m.predict_raw(&[a, b, 0.0]);
        assert_eq!(p(1.5, 7.0), 0.25);
        assert_eq!(p(-1e300, 7.0), 0.25);
        assert_eq!(p(f64::NAN, 7.0), -0.75); // NaN missing, default right
        assert_eq!(p(f64::INFINITY, -9.0), 0.5);
        // Zero missing: |b| <= 1e-35f goes to the default (left) whatever the threshold.
        assert_eq!(p(2.0, 0.0), 0.5);
        assert_eq!(p(2.0, -0.0), 0.5);
        assert_eq!(p(2.0, 1e-36), 0.5);
        assert_eq!(p(2.0, 1.0000000180025095e-35), 0.5);
        assert_eq!(p(2.0, -1.0000000180025095e-35), 0.5);
        assert_eq!(p(2.0, ZERO_THRESHOLD.next_up()), -0.75);
        assert_eq!(p(2.0, f64::NAN), 0.5); // NaN -> 0.0 -> zero -> default
        assert_eq!(p(2.0, -0.5), 0.5);
        assert_eq!(p(2.0, -0.4), -0.75);
        assert_eq!(p(2.0, -2e-35), -0.75); // not "zero", and > -0.5

        let m = one(NONE_NEG);
        let p = |c: f64| m.predict_raw(&[0.0, 0.0, c]);
        assert_eq!(p(f64::NAN), 20.0);
        assert_eq!(p(-1.0), 10.0);
        assert_eq!(p(f64::NEG_INFINITY), 10.0);
        assert_eq!(p(f64::INFINITY), 20.0);
        assert_eq!(p(0.0), 20.0);
        assert_eq!(ZERO_THRESHOLD, 1.0000000180025095e-35);
    }

    #[test]
    fn infinite_thresholds() {
        // LightGBM does not write these, but they parse, so they must decide as it would.
        let tree = |t: &str, dt: u8| {
            one(&format!(
                "num_leaves=2\nnum_cat=0\nsplit_feature=0\nthreshold={t}\n\
                 decision_type={dt}\nleft_child=-1\nright_child=-2\nleaf_value=1 2"
            ))
        };
        type Case<'a> = (&'a str, u8, &'a [(f64, f64)]);
        let cases: &[Case] = &[
            // Missing type None: NaN is 0.0.
            (
                "inf",
                0,
                &[(f64::INFINITY, 1.0), (f64::NAN, 1.0), (5.0, 1.0)],
            ),
            (
                "-inf",
                0,
                &[(f64::NEG_INFINITY, 1.0), (f64::NAN, 2.0), (-5.0, 2.0)],
            ),
            (
                "0",
                0,
                &[(0.0, 1.0), (-0.0, 1.0), (f64::NAN, 1.0), (5e-324, 2.0)],
            ),
            (
                "-0",
                0,
                &[(0.0, 1.0), (f64::NAN, 1.0), (-5e-324, 1.0), (5e-324, 2.0)],
            ),
            // Missing type NaN, default left / right.
            (
                "inf",
                10,
                &[(f64::INFINITY, 1.0), (f64::NAN, 1.0), (f64::MAX, 1.0)],
            ),
            ("inf", 8, &[(f64::INFINITY, 1.0), (f64::NAN, 2.0)]),
            (
                "-inf",
                10,
                &[(f64::NEG_INFINITY, 1.0), (f64::NAN, 1.0), (f64::MIN, 2.0)],
            ),
            (
                "-inf",
                8,
                &[(f64::NEG_INFINITY, 1.0), (f64::NAN, 2.0), (0.0, 2.0)],
            ),
            (
                "1e308",
                10,
                &[(1e308, 1.0), (f64::MAX, 2.0), (f64::INFINITY, 2.0)],
            ),
        ];
        for (t, dt, points) in cases {
            let m = tree(t, *dt);
            for &(v, want) in points.iter() {
                assert_eq!(m.predict_raw(&[v, 0.0, 0.0]), want, "t={t} dt={dt} v={v}");
            }
        }
    }

    #[test]
    fn sum_of_trees_and_constant_tree() {
        let m = GbdtModel::parse(&model_text(
            REGRESSION,
            3,
            &[CONSTANT, MISSING, STUMP, NONE_NEG, CATEGORICAL_TREE],
        ))
        .unwrap();
        assert_eq!(m.num_trees(), 5);
        assert_eq!(m.objective(), Objective::Identity);
        let x = [2.0, 0.7, 3.0];
        assert_eq!(m.predict_raw(&x), 0.125 + -0.75 + 2.0 + 20.0 + 1.0);
        assert_eq!(m.predict(&x), m.predict_raw(&x));
        let c = GbdtModel::parse(&model_text(BINARY, 3, &[CONSTANT])).unwrap();
        assert_eq!(c.predict_raw(&[f64::NAN; 3]), 0.125);
        // No objective line (custom objective): the raw score.
        let m = GbdtModel::parse(&model_text("", 3, &[STUMP])).unwrap();
        assert_eq!(m.predict(&[0.0, 1.0, 0.0]), 2.0);
        let m = GbdtModel::parse(&model_text("objective=regression sqrt\n", 3, &[STUMP]));
        let m = m.unwrap();
        assert_eq!(m.predict(&[0.0, 0.0, 0.0]), -1.0);
        assert_eq!(m.predict(&[0.0, 1.0, 0.0]), 4.0);
        // A model without trees predicts 0.
        let m = GbdtModel::parse(&model_text(REGRESSION, 3, &[])).unwrap();
        assert_eq!(m.predict_raw(&[0.0; 3]), 0.0);
    }

    #[test]
    fn categorical() {
        let m = one(CATEGORICAL_TREE);
        let p = |c: f64| m.predict_raw(&[0.0, 0.0, c]);
        for c in [0.0, 1.0, 3.0, 3.9, 33.0, 33.5, -0.5, -0.0] {
            assert_eq!(p(c), 1.0, "category {c}");
        }
        let outside = [
            2.0,
            4.0,
            32.0,
            34.0,
            63.0,
            64.0,
            1e10,
            -1.0,
            -1e10,
            f64::INFINITY,
        ];
        for c in outside.into_iter().chain([f64::NEG_INFINITY, f64::NAN]) {
            assert_eq!(p(c), -1.0, "category {c}");
        }
    }

    #[test]
    fn windows_line_endings() {
        let text = model_text(BINARY, 3, &[MISSING, CATEGORICAL_TREE]).replace('\n', "\r\n");
        let m = GbdtModel::parse(&text).unwrap();
        assert_eq!(m.predict_raw(&[2.0, 0.0, 1.0]), 1.5);
    }

    #[test]
    #[should_panic(expected = "model needs 3 features")]
    fn short_input_is_a_caller_bug() {
        one(STUMP).predict_raw(&[0.0, 0.0]);
    }

    #[test]
    fn malformed_texts_are_errors() {
        let good = model_text(BINARY, 3, &[MISSING, CATEGORICAL_TREE, CONSTANT]);
        GbdtModel::parse(&good).unwrap();
        let cases: &[(&str, &str)] = &[
            ("tree\n", "xtree\n"),
            ("num_class=1", "num_class=2"),
            ("num_class=1", "num_class=x"),
            ("num_class=1\n", ""),
            ("num_tree_per_iteration=1", "num_tree_per_iteration=3"),
            ("max_feature_idx=2", "max_feature_idx=3"),
            ("max_feature_idx=2", "max_feature_idx=-1"),
            ("feature_names=f0 f1 f2", "feature_names=f0 f1"),
            ("sigmoid:1", "sigmoid:0"),
            ("sigmoid:1", "sigmoid:nan"),
            ("binary sigmoid:1", "binary"),
            ("binary sigmoid:1", "multiclass num_class:3"),
            ("binary sigmoid:1", "poisson"),
            ("label_index=0\n", "label_index=0\naverage_output\n"),
            ("label_index=0\n", "label_index=0\nnonsense\n"),
            ("tree_sizes=100 100 100", "tree_sizes=100 100"),
            ("Tree=1", "Tree=2"),
            ("Tree=1", "Tree=01"),
            ("Tree=0\n", "Tree=0\nbroken line\n"),
            ("end of trees\n", "Tree=3\n"),
            ("end of trees\n", "the end\n"),
            ("num_leaves=3", "num_leaves=4"),
            ("num_leaves=3", "num_leaves=0"),
            ("num_leaves=3", "num_leaves=-3"),
            ("num_leaves=3\nnum_cat=0\n", "num_leaves=3\n"),
            (
                "num_leaves=3\nnum_cat=0\n",
                "num_leaves=3\nnum_cat=0\nnum_cat=0\n",
            ),
            ("leaf_value=0.25 0.5 -0.75", "leaf_value=0.25 0.5"),
            ("leaf_value=0.25 0.5 -0.75", "leaf_value=0.25 0.5 -0.75 1"),
            ("leaf_value=0.25 0.5 -0.75", "leaf_value=0.25 0.5 nan"),
            ("leaf_value=0.25 0.5 -0.75", "leaf_value=0.25 0.5 inf"),
            ("leaf_value=0.25 0.5 -0.75", "leaf_value=0.25 0.5x -0.75"),
            ("leaf_value=0.25 0.5 -0.75", "leaf_value=0.25  0.5 -0.75"),
            ("leaf_value=0.25 0.5 -0.75\n", ""),
            ("leaf_value=0.125", "leaf_value="),
            ("leaf_value=0.125", "leaf_value=0.125 1"),
            ("threshold=1.5 -0.5", "threshold=1.5 nan"),
            ("threshold=1.5 -0.5", "threshold=1.5"),
            ("split_feature=0 1", "split_feature=0 3"),
            ("split_feature=0 1", "split_feature=0 -1"),
            ("split_feature=0 1\n", ""),
            ("decision_type=8 6", "decision_type=8 12"),
            ("decision_type=8 6", "decision_type=8 16"),
            ("decision_type=8 6", "decision_type=8 -2"),
            ("left_child=-1 -2", "left_child=-1 -4"),
            ("left_child=-1 -2", "left_child=-1 2"),
            ("left_child=-1 -2", "left_child=-1 0"),
            ("left_child=-1 -2", "left_child=-1 1"),
            ("left_child=-1 -2", "left_child=-1 -3"),
            ("left_child=-1 -2", "left_child=-1 -9223372036854775808"),
            ("left_child=-1 -2", "left_child=-1 99999999999999999999"),
            ("right_child=1 -3", "right_child=-3 -2"),
            ("right_child=1 -3\n", ""),
            ("is_linear=0\nshrinkage=0.05", "is_linear=1\nshrinkage=0.05"),
            ("shrinkage=0.05", "shrinkage=fast"),
            ("num_cat=1", "num_cat=0"),
            ("num_cat=1", "num_cat=2"),
            ("cat_boundaries=0 2", "cat_boundaries=1 2"),
            ("cat_boundaries=0 2", "cat_boundaries=0 3"),
            ("cat_boundaries=0 2", "cat_boundaries=0"),
            ("cat_threshold=11 2", "cat_threshold=11 -2"),
            ("cat_threshold=11 2", "cat_threshold=11 4294967296"),
            ("threshold=0\n", "threshold=1\n"),
            ("threshold=0\n", "threshold=0.5\n"),
            ("threshold=0\n", "threshold=-1\n"),
        ];
        for (from, to) in cases {
            assert!(good.contains(from), "{from:?} not in the model text");
            let bad = good.replacen(from, to, 1);
            match GbdtModel::parse(&bad) {
                Err(e) => assert!(e.is_corruption(), "{from:?} -> {to:?}: {e}"),
                Ok(_) => panic!("{from:?} -> {to:?} was accepted"),
            }
        }
        // Every truncation that loses a tree or the "end of trees" line.
        let end = good.find("end of trees").unwrap();
        for cut in 0..end + 12 {
            if good.is_char_boundary(cut) {
                assert!(GbdtModel::parse(&good[..cut]).is_err(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn mutated_texts_never_panic() {
        let good = model_text(BINARY, 3, &[MISSING, CATEGORICAL_TREE, CONSTANT, STUMP]);
        let alphabet = b"0123456789-+. =\nabeinftrxTE";
        let mut rng = SmallRng::seed_from_u64(7);
        let inputs = [
            0.0,
            -0.0,
            1e-36,
            -1.0,
            1.5,
            3.0,
            33.0,
            1e10,
            f64::NAN,
            f64::INFINITY,
        ];
        let mut accepted = 0;
        for _ in 0..20_000 {
            let mut b = good.clone().into_bytes();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..b.len());
                match rng.random_range(0..3) {
                    0 => b[i] = alphabet[rng.random_range(0..alphabet.len())],
                    1 => {
                        b.remove(i);
                    }
                    _ => b.insert(i, alphabet[rng.random_range(0..alphabet.len())]),
                }
            }
            let text = String::from_utf8(b).unwrap();
            if let Ok(m) = GbdtModel::parse(&text) {
                accepted += 1;
                let mut x = vec![0.0; m.num_features()];
                for _ in 0..20 {
                    for v in x.iter_mut() {
                        *v = inputs[rng.random_range(0..inputs.len())];
                    }
                    m.predict(&x);
                }
            }
        }
        // Mutations of ignored parts (split_gain, feature_importances...) are accepted.
        assert!(accepted > 0);
        let mut rng = SmallRng::seed_from_u64(8);
        for _ in 0..2_000 {
            let len = rng.random_range(0..300);
            let text: String = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())] as char)
                .collect();
            let _ = GbdtModel::parse(&text);
            let _ = GbdtModel::parse(&format!("tree\n{text}"));
        }
    }
}
