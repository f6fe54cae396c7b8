#!/usr/bin/env python3
"""Loading a CSV into a table made beforehand (issue "tables that already exist"): the
shape of a public CSV-to-SQLite challenge, a Notion-like `block` table of 29 columns,
STRICT, NOT NULL columns, a text primary key, JSON inside quoted cells, and PostgreSQL's
rule for empty cells (`a,,b` is NULL, `a,"",b` is the empty string).

The CSV is made once from a fixed seed (not timed); every run loads it into a new
database holding only the empty table. Tools, each in a process of its own, interleaved
(round r starts with tool r), median of --runs, every result checked (integrity_check,
and per column: NULLs, storage classes, total length and sum, equal across tools):

  liteload         liteload import DB block.csv --table block --nulls unquoted
  liteload-before  the same command with an older binary (--before PATH), e.g. the
                   release before loads into made tables went through the side file
  duckdb           DuckDB (its sqlite extension from the pip package): ATTACH the
                   database, INSERT INTO s.block SELECT * FROM read_csv(…,
                   allow_quoted_nulls = false, the 29 column types given)

With --check the table also has a CHECK constraint that every row passes (`length(id) >
0 AND length(last_edited_by_id) > 0`), which only SQLite evaluates.

`sqlite3 .import` is not a peer here: it stores both kinds of empty cell as '', which
every STRICT INTEGER column refuses. Python's csv module (3.11) cannot tell a quoted
empty cell from an unquoted one, so a plain-Python loop does not get the rule right
either; DuckDB does.

    python bench/made_table.py [--rows 3000000] [--runs 3] [--workdir /tmp/madetable]
                               [--before PATH] [--tools …] [--json F]
"""
import argparse
import json
import os
import random
import sqlite3
import sys
import uuid

from benchlib import LITELOAD, checked_rounds, print_medians, write_jsonl

# (name, STRICT type, NOT NULL, kind of value)
COLUMNS = [
    ("id", "TEXT", True, "uuid"),
    ("space_id", "TEXT", True, "uuid"),
    ("version", "INTEGER", True, "int"),
    ("type", "TEXT", True, "type"),
    ("properties", "TEXT", False, "json"),
    ("content", "TEXT", False, "ids"),
    ("discussions", "TEXT", False, "ids?"),
    ("view_ids", "TEXT", False, "ids?"),
    ("collection_id", "TEXT", False, "uuid?"),
    ("permissions", "TEXT", False, "perm"),
    ("created_time", "INTEGER", True, "time"),
    ("last_edited_time", "INTEGER", True, "time"),
    ("parent_id", "TEXT", True, "uuid"),
    ("parent_table", "TEXT", True, "table"),
    ("alive", "INTEGER", True, "bool"),
    ("moved", "TEXT", False, "empty"),
    ("format", "TEXT", False, "json?"),
    ("created_by", "TEXT", False, "uuid?"),
    ("last_edited_by", "TEXT", False, "uuid?"),
    ("created_by_table", "TEXT", True, "who"),
    ("created_by_id", "TEXT", True, "uuid"),
    ("last_edited_by_table", "TEXT", True, "who"),
    ("last_edited_by_id", "TEXT", True, "uuid"),
    ("copied_from", "TEXT", False, "uuid?"),
    ("file_ids", "TEXT", False, "ids?"),
    ("ignore_block_count", "INTEGER", False, "bool?"),
    ("is_template", "INTEGER", False, "bool?"),
    ("crdt_data", "TEXT", False, "empty"),
    ("crdt_format_version", "INTEGER", False, "int?"),
]

DDL = "CREATE TABLE block (\n  " + ",\n  ".join(
    f"{n} {t}{' NOT NULL' if nn else ''}{' PRIMARY KEY' if n == 'id' else ''}" for n, t, nn, _ in COLUMNS
) + "\n) STRICT"

DUCKDB = r'''
import sys
sys.path.insert(0, sys.argv[3])
from duckdb_sqlite import connect
db, src = sys.argv[1:3]
types = dict(zip(sys.argv[4].split(","), sys.argv[5].split(",")))
con = connect()
con.execute(f"ATTACH '{db}' AS s (TYPE sqlite)")
cols = ", ".join(f"'{n}': '{t}'" for n, t in types.items())
con.execute(f"INSERT INTO s.block SELECT * FROM read_csv('{src}', header = true, "
            f"allow_quoted_nulls = false, columns = {{{cols}}})")
con.close()
'''

TYPES = ["page", "text", "to_do", "header", "bulleted_list", "image", "callout", "code"]


def make_csv(path, rows):
    rnd = random.Random(5)

    def uid():
        return str(uuid.UUID(int=rnd.getrandbits(128), version=4))

    def value(kind, i):
        opt = kind.endswith("?")
        if opt and rnd.random() < 0.5:
            return None  # unquoted empty: NULL
        kind = kind.rstrip("?")
        if kind == "uuid":
            return uid()
        if kind == "int":
            return str(rnd.randint(1, 900))
        if kind == "time":
            return str(1_600_000_000_000 + rnd.randint(0, 10**11))
        if kind == "bool":
            return str(rnd.randint(0, 1))
        if kind == "type":
            return rnd.choice(TYPES)
        if kind == "table":
            return rnd.choice(["block", "space", "collection"])
        if kind == "who":
            return "notion_user"
        if kind == "empty":
            return "" if rnd.random() < 0.7 else None  # quoted '' or NULL
        if kind == "json":
            words = " ".join(rnd.choice(["naïve", "café", "plan", "x,y", 'say "hi"', "🦀", "ok"]) for _ in range(rnd.randint(1, 6)))
            return json.dumps({"title": [[words]], "n": i})
        if kind == "ids":
            return json.dumps([uid() for _ in range(rnd.randint(0, 3))])
        if kind == "perm":
            return json.dumps([{"role": "editor", "type": "user_permission", "user_id": uid()}])
        raise ValueError(kind)

    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write(",".join(n for n, *_ in COLUMNS) + "\n")
        for i in range(rows):
            cells = []
            for _, _, _, kind in COLUMNS:
                v = value(kind, i)
                if v is None:
                    cells.append("")
                elif v == "" or any(ch in v for ch in ',"\n') or kind.startswith(("json", "ids", "perm")):
                    cells.append('"' + v.replace('"', '""') + '"')
                else:
                    cells.append(v)
            f.write(",".join(cells) + "\n")


def checksum(db):
    c = sqlite3.connect(db)
    try:
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        parts = []
        for n, t, *_ in COLUMNS:
            parts.append(f"sum({n} IS NULL), group_concat(DISTINCT typeof({n})), total(length(CAST({n} AS BLOB)))")
            if t == "INTEGER":
                parts.append(f"sum({n})")
        got = c.execute(f"SELECT count(*), {', '.join(parts)} FROM block").fetchone()
        empty = c.execute("SELECT sum(moved = ''), sum(crdt_data = '') FROM block").fetchone()
        return ok, got + empty
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/madetable")
    ap.add_argument("--before", help="an older liteload binary, timed as liteload-before")
    ap.add_argument("--tools", default="liteload,liteload-before,duckdb")
    ap.add_argument("--check", action="store_true",
                    help="the table has a CHECK constraint too (every row passes it)")
    ap.add_argument("--json")
    a = ap.parse_args()
    ddl = DDL[:-len("\n) STRICT")] + ",\n  CHECK (length(id) > 0 AND length(last_edited_by_id) > 0)\n) STRICT" if a.check else DDL
    os.makedirs(a.workdir, exist_ok=True)
    src = os.path.join(a.workdir, f"block{a.rows}.csv")
    if not os.path.exists(src):
        print(f"making the {a.rows:,}-row CSV ...", flush=True)
        make_csv(src, a.rows)
    db = os.path.join(a.workdir, "run.db")
    peers = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers")
    load = lambda exe: [exe, "import", db, src, "--table", "block", "--nulls", "unquoted", "-q"]
    tools = {
        "liteload": load(LITELOAD),
        "duckdb": [sys.executable, "-c", DUCKDB, db, src, peers, ",".join(n for n, *_ in COLUMNS),
                   ",".join("BIGINT" if t == "INTEGER" else "VARCHAR" for _, t, *_ in COLUMNS)],
    }
    if a.before:
        tools["liteload-before"] = load(a.before)
    names = [t for t in a.tools.split(",") if t in tools]
    if not names:
        print(f"no tool among {a.tools!r}: the data is made, nothing is timed")
        return
    size = os.path.getsize(src)

    def prepare(db):
        with sqlite3.connect(db) as c:
            c.execute(ddl)
        c.close()

    results, _ = checked_rounds(tools, names, a.runs, db, checksum, prepare=prepare,
                                good=lambda got: got[1][0] == a.rows)
    print(f"\n{a.rows:,} rows ({size / 1e6:,.0f} MB of CSV) into the made STRICT table"
          f"{' with a CHECK constraint' if a.check else ''}; {os.cpu_count()} cores; "
          f"medians of {a.runs}")
    out = print_medians(results, a.rows, {"rows": a.rows, "csv_bytes": size})
    write_jsonl(a.json, out)

if __name__ == "__main__":
    main()
