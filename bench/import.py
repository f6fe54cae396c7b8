#!/usr/bin/env python3
"""Side-by-side import benchmark: liteload vs sqlite3 .import vs sqlite-utils.

Generates (from a fixed seed, under --workdir) TAB-separated transit schedules shaped
like write-up 000's, then loads each with every tool, interleaved (round r runs the
tools in a rotated order), and reports the median wall-clock and CPU seconds per tool
and file. Every run is verified: PRAGMA integrity_check is ok and the row count equals
the input's; a run that fails verification is reported failed, never timed.

    python3 bench/import.py [--runs 3] [--rows 864913 10000000] [--workdir DIR]
                            [--sqlite-utils-max-rows 1000000] [--json results.jsonl]

Needs: a release build of liteload (cargo build --release), Debian's sqlite3, and
sqlite-utils (pip install -r bench/requirements.txt).
"""
import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys

from benchlib import LITELOAD, ROOT, print_table, run_rounds


def tools(src, db):
    """name -> (argv, table, whether it writes a database)."""
    return {
        "liteload": ([LITELOAD, "import", "-q", db, src, "--table", "transit"], True),
        "liteload --engine direct": ([LITELOAD, "import", "-q", "--engine", "direct", db, src, "--table", "transit"], True),
        "liteload --index Stop": ([LITELOAD, "import", "-q", "--index", "Stop", db, src, "--table", "transit"], True),
        "liteload --index Branch_Code": ([LITELOAD, "import", "-q", "--index", "Branch_Code", db, src, "--table", "transit"], True),
        "liteload --index Stop --index-memory 64MiB": ([LITELOAD, "import", "-q", "--index", "Stop", "--index-memory", str(64 << 20), db, src, "--table", "transit"], True),
        "liteload --index Branch_Code --index-memory 64MiB": ([LITELOAD, "import", "-q", "--index", "Branch_Code", "--index-memory", str(64 << 20), db, src, "--table", "transit"], True),
        "liteload --engine sqlite --index Stop": ([LITELOAD, "import", "-q", "--engine", "sqlite", "--index", "Stop", db, src, "--table", "transit"], True),
        "liteload --engine sqlite --index Branch_Code": ([LITELOAD, "import", "-q", "--engine", "sqlite", "--index", "Branch_Code", db, src, "--table", "transit"], True),
        "liteload --engine direct --index Stop": ([LITELOAD, "import", "-q", "--engine", "direct", "--index", "Stop", db, src, "--table", "transit"], True),
        "liteload --parse-threads 1": ([LITELOAD, "import", "-q", "--parse-threads", "1", db, src, "--table", "transit"], True),
        "liteload --parse-threads 2": ([LITELOAD, "import", "-q", "--parse-threads", "2", db, src, "--table", "transit"], True),
        "liteload --engine direct --parse-threads 1": ([LITELOAD, "import", "-q", "--engine", "direct", "--parse-threads", "1", db, src, "--table", "transit"], True),
        "liteload parse-only": ([LITELOAD, "import", "-q", "--parse-only", db, src, "--table", "transit"], False),
        "liteload parse-only --parse-threads 1": ([LITELOAD, "import", "-q", "--parse-only", "--parse-threads", "1", db, src, "--table", "transit"], False),
        "sqlite3 .import": (["sqlite3", db, "-cmd", ".mode tabs", f".import {src} transit"], True),
        "sqlite-utils insert --tsv": (["sqlite-utils", "insert", db, "transit", src, "--tsv"], True),
    }


def verify(db, rows):
    """(ok, detail): integrity_check, row count, and the storage class of `Stop`."""
    try:
        c = sqlite3.connect(db)
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        n = c.execute("SELECT count(*) FROM transit").fetchone()[0]
        kinds = c.execute("SELECT typeof(Stop), typeof(Time) FROM transit LIMIT 1").fetchone()
        c.close()
    except sqlite3.Error as e:
        return False, f"sqlite error: {e}"
    if ok != "ok":
        return False, f"integrity_check: {ok}"
    if n != rows:
        return False, f"{n} rows, expected {rows}"
    return True, "Stop %s, Time %s" % kinds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rows", type=int, nargs="+", default=[864913, 10_000_000])
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/tmp") + "/liteload-bench")
    ap.add_argument("--sqlite-utils-max-rows", type=int, default=1_000_000,
                    help="skip sqlite-utils on larger files (it takes ~1 CPU-minute per million rows)")
    ap.add_argument("--only", nargs="*", help="run only these tools")
    ap.add_argument("--json", help="append one JSON line per run to this file")
    a = ap.parse_args()

    if not os.path.exists(LITELOAD):
        sys.exit("build liteload first: cargo build --release")
    os.makedirs(a.workdir, exist_ok=True)
    out = open(a.json, "a") if a.json else None
    sqlite3_cli = subprocess.run(["sqlite3", "--version"], capture_output=True, text=True).stdout.split()[0]
    info = json.loads(subprocess.run([LITELOAD, "info", "--json"], capture_output=True, text=True).stdout)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    print(f"liteload {info['liteload']} (bundled SQLite {info['sqlite']}); sqlite3 CLI {sqlite3_cli}; "
          f"sqlite-utils {shutil.which('sqlite-utils') and subprocess.run(['sqlite-utils', '--version'], capture_output=True, text=True).stdout.strip()}")

    results = {}
    for rows in a.rows:
        src = os.path.join(a.workdir, f"transit_{rows}.tsv")
        if not os.path.exists(src):
            print(f"generating {src} …", flush=True)
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_transit.py"), str(rows), src], check=True)
        db = os.path.join(a.workdir, "bench.db")
        names = [n for n in tools(src, db) if not a.only or n in a.only]
        if rows > a.sqlite_utils_max_rows:
            names = [n for n in names if not n.startswith("sqlite-utils")]
        names = [n for n in names if shutil.which(tools(src, db)[n][0][0])]
        all_tools = tools(src, db)
        run_rounds({n: all_tools[n] for n in names}, rows, a.runs, db, verify, results, out)

    print()
    print_table(results, a.rows, base="liteload", floor="liteload parse-only")
    print()
    for rows in a.rows:
        d, i = results.get((rows, "liteload --engine direct")), results.get((rows, "sqlite3 .import"))
        if d and i:
            dm, im = statistics.median(w for w, *_ in d), statistics.median(w for w, *_ in i)
            print(f"{rows:>12,} rows: liteload --engine direct {dm:.3f} s, sqlite3 .import {im:.3f} s: {im / dm:.2f}x")


if __name__ == "__main__":
    main()
