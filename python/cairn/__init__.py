"""cairn: the Python side of the cairn LSM-tree storage engine.

Pure-Python subpackages live here (``cairn.learn``: offline learners). A compiled
extension, ``cairn._native``, may be added to this same project later; nothing in this
file imports it, so the learners work without any compiled part of cairn.
"""

__version__ = "0.1.0"
