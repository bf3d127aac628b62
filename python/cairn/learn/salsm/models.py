"""Cold-data models behind one interface: the paper's RSF, its Cox and GBDT comparisons,
the cache-policy baselines (LRU, LFU, LRU-2, LIRS) computed from the same features, and
two references (a random ranking; an oracle read from a file of true probabilities).

Every model offers

* ``fit(x, y, delta)``: train on samples (features, eq. 1 labels in days); heuristics
  ignore it;
* ``score(x)``: coldness, higher = colder (a later next tau-event); used for the budget
  selection and, as the "survival-like" score, for the c-index;
* ``cold_at(x, alpha)``: Algorithm 3's test "predicted time to event > alpha" (days).

How Algorithm 3's test reads for each model:

* survival models (RSF, Cox): the predicted time to event exceeds ``alpha`` when the
  predicted median does, i.e. ``S(alpha | x) > 1/2``: the record more likely than not
  sees no tau-event within ``alpha``. Their ``score`` is ``S(horizon | x)``, the
  probability of no tau-event within the horizon (RSF breaks ties by the area under its
  survival curve, a restricted mean time to event; Cox's ranking is its linear
  predictor, to which ``S(horizon | x)`` is monotone);
* GBDT is a classifier of "tau-event within ``horizon``": ``cold_at`` is
  ``P(event within horizon) < 1/2`` and needs ``alpha == horizon`` (the CLI trains it
  with ``horizon = alpha``). Two ways with the samples censored before the horizon, which
  do not say whether the event falls within it: ``gbdt-naive`` labels them "no event"
  (the paper's baseline, as its results read: censoring is not handled), ``gbdt-h``
  leaves them out of its training set (``gbdt`` is an old name of ``gbdt-h``);
* ``oracle``: ``1 - P(read within the horizon)`` from a file (:mod:`.oracle`);
* LRU, LRU-2, LIRS: their statistic is a time (recency of reads; backward distance to
  the 2nd most recent access; the interval between the last two accesses), cold when it
  exceeds ``alpha``. LFU has no time and supports budgets only. LRU looks at reads only:
  a write (a blind update) never reads the cold tier, and a status write on a dormant
  record says nothing about its next read, so read recency is LRU's strongest form here.

Equal scores left after a model's own tie-break are ordered by a seeded random
permutation when a budget is taken (:mod:`.select`), never by record (key) order.
"""

from __future__ import annotations

import warnings

import numpy as np

from .features import COUNTS, EARLIER, LAST, LAST_READ

METHODS = ("rsf", "gbdt-naive", "gbdt-h", "cox", "lru", "lfu", "lru2", "lirs")
SURVIVAL_METHODS = ("rsf", "cox")
HEURISTICS = ("lru", "lfu", "lru2", "lirs")
REFERENCES = ("random", "oracle")  # evaluate's chance level and upper reference
ALIASES = {"gbdt": "gbdt-h"}  # names of older reports and command lines


def canonical(name: str) -> str:
    """The method a name stands for (``gbdt`` is ``gbdt-h``); refuses unknown names."""
    name = ALIASES.get(name, name)
    if name not in METHODS and name not in REFERENCES:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS + REFERENCES)}")
    return name


def lex_score(primary: np.ndarray, secondary: np.ndarray) -> np.ndarray:
    """Ranks in [0, 1] ordering by ``primary`` then ``secondary``; equal pairs share a rank."""
    primary, secondary = np.asarray(primary, float), np.asarray(secondary, float)
    n = primary.shape[0]
    if n == 0:
        return np.zeros(0)
    order = np.lexsort((secondary, primary))
    p, s = primary[order], secondary[order]
    new = np.r_[True, (p[1:] != p[:-1]) | (s[1:] != s[:-1])]
    first = np.maximum.accumulate(np.where(new, np.arange(n), 0))
    out = np.empty(n)
    out[order] = first / max(n - 1, 1)
    return out


def _step_at(times: np.ndarray, values: np.ndarray, t: float, before: float) -> np.ndarray:
    """Right-continuous step function (columns ``values[:, k]`` from ``times[k]`` on) at ``t``."""
    k = int(np.searchsorted(times, t, side="right")) - 1
    if k < 0:
        return np.full(values.shape[0], before)
    return values[:, k]


class ColdModel:
    name = ""
    needs_fit = True

    def __init__(self, horizon: float = 30.0, seed: int = 0, n_jobs: int = 2) -> None:
        if horizon <= 0:
            raise ValueError(f"horizon must be > 0 days, got {horizon}")
        self.horizon = float(horizon)
        self.seed = seed
        self.n_jobs = n_jobs

    def fit(self, x: np.ndarray, y: np.ndarray, delta: np.ndarray) -> ColdModel:
        return self

    def score(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def cold_at(self, x: np.ndarray, alpha: float) -> np.ndarray:
        raise NotImplementedError


def _check_training(y: np.ndarray, delta: np.ndarray, name: str) -> None:
    if y.shape[0] == 0:
        raise ValueError(f"{name}: no training samples")
    if not np.asarray(delta).any():
        raise ValueError(f"{name}: no observed tau-event among {y.shape[0]} samples; nothing to learn from")


def bin_times(y: np.ndarray, delta: np.ndarray, n_bins: int, keep: tuple[float, ...] = ()) -> np.ndarray:
    """Times floored onto a grid of about ``n_bins`` quantiles of the event times, plus 0
    and the ``keep`` times (horizon, alpha) so that S is exact there.

    Flooring keeps every pair's order (weakly) and never claims a censored record survived
    longer than it did. RSF's node statistics grow with the number of distinct times, so
    binning is what keeps its memory and time bounded.
    """
    ev = y[delta] if np.any(delta) else y
    grid = np.quantile(ev, np.linspace(0.0, 1.0, n_bins)) if ev.size else np.zeros(0)
    edges = np.unique(np.concatenate([[0.0], grid, np.asarray(keep, float)]))
    return edges[np.searchsorted(edges, y, side="right") - 1]


# Alg. 2 step 4 stops a terminal node at d0 > 0 events; the paper gives no value for d0.
# scikit-survival bounds samples per leaf, not events, so the leaf size is set from the
# training event rate to hold about LEAF_EVENTS events on average, within LEAF_RANGE.
LEAF_EVENTS = 3
LEAF_RANGE = (10, 1000)


def leaf_size(delta: np.ndarray, events: int = LEAF_EVENTS, bounds: tuple[int, int] = LEAF_RANGE) -> int:
    """Samples per leaf for about ``events`` events per leaf at the observed event rate."""
    rate = float(np.mean(delta)) if np.size(delta) else 0.0
    want = int(np.ceil(events / rate)) if rate > 0 else bounds[1]
    return int(np.clip(want, *bounds))


class RSF(ColdModel):
    """scikit-survival's RandomSurvivalForest on binned times (Alg. 2).

    ``max_features``: 0.4 of the features per split (the paper's p is not given; a
    fraction of 0.3-0.5 decorrelates the trees more than all 51 and keeps the weak
    day-count columns in play). ``min_samples_leaf`` None: :func:`leaf_size` at fit.
    """

    name = "rsf"

    def __init__(
        self,
        horizon: float = 30.0,
        seed: int = 0,
        n_jobs: int = 2,
        n_estimators: int = 64,
        max_samples: float = 0.25,
        max_depth: int = 11,
        min_samples_leaf: int | None = None,
        max_features: float = 0.4,
        n_bins: int = 64,
        keep_times: tuple[float, ...] = (),
    ) -> None:
        super().__init__(horizon, seed, n_jobs)
        self.params = dict(
            n_estimators=n_estimators,
            max_samples=max_samples,
            max_depth=max_depth,
            min_samples_leaf=min_samples_leaf,
            max_features=max_features,
        )
        self.n_bins = n_bins
        self.keep_times = (self.horizon, *keep_times)  # exact S at the horizon and alpha

    def fit(self, x, y, delta):
        from sksurv.ensemble import RandomSurvivalForest
        from sksurv.util import Surv

        y, delta = np.asarray(y, float), np.asarray(delta, bool)
        _check_training(y, delta, self.name)
        yb = bin_times(y, delta, self.n_bins, self.keep_times)
        params = dict(self.params)
        if params["min_samples_leaf"] is None:
            params["min_samples_leaf"] = leaf_size(delta)
        self.min_samples_leaf = params["min_samples_leaf"]
        # A bootstrap smaller than two leaves cannot split at all: use every sample then.
        if params["max_samples"] * y.shape[0] < 2 * params["min_samples_leaf"]:
            params["max_samples"] = None
        self.model = RandomSurvivalForest(**params, n_jobs=self.n_jobs, random_state=self.seed)
        self.model.fit(x, Surv.from_arrays(delta, yb))
        return self

    def _survival(self, x: np.ndarray) -> np.ndarray:
        out = [
            self.model.predict_survival_function(x[i : i + 20000], return_array=True) for i in range(0, len(x), 20000)
        ]
        return np.concatenate(out) if out else np.zeros((0, self.model.unique_times_.shape[0]))

    def survival(self, x: np.ndarray, t: float) -> np.ndarray:
        return _step_at(self.model.unique_times_, self._survival(x), t, 1.0)

    def score(self, x):
        s = self._survival(x)
        times = self.model.unique_times_
        # Restricted mean time to event over the grid: sum of S times the step widths.
        widths = np.diff(np.r_[times, times[-1]])
        return lex_score(_step_at(times, s, self.horizon, 1.0), s @ widths)

    def cold_at(self, x, alpha):
        return self.survival(x, alpha) > 0.5


class Cox(ColdModel):
    """scikit-survival's CoxPHSurvivalAnalysis with a small ridge, on standardised log1p features."""

    name = "cox"

    def __init__(
        self, horizon: float = 30.0, seed: int = 0, n_jobs: int = 2, ridge: float = 0.1, n_bins: int = 64
    ) -> None:
        super().__init__(horizon, seed, n_jobs)
        self.ridge = ridge
        self.n_bins = n_bins

    def _prep(self, x: np.ndarray) -> np.ndarray:
        return (np.log1p(np.maximum(x[:, self.cols], 0.0)) - self.mu) / self.sd

    def fit(self, x, y, delta):
        from sksurv.linear_model import CoxPHSurvivalAnalysis
        from sksurv.util import Surv

        y, delta = np.asarray(y, float), np.asarray(delta, bool)
        _check_training(y, delta, self.name)
        lx = np.log1p(np.maximum(x, 0.0))
        sd = lx.std(axis=0)
        self.cols = np.flatnonzero(sd > 1e-12)  # constant columns carry nothing and break Newton's steps
        self.mu, self.sd = lx[:, self.cols].mean(axis=0), sd[self.cols]
        self.model = CoxPHSurvivalAnalysis(alpha=self.ridge, ties="breslow", n_iter=100)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence chatter; the ridge keeps the fit finite
            # Binned times too: scikit-survival's Newton steps loop over the distinct times.
            yb = bin_times(y, delta, self.n_bins, (self.horizon,))
            self.model.fit(self._prep(x), Surv.from_arrays(delta, yb))
        return self

    def linear_predictor(self, x: np.ndarray) -> np.ndarray:
        return self._prep(x) @ self.model.coef_

    def survival(self, x: np.ndarray, t: float) -> np.ndarray:
        h0 = self.model.cum_baseline_hazard_
        base = _step_at(np.asarray(h0.x), np.asarray(h0.y)[None, :], t, 0.0)[0]
        return np.exp(-base * np.exp(self.linear_predictor(x)))

    def score(self, x):
        return -self.linear_predictor(x)

    def cold_at(self, x, alpha):
        return self.survival(x, alpha) > 0.5


class GBDT(ColdModel):
    """LightGBM binary classifier: label = tau-event within the horizon; samples censored
    before the horizon are left out (``gbdt-h``). :class:`GBDTNaive` keeps them, with the
    same LightGBM settings."""

    name = "gbdt-h"
    drop_censored = True

    def __init__(self, horizon: float = 30.0, seed: int = 0, n_jobs: int = 2, rounds: int = 200) -> None:
        super().__init__(horizon, seed, n_jobs)
        self.rounds = rounds

    def fit(self, x, y, delta):
        import lightgbm as lgb

        y, delta = np.asarray(y, float), np.asarray(delta, bool)
        _check_training(y, delta, self.name)
        label = delta & (y <= self.horizon)
        known = label | (y >= self.horizon)  # censored before the horizon: outcome unknown
        if not self.drop_censored:
            known[:] = True  # ... counted as "no event"
        self.train_rows = int(known.sum())
        self.dropped_censored = int((~known).sum())
        if len(np.unique(label[known])) < 2:
            raise ValueError(f"{self.name}: the {self.train_rows} usable samples all have the same label")
        self.model = lgb.LGBMClassifier(
            n_estimators=self.rounds,
            learning_rate=0.05,
            num_leaves=31,
            min_child_samples=20,
            subsample=0.8,
            subsample_freq=1,
            colsample_bytree=0.8,
            random_state=self.seed,
            n_jobs=self.n_jobs,
            verbose=-1,
        )
        self.model.fit(x[known], label[known].astype(int))
        return self

    def p_event(self, x: np.ndarray) -> np.ndarray:
        return self.model.predict_proba(x)[:, 1]

    def score(self, x):
        return 1.0 - self.p_event(x)

    def cold_at(self, x, alpha):
        if not np.isclose(alpha, self.horizon):
            raise ValueError(f"{self.name} classifies events within {self.horizon} days; train it with horizon = alpha")
        return self.p_event(x) < 0.5


class GBDTNaive(GBDT):
    """The paper's GBDT: a sample censored before the horizon is labelled "no event"."""

    name = "gbdt-naive"
    drop_censored = False


GBDTH = GBDT


class Heuristic(ColdModel):
    needs_fit = False

    @staticmethod
    def statistic(x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def score(self, x):
        return lex_score(self.statistic(x), x[:, LAST])  # recency breaks ties

    def cold_at(self, x, alpha):
        return self.statistic(x) > alpha


class LRU(Heuristic):
    name = "lru"

    @staticmethod
    def statistic(x):
        return x[:, LAST_READ]  # ties: recency of any access (Heuristic.score)


class LFU(Heuristic):
    name = "lfu"

    @staticmethod
    def statistic(x):
        return -x[:, COUNTS].sum(axis=1)  # fewer accesses in the 20-day window = colder

    def cold_at(self, x, alpha):
        raise ValueError("lfu ranks by access counts and has no time threshold; use a budget")


class LRU2(Heuristic):
    name = "lru2"

    @staticmethod
    def statistic(x):
        return x[:, LAST] + x[:, EARLIER.start]  # time since the 2nd most recent access


class LIRS(Heuristic):
    name = "lirs"

    @staticmethod
    def statistic(x):
        return x[:, EARLIER.start]  # inter-reference recency: interval between the last two accesses


class RandomScore(Heuristic):
    """Chance level (evaluate's reference row, the bench's sa-random): a seeded random ranking."""

    name = "random"

    def score(self, x):
        return np.random.default_rng(self.seed).random(x.shape[0])

    def cold_at(self, x, alpha):
        raise ValueError("random ranks by chance and has no time threshold; use a budget")


class Oracle(ColdModel):
    """Scores from known probabilities of a read within the horizon, one per row of the
    ``x`` it will score (the pipeline aligns them by key); ``horizon`` is the file's."""

    name = "oracle"
    needs_fit = False

    def __init__(self, p_read: np.ndarray, horizon: float = 30.0, seed: int = 0, n_jobs: int = 2) -> None:
        super().__init__(horizon, seed, n_jobs)
        self.p_read = np.asarray(p_read, dtype=float)

    def _p(self, x: np.ndarray) -> np.ndarray:
        if x.shape[0] != self.p_read.shape[0]:
            raise ValueError(f"oracle: {self.p_read.shape[0]} probabilities for {x.shape[0]} records")
        return self.p_read

    def score(self, x):
        return 1.0 - self._p(x)

    def cold_at(self, x, alpha):
        if not np.isclose(alpha, self.horizon, atol=1.0):
            raise ValueError(f"the oracle's probabilities are for a {self.horizon:g}-day horizon, not alpha {alpha:g}")
        return self._p(x) < 0.5


_CLASSES = {c.name: c for c in (RSF, GBDTNaive, GBDT, Cox, LRU, LFU, LRU2, LIRS, RandomScore)}


def make_model(
    name: str, horizon: float = 30.0, seed: int = 0, n_jobs: int = 2, alpha: float | None = None
) -> ColdModel:
    """A model by method name (:data:`METHODS`, ``random``, or an alias); ``alpha``: a
    time at which RSF's survival must be exact (Algorithm 3's threshold). The oracle
    needs its probabilities: build :class:`Oracle` directly."""
    name = canonical(name)
    if name == "oracle":
        raise ValueError("the oracle method needs its scores file (--oracle-scores)")
    if name == "rsf" and alpha is not None:
        return RSF(horizon=horizon, seed=seed, n_jobs=n_jobs, keep_times=(float(alpha),))
    return _CLASSES[name](horizon=horizon, seed=seed, n_jobs=n_jobs)
