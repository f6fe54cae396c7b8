#!/usr/bin/env python3
"""Nested Parquet into related tables (issue "data as people have it", the typed door):
the orders of bench/nested.py (--mb megabytes of them as NDJSON, from its fixed seed)
written once to Parquet by pyarrow (not timed): a customer struct, a list of item
structs, each with a list of discount structs. Loaded into orders, orders_items and
orders_items_discounts of a new SQLite file, each with _id INTEGER PRIMARY KEY, a child's
_parent (FOREIGN KEY to its parent's _id, indexed) and _position, the customer as JSON
text.

Tools, each in a process of its own, interleaved (round r starts with tool r), median of
--runs, every result checked as bench/nested.py checks (integrity_check,
foreign_key_check, the two indexes, per table the row count and every column's sum or
total text length, equal across the tools):

  liteload       liteload import DB orders.parquet --nested tables
  duckdb         DuckDB: read_parquet(file_row_number) and UNNEST with generate_subscripts,
                 numbered by row_number(), INSERT into the same tables of the attached
                 SQLite file (made beforehand, as here with their keys); the indexes after
  pyarrow        pyarrow.parquet.read_table, the children by list_parent_indices and
                 list_flatten, rows by to_pylist, executemany into the same tables in one
                 transaction (journal off, synchronous off), the indexes after
  liteload-flat  liteload import DB orders.parquet: the same rows into one table, the
                 lists as JSON text

    python bench/nested_parquet.py [--mb 300] [--runs 3] [--workdir /tmp/nested]
                                   [--tools …] [--json F]

Run it with a Python that has pyarrow and the peers' DuckDB (../shared/peers).
"""
import argparse
import os
import sys

from benchlib import LITELOAD, checked_rounds, print_medians, write_jsonl
from nested import TABLES, checksum, make

SCHEMA = """
CREATE TABLE orders (_id INTEGER PRIMARY KEY, order_id INTEGER, created TEXT,
  status TEXT, customer TEXT, note TEXT);
CREATE TABLE orders_items (_id INTEGER PRIMARY KEY, _parent INTEGER,
  _position INTEGER, sku TEXT, qty INTEGER, price REAL,
  FOREIGN KEY (_parent) REFERENCES orders (_id));
CREATE TABLE orders_items_discounts (_id INTEGER PRIMARY KEY, _parent INTEGER,
  _position INTEGER, code TEXT, pct INTEGER,
  FOREIGN KEY (_parent) REFERENCES orders_items (_id));
"""
INDEXES = """
CREATE INDEX idx_orders_items__parent ON orders_items (_parent);
CREATE INDEX idx_orders_items_discounts__parent ON orders_items_discounts (_parent);
"""

DUCKDB = r'''
import sqlite3, sys
sys.path.insert(0, sys.argv[3])
from duckdb_sqlite import connect
db, src = sys.argv[1:3]
schema, indexes = sys.argv[4:6]
c = sqlite3.connect(db)
c.executescript(schema)
c.close()
con = connect()
con.execute(f"ATTACH '{db}' AS s (TYPE sqlite)")
con.execute("BEGIN")
con.execute(f"""INSERT INTO s.orders SELECT file_row_number + 1, order_id, created, status,
    to_json(customer), note FROM read_parquet('{src}', file_row_number = true)""")
con.execute(f"""CREATE TEMP TABLE it AS SELECT row_number() OVER (ORDER BY o, pos) AS id, o, pos, item
    FROM (SELECT file_row_number + 1 AS o, unnest(items) AS item,
                 generate_subscripts(items, 1) - 1 AS pos
          FROM read_parquet('{src}', file_row_number = true))""")
con.execute("""INSERT INTO s.orders_items SELECT id, o, pos, item.sku, item.qty, item.price
    FROM it ORDER BY id""")
con.execute("""INSERT INTO s.orders_items_discounts
    SELECT row_number() OVER (ORDER BY i, pos), i, pos, d.code, d.pct
    FROM (SELECT id AS i, unnest(item.discounts) AS d,
                 generate_subscripts(item.discounts, 1) - 1 AS pos FROM it)
    ORDER BY 1""")
con.execute("COMMIT")
con.close()
c = sqlite3.connect(db)
c.executescript(indexes)
c.close()
'''

PYARROW = r'''
import json, sqlite3, sys
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
db, src, schema, indexes = sys.argv[1:5]
c = sqlite3.connect(db, isolation_level=None)
c.execute("PRAGMA journal_mode = OFF")
c.execute("PRAGMA synchronous = OFF")
c.executescript(schema)
c.execute("BEGIN")
dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
t = pq.read_table(src)
n = t.num_rows
customer = [None if v is None else dumps(v) for v in t["customer"].to_pylist()]
c.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)",
              zip(range(1, n + 1), t["order_id"].to_pylist(), t["created"].to_pylist(),
                  t["status"].to_pylist(), customer, t["note"].to_pylist()))

def children(lists):
    """(parent numbers from 1, positions from 0, the elements) of a list column."""
    if hasattr(lists, "combine_chunks"):
        lists = lists.combine_chunks()
    parents = pc.list_parent_indices(lists).to_numpy()
    offsets = lists.offsets.to_numpy()
    values = pc.list_flatten(lists)
    positions = offsets[0] + np.arange(len(values)) - offsets[parents]
    return (parents + 1).tolist(), positions.tolist(), values

p, pos, items = children(t["items"])
c.executemany("INSERT INTO orders_items VALUES (?, ?, ?, ?, ?, ?)",
              zip(range(1, len(items) + 1), p, pos, items.field("sku").to_pylist(),
                  items.field("qty").to_pylist(), items.field("price").to_pylist()))
p, pos, ds = children(items.field("discounts"))
c.executemany("INSERT INTO orders_items_discounts VALUES (?, ?, ?, ?, ?)",
              zip(range(1, len(ds) + 1), p, pos, ds.field("code").to_pylist(), ds.field("pct").to_pylist()))
for statement in indexes.strip().split(";"):
    if statement.strip():
        c.execute(statement)
c.execute("COMMIT")
c.close()
'''


def make_parquet(ndjson, path):
    """The NDJSON orders as Parquet (created kept as text, not a timestamp)."""
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    parse = pj.ParseOptions(explicit_schema=pa.schema([("created", pa.string())]),
                            unexpected_field_behavior="infer")
    table = pj.read_json(ndjson, parse_options=parse)
    pq.write_table(table, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/nested")
    ap.add_argument("--tools", default="liteload,duckdb,pyarrow,liteload-flat")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    ndjson = os.path.join(a.workdir, f"orders{a.mb}.ndjson")
    if not os.path.exists(ndjson):
        print(f"making {a.mb} MB of orders ...", flush=True)
        make(ndjson + ".part", a.mb, True)
        os.rename(ndjson + ".part", ndjson)
    src = os.path.join(a.workdir, f"orders{a.mb}.parquet")
    if not os.path.exists(src):
        make_parquet(ndjson, src + ".part")
        os.rename(src + ".part", src)
    db = os.path.join(a.workdir, "run.db")
    peers = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers")
    tools = {
        "liteload": [LITELOAD, "import", db, src, "--table", "orders", "--nested", "tables", "-q"],
        "duckdb": [sys.executable, "-c", DUCKDB, db, src, os.path.abspath(peers), SCHEMA, INDEXES],
        "pyarrow": [sys.executable, "-c", PYARROW, db, src, SCHEMA, INDEXES],
        "liteload-flat": [LITELOAD, "import", db, src, "--table", "orders", "-q"],
    }
    names = [t for t in a.tools.split(",") if t in tools]
    results, reference = checked_rounds(
        tools, names, a.runs, db, checksum, kind=lambda name: name == "liteload-flat",
        good=lambda got, flat: flat or (got[1] == 0 and got[2] == 2))
    size = os.path.getsize(src)
    rows = sum(t[0] for t in reference[False][3]) if reference.get(False) else 0
    print(f"\n{size / 1e6:,.0f} MB of nested Parquet ({len(TABLES)} tables, {rows:,} rows); "
          f"{os.cpu_count()} cores; medians of {a.runs}")
    out = print_medians(results, rows, {"parquet_bytes": size, "rows": rows})
    write_jsonl(a.json, out)


if __name__ == "__main__":
    main()
