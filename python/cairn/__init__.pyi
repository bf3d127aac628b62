from cairn._native import Busy as Busy
from cairn._native import check as check
from cairn._native import ClosedError as ClosedError
from cairn._native import ReadOnlyError as ReadOnlyError
from cairn._native import CorruptionError as CorruptionError
from cairn._native import Db as Db
from cairn._native import Error as Error
from cairn._native import InvalidArgument as InvalidArgument
from cairn._native import IOError as IOError  # noqa: A004
from cairn._native import Iterator as Iterator
from cairn._native import Snapshot as Snapshot
from cairn._native import WriteBatch as WriteBatch
from cairn._native import default_options as default_options
from cairn._native import option_names as option_names
from cairn._native import presets as presets
from cairn._native import repair as repair

__version__: str
__all__: list[str]
