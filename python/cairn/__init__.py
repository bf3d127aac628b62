"""cairn: the Python side of the cairn LSM-tree storage engine.

Two parts, one package:

* the engine itself, through the compiled module ``cairn._native`` (PyO3): ``cairn.Db``,
  ``cairn.WriteBatch``, ``cairn.Snapshot``, the exceptions under ``cairn.Error``, and
  ``cairn.presets()``, ``cairn.option_names()``, ``cairn.default_options()``,
  ``cairn.repair()``, ``cairn.check()``;
* the offline learners, ``cairn.learn`` (Leaper, SA-LSM), pure Python.

The engine names are loaded on first use, so the learners import and run where the
compiled module was never built (a checkout used with ``pythonpath``, say).

>>> import cairn
>>> with cairn.Db("/tmp/cairn-doc", preset="ac-key") as db:  # doctest: +SKIP
...     db[b"hello"] = b"world"
...     db[b"hello"]
b'world'
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Names that come from the compiled module.
_NATIVE = (
    "Db",
    "WriteBatch",
    "Snapshot",
    "SstFileWriter",
    "Iterator",
    "Error",
    "CorruptionError",
    "IOError",
    "InvalidArgument",
    "Busy",
    "ClosedError",
    "ReadOnlyError",
    "presets",
    "option_names",
    "default_options",
    "repair",
    "check",
)

# Not IOError: after 'from cairn import *', 'except IOError' would stop catching the
# builtin (OSError). It is cairn.IOError.
__all__ = [n for n in _NATIVE if n != "IOError"]


def __getattr__(name: str) -> Any:
    if name not in _NATIVE:
        raise AttributeError(f"module 'cairn' has no attribute {name!r}")
    try:
        native = importlib.import_module("cairn._native")
    except ImportError as e:
        raise ImportError(
            f"cairn.{name} needs the compiled engine module cairn._native, which is not built here "
            "(install the package with 'pip install ./python', or build it in place with "
            "'maturin develop' in python/); the learners in cairn.learn work without it"
        ) from e
    value = getattr(native, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_NATIVE))
