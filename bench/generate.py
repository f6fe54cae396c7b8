#!/usr/bin/env python3
"""Side-by-side generation benchmark: liteload generate vs write-up 004's approach vs SQL.

The write-up's table, user(id, area, age, active), at each size, made by:
  - liteload generate --engine direct (the page writer, crates/btree, atomic-new);
  - liteload generate --engine sqlite (SQLite's insert path, atomic-new);
  - dd of as many bytes as the direct file, conv=fdatasync: the disk's floor;
  - liteload generate --generate-only (values made, nothing written: the floor);
  - bench/writeup004, a Rust rebuild of the write-up's best single-thread approach (the
    five PRAGMAs, a prepared 50-row INSERT whose parameters each row's values are bound
    to as they are drawn from a xorshift RNG), linked with the same bundled SQLite; and
    the same with one producer thread feeding the writer over a channel (the shape of
    the write-up's threaded version);
  - Debian's sqlite3 running one INSERT … SELECT over a WITH RECURSIVE counter.
Interleaved rounds, medians. Every database is verified before its run counts:
PRAGMA integrity_check is ok, the row count is right, every age is 5/10/15, every
active 0/1, every area six digits.

    cargo build --release -p liteload-cli -p liteload-bench-writeup004
    python3 bench/generate.py [--runs 3] [--rows 10000000 100000000] [--workdir DIR]
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import sqlite3
import subprocess
import sys

from benchlib import LITELOAD, ROOT, print_table, run_rounds

WRITEUP = os.path.join(ROOT, "target", "release", "liteload-bench-writeup004")
PRAGMAS = ("PRAGMA journal_mode=OFF; PRAGMA synchronous=0; PRAGMA cache_size=1000000; "
           "PRAGMA locking_mode=EXCLUSIVE; PRAGMA temp_store=MEMORY;")
SCHEMA = ("CREATE TABLE user (id INTEGER not null primary key, area CHAR(6), "
          "age INTEGER not null, active INTEGER not null);")


def tools(db, rows):
    sql = (f"{PRAGMAS} {SCHEMA} INSERT INTO user (area, age, active) "
           f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {rows}) "
           "SELECT printf('%06d', abs(random() % 1000000)), (abs(random()) % 3 + 1) * 5, abs(random()) % 2 FROM c;")
    return {
        "liteload generate --engine direct": ([LITELOAD, "generate", "-q", db, "--rows", str(rows), "--engine", "direct"], True),
        "liteload generate": ([LITELOAD, "generate", "-q", db, "--rows", str(rows), "--engine", "sqlite"], True),
        "liteload generate --engine direct --threads 1": ([LITELOAD, "generate", "-q", db, "--rows", str(rows), "--engine", "direct", "--threads", "1"], True),
        "liteload generate --engine direct --threads 2": ([LITELOAD, "generate", "-q", db, "--rows", str(rows), "--engine", "direct", "--threads", "2"], True),
        "liteload generate --threads 1": ([LITELOAD, "generate", "-q", db, "--rows", str(rows), "--engine", "sqlite", "--threads", "1"], True),
        "liteload generate --threads 2": ([LITELOAD, "generate", "-q", db, "--rows", str(rows), "--engine", "sqlite", "--threads", "2"], True),
        # The disk's floor: the direct file's bytes, written and synced, through the page
        # cache and around it (O_DIRECT, as the direct writer does where it can).
        "dd conv=fdatasync (same bytes)": (["dd", "if=/dev/zero", f"of={db}", "bs=1M",
                                            f"count={direct_bytes(rows) // 2**20 + 1}", "conv=fdatasync"], False),
        "dd oflag=direct (same bytes)": (["dd", "if=/dev/zero", f"of={db}", "bs=8M", "oflag=direct",
                                          f"count={direct_bytes(rows) // 2**23 + 1}", "conv=fdatasync"], False),
        "liteload generate --generate-only": ([LITELOAD, "generate", "-q", db, "--rows", str(rows), "--generate-only"], False),
        "write-up 004 approach (Rust)": ([WRITEUP, db, str(rows)], True),
        "write-up 004 approach (Rust, producer thread)": ([WRITEUP, db, str(rows), "--producer-thread"], True),
        "sqlite3 WITH RECURSIVE": (["sqlite3", db, sql], True),
    }


def direct_bytes(rows):
    """About the size of the direct file of `rows` default rows: 19.1 bytes a row while
    rowids fit 4-byte varints (below 2^28), 19.9 past that (measured: 100M rows made
    1,911,152,640 bytes, 1B rows 19,887,677,440)."""
    return int(rows * (19.1 if rows < 2**28 else 19.9))


def verify(db, rows):
    try:
        c = sqlite3.connect(db)
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        n, ages, actives, areas = c.execute(
            "SELECT count(*), sum(age IN (5, 10, 15)), sum(active IN (0, 1)), "
            "sum(length(area) = 6 AND area NOT GLOB '*[^0-9]*') FROM user").fetchone()
        c.close()
    except sqlite3.Error as e:
        return False, f"sqlite error: {e}"
    if ok != "ok":
        return False, f"integrity_check: {ok}"
    if not (n == ages == actives == areas == rows):
        return False, f"{n} rows ({ages} ages, {actives} actives, {areas} areas right), expected {rows}"
    return True, "verified"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rows", type=int, nargs="+", default=[10_000_000, 100_000_000])
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/tmp") + "/liteload-bench")
    ap.add_argument("--json", help="append one JSON line per run to this file")
    ap.add_argument("--only", nargs="+", metavar="TEXT",
                    help="run only the tools whose name contains one of these (e.g. direct dd)")
    ap.add_argument("--exact", action="store_true",
                    help="--only gives whole tool names, not parts of them")
    a = ap.parse_args()
    for exe in (LITELOAD, WRITEUP):
        if not os.path.exists(exe):
            sys.exit("build first: cargo build --release -p liteload-cli -p liteload-bench-writeup004")
    os.makedirs(a.workdir, exist_ok=True)
    free = shutil.disk_usage(a.workdir).free
    need = max(a.rows) * 40  # bytes per row, with room for two databases at once
    if free < need:
        sys.exit(f"{a.workdir}: {free / 1e9:.1f} GB free, need about {need / 1e9:.1f} GB")
    out = open(a.json, "a") if a.json else None
    info = json.loads(subprocess.run([LITELOAD, "info", "--json"], capture_output=True, text=True).stdout)
    cli = subprocess.run(["sqlite3", "--version"], capture_output=True, text=True).stdout.split()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; liteload {info['liteload']} "
          f"(bundled SQLite {info['sqlite']}); sqlite3 CLI {cli}")
    results = {}
    db = os.path.join(a.workdir, "gen.db")
    for rows in a.rows:
        chosen = {name: t for name, t in tools(db, rows).items()
                  if not a.only or any(o == name if a.exact else o in name for o in a.only)}
        run_rounds(chosen, rows, a.runs, db, verify, results, out, nothing_written="nothing written")
    print()
    base = "liteload generate --engine direct"
    print_table(results, a.rows, base=base, floor="liteload generate --generate-only")
    print()
    for rows in a.rows:
        runs = results.get((rows, base))
        if not runs:
            continue
        wall = statistics.median(w for w, *_ in runs)
        size = runs[0][2]
        line = f"{rows:>13,} rows, direct: {size:,} bytes in {wall:.3f} s = {size / wall / 1e6:,.0f} MB/s"
        for dd in ("dd conv=fdatasync (same bytes)", "dd oflag=direct (same bytes)"):
            if results.get((rows, dd)):
                d = statistics.median(w for w, *_ in results[(rows, dd)])
                line += f"; {wall / d:.2f}x the time of {dd} ({d:.3f} s)"
        print(line)


if __name__ == "__main__":
    main()
