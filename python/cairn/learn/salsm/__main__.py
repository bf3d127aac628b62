"""``python -m cairn.learn.salsm``: see :mod:`cairn.learn.salsm.cli`."""

import sys

from .cli import main

sys.exit(main())
