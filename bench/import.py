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
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LITELOAD = os.path.join(ROOT, "target", "release", "liteload")


def tools(src, db):
    """name -> (argv, table, whether it writes a database)."""
    return {
        "liteload": ([LITELOAD, "import", "-q", db, src, "--table", "transit"], True),
        "liteload parse-only": ([LITELOAD, "import", "-q", "--parse-only", db, src, "--table", "transit"], False),
        "sqlite3 .import": (["sqlite3", db, "-cmd", ".mode tabs", f".import {src} transit"], True),
        "sqlite-utils insert --tsv": (["sqlite-utils", "insert", db, "transit", src, "--tsv"], True),
    }


def run_once(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.returncode, p.stderr.decode(errors="replace"), wall, cpu


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


def clean(db):
    for suffix in ("", "-wal", "-shm", "-journal", ".liteload-tmp"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)


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
        for r in range(a.runs):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                argv, writes = tools(src, db)[name]
                clean(db)
                code, err, wall, cpu = run_once(argv)
                if code != 0:
                    ok, detail = False, f"exit {code}: {err.strip()[:200]}"
                elif writes:
                    ok, detail = verify(db, rows)
                else:
                    ok, detail = True, "no database"
                size = os.path.getsize(db) if writes and os.path.exists(db) else 0
                rec = {"rows": rows, "tool": name, "run": r, "ok": ok, "detail": detail,
                       "wall_s": round(wall, 4), "cpu_s": round(cpu, 4), "db_bytes": size}
                print(json.dumps(rec), flush=True)
                if out:
                    out.write(json.dumps(rec) + "\n")
                if ok:
                    results.setdefault((rows, name), []).append((wall, cpu, size, detail))
                else:
                    results.setdefault((rows, name), [])
                clean(db)

    print()
    print(f"{'rows':>10}  {'tool':<26} {'runs':>4} {'wall s (median)':>16} {'min-max':>13} {'CPU s':>7} "
          f"{'rows/s':>11} {'liteload faster by':>18}  stored as")
    for rows in a.rows:
        base = results.get((rows, "liteload"))
        base_wall = statistics.median(w for w, *_ in base) if base else None
        for (r, name), runs in results.items():
            if r != rows:
                continue
            if not runs:
                print(f"{rows:>10}  {name:<26} FAILED")
                continue
            walls = [w for w, *_ in runs]
            cpus = [c for _, c, *_ in runs]
            med = statistics.median(walls)
            if name == "liteload parse-only":
                ratio = "(floor)"
            else:
                ratio = f"{med / base_wall:.1f}x" if base_wall and name != "liteload" else ""
            print(f"{rows:>10}  {name:<26} {len(runs):>4} {med:>16.3f} {min(walls):>6.2f}-{max(walls):<6.2f} "
                  f"{statistics.median(cpus):>7.2f} {rows / med:>11,.0f} {ratio:>18}  {runs[0][3]}")


if __name__ == "__main__":
    main()
