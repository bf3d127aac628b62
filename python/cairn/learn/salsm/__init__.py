"""SA-LSM's external service (Zhang et al., "SA-LSM: Optimize Data Layout for LSM-tree
Based Storage using Survival Analysis", VLDB 2022).

From the engine's record trace it labels pivot samples with tau-events and censoring
(§2.2.3, Alg. 1, eq. 1), builds the access and per-day features, trains a random survival
forest (Alg. 2; Cox, the paper's GBDT and a censoring-aware one, and the LRU / LFU /
LRU-2 / LIRS baselines behind the same interface), picks the cold keys (Alg. 3, or an
equal budget) and writes the cold-key set the engine loads before a proactive
compaction. ``evaluate`` reports the c-index (eq. 5), Uno's C and cold_fir (eq. 6) of
every method side by side, at the count Algorithm 3 gives SA-LSM and along a curve of
migrated shares; ``sweep`` runs Figs. 13-14. File formats: ``docs/design/formats/sa-lsm.md``.

Modules: :mod:`.trace` (record trace I/O), :mod:`.coldset` (cold-key set I/O),
:mod:`.oracle` (the bench's oracle scores), :mod:`.labels` (tau-events, censoring,
pivots), :mod:`.features`, :mod:`.models`, :mod:`.metrics`, :mod:`.awpi`, :mod:`.select`
(Alg. 3), :mod:`.settings`, :mod:`.pipeline` (train, evaluate), :mod:`.tune` (tau by
cross-validation), :mod:`.sweep`, :mod:`.tables`, :mod:`.synth` (synthetic traces),
:mod:`.cli`. Nothing here needs a compiled module; scikit-survival and LightGBM are
imported only when a model is fit.
"""

from .. import require

require("salsm", ("numpy", "scipy", "lightgbm", "sksurv"))

from .coldset import ColdSet, ColdSetError, read_cold_set, write_cold_set  # noqa: E402
from .trace import Record, RecordTrace, TraceError, read_trace, write_trace  # noqa: E402

__all__ = [
    "ColdSet",
    "ColdSetError",
    "Record",
    "RecordTrace",
    "TraceError",
    "read_cold_set",
    "read_trace",
    "write_cold_set",
    "write_trace",
]
