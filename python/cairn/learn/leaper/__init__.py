"""Leaper's offline learner (Yang et al., "Leaper: A Learned Prefetcher for Cache
Invalidation in LSM-tree based Storage Engines", VLDB 2020).

From the engine's access traces it picks the key-range width (Algorithm 1), finds each
range's precursors (Algorithm 2), builds the 18 features, trains k LightGBM models (one
per future slot, multi-step prediction), reports precision / recall / AUC against the
baselines, and writes the model bundle the engine's prefetcher loads. The file formats
are those of ``docs/design/formats/leaper.md``.

Modules: :mod:`.trace` (access trace I/O), :mod:`.estimate` (eq. 1), :mod:`.counts`
(estimated counts, aggregation), :mod:`.ranges` (Algorithm 1), :mod:`.precursors`
(Algorithm 2), :mod:`.features`, :mod:`.metrics`, :mod:`.train`, :mod:`.report`,
:mod:`.bundle` (model bundle I/O), :mod:`.synth` (synthetic traces), :mod:`.cli`.
"""

from .. import require

require("leaper", ("numpy", "scipy", "lightgbm", "crc32c"))

from .bundle import Bundle, BundleError, read_bundle, write_bundle  # noqa: E402
from .estimate import estimate_count, estimate_counts  # noqa: E402
from .trace import Trace, TraceError, read_trace, write_trace  # noqa: E402

__all__ = [
    "Bundle",
    "BundleError",
    "Trace",
    "TraceError",
    "estimate_count",
    "estimate_counts",
    "read_bundle",
    "read_trace",
    "write_bundle",
    "write_trace",
]
