"""MySQL/MariaDB into SQLite through import_file, against a real MariaDB server started
for these tests (Debian's binaries, a temp directory, a Unix socket): every cell of a
table of hostile values equals what PyMySQL reads, mapped by the documented type table;
keys; the keywords' errors, and no file left by a failed copy."""
import datetime
import decimal
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time

import pytest

import liteload

pymysql = pytest.importorskip("pymysql")


def _tool(name):
    d = os.environ.get("LITELOAD_MARIADB_BIN")
    for p in ([os.path.join(d, name)] if d else []) + [f"/usr/sbin/{name}", f"/usr/bin/{name}"]:
        if os.path.exists(p):
            return p
    pytest.fail(f"MariaDB's {name} is missing (apt-get install mariadb-server)")


@pytest.fixture(scope="module")
def server():
    d = tempfile.mkdtemp(prefix="liteload-my-py")
    data = os.path.join(d, "data")
    # A temp directory of its own: a starting server deletes every #sql* file in its
    # tmpdir, another server's temporary tables included.
    tmp = os.path.join(d, "tmp")
    os.mkdir(tmp)
    root = ["--user=root"] if os.geteuid() == 0 else []
    subprocess.run([_tool("mariadb-install-db"), "--no-defaults", f"--datadir={data}", f"--tmpdir={tmp}",
                    "--auth-root-authentication-method=normal", "--skip-test-db"] + root,
                   check=True, capture_output=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sock = os.path.join(d, "sock")
    proc = subprocess.Popen([_tool("mariadbd"), "--no-defaults", f"--datadir={data}", f"--tmpdir={tmp}",
                             f"--socket={sock}",
                             f"--port={port}", "--bind-address=127.0.0.1", "--skip-log-bin",
                             "--innodb-buffer-pool-size=64M", "--default-time-zone=-07:00",
                             f"--log-error={os.path.join(d, 'err.log')}"] + root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                pymysql.connect(unix_socket=sock, user="root").close()
                break
            except pymysql.err.OperationalError:
                time.sleep(0.1)
        yield sock
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


def _connect(sock, db=None):
    return pymysql.connect(unix_socket=sock, user="root", database=db, charset="utf8mb4",
                           autocommit=True, init_command="SET time_zone = '+00:00'")


def _url(sock, db):
    return f"mysql://root@/{db}?socket={sock}"


def _expected(v, kind):
    """What the documented table says SQLite holds for a value PyMySQL read."""
    if v is None:
        return None
    if kind == "bit":
        return int.from_bytes(v, "big")
    if kind == "geo":
        return bytes(v[4:])
    if isinstance(v, int):
        return v if v < 2**63 else str(v)
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, datetime.datetime):
        # As MySQL prints a column of that many fraction digits (kind "dt3", "stamp6").
        fsp = int(kind[-1]) if kind[-1:].isdigit() else 0
        text = v.strftime("%Y-%m-%dT%H:%M:%S")
        if fsp:
            text += "." + f"{v.microsecond:06d}"[:fsp]
        return text + ("Z" if kind.startswith("stamp") else "")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        neg = v < datetime.timedelta(0)
        us = abs(v) // datetime.timedelta(microseconds=1)
        s, us = divmod(us, 1_000_000)
        h, s = divmod(s, 3600)
        m, s = divmod(s, 60)
        frac = f".{us:06d}"[: 1 + int(kind[4:])] if kind.startswith("time") and kind != "time0" else ""
        return f"{'-' if neg else ''}{h:02d}:{m:02d}:{s:02d}{frac}"
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    return v


COLUMNS = [
    ("id", "INT PRIMARY KEY", ""), ("bi", "BIGINT", ""), ("ubi", "BIGINT UNSIGNED", ""),
    ("bt", "BIT(12)", "bit"), ("d", "DOUBLE", ""), ("dec", "DECIMAL(40,10)", ""),
    ("dt", "DATE", ""), ("dtm", "DATETIME(3)", "dt3"), ("ts", "TIMESTAMP(6) NULL", "stamp6"),
    ("tm", "TIME", "time0"), ("tm3", "TIME(3)", "time3"), ("vc", "VARCHAR(100)", ""),
    ("lat", "VARCHAR(20) CHARACTER SET latin1", ""), ("e", "ENUM('a','é b')", ""),
    ("j", "JSON", ""), ("vb", "VARBINARY(50)", ""), ("g", "POINT", "geo"),
]

ROWS = [
    "(1, -9223372036854775808, 18446744073709551615, b'101010101010', 1.7976931348623157e308,"
    " -123456789012345678901234567890.0123456789, '1000-01-01', '9999-12-31 23:59:59.999',"
    " '2038-01-19 03:14:07.999999', '-838:59:59', '838:59:58.999', 'émoji 🎉 \\0 nul \"q\" ''s''',"
    " 'ÿ latin', 'é b', '{\"a\": [1, null]}', x'00ff00', POINT(1, 2))",
    "(2, 0, 0, b'0', -0.1, 0, '2024-02-29', '2024-02-29 00:00:00', '1970-01-01 00:00:01', '00:00:00',"
    " '-00:00:01.5', '', '', 'a', '[]', x'', POINT(-1.5, 0))",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]


def test_every_cell_as_pymysql_reads_it(server, tmp_path):
    c = _connect(server)
    c.cursor().execute("CREATE DATABASE shop")
    c = _connect(server, "shop")
    cur = c.cursor()
    cur.execute("CREATE TABLE t (%s, KEY ix_vc (vc)) DEFAULT CHARSET=utf8mb4" % ", ".join(f"`{n}` {t}" for n, t, _ in COLUMNS))
    cur.execute("INSERT INTO t VALUES " + ", ".join(ROWS))
    cur.execute("INSERT INTO t SELECT seq + 10, seq * 7919, seq, seq % 4096, seq / 3, seq / 7, "
                "'2001-01-01' + INTERVAL seq DAY, NOW(3), NULL, SEC_TO_TIME(seq), NULL, CONCAT('v', seq), "
                "NULL, 'a', NULL, NULL, NULL FROM seq_1_to_5000")
    db = tmp_path / "copy.db"
    summary = liteload.import_file(db, _url(server, "shop"), connections=3)
    assert summary.rows == 5003
    names = [n for n, _, _ in COLUMNS]
    cur.execute("SELECT %s FROM t ORDER BY id" % ", ".join(f"`{n}`" for n in names))
    want = [[_expected(v, COLUMNS[i][2]) for i, v in enumerate(row)] for row in cur.fetchall()]
    s = sqlite3.connect(db)
    assert s.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    got = [list(r) for r in s.execute("SELECT %s FROM t ORDER BY id" % ", ".join(f'"{n}"' for n in names))]
    assert len(got) == len(want) == 5003
    for g, w in zip(got, want):
        for name, gv, wv in zip(names, g, w):
            assert gv == wv, f"row {g[0]}, column {name}: copied {gv!r}, PyMySQL reads {wv!r}"
    schema = s.execute("SELECT sql FROM sqlite_schema WHERE name = 't'").fetchone()[0]
    assert '"id" INTEGER PRIMARY KEY' in schema
    assert s.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'ix_vc'").fetchone() == (1,)


def test_keywords_and_failures_leave_no_file(server, tmp_path):
    c = _connect(server)
    c.cursor().execute("CREATE DATABASE k")
    cur = _connect(server, "k").cursor()
    cur.execute("CREATE TABLE a (x INT)")
    cur.execute("INSERT INTO a VALUES (1), (2)")
    db = tmp_path / "k.db"
    with pytest.raises(liteload.UsageError, match="no table"):
        liteload.import_file(db, _url(server, "k"), tables=["missing"])
    assert not db.exists()
    with pytest.raises(liteload.UsageError, match="views and foreign keys"):
        liteload.import_file(db, _url(server, "k"), views=True, query="SELECT 1 AS x", table="q")
    cur.execute("CREATE VIEW big_x AS SELECT x FROM a WHERE x > 1")
    s = liteload.import_file(db, _url(server, "k"), views=True)
    assert sqlite3.connect(db).execute("SELECT x FROM big_x").fetchall() == [(2,)]
    assert any("view k.big_x copied as a table" in n for n in s.notes), s.notes
    db.unlink()
    bad = f"mysql://nobody:wrong@/k?socket={server}"
    with pytest.raises(ConnectionError, match="Access denied"):
        liteload.import_file(db, bad)
    assert not db.exists()
    s = liteload.import_file(db, _url(server, "k"), query="SELECT x * 10 AS y FROM a", table="q")
    assert s.rows == 2
    assert sqlite3.connect(db).execute("SELECT sum(y) FROM q").fetchone() == (30,)
