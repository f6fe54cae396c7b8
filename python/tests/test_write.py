"""liteload.write: Arrow data (pyarrow, polars, pandas) and dict rows, compared with what
SQLite's own insert path stores for the same values, with hostile values."""

import datetime
import decimal
import math
import sqlite3

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import liteload
from conftest import checked, columns, rows

HOSTILE = ["", "a\0b", "zoë 😀", "\ufeffx", "'; DROP TABLE t; --", '"q"', "007", "1e3", "x" * 5000]

ints = st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1))
floats = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))
texts = st.one_of(st.none(), st.sampled_from(HOSTILE), st.text(max_size=40))
blobs = st.one_of(st.none(), st.binary(max_size=40))
bools = st.one_of(st.none(), st.booleans())


def reference(tmp_path, table, name="ref.db"):
    """What SQLite's own insert path stores for ``table`` (NaN as NULL, bool as 0/1)."""
    path = tmp_path / name
    conn = sqlite3.connect(path)
    types = {pa.int64(): "INTEGER", pa.float64(): "REAL", pa.string(): "TEXT", pa.binary(): "BLOB", pa.bool_(): "INTEGER"}
    cols = ", ".join(f'"{f.name}" {types[f.type]}' for f in table.schema)
    conn.execute(f"CREATE TABLE t ({cols})")
    data = []
    for row in table.to_pylist():
        data.append(tuple(None if isinstance(v, float) and math.isnan(v) else v for v in row.values()))
    marks = ", ".join("?" for _ in table.schema)
    conn.executemany(f"INSERT INTO t VALUES ({marks})", data)
    conn.commit()
    conn.close()
    return rows(path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.lists(st.tuples(ints, floats, texts, blobs, bools), max_size=60),
    engine=st.sampled_from(["auto", "direct", "sqlite"]),
)
def test_pyarrow_tables_store_what_sqlite_stores(tmp_path_factory, data, engine):
    tmp = tmp_path_factory.mktemp("w")
    table = pa.table(
        {
            "i": pa.array([r[0] for r in data], pa.int64()),
            "f": pa.array([r[1] for r in data], pa.float64()),
            "s": pa.array([r[2] for r in data], pa.string()),
            "b": pa.array([r[3] for r in data], pa.binary()),
            "ok": pa.array([r[4] for r in data], pa.bool_()),
        }
    )
    db = tmp / "out.db"
    summary = liteload.write(db, "t", table, engine=engine)
    assert summary.rows == len(data)
    assert summary.engine == ("sqlite" if engine == "sqlite" else "direct")
    assert rows(db) == reference(tmp, table)
    assert [t for _, t in columns(db)] == ["INTEGER", "REAL", "TEXT", "BLOB", "INTEGER"]


@pytest.mark.parametrize("threads", [1, 3])
def test_a_record_batch_reader_is_read_once_in_order(db, threads):
    schema = pa.schema([("n", pa.int64())])
    batches = (pa.record_batch([pa.array(range(i * 1000, (i + 1) * 1000))], schema=schema) for i in range(20))
    reader = pa.RecordBatchReader.from_batches(schema, batches)
    assert liteload.write(db, "t", reader, threads=threads).rows == 20_000
    assert rows(db) == [(n,) for n in range(20_000)]
    # A reader is read once: read again, it has no rows left (pyarrow's semantics).
    assert liteload.write(db.with_suffix(".2.db"), "t", reader).rows == 0


def test_pandas_frames_round_trip(db):
    df = pd.DataFrame(
        {
            "name": ["Ada", None, "zoë 😀", "a\0b"],
            "n": pd.array([1, None, -(2**63), 2**63 - 1], dtype="Int64"),
            "x": [1.5, float("nan"), -0.0, 1e300],
            "when": pd.to_datetime(["2026-11-23 10:00:00", None, "1970-01-01", "2262-04-11"], format="ISO8601").tz_localize("Europe/Oslo"),
            "naive": pd.to_datetime(["2026-11-23 10:00:00.5", "2000-02-29", None, "1999-12-31 23:59:59"], format="ISO8601"),
            "kind": pd.Categorical(["a", "b", None, "a"]),
            "flag": [True, False, None, True],
        }
    )
    liteload.write(db, "t", df)
    names = [n for n, _ in columns(db)]
    got = {n: [r[i] for r in rows(db)] for i, n in enumerate(names)}
    assert names == ["name", "n", "x", "when", "naive", "kind", "flag"]
    assert got["name"] == ["Ada", None, "zoë 😀", "a\0b"]
    assert got["n"] == [1, None, -(2**63), 2**63 - 1]
    assert got["x"][0] == 1.5 and got["x"][1] is None and got["x"][2:] == [0.0, 1e300]
    utc = df["when"].dt.tz_convert("UTC")
    assert got["when"] == [None if pd.isna(t) else t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in utc]
    assert got["naive"] == ["2026-11-23T10:00:00.500", "2000-02-29T00:00:00", None, "1999-12-31T23:59:59"]
    assert got["kind"] == ["a", "b", None, "a"]
    assert got["flag"] == [1, 0, None, 1]
    # pandas reads it back as the same frame where the types allow.
    back = pd.read_sql("SELECT * FROM t ORDER BY rowid", checked(db))
    assert back.shape == (4, 7) and back["name"][0] == "Ada" and back["x"][0] == 1.5
    # Times written as UTC with Z are read by SQLite's date functions.
    assert checked(db).execute("SELECT datetime(when_) FROM (SELECT \"when\" AS when_ FROM t) LIMIT 1").fetchone() == ("2026-11-23 09:00:00",)


def test_pandas_object_columns_of_mixed_types_keep_each_values_type(db):
    df = pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "mixed": [1, "two", 3.5, None],
            "when": pd.to_datetime(["2026-11-23 10:00", None, "2026-01-01", "2026-06-01"], format="ISO8601").tz_localize("UTC"),
        }
    )
    liteload.write(db, "t", df)
    conn = checked(db)
    got = conn.execute("SELECT id, mixed, typeof(mixed), \"when\" FROM t ORDER BY id").fetchall()
    # The column's type comes from its values: mixed values make it TEXT, as to_sql does.
    assert [r[1] for r in got] == ["1", "two", "3.5", None]
    assert got[0][3] == "2026-11-23T10:00:00Z" and got[1][3] is None


def test_polars_frames_round_trip(db):
    df = pl.DataFrame(
        {
            "id": [1, 2, None],
            "name": ["x", None, "zoë\0"],
            "score": [0.5, None, float("inf")],
            "tags": [["a", "b"], [], None],
            "day": [datetime.date(2026, 11, 23), None, datetime.date(1, 1, 1)],
        }
    )
    liteload.write(db, "t", df)
    assert rows(db) == [
        (1, "x", 0.5, '["a","b"]', "2026-11-23"),
        (2, None, None, "[]", None),
        (None, "zoë\0", math.inf, None, "0001-01-01"),
    ]


def test_dict_rows_like_insert_all(db):
    data = [
        {"id": 1, "name": "Ada", "big": 2**70, "nested": {"a": [1, None]}, "d": decimal.Decimal("1.10")},
        {"id": 2, "name": "zoë 😀", "extra": True, "when": datetime.datetime(2026, 11, 23, 10, tzinfo=datetime.timezone.utc)},
        {"id": 3, "name": None, "nan": float("nan")},
    ]
    summary = liteload.write(db, "t", iter(data))
    assert summary.rows == 3
    conn = checked(db)
    got = [dict(zip([c[0] for c in conn.execute("SELECT * FROM t").description], r)) for r in conn.execute("SELECT * FROM t ORDER BY id")]
    assert got[0]["big"] == str(2**70)
    assert got[0]["nested"] == '{"a":[1,null]}'
    assert got[0]["d"] == "1.10"
    assert got[1]["extra"] == 1 and got[1]["when"] == "2026-11-23T10:00:00Z"
    assert got[2]["name"] is None and got[2]["nan"] is None


def test_modes(db, tmp_path):
    liteload.write(db, "t", pa.table({"a": [1, 2]}))
    with pytest.raises(liteload.UsageError, match="exists already"):
        liteload.write(db, "t", pa.table({"a": [3]}))
    liteload.write(db, "t", pa.table({"a": [3]}), mode="append")
    assert rows(db) == [(1,), (2,), (3,)]
    liteload.write(db, "t", pa.table({"b": ["x"]}), mode="replace")
    assert rows(db) == [("x",)] and columns(db) == [("b", "TEXT")]
    # A replacement that fails keeps the old table.
    def bad():
        yield {"b": "y"}
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="the source broke"):
        liteload.write(db, "t", bad(), mode="replace")
    assert rows(db) == [("x",)]
    with pytest.raises(liteload.UsageError, match="mode"):
        liteload.write(db, "t", pa.table({"a": [1]}), mode="upsert")


def test_primary_key_and_indexes(db):
    table = pa.table({"id": [3, 1, 2], "city": ["b", "a", "b"], "zip": ["1", "2", "3"]})
    liteload.write(db, "t", table, pk="id", indexes=["city", ("city", "zip")], unique_indexes=["zip"])
    conn = checked(db)
    sqls = [r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL ORDER BY name")]
    assert len(sqls) == 3 and any("UNIQUE" in s for s in sqls)
    assert conn.execute("SELECT id FROM t ORDER BY rowid").fetchall() == [(1,), (2,), (3,)]
    # sqlite3's connection is closed before liteload writes (test_beside_sqlite3.py).
    conn.close()
    # A refused row is a ConstraintError (a BadInput too) with SQLite's extended code.
    with pytest.raises(liteload.ConstraintError) as e:
        liteload.write(db, "u", pa.table({"id": [1, 1]}), pk="id")
    assert isinstance(e.value, liteload.BadInput)
    assert e.value.code == 1555 and e.value.record == 2  # SQLITE_CONSTRAINT_PRIMARYKEY
    conn = checked(db)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name='u'").fetchone() == (0,)
    conn.close()


def test_hostile_column_names(db):
    table = pa.table({"a": [1], "A": [2], "": [3], 'we"ird': [4], "sp ace": [5]})
    liteload.write(db, "t; DROP TABLE x", table)
    names = [n for n, _ in columns(db, "t; DROP TABLE x")]
    assert len(set(n.lower() for n in names)) == 5
    assert names[0] == "a" and 'we"ird' in names and "sp ace" in names
    assert rows(db, "t; DROP TABLE x") == [(1, 2, 3, 4, 5)]


def test_progress_callback_and_its_exception(db, tmp_path):
    seen = []
    liteload.write(db, "t", pa.table({"n": list(range(1000))}), progress=lambda *a: seen.append(a))
    assert seen and seen[-1][0] == 1000 and seen[-1][1] == 1000

    def slow():
        for i in range(100_000):
            if i % 1000 == 0:
                import time

                time.sleep(0.01)
            yield {"n": i}

    def boom(*_):
        raise ValueError("stop here")

    other = tmp_path / "other.db"
    with pytest.raises(ValueError, match="stop here"):
        liteload.write(other, "t", slow(), progress=boom)
    assert not other.exists()


def test_unsupported_data_is_a_type_error(db):
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        liteload.write(db, "t", 42)
    class Unprintable:
        def __str__(self):
            raise TypeError("no text for this")

    with pytest.raises(TypeError, match="row 2"):
        liteload.write(db, "t", [{"a": 1}, {"a": Unprintable()}])
    assert not db.exists()


def test_bytes_in_dict_rows_are_blobs(db):
    """bytes, bytearray and memoryview values are stored as BLOBs, as SQLite's own insert
    of a bound bytes value stores them, beside values of other types in one column."""
    data = [
        {"id": 1, "v": b"\x00\xffraw"},
        {"id": 2, "v": bytearray(b"ba")},
        {"id": 3, "v": memoryview(b"mv")},
        {"id": 4, "v": "text"},
        {"id": 5, "v": b""},
        {"id": 6, "v": None},
    ]
    liteload.write(db, "t", data)
    got = checked(db).execute("SELECT id, v, typeof(v) FROM t ORDER BY id").fetchall()
    assert got == [
        (1, b"\x00\xffraw", "blob"),
        (2, b"ba", "blob"),
        (3, b"mv", "blob"),
        (4, "text", "text"),
        (5, b"", "blob"),
        (6, None, "null"),
    ]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    moments=st.lists(
        st.tuples(
            st.datetimes(min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30)),
            st.integers(min_value=-14 * 60, max_value=14 * 60),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_dict_rows_store_times_as_the_arrow_path_does(tmp_path_factory, moments):
    tmp = tmp_path_factory.mktemp("t")
    aware = [m.replace(tzinfo=datetime.timezone(datetime.timedelta(minutes=o))) for m, o in moments]
    naive = [m for m, _ in moments]
    liteload.write(tmp / "arrow.db", "t", pa.table({"a": pa.array(aware, pa.timestamp("us", tz="UTC")), "n": pa.array(naive, pa.timestamp("us"))}))
    liteload.write(tmp / "dicts.db", "t", [{"a": a, "n": n} for a, n in zip(aware, naive)])
    assert rows(tmp / "dicts.db") == rows(tmp / "arrow.db")
