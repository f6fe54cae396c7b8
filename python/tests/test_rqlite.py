"""Every target the command takes also works from Python: an rqlite cluster
(`rqlite://HOST:PORT`) for write, import_file, generate and ingest, read back through
the node's own HTTP API. Needs rqlited (LITELOAD_RQLITED, which
crates/cli/tests/python_package.rs builds and sets)."""

import json
import os
import socket
import sqlite3
import subprocess
import time
import urllib.parse
import urllib.request

import pyarrow as pa
import pytest

import liteload

RQLITED = os.environ.get("LITELOAD_RQLITED")
pytestmark = pytest.mark.skipif(not RQLITED, reason="rqlited is not built (LITELOAD_RQLITED)")


def free_ports():
    """Two free ports, both sockets held until both are known, so the two differ."""
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        return a.getsockname()[1], b.getsockname()[1]


@pytest.fixture
def node(tmp_path):
    """One rqlited node on loopback, ready; its HTTP port."""
    http, raft = free_ports()
    with open(tmp_path / "rqlited.log", "w") as log:
        proc = subprocess.Popen(
            [RQLITED, "-node-id", "n0", "-http-addr", f"127.0.0.1:{http}", "-raft-addr", f"127.0.0.1:{raft}", str(tmp_path / "data")],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.time() < deadline, (tmp_path / "rqlited.log").read_text()
            time.sleep(0.2)
        yield http
    finally:
        proc.terminate()
        proc.wait(10)


def query(http, sql):
    url = f"http://127.0.0.1:{http}/db/query?level=strong&q=" + urllib.parse.quote(sql)
    with urllib.request.urlopen(url, timeout=20) as r:
        body = json.load(r)
    result = body["results"][0]
    assert "error" not in result, result
    return [tuple(v) for v in result.get("values", [])]


def test_every_job_writes_to_a_cluster(node, tmp_path):
    url = f"rqlite://127.0.0.1:{node}"
    src = tmp_path / "people.csv"
    src.write_text('id,name\n1,Ada\n2,"zoë, 😀"\n3,\n', encoding="utf-8")
    s = liteload.import_file(url, src)
    assert s.rows == 3 and s.tables == ["people"]
    assert query(node, "SELECT id, name FROM people ORDER BY id") == [(1, "Ada"), (2, "zoë, 😀"), (3, "")]
    # The cluster holds data now: rows go in by statements, in one request per batch.
    liteload.write(url, "frames", pa.table({"a": [1, 2], "b": ["x", None]}))
    assert query(node, "SELECT a, b FROM frames ORDER BY a") == [(1, "x"), (2, None)]
    liteload.write(url, "frames", [{"a": 3, "b": "y"}], if_exists="append")
    assert query(node, "SELECT count(*) FROM frames") == [(3,)]
    with pytest.raises(liteload.SchemaError, match="exists already"):
        liteload.write(url, "frames", [{"a": 4}])
    liteload.generate(url, rows=500, table="gen", columns=["id=rowid", "n=int:1..9"], seed=3)
    assert query(node, "SELECT count(*), min(n) >= 1, max(n) <= 9 FROM gen") == [(500, 1, 1)]
    liteload.ingest(url, ['{"id": 1, "v": "a"}', {"id": 1, "w": 2}, '{"id": 2, "v": "b"}'], table="state", key="id")
    assert query(node, "SELECT id, v, w FROM state ORDER BY id") == [(1, "a", 2), (2, "b", None)]


def test_file_settings_are_refused_for_a_cluster(node, tmp_path):
    url = f"rqlite://127.0.0.1:{node}"
    src = tmp_path / "a.csv"
    src.write_text("a\n1\n", encoding="utf-8")
    for call in (
        lambda: liteload.import_file(url, src, durability="durable"),
        lambda: liteload.import_file(url, src, page_size=4096),
        lambda: liteload.generate(url, rows=1, durability="unsafe"),
        lambda: liteload.write(url, "t", [{"a": 1}], durability="durable"),
    ):
        with pytest.raises(ValueError, match="cluster") as e:
            call()
        assert "--" not in str(e.value)
    assert query(node, "SELECT name FROM sqlite_master") == []


def test_sqlite_files_go_into_a_cluster_that_holds_data(node, tmp_path):
    url = f"rqlite://127.0.0.1:{node}"
    liteload.write(url, "r", [{"x": "there"}])
    a, b, c = (tmp_path / n for n in ("a.db", "b.db", "c.db"))

    def make(path, sql):
        con = sqlite3.connect(path)
        con.executescript(sql)
        con.close()

    make(
        a,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL) STRICT;"
        "INSERT INTO t VALUES (1, 'zoë'), (4, 'x''00''');"
        "CREATE TABLE r (x); INSERT INTO r (rowid, x) VALUES (5, 'a'), (9, x'00ff');"
        "CREATE TABLE skipped (y);",
    )
    make(b, "CREATE TABLE t (v TEXT NOT NULL, id INTEGER PRIMARY KEY) STRICT; INSERT INTO t VALUES ('b', 2);")
    with pytest.raises(liteload.SchemaError, match='table "r" exists in the cluster already'):
        liteload.import_file(url, [a, b], tables=["t", "r"])
    assert query(node, "SELECT count(*) FROM sqlite_master WHERE name = 't'") == [(0,)]
    s = liteload.import_file(url, [a, b], tables=["t", "r"], if_exists="append")
    assert (s.rows, sorted(s.tables)) == (5, ["r", "t"])
    assert query(node, "SELECT id, v FROM t ORDER BY id") == [(1, "zoë"), (2, "b"), (4, "x'00'")]
    # r was there: its rows appended, numbered anew.
    assert query(node, "SELECT rowid, hex(x), typeof(x) FROM r ORDER BY rowid") == [
        (1, "7468657265", "text"), (2, "61", "text"), (3, "00FF", "blob")]
    assert query(node, "SELECT count(*) FROM sqlite_master WHERE name = 'skipped'") == [(0,)]
    assert query(node, "PRAGMA integrity_check") == [("ok",)]
    # Rowids kept on request: one that is in the table already is a refused row.
    make(c, "CREATE TABLE r (x); INSERT INTO r (rowid, x) VALUES (3, 'c');")
    with pytest.raises(liteload.ConstraintError, match="UNIQUE"):
        liteload.import_file(url, c, keep_rowids=True, if_exists="append")
    assert query(node, "SELECT count(*) FROM r") == [(3,)]
