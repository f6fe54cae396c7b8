"""liteload beside Python's own sqlite3 in one process: never a lost write, never a
broken caller's connection.

Python's sqlite3 is another copy of SQLite in the process; the two do not see each
other's locks, and closing any descriptor drops the process's POSIX locks on the file.
So while this process has the file open through sqlite3, every liteload job on it is
refused before it touches the file (UsageError, nothing written), and works again once
those connections are closed. The matrix: {no other connection, a read transaction, a
write transaction, an idle open connection} x {rollback journal, WAL} x {write append,
write replace, import_file append, KvStore put (opened before or after)}; the final rows
are exactly what was committed, the caller's connection keeps working, and SQLite's
integrity check passes."""

import sqlite3

import pyarrow as pa
import pytest

import liteload
from conftest import checked

STATES = ["none", "read", "write", "idle"]
JOURNALS = ["delete", "wal"]
ACTIONS = ["write_append", "write_replace", "import_append", "kv_put_opened_after", "kv_put_opened_before"]


def setup_db(path, journal):
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA journal_mode={journal}")
    con.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"zoë {i}") for i in range(3)])
    con.commit()
    con.close()


def other_connection(path, state):
    """A sqlite3 connection in ``state``; None for no connection."""
    if state == "none":
        return None
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("SELECT count(*) FROM t").fetchall()
    if state == "read":
        con.execute("BEGIN")
        con.execute("SELECT * FROM t").fetchall()
    elif state == "write":
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO t VALUES (100, 'caller, uncommitted')")
    return con


def act(action, path, tmp_path, store=None):
    rows = pa.table({"a": pa.array([10, 11], pa.int64()), "b": pa.array(["x\0y", "é"], pa.string())})
    if action == "write_append":
        liteload.write(path, "t", rows, mode="append")
    elif action == "write_replace":
        liteload.write(path, "t", rows, mode="replace")
    elif action == "import_append":
        csv = tmp_path / "more.csv"
        csv.write_text("a,b\n10,x\n11,é\n", encoding="utf-8")
        liteload.import_file(path, csv, table="t", if_exists="append")
    elif action == "kv_put_opened_after":
        with liteload.KvStore(path, create=True) as kv:
            kv.put("k", b"v")
    else:
        store.put("k", b"v")


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("journal", JOURNALS)
@pytest.mark.parametrize("state", STATES)
def test_beside_sqlite3_nothing_is_lost(tmp_path, state, journal, action):
    path = tmp_path / "shared.db"
    setup_db(path, journal)
    store = liteload.KvStore(path, create=True) if action == "kv_put_opened_before" else None
    con = other_connection(path, state)
    expected = [(i, f"zoë {i}") for i in range(3)]
    try:
        if con is None:
            act(action, path, tmp_path, store)
            if action.startswith("write") or action == "import_append":
                got = checked(path).execute("SELECT a FROM t ORDER BY rowid").fetchall()
                tail = [(10,), (11,)]
                assert got[-2:] == tail
                if action == "write_replace":
                    assert got == tail
                return
            if store is not None:
                store.close()
            with liteload.KvStore(path, create=True) as kv:
                assert kv.get("k") == b"v"
            checked(path).close()
            return
        with pytest.raises(liteload.UsageError, match="another copy of SQLite"):
            act(action, path, tmp_path, store)
        # The caller's connection keeps working: its transaction commits, and it
        # writes again.
        if state == "write":
            con.execute("COMMIT")
            expected.append((100, "caller, uncommitted"))
        elif state == "read":
            con.execute("COMMIT")
        con.execute("INSERT INTO t VALUES (101, 'caller, after')")
        expected.append((101, "caller, after"))
        assert con.execute("SELECT a, b FROM t ORDER BY rowid").fetchall() == expected
    finally:
        if con is not None:
            con.close()
        if store is not None:
            store.close()
    check = checked(path)
    try:
        assert check.execute("SELECT a, b FROM t ORDER BY rowid").fetchall() == expected
        tables = {r[0] for r in check.execute("SELECT name FROM sqlite_schema")}
    finally:
        check.close()
    if action.startswith("kv"):
        # A store opened before is left as it was: no value was put.
        with liteload.KvStore(path, create=True) as kv:
            assert "k" not in kv
    else:
        assert tables == {"t"}
    # With the other connection closed, the same job goes through.
    store = liteload.KvStore(path, create=True) if action == "kv_put_opened_before" else None
    try:
        act(action, path, tmp_path, store)
    finally:
        if store is not None:
            store.close()
    checked(path).close()


def test_a_store_of_liteload_itself_is_no_other_copy(tmp_path):
    """The package's own open store on a file does not count as another SQLite: a write
    beside it goes through, and so does the store."""
    path = tmp_path / "own.db"
    with liteload.KvStore(path, create=True) as kv:
        kv.put(1, b"one")
        liteload.write(path, "t", pa.table({"a": [1, 2]}))
        kv.put(2, b"two")
        assert kv.get(2) == b"two"
    con = checked(path)
    try:
        assert con.execute("SELECT count(*) FROM t").fetchone() == (2,)
    finally:
        con.close()


def test_ingest_beside_an_open_connection_is_refused(tmp_path):
    path = tmp_path / "i.db"
    setup_db(path, "wal")
    con = sqlite3.connect(path)
    try:
        with pytest.raises(liteload.UsageError, match="another copy of SQLite"):
            liteload.ingest(path, [{"a": 1, "b": "x"}], table="s", key="a")
    finally:
        con.close()
    summary = liteload.ingest(path, [{"a": 1, "b": "x"}], table="s", key="a")
    assert summary.messages == 1
