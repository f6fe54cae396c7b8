#!/usr/bin/env python3
"""PostgreSQL into SQLite (issue 40): liteload import of a postgresql:// URI against the
ways a user copies a PostgreSQL table into SQLite today.

The data: the transit table of bench/ (gen_transit.py, fixed seed: Route_ID, Branch_Code,
Version, Stop, Vehicle_Index, Day, Time), with an `id bigint PRIMARY KEY` in front
(--no-key leaves it out), loaded into a PostgreSQL server that this script starts from
Debian's binaries in --workdir (as `nobody` when run as root; a Unix socket and a
loopback port), or the one --url names.

Tools, each in a process of its own, interleaved (round r starts with tool r), median of
--runs, each result checked (integrity_check ok, and the row count and column sums equal
to the server's):

  liteload        liteload import DB postgresql://…  (every table of public: this one)
  duckdb          DuckDB 1.5.5 with its postgres and sqlite extensions (from the pip
                  packages): ATTACH both, CREATE TABLE s.transit AS SELECT * FROM
                  pg.public.transit
  db-to-sqlite    db-to-sqlite 1.5 (SQLAlchemy + psycopg2) URL DB --table transit
                  (--db2s-runs rounds only: it takes minutes)

    python bench/postgres.py [--rows 5000000] [--runs 3] [--db2s-runs 1] [--workdir /tmp/pgbench]

With --existing BASE.db, liteload alone: the copy into a new file against the copy into
a fresh synced copy of BASE.db (an existing database, not timed), interleaved.

With --ab OLD_BINARY, an A/B of two liteload builds instead (OLD_BINARY against this
checkout's release build, interleaved, the same checks), the peers left out.

Run it with a Python that has the peers (pip install -r ../shared/peers/requirements.txt).
"""
import argparse
import glob
import os
import platform
import shutil
import sqlite3
import subprocess
import sys

from benchlib import LITELOAD, ROOT, checked_rounds, print_medians, write_jsonl

COLUMNS = ["Route_ID", "Branch_Code", "Version", "Stop", "Vehicle_Index", "Day", "Time"]


def pg_bin():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    return os.environ.get("LITELOAD_PG_BIN") or dirs[-1]


def start_server(workdir, port):
    """Starts a server in workdir/pg (made once); returns the socket directory."""
    root = os.geteuid() == 0
    as_user = ["runuser", "-u", "nobody", "--"] if root else []
    pgdir = os.path.join(workdir, "pg")
    data = os.path.join(pgdir, "data")
    if not os.path.exists(data):
        os.makedirs(pgdir, exist_ok=True)
        if root:
            shutil.chown(pgdir, "nobody", "nogroup")
        subprocess.run(as_user + [os.path.join(pg_bin(), "initdb"), "-D", data, "-U", "postgres",
                                  "-E", "UTF8", "--locale=C", "-A", "trust", "-N"],
                       check=True, stdout=subprocess.DEVNULL)
    opts = (f"-p {port} -k {pgdir} -c listen_addresses=127.0.0.1 -c fsync=off "
            f"-c full_page_writes=off -c shared_buffers=1GB -c max_connections=50")
    subprocess.run(as_user + [os.path.join(pg_bin(), "pg_ctl"), "-D", data, "-o", opts,
                              "-l", os.path.join(pgdir, "log"), "-w", "start"],
                   check=True, stdout=subprocess.DEVNULL)
    return pgdir, lambda: subprocess.run(as_user + [os.path.join(pg_bin(), "pg_ctl"), "-D", data,
                                                    "-m", "fast", "-w", "stop"],
                                         stdout=subprocess.DEVNULL)


def psql(sock, port, sql, db="postgres"):
    return subprocess.run(["psql", "-h", sock, "-p", str(port), "-U", "postgres", "-d", db, "-qAt",
                           "-v", "ON_ERROR_STOP=1", "-c", sql],
                          check=True, capture_output=True, text=True).stdout.strip()


def load_data(sock, port, rows, key, workdir):
    db = f"transit_{rows}{'_key' if key else ''}"
    have = psql(sock, port, f"SELECT count(*) FROM pg_database WHERE datname = '{db}'")
    if have == "1":
        return db
    tsv = os.path.join(workdir, f"transit_{rows}.tsv")
    if not os.path.exists(tsv):
        print(f"generating {tsv} …", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_transit.py"), str(rows), tsv],
                       check=True)
    print(f"loading {rows:,} rows into PostgreSQL database {db} …", flush=True)
    psql(sock, port, f'CREATE DATABASE "{db}"')
    cols = ('"Route_ID" int, "Branch_Code" text, "Version" int, "Stop" int, '
            '"Vehicle_Index" int, "Day" int, "Time" text')
    psql(sock, port, f"CREATE TABLE transit ({cols})", db)
    psql(sock, port, f"\\copy transit FROM '{tsv}' WITH (FORMAT csv, DELIMITER E'\\t', HEADER)", db)
    if key:
        # A key in front, as tables usually have one, numbered in the heap's order.
        psql(sock, port, "ALTER TABLE transit ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", db)
        psql(sock, port, "CREATE TABLE t2 AS SELECT id, " + ", ".join(f'"{c}"' for c in COLUMNS) +
             " FROM transit ORDER BY id; DROP TABLE transit; ALTER TABLE t2 RENAME TO transit; "
             "ALTER TABLE transit ADD PRIMARY KEY (id)", db)
    psql(sock, port, "VACUUM ANALYZE transit", db)
    return db


SUMS = ("SELECT count(*), sum(\"Route_ID\"), sum(\"Version\"), sum(\"Stop\"), sum(\"Vehicle_Index\"), "
        "sum(\"Day\"), sum(length(\"Branch_Code\")), sum(length(\"Time\")) FROM transit")


def checksum(db):
    c = sqlite3.connect(db)
    try:
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        return (ok,) + tuple(int(x or 0) for x in c.execute(SUMS).fetchone())
    finally:
        c.close()


DUCKDB = """
import glob, os, sys
sys.path.insert(0, {peers!r})
from duckdb_sqlite import connect
import duckdb_extension_postgres_scanner as pg
con = connect()
con.execute("LOAD '" + glob.glob(os.path.join(os.path.dirname(pg.__file__), "extensions", "*", "*.duckdb_extension"))[0] + "'")
con.execute("ATTACH " + repr({dsn!r}) + " AS pg (TYPE postgres, READ_ONLY)")
con.execute("ATTACH " + repr(sys.argv[1]) + " AS s (TYPE sqlite)")
con.execute("CREATE TABLE s.transit AS SELECT * FROM pg.public.transit")
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--db2s-runs", type=int, default=1)
    ap.add_argument("--no-key", action="store_true")
    ap.add_argument("--workdir", default="/tmp/pgbench")
    ap.add_argument("--port", type=int, default=55433)
    ap.add_argument("--json")
    ap.add_argument("--ab", metavar="OLD_BINARY")
    ap.add_argument("--existing", metavar="BASE_DB")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    sock, stop = start_server(a.workdir, a.port)
    try:
        dbname = load_data(sock, a.port, a.rows, not a.no_key, a.workdir)
        reference = tuple(int(x or 0) for x in psql(sock, a.port, SUMS, dbname).split("|"))
        url = f"postgresql://postgres@/{dbname}?host={sock}&port={a.port}"
        dsn = f"host={sock} port={a.port} user=postgres dbname={dbname}"
        out = os.path.join(a.workdir, "out.db")
        peers = os.path.join(ROOT, "..", "shared", "peers")
        tools = {
            "liteload": [LITELOAD, "import", out, url, "--quiet"],
            "duckdb": [sys.executable, "-c", DUCKDB.format(peers=peers, dsn=dsn), out],
            "db-to-sqlite": [os.path.join(os.path.dirname(sys.executable), "db-to-sqlite"),
                             f"postgresql://postgres@/{dbname}?host={sock}&port={a.port}", out,
                             "--table", "transit"],
        }
        print(f"{platform.node()}: {os.cpu_count()} cores; {a.rows:,} rows, "
              f"{'with' if not a.no_key else 'without'} an integer primary key; "
              f"PostgreSQL {psql(sock, a.port, 'SHOW server_version')}", flush=True)
        if a.existing:
            tools = {"liteload (new file)": tools["liteload"],
                     "liteload (existing file)": tools["liteload"]}

            def into_existing(db, name):
                if name == "liteload (existing file)":
                    shutil.copyfile(a.existing, db)
                    os.sync()

            results, _ = checked_rounds(tools, list(tools), a.runs, out, checksum,
                                        reference=("ok",) + reference,
                                        prepare_tool=into_existing)
        elif a.ab:
            tools = {"liteload (old)": [a.ab, "import", out, url, "--quiet"],
                     "liteload": tools["liteload"]}
            results, _ = checked_rounds(tools, list(tools), a.runs, out, checksum,
                                        reference=("ok",) + reference)
        else:
            fast = ["liteload", "duckdb"]
            results, _ = checked_rounds(tools, fast, a.runs, out, checksum, reference=("ok",) + reference)
            slow, _ = checked_rounds(tools, ["db-to-sqlite"], a.db2s_runs, out, checksum,
                                     reference=("ok",) + reference)
            results.update(slow)
        rec = print_medians(results, a.rows, extra={"rows": a.rows, "key": not a.no_key},
                            base="liteload (new file)" if a.existing else "liteload")
        write_jsonl(a.json, rec)
    finally:
        stop()


if __name__ == "__main__":
    main()
