"""The README's Python examples run as written (in a scratch directory)."""

import os
import re
from pathlib import Path

from conftest import checked

README = Path(__file__).resolve().parents[2] / "README.md"


def blocks():
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use it from Python", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_python_examples_run(tmp_path, capsys):
    found = blocks()
    assert len(found) >= 2
    os.chdir(tmp_path)
    for code in found:
        exec(compile(code, str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "2 direct atomic-new" in out
    assert "bad.csv 3 " in out
    # Every database the examples wrote passes SQLite's own check.
    assert checked("weather.db").execute("SELECT count(*) FROM weather").fetchone() == (3,)
    assert checked("people.db").execute("SELECT count(*) FROM people").fetchone() == (2,)
