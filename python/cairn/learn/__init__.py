"""Offline learners whose models the engine loads (``leaper``: learned cache prefetcher;
``salsm``: SA-LSM's survival-analysis service that picks the cold records)."""

import importlib.util

# A plain install (pip install cairn) holds the engine bindings only: say what to install
# rather than fail deep inside a learner on its first third-party import.
_NEEDS = ("numpy", "scipy", "lightgbm", "crc32c", "sksurv")
_MISSING = [m for m in _NEEDS if importlib.util.find_spec(m) is None]
if _MISSING:
    raise ImportError(
        f"cairn.learn needs the learners' dependencies ({', '.join(_MISSING)} missing): "
        "pip install 'cairn[learn]'"
    )
