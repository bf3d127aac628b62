"""Offline learners whose models the engine loads (``leaper``: learned cache prefetcher;
``salsm``: SA-LSM's survival-analysis service that picks the cold records)."""
