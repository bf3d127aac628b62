"""``python -m cairn.learn.leaper``: see :mod:`cairn.learn.leaper.cli`."""

import sys

from .cli import main

sys.exit(main())
