"""One vocabulary with pandas: if_exists (default "fail", as to_sql) for write and
import_file, mode= as write's older spelling, index= for a frame's index, alter= on
append; frames whose columns SQLite cannot hold as given are refused by name; KvStore is
a MutableMapping that takes any bytes-like value and does not quietly add its table to
an unrelated database."""

import io
from collections.abc import MutableMapping

import pyarrow as pa
import pytest

import liteload
from conftest import columns, rows

pd = pytest.importorskip("pandas")


def declared(db, table):
    return dict(columns(db, table))


def names(db, table):
    return [name for name, _ in columns(db, table)]


def test_write_refuses_an_existing_table_unless_told(tmp_path):
    db = tmp_path / "x.db"
    liteload.write(db, "t", pa.table({"a": [1]}))
    with pytest.raises(ValueError, match="exists already") as e:
        liteload.write(db, "t", pa.table({"a": [2]}))
    assert isinstance(e.value, liteload.SchemaError) and "if_exists=" in str(e.value)
    liteload.write(db, "t", pa.table({"a": [2]}), if_exists="append")
    liteload.write(db, "t", pa.table({"a": [3]}), mode="append")
    assert rows(db, "t") == [(1,), (2,), (3,)]
    liteload.write(db, "t", pa.table({"a": [9]}), if_exists="replace", mode="replace")
    assert rows(db, "t") == [(9,)]
    with pytest.raises(ValueError, match="disagree"):
        liteload.write(db, "t", pa.table({"a": [1]}), if_exists="append", mode="create")
    assert rows(db, "t") == [(9,)]


def test_import_file_refuses_an_existing_table_by_default(tmp_path):
    src = tmp_path / "airports.csv"
    src.write_text("faa,name\nJFK,Kennedy\nLGA,LaGuardia\n", encoding="utf-8")
    db = tmp_path / "x.db"
    liteload.import_file(db, src)
    with pytest.raises(liteload.SchemaError, match="exists already"):
        liteload.import_file(db, src)
    assert len(rows(db, "airports")) == 2
    liteload.import_file(db, src, if_exists="append")
    assert len(rows(db, "airports")) == 4
    liteload.import_file(db, src, if_exists="replace")
    assert len(rows(db, "airports")) == 2
    # Many files into one table: the load made the table, so the second file appends.
    s = liteload.import_file(tmp_path / "y.db", [src, src], table="both")
    assert s.rows == 4


def test_a_frames_index_is_written_only_when_asked(tmp_path):
    db = tmp_path / "x.db"
    d = pd.DataFrame({"a": [1, 2, 3, 4], "b": ["w", "x", "y", "z"]})
    liteload.write(db, "t", d)
    filtered = d[d.a.isin([1, 2, 4])]
    liteload.write(db, "t", filtered, if_exists="append")
    assert names(db, "t") == ["a", "b"]
    assert len(rows(db, "t")) == 7
    named = d.set_index("b")
    liteload.write(db, "named", named, index=True)
    assert names(db, "named") == ["b", "a"]
    assert rows(db, "named")[0] == ("w", 1)
    liteload.write(db, "unnamed", filtered, index=True)
    assert names(db, "unnamed") == ["index", "a", "b"]
    assert [r[0] for r in rows(db, "unnamed")] == [0, 1, 3]
    multi = d.set_index(["a", "b"])
    liteload.write(db, "multi", multi.assign(c=1), index=True)
    assert names(db, "multi") == ["a", "b", "c"]


def test_alter_adds_the_columns_an_append_brings(tmp_path):
    db = tmp_path / "x.db"
    liteload.write(db, "t", pa.table({"a": [1]}))
    with pytest.raises(liteload.SchemaError, match="alter=True") as e:
        liteload.write(db, "t", pa.table({"a": [2], "b": ["new"]}), if_exists="append")
    assert "--" not in str(e.value)
    liteload.write(db, "t", pa.table({"a": [2], "b": ["new"]}), if_exists="append", alter=True)
    assert rows(db, "t") == [(1, None), (2, "new")]


def test_a_period_column_is_refused_by_name(tmp_path):
    d = pd.DataFrame({"id": [1, 2], "month": pd.period_range("2026-01", periods=2, freq="M")})
    with pytest.raises(ValueError, match="'month'"):
        liteload.write(tmp_path / "x.db", "t", d)
    assert not (tmp_path / "x.db").exists()


def test_an_empty_frames_object_column_is_text(tmp_path):
    db = tmp_path / "x.db"
    empty = pd.DataFrame({"name": pd.Series([], dtype=object), "n": pd.Series([], dtype="int64")})
    liteload.write(db, "t", empty)
    assert declared(db, "t") == {"name": "TEXT", "n": "INTEGER"}
    nones = pd.DataFrame({"name": [None, None], "n": [1, 2]})
    liteload.write(db, "u", nones)
    assert declared(db, "u")["name"] == "TEXT" and rows(db, "u") == [(None, 1), (None, 2)]


def test_kvstore_is_a_mutable_mapping(tmp_path):
    with liteload.KvStore(tmp_path / "kv.db") as kv:
        assert isinstance(kv, MutableMapping)
        kv["a"] = b"1"
        kv[2] = bytearray(b"two")
        kv["m"] = memoryview(b"xmemoryx")[1:-1]
        kv.update({"u": b"U"}, v=b"V")
        kv.update([("w", io.BytesIO(b"from a file"))])
        assert len(kv) == 6 and "a" in kv and 7 not in kv
        assert kv[2] == b"two" and kv["m"] == b"memory" and kv["w"] == b"from a file"
        assert dict(kv.items()) == {2: b"two", "a": b"1", "m": b"memory", "u": b"U", "v": b"V", "w": b"from a file"}
        assert sorted(kv.values()) == sorted([b"two", b"1", b"memory", b"U", b"V", b"from a file"])
        assert kv.get("missing") is None and kv.get("missing", b"d") == b"d"
        assert kv.pop("u") == b"U" and "u" not in kv
        assert kv.setdefault("s", b"S") == b"S" and kv["s"] == b"S"
        del kv["a"]
        with pytest.raises(KeyError):
            del kv["a"]
        with pytest.raises(TypeError, match="bytes-like"):
            kv["bad"] = "a str is not bytes"
        # update is one transaction: a bad value stores none of the pairs.
        with pytest.raises(TypeError):
            kv.update({"x1": b"ok", "x2": 3})
        assert "x1" not in kv


def test_kvstore_does_not_quietly_join_another_database(tmp_path):
    db = tmp_path / "app.db"
    liteload.write(db, "users", pa.table({"id": [1]}))
    before = db.read_bytes()
    with pytest.raises(liteload.SchemaError, match="create=True"):
        liteload.KvStore(db)
    assert db.read_bytes() == before
    with liteload.KvStore(db, create=True) as kv:
        kv["k"] = b"v"
    # Once it holds a store, it opens as one.
    with liteload.KvStore(db) as kv:
        assert kv["k"] == b"v"
    assert rows(db, "users") == [(1,)]


def test_dtype_declares_columns_for_frames_and_dicts(tmp_path):
    db = tmp_path / "x.db"
    frame = pd.DataFrame({"zip": [2134, 501], "n": [1, 2], "r": [1, 2]})
    liteload.write(db, "t", frame, dtype={"zip": "text", "R": "real"})
    assert declared(db, "t") == {"zip": "TEXT", "n": "INTEGER", "r": "REAL"}
    assert rows(db, "t") == [("2134", 1, 1.0), ("501", 2, 2.0)]
    import polars as pl

    liteload.write(db, "p", pl.DataFrame({"zip": [7]}), dtype={"zip": "text"})
    assert declared(db, "p") == {"zip": "TEXT"} and rows(db, "p") == [("7",)]
    reader = pa.table({"a": ["1", "2"]}).to_reader()
    liteload.write(db, "r", reader, dtype={"a": "integer"})
    assert declared(db, "r") == {"a": "INTEGER"} and rows(db, "r") == [(1,), (2,)]
    liteload.write(db, "d", [{"zip": "02134", "n": 1}], dtype={"zip": "text", "n": "real"})
    assert declared(db, "d") == {"zip": "TEXT", "n": "REAL"} and rows(db, "d") == [("02134", 1.0)]
    with pytest.raises(ValueError, match="nope"):
        liteload.write(db, "e", frame, dtype={"nope": "text"})
    with pytest.raises(ValueError, match="FLOATY"):
        liteload.write(db, "e", frame, dtype={"zip": "FLOATY"})
    with pytest.raises(ValueError, match="dtype"):
        liteload.write(db, "e", pa.table({"a": ["x"]}), dtype={"a": "integer"})
    with pytest.raises(ValueError, match="FLOATY"):
        liteload.write(db, "e", [{"a": 1}], dtype={"a": "FLOATY"})
