#!/usr/bin/env python3
"""Spreadsheets in (issue "data as people have it"): one worksheet of --rows rows and 20
columns (an id, 5 integers, 5 reals, 5 short texts, 2 dates, a date-time, a boolean and a
long text), made once by xlsxwriter from a fixed seed (not timed), loaded into a table
`t` of a new SQLite file.

Tools, each in a process of its own, interleaved (round r starts with tool r), median of
--runs, every result checked (integrity_check; row count, and per column NULLs and a sum,
total length or the dates' first ten characters, equal across tools):

  liteload   liteload import DB book.xlsx --table t
  pandas     pandas.read_excel(engine="calamine") + DataFrame.to_sql into a sqlite3
             connection (journal off, synchronous off), the usual road
  duckdb     DuckDB's excel extension and its sqlite one (from the pinned pip packages):
             ATTACH the database, CREATE TABLE s.t AS SELECT * FROM read_xlsx(…)

    python bench/spreadsheets.py [--rows 1000000] [--runs 3] [--workdir /tmp/sheets]
                                 [--shared-strings] [--tools …] [--json F]
"""
import argparse
import datetime
import os
import random
import sqlite3
import sys

from benchlib import LITELOAD, checked_rounds, print_medians, write_jsonl

INTS = [f"i{k}" for k in range(5)]
REALS = [f"r{k}" for k in range(5)]
TEXTS = [f"s{k}" for k in range(5)]
HEADER = ["id"] + INTS + REALS + TEXTS + ["d0", "d1", "at", "flag", "note"]

PANDAS = r'''
import sqlite3, sys
import pandas as pd
db, src = sys.argv[1:3]
df = pd.read_excel(src, engine="calamine")
c = sqlite3.connect(db)
c.execute("PRAGMA journal_mode = OFF")
c.execute("PRAGMA synchronous = OFF")
df.to_sql("t", c, index=False, chunksize=50_000)
c.commit()
c.close()
'''

DUCKDB = r'''
import glob, os, sys
sys.path.insert(0, sys.argv[3])
from duckdb_sqlite import connect
import duckdb_extension_excel as excel
db, src = sys.argv[1:3]
con = connect()
ext = glob.glob(os.path.join(os.path.dirname(excel.__file__), "extensions", "*", "*.duckdb_extension"))[0]
con.execute(f"LOAD '{ext}'")
con.execute(f"ATTACH '{db}' AS s (TYPE sqlite)")
con.execute(f"CREATE TABLE s.t AS SELECT * FROM read_xlsx('{src}')")
con.close()
'''


def make(path, rows, shared=False):
    """The workbook: strings inline (xlsxwriter's constant_memory mode, which streams
    rows) or, with `shared`, in a shared-strings table as Excel itself writes them (the
    whole sheet is then held in memory while it is made)."""
    import xlsxwriter
    rng = random.Random(20261129)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyzäöüé") for _ in range(rng.randint(3, 12)))
             for _ in range(2000)]
    wb = xlsxwriter.Workbook(path, {"constant_memory": not shared})
    ws = wb.add_worksheet("Data")
    date = wb.add_format({"num_format": "yyyy-mm-dd"})
    stamp = wb.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"})
    ws.write_row(0, 0, HEADER)
    base = datetime.date(2000, 1, 1)
    for r in range(1, rows + 1):
        row = [r] + [rng.randint(-10**6, 10**6) for _ in INTS] \
            + [round(rng.uniform(-1e4, 1e4), 3) for _ in REALS] + [rng.choice(words) for _ in TEXTS]
        ws.write_row(r, 0, row)
        ws.write_datetime(r, 16, base + datetime.timedelta(days=rng.randint(0, 9000)), date)
        ws.write_datetime(r, 17, base + datetime.timedelta(days=rng.randint(0, 9000)), date)
        ws.write_datetime(r, 18, datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=rng.randint(0, 10**8)), stamp)
        ws.write_boolean(r, 19, rng.random() < 0.5)
        ws.write_string(r, 20, " ".join(rng.choice(words) for _ in range(rng.randint(2, 8))))
    wb.close()


def checksum(db):
    c = sqlite3.connect(db)
    try:
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        parts = []
        for n in HEADER:
            parts.append(f'sum("{n}" IS NULL)')
            if n in INTS or n in REALS or n in ("id", "flag"):
                parts.append(f'round(total("{n}"), 1)')
            elif n in ("d0", "d1", "at"):
                # The date as text, whatever else a tool writes after it (a time of 0).
                parts.append(f'total(julianday(substr("{n}", 1, 19)))')
            else:
                parts.append(f'total(length("{n}"))')
        got = c.execute(f"SELECT count(*), {', '.join(parts)} FROM t").fetchone()
        return ok, tuple(round(x, 1) if isinstance(x, float) else x for x in got)
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/sheets")
    ap.add_argument("--tools", default="liteload,pandas,duckdb")
    ap.add_argument("--shared-strings", action="store_true",
                    help="strings in a shared-strings table (as Excel writes them), not inline")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    book = os.path.join(a.workdir, f"book{a.rows}{'-sst' if a.shared_strings else ''}.xlsx")
    if not os.path.exists(book):
        print(f"making the {a.rows:,}-row workbook ...", flush=True)
        make(book + ".part", a.rows, a.shared_strings)
        os.rename(book + ".part", book)
    db = os.path.join(a.workdir, "run.db")
    peers = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers")
    tools = {
        "liteload": [LITELOAD, "import", db, book, "--table", "t", "-q"],
        "pandas": [sys.executable, "-c", PANDAS, db, book],
        "duckdb": [sys.executable, "-c", DUCKDB, db, book, peers],
    }
    names = [t for t in a.tools.split(",") if t in tools]
    results, _ = checked_rounds(tools, names, a.runs, db, checksum,
                                good=lambda got: got[1][0] == a.rows)
    size = os.path.getsize(book)
    strings = "shared strings" if a.shared_strings else "inline strings"
    print(f"\n{a.rows:,} rows x {len(HEADER)} columns ({size / 1e6:,.0f} MB of .xlsx, {strings}); "
          f"{os.cpu_count()} cores; medians of {a.runs}")
    out = print_medians(results, a.rows, {"rows": a.rows, "xlsx_bytes": size, "strings": strings})
    write_jsonl(a.json, out)


if __name__ == "__main__":
    main()
