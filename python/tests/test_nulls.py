"""Which empty CSV fields are NULL, from Python: the library's rule for each `nulls=`."""
import sqlite3
from contextlib import closing

import pytest

import liteload
from conftest import checked


def test_nulls_tell_quoted_from_unquoted_empty_fields(tmp_path):
    """nulls="unquoted" is PostgreSQL's CSV rule; empty_null=True is nulls="all"."""
    src = tmp_path / "t.csv"
    src.write_text('id,n,s\n1,,""\n2,"",\n', encoding="utf-8")
    got = {}
    for rule in ("typed", "all", "unquoted"):
        liteload.import_file(tmp_path / f"{rule}.db", src, nulls=rule)
        got[rule] = checked(tmp_path / f"{rule}.db").execute("SELECT n, s FROM t ORDER BY id").fetchall()
    assert got["typed"] == [("", ""), ("", "")]  # columns with no values are TEXT
    assert got["all"] == [(None, None), (None, None)]
    assert got["unquoted"] == [(None, ""), ("", None)]
    liteload.import_file(tmp_path / "e.db", src, empty_null=True)
    assert checked(tmp_path / "e.db").execute("SELECT n, s FROM t ORDER BY id").fetchall() == got["all"]
    with pytest.raises(liteload.UsageError):
        liteload.import_file(tmp_path / "x.db", src, nulls="unquoted", empty_null=True)
    with pytest.raises(liteload.UsageError):
        liteload.import_file(tmp_path / "j.db", b'{"a": ""}\n', table="t", format="ndjson", nulls="unquoted")


def table(db):
    # Closed at once: liteload refuses to write a file this process holds open through
    # Python's own sqlite3.
    with closing(checked(db)) as c:
        return c.execute("SELECT * FROM t ORDER BY id").fetchall()


def test_on_conflict_and_key_for_import_file_and_write(tmp_path):
    """on_conflict= and key= as the command's --on-conflict and --key, for write too."""
    db = tmp_path / "c.db"
    with closing(sqlite3.connect(db)) as c:
        c.executescript("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER);"
                        "INSERT INTO t VALUES (1, 'old', 10), (2, 'two', 20);")
    src = tmp_path / "in.csv"
    src.write_text("id,name\n1,Ada\n3,Cy\n", encoding="utf-8")
    liteload.import_file(db, src, table="t", if_exists="append", on_conflict="update", key="id")
    assert table(db) == [(1, "Ada", 10), (2, "two", 20), (3, "Cy", None)]
    liteload.write(db, "t", [{"id": 2, "name": "Bo"}, {"id": 4, "name": "Di"}], if_exists="append", on_conflict="ignore")
    assert table(db) == [(1, "Ada", 10), (2, "two", 20), (3, "Cy", None), (4, "Di", None)]
    with pytest.raises(liteload.UsageError):
        liteload.import_file(db, src, table="t", if_exists="append", on_conflict="merge")


def test_a_table_made_beforehand_keeps_its_rules(tmp_path):
    """Into an empty STRICT table with NOT NULL, CHECK and a text primary key: the rows
    are written in place (each also put to a copy of the table in memory for SQLite to
    check), stored as sqlite3's executemany stores them; with bad records set aside (the
    side file), a row that breaks a rule is a bad record with its line."""
    ddl = ("CREATE TABLE t (id TEXT NOT NULL PRIMARY KEY, n INTEGER NOT NULL CHECK (n >= 0),"
           " j TEXT, s TEXT) STRICT")
    src = tmp_path / "in.csv"
    src.write_text('id,n,j,s\nb,2,"{""k"": [1]}",""\na,1,,é\n', encoding="utf-8")
    db, ref = tmp_path / "made.db", tmp_path / "ref.db"
    for path in (db, ref):
        with closing(sqlite3.connect(path)) as c:
            c.execute(ddl)
    got = liteload.import_file(db, src, table="t", if_exists="append", nulls="unquoted")
    assert got.rows == 2 and got.engine == "direct", got
    assert any(n.startswith("written in place") for n in got.notes), got.notes
    with closing(sqlite3.connect(ref)) as c:
        c.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [("b", 2, '{"k": [1]}', ""), ("a", 1, None, "é")])
        c.commit()
    assert table(db) == table(ref)
    # A negative n and a repeated key: refused, the rest loaded, each with its line.
    bad = tmp_path / "bad.csv"
    bad.write_text("id,n,j,s\nc,3,,x\nd,-1,,y\nc,4,,z\n", encoding="utf-8")
    db2 = tmp_path / "made2.db"
    with closing(sqlite3.connect(db2)) as c:
        c.execute(ddl)
    got = liteload.import_file(db2, bad, table="t", if_exists="append", max_errors=5)
    assert (got.rows, got.rejects) == (1, 2), got
    assert "bad.csv:3" in got.reject_samples[0] and "CHECK" in got.reject_samples[0]
    assert "bad.csv:4" in got.reject_samples[1] and "UNIQUE" in got.reject_samples[1]
    assert table(db2) == [("c", 3, "", "x")]  # nulls="typed": an empty TEXT field is ''


def test_a_table_made_beforehand_without_check_is_filled_in_place(tmp_path):
    """Into an empty STRICT table with NOT NULL and a text primary key (no CHECK): the
    rows are written in place, stored as sqlite3's executemany stores them; a repeated
    key fails the load with SQLite's reason and the refused row's line, the table left
    empty."""
    ddl = "CREATE TABLE t (id TEXT NOT NULL PRIMARY KEY, n INTEGER NOT NULL, s TEXT) STRICT"
    src = tmp_path / "in.csv"
    src.write_text('id,n,s\nb,2,""\na,1,\nc,-3,é\n', encoding="utf-8")
    db, ref = tmp_path / "made.db", tmp_path / "ref.db"
    for path in (db, ref):
        with closing(sqlite3.connect(path)) as c:
            c.execute(ddl)
    got = liteload.import_file(db, src, table="t", if_exists="append", nulls="unquoted")
    assert got.rows == 3 and got.engine == "direct", got
    assert any(n.startswith("written in place") for n in got.notes), got.notes
    with closing(sqlite3.connect(ref)) as c:
        c.executemany("INSERT INTO t VALUES (?, ?, ?)", [("b", 2, ""), ("a", 1, None), ("c", -3, "é")])
        c.commit()
    assert table(db) == table(ref)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,n,s\nc,3,x\nd,1,y\nc,4,z\n", encoding="utf-8")
    db2 = tmp_path / "made2.db"
    with closing(sqlite3.connect(db2)) as c:
        c.execute(ddl)
    with pytest.raises(liteload.ConstraintError, match="UNIQUE constraint failed: t.id") as e:
        liteload.import_file(db2, bad, table="t", if_exists="append")
    assert (e.value.line, e.value.record) == (4, 3)
    assert table(db2) == []
    assert not (tmp_path / "made2.db-journal").exists()


def test_replace_keeps_the_children_sqlite3_keeps(tmp_path):
    """A load changes no table it was not asked to load: replacing parent rows leaves
    rows that refer to them with ON DELETE CASCADE, as Python's sqlite3 (foreign keys
    off by default) does with the same statement. A key that is no key of the table is
    a clear error naming it."""
    setup = ("CREATE TABLE p (id INTEGER PRIMARY KEY, v TEXT);"
             "INSERT INTO p VALUES (1, 'old'), (2, 'old');"
             "CREATE TABLE c (pid REFERENCES p (id) ON DELETE CASCADE, w TEXT);"
             "INSERT INTO c VALUES (1, 'a'), (2, 'b');")
    db, ref = tmp_path / "fk.db", tmp_path / "ref.db"
    for path in (db, ref):
        with closing(sqlite3.connect(path)) as c:
            c.executescript(setup)
    src = tmp_path / "p.csv"
    src.write_text("id,v\n1,new\n3,new\n", encoding="utf-8")
    liteload.import_file(db, src, table="p", if_exists="append", on_conflict="replace")
    with closing(sqlite3.connect(ref)) as c:
        c.executemany("INSERT OR REPLACE INTO p VALUES (?, ?)", [(1, "new"), (3, "new")])
        c.commit()
    for t in ("p", "c"):
        with closing(checked(db)) as a, closing(checked(ref)) as b:
            q = f"SELECT * FROM {t} ORDER BY rowid"
            assert a.execute(q).fetchall() == b.execute(q).fetchall(), t
    with closing(checked(db)) as a:
        assert a.execute("SELECT count(*) FROM c").fetchone() == (2,)
    with pytest.raises(liteload.SchemaError, match=r"the key \(v\) is neither"):
        liteload.import_file(db, src, table="p", if_exists="append", on_conflict="update", key="v")


def test_rows_added_to_an_indexed_table_merge_its_index_in_place(tmp_path):
    """Into a table that has rows and an index: the rows go in place and the index is
    merged with the new entries (its old pages freed), stored as sqlite3's executemany
    stores them, the index's order the same, the file intact."""
    setup = ("CREATE TABLE t (k INTEGER, s TEXT); CREATE INDEX t_s ON t (s);"
             "INSERT INTO t VALUES (1, 'b'), (2, NULL), (3, 'é' || char(0) || 'z');"
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)"
             " INSERT INTO t SELECT i, printf('%05d old', i) FROM n;")
    rows = [(i * 7 % 11, "😀" * (i % 5) + "x" * (3000 if i % 13 == 0 else i % 4)) for i in range(400)]
    src = tmp_path / "more.csv"
    src.write_text("k,s\n" + "".join(f"{k},{s}\n" for k, s in rows), encoding="utf-8")
    db, ref = tmp_path / "ours.db", tmp_path / "ref.db"
    for path in (db, ref):
        with closing(sqlite3.connect(path)) as c:
            c.executescript(setup)
    got = liteload.import_file(db, src, table="t", if_exists="append")
    assert got.rows == len(rows), got
    assert any("index(es) merged" in n for n in got.notes), got.notes
    with closing(sqlite3.connect(ref)) as c:
        c.executemany("INSERT INTO t VALUES (?, ?)", rows)
        c.commit()
    every = "SELECT rowid, k, s FROM t ORDER BY rowid"
    order = "SELECT rowid, s FROM t INDEXED BY t_s ORDER BY s, rowid"
    with closing(checked(db)) as ours, closing(checked(ref)) as theirs:
        assert ours.execute(every).fetchall() == theirs.execute(every).fetchall()
        assert ours.execute(order).fetchall() == theirs.execute(order).fetchall()
        assert ours.execute("PRAGMA freelist_count").fetchone()[0] > 0
