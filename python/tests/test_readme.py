"""docs/python.md's examples run as written (in a scratch directory)."""

import os
import re
from pathlib import Path

from conftest import checked

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "docs" / "python.md"


def blocks(path=README):
    text = path.read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


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


def test_the_readme_front_page_example_runs(tmp_path, capsys):
    found = blocks(ROOT / "README.md")
    assert len(found) == 1
    os.chdir(tmp_path)
    exec(compile(found[0], "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "2"
    assert checked("shop.db").execute("SELECT sum(total) FROM orders").fetchone() == (21.5,)
