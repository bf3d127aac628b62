"""Offline learners whose models the engine loads (``leaper``: learned cache prefetcher;
``salsm``: SA-LSM's survival-analysis service that picks the cold records)."""

from __future__ import annotations

import importlib.util


def require(learner: str, modules: tuple[str, ...]) -> None:
    """Raises an ImportError naming the extra to install when one of ``modules`` is missing:
    a plain install (pip install cairn) holds the engine bindings only, and a learner would
    otherwise fail deep inside on its first third-party import."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"cairn.learn.{learner} needs the learners' dependencies ({', '.join(missing)} missing): "
            "pip install 'cairn[learn]'"
        )
