"""SQLite files as import_file's sources: told by their header whatever their name,
every table copied with its declared schema and merged by the documented rules, the
same as SQLite's own ATTACH + INSERT ... SELECT."""

import sqlite3

import pytest

import liteload
from conftest import checked


def make(path, sql):
    conn = sqlite3.connect(path)
    conn.executescript(sql)
    conn.close()


def test_sqlite_files_merge_as_sqlite_itself_merges_them(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.data"
    make(a, """CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT COLLATE NOCASE) STRICT;
               INSERT INTO t VALUES (1, 'é'), (4, 'x' || char(0) || 'y');
               CREATE INDEX t_v ON t (v);
               CREATE TABLE plain (m, n); INSERT INTO plain (rowid, m, n) VALUES (7, 1, 'a'), (9, 2, x'00ff');""")
    make(b, """CREATE TABLE t (v TEXT, id INTEGER PRIMARY KEY);
               INSERT INTO t VALUES ('z', 2);
               CREATE TABLE plain (n, m); INSERT INTO plain VALUES ('b', 3);""")
    out = tmp_path / "out.db"
    s = liteload.import_file(out, [a, b])
    assert s.rows == 6
    # The reference: SQLite alone, by the same rules.
    ref = tmp_path / "ref.db"
    conn = sqlite3.connect(ref)
    conn.execute("ATTACH ? AS a", (str(a),))
    conn.execute("ATTACH ? AS b", (str(b),))
    for (sql,) in conn.execute("SELECT sql FROM a.sqlite_schema WHERE type = 'table'").fetchall():
        conn.execute(sql)
    conn.execute("INSERT INTO t (id, v) SELECT id, v FROM a.t")
    conn.execute("INSERT INTO t (id, v) SELECT id, v FROM b.t")
    conn.execute("INSERT INTO plain (m, n) SELECT m, n FROM a.plain ORDER BY rowid")
    conn.execute("INSERT INTO plain (m, n) SELECT m, n FROM b.plain ORDER BY rowid")
    conn.execute("CREATE INDEX t_v ON t (v)")
    conn.commit()
    got, want = checked(out), checked(ref)
    for q in ["SELECT type, name, sql FROM sqlite_schema ORDER BY name",
              "SELECT rowid, * FROM t ORDER BY rowid", "SELECT rowid, * FROM plain ORDER BY rowid"]:
        assert got.execute(q).fetchall() == want.execute(q).fetchall(), q
    assert got.execute("SELECT n FROM plain WHERE m = 2").fetchone() == (b"\x00\xff",)


def test_a_key_in_two_files_is_refused_and_no_file_is_left(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    make(a, "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a');")
    make(b, "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'b');")
    out = tmp_path / "out.db"
    with pytest.raises(liteload.Error, match="UNIQUE constraint failed: t.id"):
        liteload.import_file(out, [a, b])
    assert not out.exists()
    liteload.import_file(out, [a, b], on_conflict="replace")
    assert checked(out).execute("SELECT v FROM t").fetchall() == [("b",)]


def test_tables_and_keep_rowids_go_with_sqlite_files_only(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    make(a, "CREATE TABLE log (m); INSERT INTO log (rowid, m) VALUES (10, 'x'), (20, 'y'); CREATE TABLE other (z);")
    make(b, "CREATE TABLE LOG (m); INSERT INTO LOG (rowid, m) VALUES (5, 'z');")
    out = tmp_path / "out.db"
    liteload.import_file(out, [a, b], tables=["log"], keep_rowids=True)
    conn = checked(out)
    assert conn.execute("SELECT rowid, m FROM log").fetchall() == [(5, "z"), (10, "x"), (20, "y")]
    assert conn.execute("SELECT name FROM sqlite_schema").fetchall() == [("log",)]
    csv = tmp_path / "t.csv"
    csv.write_text("x\n1\n", encoding="utf-8")
    with pytest.raises(liteload.UsageError, match="keep_rowids= goes with SQLite files"):
        liteload.import_file(tmp_path / "c.db", csv, keep_rowids=True)
    with pytest.raises(liteload.UsageError, match="copied table by table"):
        liteload.import_file(tmp_path / "c.db", [a, csv])
    assert not (tmp_path / "c.db").exists()


def test_an_input_open_in_pythons_sqlite3_is_refused_until_it_closes(tmp_path):
    a = tmp_path / "a.db"
    make(a, "CREATE TABLE t (x); INSERT INTO t VALUES (1);")
    conn = sqlite3.connect(a)
    conn.execute("SELECT * FROM t").fetchall()
    out = tmp_path / "out.db"
    with pytest.raises(liteload.UsageError, match="another copy of SQLite"):
        liteload.import_file(out, a)
    assert not out.exists()
    conn.close()
    liteload.import_file(out, a)
    assert checked(out).execute("SELECT x FROM t").fetchall() == [(1,)]


def test_alike_files_into_a_new_file_are_copied_as_stored_and_equal_sqlites_merge(tmp_path):
    # One declaration in every file: the page writer copies the records as stored.
    schema = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, b BLOB); CREATE INDEX t_v ON t (v);"
    parts = []
    for k in range(3):
        p = tmp_path / f"part{k}.db"
        rows = ",".join(
            f"({k * 1000 + i}, 'ü{i % 7}' || char(0), x'{i % 256:02x}00')" for i in range(1, 400)
        )
        make(p, f"{schema} INSERT INTO t VALUES {rows}; INSERT INTO t VALUES ({k * 1000 + 999}, printf('%.*c', 9000, 'w'), NULL);")
        parts.append(p)
    out = tmp_path / "merged.db"
    s = liteload.import_file(out, parts, engine="direct")
    assert s.rows == 1200 and s.engine == "direct"
    ref = tmp_path / "ref.db"
    conn = sqlite3.connect(ref)
    conn.executescript(schema)
    for p in parts:
        conn.execute("ATTACH ? AS s", (str(p),))
        conn.execute("INSERT INTO t SELECT * FROM s.t")
        conn.commit()
        conn.execute("DETACH s")
    conn.commit()
    conn.close()
    got, want = checked(out), checked(ref)
    for q in ["SELECT type, name, sql FROM sqlite_schema ORDER BY name",
              "SELECT rowid, * FROM t ORDER BY rowid",
              "SELECT v, id FROM t INDEXED BY t_v ORDER BY v, id"]:
        assert got.execute(q).fetchall() == want.execute(q).fetchall(), q
