#!/usr/bin/env python3
"""MySQL/MariaDB into SQLite (issue 54): liteload import of a mysql:// URI against the
ways a user copies a MySQL table into SQLite today.

The data: the transit table of bench/ (gen_transit.py, fixed seed: Route_ID, Branch_Code,
Version, Stop, Vehicle_Index, Day, Time) with an `id BIGINT AUTO_INCREMENT PRIMARY KEY`
in front, loaded (LOAD DATA) into an InnoDB table of a MariaDB server that this script
starts from Debian's binaries in --workdir (a Unix socket and a loopback port; the
same machine as the tools, as the issue asks). Every tool connects over TCP to
127.0.0.1 as the same user.

Tools, each in a process of its own, interleaved (round r starts with tool r), median of
--runs, each result checked (integrity_check ok, and the row count and column sums equal
to the server's):

  liteload          liteload import DB mysql://…  (every table of the database: this one)
  duckdb            DuckDB 1.5.5 with its mysql and sqlite extensions (the pip packages):
                    ATTACH both, CREATE TABLE s.transit AS SELECT * FROM my.transit
  mysql-to-sqlite3  mysql2sqlite 2.6.1 -f DB -d DATABASE (--slow-runs rounds)
  db-to-sqlite      db-to-sqlite 1.5 (SQLAlchemy + PyMySQL) URL DB --table transit
                    (--slow-runs rounds: they take minutes)

The server's own floor: `SELECT … INTO OUTFILE` of the same rows (a text file written by
the server itself, no client), timed --runs times, reported beside the tools.

    python bench/mysql.py [--rows 5000000] [--runs 3] [--slow-runs 1] [--workdir /tmp/mybench]

Run it with a Python that has the peers (pip install -r ../shared/peers/requirements.txt).
"""
import argparse
import os
import platform
import socket
import sqlite3
import statistics
import subprocess
import sys
import time

from benchlib import LITELOAD, ROOT, checked_rounds, print_medians, write_jsonl

COLUMNS = ["Route_ID", "Branch_Code", "Version", "Stop", "Vehicle_Index", "Day", "Time"]
USER, PASSWORD = "bench", "bench"


def tool(name):
    for d in ("/usr/sbin", "/usr/bin"):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    sys.exit(f"{name} is missing: apt-get install mariadb-server")


def start_server(workdir, port):
    """Starts a server in workdir/my (made once); returns its socket and a stopper."""
    mydir = os.path.join(workdir, "my")
    data = os.path.join(mydir, "data")
    root = ["--user=root"] if os.geteuid() == 0 else []
    # A temp directory of its own: a starting server deletes every #sql* file in its tmpdir.
    tmp = os.path.join(mydir, "tmp")
    if not os.path.exists(data):
        os.makedirs(tmp, exist_ok=True)
        subprocess.run([tool("mariadb-install-db"), "--no-defaults", f"--datadir={data}", f"--tmpdir={tmp}",
                        "--auth-root-authentication-method=normal", "--skip-test-db"] + root,
                       check=True, stdout=subprocess.DEVNULL)
    sock = os.path.join(mydir, "sock")
    proc = subprocess.Popen([tool("mariadbd"), "--no-defaults", f"--datadir={data}", f"--tmpdir={tmp}",
                             f"--socket={sock}",
                             f"--port={port}", "--bind-address=127.0.0.1", "--skip-log-bin",
                             "--innodb-buffer-pool-size=2G", "--innodb-log-file-size=512M",
                             "--innodb-flush-log-at-trx-commit=0", "--max-connections=100",
                             f"--secure-file-priv={workdir}",
                             f"--log-error={os.path.join(mydir, 'err.log')}"] + root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(sock) and subprocess.run(["mariadb", "--no-defaults", "-S", sock, "-uroot", "-e", "SELECT 1"],
                                                   capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    sql(sock, f"CREATE USER IF NOT EXISTS {USER}@'%' IDENTIFIED BY '{PASSWORD}'; "
              f"GRANT ALL ON *.* TO {USER}@'%'")

    def stop():
        proc.terminate()
        proc.wait()
    return sock, stop


def sql(sock, text, db=None):
    argv = ["mariadb", "--no-defaults", "-S", sock, "-uroot", "-N", "-B", "-e", text]
    if db:
        argv.append(db)
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def load_data(sock, rows, workdir):
    db = f"transit_{rows}"
    if sql(sock, f"SELECT count(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{db}'") == "1":
        return db
    tsv = os.path.join(workdir, f"transit_{rows}.tsv")
    if not os.path.exists(tsv):
        print(f"generating {tsv} …", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_transit.py"), str(rows), tsv],
                       check=True)
    print(f"loading {rows:,} rows into MariaDB database {db} …", flush=True)
    sql(sock, f"CREATE DATABASE `{db}`")
    sql(sock, "CREATE TABLE transit (id BIGINT AUTO_INCREMENT PRIMARY KEY, `Route_ID` INT, "
              "`Branch_Code` VARCHAR(20), `Version` INT, `Stop` INT, `Vehicle_Index` INT, `Day` INT, "
              "`Time` VARCHAR(20)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4", db)
    cols = ", ".join(f"`{c}`" for c in COLUMNS)
    sql(sock, f"LOAD DATA INFILE '{tsv}' INTO TABLE transit FIELDS TERMINATED BY '\\t' "
              f"IGNORE 1 LINES ({cols})", db)
    sql(sock, "ANALYZE TABLE transit", db)
    return db


SUMS = ("SELECT count(*), sum(`Route_ID`), sum(`Version`), sum(`Stop`), sum(`Vehicle_Index`), "
        "sum(`Day`), sum(char_length(`Branch_Code`)), sum(char_length(`Time`)) FROM transit")


def checksum(db):
    c = sqlite3.connect(db)
    try:
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        return (ok,) + tuple(int(x or 0) for x in c.execute(SUMS.replace("`", '"').replace("char_length", "length")).fetchone())
    finally:
        c.close()


DUCKDB = """
import glob, os, sys
sys.path.insert(0, {peers!r})
from duckdb_sqlite import connect
con = connect()
con.execute("LOAD '" + {ext!r} + "'")
con.execute("ATTACH " + repr({dsn!r}) + " AS my (TYPE mysql, READ_ONLY)")
con.execute("ATTACH " + repr(sys.argv[1]) + " AS s (TYPE sqlite)")
con.execute("CREATE TABLE s.transit AS SELECT * FROM my.transit")
"""


def floor(sock, db, workdir, runs):
    """Seconds the server takes to write the rows to a text file itself, each run."""
    out = []
    for r in range(runs):
        path = os.path.join(workdir, f"floor_{r}.tsv")
        if os.path.exists(path):
            os.remove(path)
        t0 = time.perf_counter()
        sql(sock, f"SELECT * INTO OUTFILE '{path}' FROM transit", db)
        out.append(time.perf_counter() - t0)
        os.remove(path)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--slow-runs", type=int, default=1)
    ap.add_argument("--workdir", default="/tmp/mybench")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    port = a.port
    if not port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    sock, stop = start_server(a.workdir, port)
    try:
        dbname = load_data(sock, a.rows, a.workdir)
        reference = tuple(int(x or 0) for x in sql(sock, SUMS, dbname).split("\t"))
        url = f"mysql://{USER}:{PASSWORD}@127.0.0.1:{port}/{dbname}?ssl-mode=DISABLED"
        dsn = f"host=127.0.0.1 port={port} user={USER} passwd={PASSWORD} database={dbname}"
        out = os.path.join(a.workdir, "out.db")
        peers = os.path.join(ROOT, "..", "shared", "peers")
        bindir = os.path.dirname(sys.executable)
        # The pip package ships the extension as mysql.duckdb_extension; DuckDB finds its
        # entry point by the file's name, which must be mysql_scanner.
        import glob
        import shutil
        import duckdb_extension_mysql
        ext = os.path.join(a.workdir, "mysql_scanner.duckdb_extension")
        shutil.copyfile(glob.glob(os.path.join(os.path.dirname(duckdb_extension_mysql.__file__), "extensions",
                                               "*", "*.duckdb_extension"))[0], ext)
        tools = {
            "liteload": [LITELOAD, "import", out, url, "--quiet"],
            "duckdb": [sys.executable, "-c", DUCKDB.format(peers=peers, dsn=dsn, ext=ext), out],
            "mysql-to-sqlite3": [os.path.join(bindir, "mysql2sqlite"), "-f", out, "-d", dbname,
                                 "-u", USER, "--mysql-password", PASSWORD, "-h", "127.0.0.1",
                                 "-P", str(port), "-S", "-q"],
            "db-to-sqlite": [os.path.join(bindir, "db-to-sqlite"),
                             f"mysql+pymysql://{USER}:{PASSWORD}@127.0.0.1:{port}/{dbname}", out,
                             "--table", "transit"],
        }
        version = sql(sock, "SELECT version()")
        print(f"{platform.node()}: {os.cpu_count()} cores; {a.rows:,} rows with an integer primary key; "
              f"MariaDB {version}", flush=True)
        results, _ = checked_rounds(tools, ["liteload", "duckdb"], a.runs, out, checksum,
                                    reference=("ok",) + reference)
        slow, _ = checked_rounds(tools, ["mysql-to-sqlite3", "db-to-sqlite"], a.slow_runs, out, checksum,
                                 reference=("ok",) + reference)
        results.update(slow)
        rec = print_medians(results, a.rows, extra={"rows": a.rows, "server": version})
        f = floor(sock, dbname, a.workdir, a.runs)
        print(f"the server's floor, SELECT … INTO OUTFILE of the same rows: median {statistics.median(f):.3f} s "
              f"({', '.join(f'{x:.3f}' for x in f)})")
        rec.append({"tool": "server floor: SELECT … INTO OUTFILE", "rows": a.rows, "wall_s": f,
                    "median_s": statistics.median(f)})
        write_jsonl(a.json, rec)
    finally:
        stop()


if __name__ == "__main__":
    main()
