"""README's "From Python" example runs as written (with its path moved to a temporary
directory), so the documentation cannot drift from the API."""

from __future__ import annotations

import re
from pathlib import Path


def test_readme_python_example(tmp_path, native, capsys):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## From Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    code = code.replace('"/tmp/pydb"', repr(str(tmp_path / "pydb")))
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "b'user:3' b'linus'" in out
