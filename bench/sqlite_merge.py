#!/usr/bin/env python3
"""SQLite files merged into one (issue "databases in", the SQLite-file door): --files
files of --rows rows each of one table (the transit shape: an INTEGER PRIMARY KEY, texts,
reals, integers, a NULL in nine rows of ten; an index on one column), made once from a
fixed formula by SQLite itself (not timed), merged into one new file.

Tools, each in a process of its own, interleaved (round r starts with tool r), median of
--runs, every result checked (integrity_check, the row count, the sums of the key and of
every number column, the total length of the texts, the index there):

  liteload      liteload import merged.db part*.db
  sqlite3       Debian's sqlite3 CLI the way a skilled user merges: journal off,
                synchronous off, the table made once from the first file's schema, every
                file ATTACHed and copied by INSERT INTO t SELECT * FROM s.t (SQLite's
                transfer optimization: records copied as stored), the index after the
                rows, one transaction
  sqlite-utils  sqlite-utils 4 (Python): the table made from the first file's schema,
                each file's rows through Table.insert_all (batches of 10,000), the index
                after the rows

    python bench/sqlite_merge.py [--files 10] [--rows 1000000] [--runs 3] [--rowid]
                                 [--workdir /tmp/merge] [--tools …] [--json F]

--rowid: the same table keyed by its implicit rowid (id an ordinary column), so every
tool numbers the rows anew and the index's rowids change with them.

Run it with a Python that has sqlite-utils (../shared/peers).
"""
import argparse
import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import LITELOAD, checked_rounds, print_medians, write_jsonl

SCHEMA = ("CREATE TABLE trips (id INTEGER PRIMARY KEY, vendor TEXT, pickup TEXT, dist REAL, "
          "fare REAL, passengers INTEGER, note TEXT)")
INDEX = "CREATE INDEX trips_vendor ON trips (vendor)"


def make(path, i, rows):
    conn = sqlite3.connect(path)
    conn.executescript(f"""PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; {SCHEMA};
        WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < {rows})
        INSERT INTO trips SELECT x + {i * rows}, 'V' || (x % 7),
          '2026-01-' || printf('%02d', x % 28 + 1) || 'T10:00:00', (x % 1000) / 10.0,
          (x % 5000) / 100.0, x % 6, CASE WHEN x % 10 = 0 THEN 'note ' || x END FROM n;
        {INDEX};""")
    conn.close()


SQLITE3 = r"""
import subprocess, sys
out, files = sys.argv[1], sys.argv[2:]
script = ["PRAGMA journal_mode=OFF;", "PRAGMA synchronous=OFF;", SCHEMA + ";", "BEGIN;"]
for i, f in enumerate(files):
    if i and i % 10 == 0:
        # SQLite attaches ten at once: the transaction goes on past a DETACH of them all.
        script += ["COMMIT;"] + [f"DETACH s{j};" for j in range(i - 10, i)] + ["BEGIN;"]
    script.append(f"ATTACH '{f}' AS s{i}; INSERT INTO trips SELECT * FROM s{i}.trips;")
script += [INDEX + ";", "COMMIT;"]
subprocess.run(["sqlite3", out], input="\n".join(script), text=True, check=True,
               stdout=subprocess.DEVNULL)
"""

SQLITE_UTILS = r"""
import sqlite3, sys
import sqlite_utils
out, files = sys.argv[1], sys.argv[2:]
db = sqlite_utils.Database(out)
db.execute("PRAGMA journal_mode=OFF"); db.execute("PRAGMA synchronous=OFF")
db.execute(SCHEMA)
for f in files:
    src = sqlite_utils.Database(f)
    db["trips"].insert_all(src["trips"].rows, batch_size=10_000)
db.execute(INDEX)
db.conn.commit()
"""


def checksum(db):
    c = sqlite3.connect(db)
    try:
        return (c.execute("PRAGMA integrity_check").fetchone()[0],
                c.execute("SELECT count(*), sum(id), sum(length(vendor)), sum(length(pickup)), total(dist), "
                          "total(fare), sum(passengers), sum(length(note)), count(note) FROM trips").fetchone(),
                c.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'trips_vendor'")
                .fetchone()[0])
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/merge")
    ap.add_argument("--tools", default="liteload,sqlite3,sqlite-utils")
    ap.add_argument("--json")
    ap.add_argument("--rowid", action="store_true",
                    help="key the table by its implicit rowid (rows numbered anew)")
    a = ap.parse_args()
    global SCHEMA
    if a.rowid:
        SCHEMA = SCHEMA.replace("id INTEGER PRIMARY KEY", "id INTEGER")
    os.makedirs(a.workdir, exist_ok=True)
    files = []
    for i in range(a.files):
        f = os.path.join(a.workdir, f"part{a.rows}{'-rowid' if a.rowid else ''}-{i:03}.db")
        if not os.path.exists(f):
            print(f"making {f} ...", flush=True)
            make(f + ".part", i, a.rows)
            os.rename(f + ".part", f)
        files.append(f)
    db = os.path.join(a.workdir, "merged.db")
    consts = f"SCHEMA = {SCHEMA!r}\nINDEX = {INDEX!r}\n"
    tools = {
        "liteload": [LITELOAD, "import", db, *files, "-q"],
        "sqlite3": [sys.executable, "-c", consts + SQLITE3, db, *files],
        "sqlite-utils": [sys.executable, "-c", consts + SQLITE_UTILS, db, *files],
    }
    names = [t for t in a.tools.split(",") if t in tools]
    results, reference = checked_rounds(tools, names, a.runs, db, checksum,
                                        good=lambda got: got[2] == 1)
    rows = a.files * a.rows
    size = sum(os.path.getsize(f) for f in files)
    print(f"\n{a.files} files of {a.rows:,} rows ({size / 1e6:,.0f} MB{', implicit rowids' if a.rowid else ''}) merged; {os.cpu_count()} cores; "
          f"medians of {a.runs}")
    out = print_medians(results, rows, {"files": a.files, "rows": rows, "bytes": size, "rowid": a.rowid})
    write_jsonl(a.json, out)


if __name__ == "__main__":
    main()
