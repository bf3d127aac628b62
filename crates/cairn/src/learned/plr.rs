//! Greedy piecewise linear regression (Greedy-PLR, after Xie et al., "Maximum
//! error-bounded piecewise linear representation for online stream approximation", VLDB J.
//! 2014), as Bourbon uses it to map keys to positions.
//!
//! Points `(x, y)` arrive sorted by `x` (a key number, see [`key_to_u64`]) with rising `y`
//! (a position). The builder keeps one segment open as a *cone*: the segment is anchored at
//! its first key `start` with value `intercept`, and the range of slopes that keep every
//! point seen since within `delta` of the line shrinks with each point. When a point would
//! empty the range, the segment is closed (slope = middle of the range) and a new one starts
//! at that point. This is the one-pass, O(n) "shrinking cone" form of greedy PLR; it can use
//! up to about twice the segments of Xie et al.'s optimal (convex-hull) variant, but it is
//! simple and its bound is exact: every training point's prediction, rounded to the nearest
//! integer, is within `delta` of its position.
//!
//! **Equal keys.** Several points may share `x` (versions of one user key, or user keys
//! whose first 8 bytes collide). A run of positions `a..=b` at one `x` becomes one
//! constraint: the line at `x` must lie in `[b - delta, a + delta]`, which keeps all of them
//! within `delta`. When the run is longer than `2 * delta + 1` that is impossible; the
//! constraint becomes `[a - delta, a + delta]` (the run's first position is within `delta`,
//! the rest are not) and lookups detect the miss and fall back to fence pointers.

/// Maps a user key to the number the model is trained on: its first 8 bytes as a
/// big-endian integer, zero-padded on the right when the key is shorter.
///
/// The mapping is monotone (non-decreasing) in the bytewise key order, so sorted keys give
/// non-decreasing numbers; keys that share their first 8 bytes (or differ only by trailing
/// zero bytes within them) map to the same number and are told apart only by the search
/// within the predicted window.
pub fn key_to_u64(user_key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = user_key.len().min(8);
    b[..n].copy_from_slice(&user_key[..n]);
    u64::from_be_bytes(b)
}

/// One linear piece: predicts `intercept + slope * (x - start)` for `x >= start` (up to
/// the next segment's start).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// Smallest key number the segment covers.
    pub start: u64,
    /// Positions per key number.
    pub slope: f64,
    /// Predicted position at `start`.
    pub intercept: f64,
}

impl Segment {
    /// The predicted (fractional) position of `x` (`x >= start`).
    pub fn predict(&self, x: u64) -> f64 {
        self.intercept + self.slope * (x.saturating_sub(self.start)) as f64
    }
}

/// A trained model: segments sorted by `start`.
#[derive(Clone, Debug, Default)]
pub struct Plr {
    segments: Vec<Segment>,
    /// A radix table over the segments' starts (RadixSpline's idea): the segments whose
    /// starts share the top bits of `x - segments[0].start` (`x >> shift`, bucket `b`) are
    /// `radix[b]..radix[b + 1]`, so a lookup searches a few segments, not all of them
    /// (with many tables, the models do not all fit in the CPU caches).
    ///
    /// Each entry packs the bucket's first segment (low 32 bits) and, for a crowded bucket,
    /// where its second-level table starts in `sub` (high 32 bits). Skewed keys crowd a
    /// few buckets (English words: the top bits are the first letters, and a lookup's
    /// bucket held 36-243 segments); a crowded bucket gets a radix table of its own over
    /// its slice of the domain (a two-level radix tree, as the Hist-Tree refines
    /// RadixSpline), so a lookup still searches a few segments.
    radix: Vec<u64>,
    /// The second-level tables, one after another: `1 << bits + 1` segment indexes each.
    sub: Vec<u32>,
    /// `segments[i].start`, packed: the search inside a bucket reads eight starts a cache
    /// line instead of under three segments.
    starts: Vec<u64>,
    shift: u32,
    delta: u32,
    /// `segments[0].start` (0 when there are none), kept here so that a lookup outside
    /// the domain, or the radix bucket of one inside, needs no read of the segments.
    base: u64,
    last_x: u64,
}

/// Largest radix table: 2^16 + 1 entries.
const MAX_RADIX_BITS: u32 = 16;

/// A bucket holding more segments than this gets a second-level table: up to 16 packed
/// starts are two cache lines, a binary search over more touches one line per step.
const CROWDED: usize = 16;

/// A bucket of at most this many segments (two cache lines of them) is searched in the
/// segments rather than the packed starts.
const DIRECT: usize = 2;

/// Radix bits for `n` segments: about one bucket per segment.
fn radix_bits(n: usize) -> u32 {
    (usize::BITS - n.leading_zeros()).min(MAX_RADIX_BITS)
}

/// The second-level split of a crowded bucket of `n` segments whose slice of the domain
/// is `1 << shift` key numbers wide: (bits, shift within the slice).
fn sub_split(n: usize, shift: u32) -> (u32, u32) {
    let bits = radix_bits(n).min(shift);
    (bits, shift - bits)
}

impl Plr {
    /// A model from given parts (segments sorted by start, domain ending at `last_x`);
    /// nothing checks that it fits any data, so it is for tests and for models loaded
    /// from elsewhere. Lookups through a [`LearnedIndex`](crate::table::LearnedIndex) stay
    /// correct whatever the model predicts.
    pub fn from_parts(mut segments: Vec<Segment>, delta: u32, last_x: u64) -> Plr {
        segments.sort_by_key(|s| s.start);
        segments.dedup_by_key(|s| s.start);
        Plr::new(segments, delta, last_x)
    }

    fn new(segments: Vec<Segment>, delta: u32, last_x: u64) -> Plr {
        let base = segments.first().map_or(0, |s| s.start);
        // About one bucket per segment, each bucket an equal slice of the domain.
        let bits = radix_bits(segments.len());
        let span_bits = u64::BITS - last_x.saturating_sub(base).leading_zeros();
        let shift = span_bits.saturating_sub(bits);
        let buckets = 1usize << bits;
        let starts: Vec<u64> = segments.iter().map(|s| s.start).collect();
        // Starts past the domain lie beyond every bucket.
        let bucket = |s: u64| {
            if s > last_x {
                buckets
            } else {
                ((s - base) >> shift) as usize
            }
        };
        let first: Vec<usize> = (0..=buckets)
            .map(|b| starts.partition_point(|&s| bucket(s) < b))
            .collect();
        let mut sub = Vec::new();
        let radix = (0..=buckets)
            .map(|b| {
                let lo = first[b];
                let hi = first.get(b + 1).copied().unwrap_or(lo);
                let mut entry = lo as u64;
                if hi - lo > CROWDED {
                    entry |= (sub.len() as u64) << 32;
                    sub.extend(sub_table(&starts, lo, hi, base, shift));
                }
                entry
            })
            .collect();
        Plr {
            radix,
            sub,
            starts,
            shift,
            segments,
            delta,
            base,
            last_x,
        }
    }

    /// The segments, sorted by start.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The error bound the model was trained with.
    pub fn delta(&self) -> u32 {
        self.delta
    }

    /// The largest key number trained on (the domain is `segments[0].start..=last_x`).
    pub fn last_x(&self) -> u64 {
        self.last_x
    }

    /// The index of the segment covering `x`, or `None` outside the trained domain.
    pub fn segment_for(&self, x: u64) -> Option<usize> {
        let base = self.base;
        if x > self.last_x || x < base || self.segments.is_empty() {
            return None;
        }
        // Starts before bucket `b` are <= x, starts after it > x: search the bucket.
        let off = x - base;
        let b = (off >> self.shift) as usize;
        let entry = self.radix[b];
        let (mut lo, mut hi) = (entry as u32 as usize, self.radix[b + 1] as u32 as usize);
        if hi - lo > CROWDED {
            // Likewise within the bucket's own table.
            let (_, sub_shift) = sub_split(hi - lo, self.shift);
            let within = off & ((1u64 << self.shift) - 1);
            let at = (entry >> 32) as usize + (within >> sub_shift) as usize;
            (lo, hi) = (self.sub[at] as usize, self.sub[at + 1] as usize);
        }
        // A bucket of a few segments is searched in the segments themselves: the one
        // found is then already in the CPU cache for the prediction.
        let within = if hi - lo <= DIRECT {
            self.segments[lo..hi].partition_point(|s| s.start <= x)
        } else {
            self.starts[lo..hi].partition_point(|&s| s <= x)
        };
        (lo + within).checked_sub(1)
    }

    /// The predicted position of `x` (rounded to the nearest integer, at least 0), or
    /// `None` outside the trained domain.
    pub fn predict(&self, x: u64) -> Option<u64> {
        let s = self.segments[self.segment_for(x)?];
        let p = s.predict(x).round();
        Some(if p.is_nan() || p <= 0.0 { 0 } else { p as u64 })
    }

    /// Bytes held in memory.
    pub fn memory(&self) -> usize {
        self.segments.capacity() * std::mem::size_of::<Segment>()
            + self.radix.capacity() * std::mem::size_of::<u64>()
            + self.sub.capacity() * std::mem::size_of::<u32>()
            + self.starts.capacity() * std::mem::size_of::<u64>()
            + std::mem::size_of::<Self>()
    }
}

/// The second-level table of the bucket holding `starts[lo..hi]`, whose slice of the
/// domain begins at `base + (bucket << shift)`: for each sub-bucket, the index of its
/// first segment (absolute), and one past the last.
fn sub_table(starts: &[u64], lo: usize, hi: usize, base: u64, shift: u32) -> Vec<u32> {
    let (bits, sub_shift) = sub_split(hi - lo, shift);
    let mask = (1u64 << shift) - 1;
    let within = &starts[lo..hi];
    (0..=1usize << bits)
        .map(|sb| {
            (lo + within.partition_point(|&s| (((s - base) & mask) >> sub_shift) < sb as u64))
                as u32
        })
        .collect()
}

/// The open segment.
struct Cone {
    start: u64,
    intercept: f64,
    slope_lo: f64,
    slope_hi: f64,
}

impl Cone {
    fn close(&self) -> Segment {
        let slope = if self.slope_lo.is_finite() && self.slope_hi.is_finite() {
            self.slope_lo + (self.slope_hi - self.slope_lo) / 2.0
        } else {
            0.0
        };
        Segment {
            start: self.start,
            slope,
            intercept: self.intercept,
        }
    }
}

/// Trains a [`Plr`] in one pass over points sorted by `x`.
pub struct PlrBuilder {
    delta: u32,
    segments: Vec<Segment>,
    cone: Option<Cone>,
    /// The run of points at the latest `x`: `(x, first y, last y)`.
    run: Option<(u64, u64, u64)>,
}

impl PlrBuilder {
    /// A builder with error bound `delta` (positions).
    pub fn new(delta: u32) -> Self {
        PlrBuilder {
            delta,
            segments: Vec::new(),
            cone: None,
            run: None,
        }
    }

    /// Adds a point. `x` must not decrease and `y` must rise from call to call.
    ///
    /// # Panics
    /// If `x` decreases or `y` does not rise.
    pub fn add(&mut self, x: u64, y: u64) {
        match &mut self.run {
            Some((rx, _, b)) if *rx == x => {
                assert!(y > *b, "PLR positions must rise ({y} after {b})");
                *b = y;
            }
            Some((rx, _, b)) => {
                assert!(x > *rx && y > *b, "PLR points must be sorted");
                self.flush_run();
                self.run = Some((x, y, y));
            }
            None => self.run = Some((x, y, y)),
        }
    }

    /// Feeds the pending run of equal `x` to the cone.
    fn flush_run(&mut self) {
        let Some((x, a, b)) = self.run.take() else {
            return;
        };
        let d = self.delta as f64;
        let (a, b) = (a as f64, b as f64);
        let (mut lo, mut hi) = (b - d, a + d);
        if lo > hi {
            // Too many equal keys for one line: cover the run's first position only.
            (lo, hi) = (a - d, a + d);
        }
        if let Some(c) = &mut self.cone {
            let dx = (x - c.start) as f64;
            let s_lo = c.slope_lo.max((lo - c.intercept) / dx);
            let s_hi = c.slope_hi.min((hi - c.intercept) / dx);
            if s_lo <= s_hi {
                c.slope_lo = s_lo;
                c.slope_hi = s_hi;
                return;
            }
            self.segments.push(c.close());
        }
        self.cone = Some(Cone {
            start: x,
            intercept: lo + (hi - lo) / 2.0,
            slope_lo: f64::NEG_INFINITY,
            slope_hi: f64::INFINITY,
        });
    }

    /// Segments closed so far (the open one not counted).
    pub fn closed_segments(&self) -> usize {
        self.segments.len()
    }

    /// Closes the open segment and returns the model.
    pub fn finish(mut self) -> Plr {
        let last_x = self.run.map_or(0, |r| r.0);
        self.flush_run();
        if let Some(c) = self.cone.take() {
            self.segments.push(c.close());
        }
        Plr::new(self.segments, self.delta, last_x)
    }
}

/// Trains on `points` (sorted by `x`, `y` rising).
pub fn train(points: impl IntoIterator<Item = (u64, u64)>, delta: u32) -> Plr {
    let mut b = PlrBuilder::new(delta);
    for (x, y) in points {
        b.add(x, y);
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The segment covering `x` by a plain search over all starts.
    fn reference(plr: &Plr, x: u64) -> Option<usize> {
        let first = plr.segments().first()?.start;
        if x > plr.last_x() || x < first {
            return None;
        }
        plr.segments()
            .partition_point(|s| s.start <= x)
            .checked_sub(1)
    }

    #[test]
    fn radix_table_finds_the_segment_a_search_finds() {
        let mut rng = SmallRng::seed_from_u64(11);
        let mut two_level = 0;
        for round in 0..400 {
            let n = [1, 2, 3, 17, 1000, 20_000][round % 6];
            // Starts dense, spread, clustered, skewed (a few crowded buckets of every
            // size, as words' first letters make) or near the top of the domain.
            let scale = [1u64, 1000, 1 << 40, u64::MAX / 4][round % 4];
            let mut starts: Vec<u64> = (0..n)
                .map(|i| match round % 4 {
                    0 => rng.random_range(0..scale.saturating_mul(n as u64).max(1)),
                    1 => (i as u64).saturating_mul(scale),
                    2 => rng.random_range(0..8) + if i % 2 == 0 { 0 } else { scale },
                    _ => {
                        let top = rng.random_range(1..64);
                        rng.random_range(0..1u64 << top)
                    }
                })
                .collect();
            starts.sort();
            let segments: Vec<Segment> = starts
                .iter()
                .map(|&start| Segment {
                    start,
                    slope: 0.5,
                    intercept: 3.0,
                })
                .collect();
            let top = *starts.last().unwrap();
            // The domain may end before the last starts (a model loaded from elsewhere).
            let last_x = match round % 5 {
                0 => top / 2,
                1 => u64::MAX,
                _ => top.saturating_add(rng.random_range(0..1000)),
            };
            let plr = Plr::from_parts(segments, 8, last_x);
            two_level += usize::from(!plr.sub.is_empty());
            let probes = (0..2000)
                .map(|_| rng.random_range(0..=last_x.max(top).saturating_add(10)))
                .chain(plr.segments().iter().flat_map(|s| {
                    [
                        s.start.saturating_sub(1),
                        s.start,
                        s.start.saturating_add(1),
                    ]
                }))
                .chain([0, last_x, last_x.saturating_add(1), u64::MAX]);
            for x in probes {
                assert_eq!(
                    plr.segment_for(x),
                    reference(&plr, x),
                    "x {x}, round {round}"
                );
            }
        }
        assert!(
            two_level >= 50,
            "crowded buckets were tried ({two_level} models)"
        );
    }
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// Positions are 0..n in order; `xs` sorted.
    fn points(xs: &[u64]) -> Vec<(u64, u64)> {
        xs.iter().enumerate().map(|(i, &x)| (x, i as u64)).collect()
    }

    /// Every point within delta, except points of an equal-x run longer than 2 delta + 1,
    /// of which the first must be within delta. Returns the model.
    fn check_bound(xs: &[u64], delta: u32) -> Plr {
        let plr = train(points(xs), delta);
        assert!(plr.segments().windows(2).all(|w| w[0].start < w[1].start));
        let mut i = 0;
        while i < xs.len() {
            let mut j = i;
            while j + 1 < xs.len() && xs[j + 1] == xs[i] {
                j += 1;
            }
            let p = plr.predict(xs[i]).expect("trained key in domain") as i64;
            let check = |y: usize| {
                let err = (p - y as i64).unsigned_abs();
                assert!(
                    err <= delta as u64,
                    "x {} pos {y}: predicted {p}, error {err} > delta {delta}",
                    xs[i]
                );
            };
            if j - i <= 2 * delta as usize {
                (i..=j).for_each(check);
            } else {
                check(i);
            }
            i = j + 1;
        }
        plr
    }

    fn datasets(seed: u64) -> Vec<(&'static str, Vec<u64>)> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = 20_000;
        let mut random: Vec<u64> = (0..n).map(|_| rng.random()).collect();
        let unsorted_then_sorted = random.clone();
        random.sort_unstable();
        let mut small: Vec<u64> = (0..n).map(|_| rng.random_range(0..5000)).collect();
        small.sort_unstable();
        let steps: Vec<u64> = (0..n as u64)
            .map(|i| (i / 100) * 1_000_000 + i % 100)
            .collect();
        let exp: Vec<u64> = (0..64).map(|i| 1u64 << i).chain([u64::MAX]).collect();
        let mut expgaps = Vec::new();
        let mut x = 0u64;
        for _ in 0..n {
            expgaps.push(x);
            let g = 1u64 << rng.random_range(0..40);
            x = x.saturating_add(g);
        }
        expgaps.dedup();
        let mut dups = Vec::new();
        for k in 0..500u64 {
            let c = match rng.random_range(0..4) {
                0 => 1,
                1 => rng.random_range(2..10),
                2 => rng.random_range(10..40),
                _ => rng.random_range(40..200),
            };
            dups.extend(std::iter::repeat_n(k * 1000 + rng.random_range(0..999), c));
        }
        dups.sort_unstable();
        let all_same = vec![42u64; 1000];
        let extremes = vec![0, 0, 1, u64::MAX - 1, u64::MAX, u64::MAX];
        let mut sorted_random = unsorted_then_sorted;
        sorted_random.sort_unstable();
        vec![
            ("random", random),
            ("sorted-random-small-range", small),
            ("steps", steps),
            ("exponential", exp),
            ("exponential-gaps", expgaps),
            ("duplicates", dups),
            ("all-same", all_same),
            ("extremes", extremes),
            ("sorted-random", sorted_random),
        ]
    }

    #[test]
    fn every_point_within_delta() {
        for seed in 0..3 {
            for (name, xs) in datasets(seed) {
                for delta in [1, 2, 8, 64] {
                    let plr = check_bound(&xs, delta);
                    assert!(
                        !plr.segments().is_empty(),
                        "{name}: trained model has no segment"
                    );
                }
            }
        }
    }

    #[test]
    fn linear_data_gives_one_segment() {
        for (start, stride) in [(0u64, 1u64), (1000, 7), (1 << 40, 12345), (5, 1 << 30)] {
            let xs: Vec<u64> = (0..100_000).map(|i| start + i * stride).collect();
            for delta in [1, 8] {
                let plr = check_bound(&xs, delta);
                assert_eq!(plr.segments().len(), 1, "stride {stride}, delta {delta}");
            }
        }
        // Two points of one key each, and a single point.
        assert_eq!(train([(3, 0), (9, 1)], 1).segments().len(), 1);
        assert_eq!(train([(3, 0)], 1).segments().len(), 1);
        assert!(train([], 8).segments().is_empty());
        assert_eq!(train([], 8).predict(0), None);
    }

    #[test]
    fn segments_decrease_as_delta_grows() {
        for (name, xs) in datasets(7) {
            if xs.len() < 1000 {
                continue;
            }
            let counts: Vec<usize> = [1, 4, 16, 64, 256]
                .iter()
                .map(|&d| check_bound(&xs, d).segments().len())
                .collect();
            assert!(
                counts.windows(2).all(|w| w[1] <= w[0]),
                "{name}: segment counts {counts:?} rise with delta"
            );
            if name != "all-same" {
                assert!(counts[4] < counts[0], "{name}: {counts:?}");
            }
        }
    }

    #[test]
    fn domain_and_key_numbers() {
        let plr = train(points(&[10, 20, 30]), 1);
        assert_eq!(plr.predict(9), None);
        assert_eq!(plr.predict(31), None);
        assert_eq!(plr.predict(10), Some(0));
        assert_eq!(plr.last_x(), 30);
        assert_eq!(key_to_u64(b""), 0);
        assert_eq!(key_to_u64(b"\x01"), 1 << 56);
        assert_eq!(key_to_u64(b"abcdefgh"), u64::from_be_bytes(*b"abcdefgh"));
        assert_eq!(key_to_u64(b"abcdefghXYZ"), key_to_u64(b"abcdefgh"));
        // Monotone in bytewise order.
        let mut rng = SmallRng::seed_from_u64(3);
        let mut keys: Vec<Vec<u8>> = (0..5000)
            .map(|_| {
                let n = rng.random_range(0..12);
                (0..n).map(|_| rng.random_range(0..4u8)).collect()
            })
            .collect();
        keys.sort();
        assert!(keys
            .windows(2)
            .all(|w| key_to_u64(&w[0]) <= key_to_u64(&w[1])));
    }

    #[test]
    #[should_panic(expected = "sorted")]
    fn unsorted_points_panic() {
        train([(5, 0), (4, 1)], 8);
    }
}
