#!/usr/bin/env python3
"""Upserting into a table that is already full (issue "tables that already exist"):
1M rows, half of them new and half updating one of the 10M rows already in the table,
against the ways a user does it today.

The table is `t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL)`, 10M rows from a
fixed seed, made once (not timed) and copied for every run; the input is a CSV of `id,
a, b` (c is not in it and must be kept). Tools, each in a process of its own,
interleaved (round r starts with tool r), median of --runs, every result checked
(integrity_check, and count, sum(id), sum(a), total(length(b)) and total(c) equal
across tools):

  liteload           liteload import DB upd.csv --table t --on-conflict update --key id
  executemany        Python's sqlite3: csv.reader, ints converted, one transaction of
                     executemany("INSERT … ON CONFLICT (id) DO UPDATE SET a = excluded.a,
                     b = excluded.b"), WAL and synchronous=NORMAL as liteload's
                     `balanced`
  sqlite-utils       sqlite-utils upsert DB t upd.csv --csv --pk id

    python bench/on_conflict.py [--rows 10000000] [--updates 1000000] [--runs 3]
                                [--workdir /tmp/upsertbench] [--json F]
"""
import argparse
import csv
import os
import random
import shutil
import sqlite3
import subprocess
import sys

from benchlib import LITELOAD, checked_rounds, clean, print_medians, write_jsonl

EXECUTEMANY = r'''
import csv, sqlite3, sys
db, src = sys.argv[1:3]
c = sqlite3.connect(db, isolation_level=None)
c.execute("PRAGMA journal_mode=WAL")
c.execute("PRAGMA synchronous=NORMAL")
with open(src, newline="", encoding="utf-8") as f:
    r = csv.reader(f)
    next(r)
    rows = ((int(i), int(a) if a else None, b) for i, a, b in r)
    c.execute("BEGIN")
    c.executemany("INSERT INTO t (id, a, b) VALUES (?, ?, ?) "
                  "ON CONFLICT (id) DO UPDATE SET a = excluded.a, b = excluded.b", rows)
    c.execute("COMMIT")
c.close()
'''


def make_base(path, rows):
    src = path + ".csv"
    rnd = random.Random(7)
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "a", "b", "c"])
        for i in range(1, rows + 1):
            w.writerow([i, rnd.randint(0, 10**6), f"name {rnd.randint(0, 10**5)}", rnd.random()])
    clean(path)
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL)")
    subprocess.run([LITELOAD, "import", path, src, "--table", "t", "-q"], check=True)
    os.remove(src)


def make_updates(path, rows, updates):
    rnd = random.Random(11)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "a", "b"])
        for k in range(updates):
            i = rnd.randint(1, rows) if k % 2 == 0 else rows + k
            w.writerow([i, rnd.randint(0, 10**6), f"new {k} ü"])


def checksum(db):
    c = sqlite3.connect(db)
    try:
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        return ok, c.execute("SELECT count(*), sum(id), sum(a), total(length(b)), total(c) FROM t").fetchone()
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--updates", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/upsertbench")
    ap.add_argument("--tools", default="liteload,executemany,sqlite-utils")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    base = os.path.join(a.workdir, f"base{a.rows}.db")
    upd = os.path.join(a.workdir, f"upd{a.updates}.csv")
    if not os.path.exists(base):
        print(f"making the {a.rows:,}-row table ...", flush=True)
        make_base(base, a.rows)
    if not os.path.exists(upd):
        make_updates(upd, a.rows, a.updates)
    db = os.path.join(a.workdir, "run.db")
    sqlite_utils = os.path.join(os.path.dirname(sys.executable), "sqlite-utils")
    tools = {
        "liteload": [LITELOAD, "import", db, upd, "--table", "t", "--on-conflict", "update", "--key", "id", "-q"],
        "executemany": [sys.executable, "-c", EXECUTEMANY, db, upd],
        "sqlite-utils": [sqlite_utils, "upsert", db, "t", upd, "--csv", "--pk", "id"],
    }
    names = [t for t in a.tools.split(",") if t in tools]
    if not names:
        print(f"no tool among {a.tools!r}: the data is made, nothing is timed")
        return
    results, reference = checked_rounds(tools, names, a.runs, db, checksum,
                                        prepare=lambda db: shutil.copyfile(base, db))
    print(f"\n{a.updates:,} upserts ({a.updates // 2:,} updates, the rest new) into {a.rows:,} rows; "
          f"{os.cpu_count()} cores; medians of {a.runs}; checksum {reference}")
    out = print_medians(results, a.updates, {"rows": a.rows, "updates": a.updates})
    write_jsonl(a.json, out)

if __name__ == "__main__":
    main()
