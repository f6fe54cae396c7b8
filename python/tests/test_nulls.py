"""Which empty CSV fields are NULL, from Python: the library's rule for each `nulls=`."""
import sqlite3

import pytest

import liteload


def test_nulls_tell_quoted_from_unquoted_empty_fields(tmp_path):
    """nulls="unquoted" is PostgreSQL's CSV rule; empty_null=True is nulls="all"."""
    src = tmp_path / "t.csv"
    src.write_text('id,n,s\n1,,""\n2,"",\n', encoding="utf-8")
    got = {}
    for rule in ("typed", "all", "unquoted"):
        liteload.import_file(tmp_path / f"{rule}.db", src, nulls=rule)
        got[rule] = sqlite3.connect(tmp_path / f"{rule}.db").execute("SELECT n, s FROM t ORDER BY id").fetchall()
    assert got["typed"] == [("", ""), ("", "")]  # columns with no values are TEXT
    assert got["all"] == [(None, None), (None, None)]
    assert got["unquoted"] == [(None, ""), ("", None)]
    liteload.import_file(tmp_path / "e.db", src, empty_null=True)
    assert sqlite3.connect(tmp_path / "e.db").execute("SELECT n, s FROM t ORDER BY id").fetchall() == got["all"]
    with pytest.raises(liteload.UsageError):
        liteload.import_file(tmp_path / "x.db", src, nulls="unquoted", empty_null=True)
    with pytest.raises(liteload.UsageError):
        liteload.import_file(tmp_path / "j.db", b'{"a": ""}\n', table="t", format="ndjson", nulls="unquoted")
