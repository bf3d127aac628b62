"""Offline learners whose models the engine loads (``leaper``: learned cache prefetcher)."""
