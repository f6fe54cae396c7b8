#!/usr/bin/env python3
"""Parquet into a new SQLite file: liteload against the tools a user would pick instead.

The transit table of write-up 000 (generated from a fixed seed, 10M rows by default) is
written as Parquet by pyarrow (zstd, 1M-row row groups), then loaded into a new SQLite
file by each tool, interleaved (round r starts with tool r), median of --runs:

  liteload           liteload import DB transit.parquet (engine auto: the page writer)
  liteload TSV       liteload import of the same rows as TSV (the target: Parquet is no
                     slower, it has no text to parse)
  duckdb             ATTACH ... (TYPE sqlite); CREATE TABLE ... AS SELECT * FROM
                     read_parquet(...), its sqlite extension from the pip package
  pandas             pandas.read_parquet + DataFrame.to_sql (sqlite3, one transaction)
  polars + adbc      polars.read_parquet + DataFrame.write_database(engine="adbc")

Every run is checked before it counts: integrity_check ok, the row count, the sum of
Stop, and Stop stored as INTEGER. Peak RSS and CPU are each process's own (GNU time).

    python bench/parquet.py [--rows 10000000] [--runs 3] [--workdir DIR] [--json FILE]

Run it with a Python that has the peers installed (pip install -r
bench/requirements-parquet.txt, the versions ../shared/peers pins) and a release build
of liteload (cargo build --release).
"""
import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys

from benchlib import LITELOAD, ROOT, clean, rotations, run_rss as run, transit_parquet

DUCKDB = """
import glob, os, sys, duckdb, duckdb_extension_sqlite_scanner as ext
src, db = sys.argv[1:3]
so = glob.glob(os.path.join(os.path.dirname(ext.__file__), "extensions", "*", "*.duckdb_extension"))[0]
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute(f"LOAD '{so}'")
con.execute("ATTACH '%s' AS s (TYPE sqlite)" % db.replace("'", "''"))
con.execute("CREATE TABLE s.transit AS SELECT * FROM read_parquet(?)", [src])
con.close()
"""

PANDAS = """
import sqlite3, sys, pandas as pd
src, db = sys.argv[1:3]
df = pd.read_parquet(src)
con = sqlite3.connect(db)
df.to_sql("transit", con, index=False)
con.close()
"""

POLARS = """
import sys, polars as pl
src, db = sys.argv[1:3]
pl.read_parquet(src).write_database("transit", f"sqlite:///{db}", engine="adbc")
"""


def tools(py, parquet, tsv, db):
    return {
        "liteload": [LITELOAD, "import", "-q", db, parquet, "--table", "transit"],
        "liteload TSV": [LITELOAD, "import", "-q", db, tsv, "--table", "transit"],
        "duckdb": [py, "-c", DUCKDB, parquet, db],
        "pandas": [py, "-c", PANDAS, parquet, db],
        "polars + adbc": [py, "-c", POLARS, parquet, db],
    }


def verify(db, rows, stop_sum):
    try:
        c = sqlite3.connect(db)
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        n, s = c.execute("SELECT count(*), sum(Stop) FROM transit").fetchone()
        kind = c.execute("SELECT typeof(Stop) FROM transit LIMIT 1").fetchone()[0]
        c.close()
    except sqlite3.Error as e:
        return False, f"sqlite error: {e}"
    if ok != "ok":
        return False, f"integrity_check: {ok}"
    if (n, s) != (rows, stop_sum):
        return False, f"{n} rows, sum(Stop) {s}; expected {rows}, {stop_sum}"
    if kind != "integer":
        return False, f"Stop stored as {kind}"
    return True, "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/tmp") + "/liteload-bench")
    ap.add_argument("--only", nargs="*", help="run only these tools")
    ap.add_argument("--json", help="append one JSON line per run to this file")
    a = ap.parse_args()
    if not os.path.exists(LITELOAD):
        sys.exit("build liteload first: cargo build --release")
    import duckdb, pandas, polars, pyarrow
    tsv, parquet, stop_sum = transit_parquet(a.workdir, a.rows)
    info = json.loads(subprocess.run([LITELOAD, "info", "--json"], capture_output=True, text=True).stdout)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    print(f"liteload {info['liteload']} (SQLite {info['sqlite']}); duckdb {duckdb.__version__}, pandas "
          f"{pandas.__version__}, polars {polars.__version__}, pyarrow {pyarrow.__version__}")
    print(f"{parquet}: {os.path.getsize(parquet) / 1e6:.1f} MB; {tsv}: {os.path.getsize(tsv) / 1e6:.1f} MB")
    db = os.path.join(a.workdir, "parquet-bench.db")
    all_tools = tools(sys.executable, parquet, tsv, db)
    names = [n for n in all_tools if not a.only or n in a.only]
    out = open(a.json, "a") if a.json else None
    results = {n: [] for n in names}
    for r, order in rotations(names, a.runs):
        for name in order:
            clean(db)
            code, err, wall, cpu, rss = run(all_tools[name])
            ok, detail = (verify(db, a.rows, stop_sum) if code == 0 else (False, f"exit {code}: {err.strip()[-300:]}"))
            size = os.path.getsize(db) if os.path.exists(db) else 0
            rec = {"rows": a.rows, "tool": name, "run": r, "ok": ok, "detail": detail, "wall_s": round(wall, 3),
                   "cpu_s": round(cpu, 3), "peak_rss_mb": round(rss, 1), "db_bytes": size}
            print(json.dumps(rec), flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
            if ok:
                results[name].append((wall, cpu, rss, size))
            clean(db)
    print()
    base = statistics.median(w for w, *_ in results["liteload"]) if results.get("liteload") else None
    print(f"{'tool':<16} {'runs':>4} {'wall s (median)':>16} {'min-max':>13} {'CPU s':>7} {'peak RSS MB':>12} "
          f"{'rows/s':>12} {'liteload faster by':>19} {'db MB':>7}")
    for name in names:
        runs = results[name]
        if not runs:
            print(f"{name:<16} FAILED")
            continue
        walls = [w for w, *_ in runs]
        med = statistics.median(walls)
        ratio = f"{med / base:.2f}x" if base and name != "liteload" else ""
        print(f"{name:<16} {len(runs):>4} {med:>16.3f} {min(walls):>6.2f}-{max(walls):<6.2f} "
              f"{statistics.median(c for _, c, *_ in runs):>7.2f} {max(x for _, _, x, _ in runs):>12.0f} "
              f"{a.rows / med:>12,.0f} {ratio:>19} {runs[0][3] / 1e6:>7.1f}")


if __name__ == "__main__":
    main()
