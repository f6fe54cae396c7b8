#!/usr/bin/env python3
"""JSON as people have it (issue "data as people have it"): an export whose records sit
under a key (`{"Version": …, "List": [{…}, …]}`), each order holding a customer object
with an address object and an array of line items, loaded flattened: one row an order,
`customer_name`, `customer_address_city`, …, the items as JSON text.

The document is made once from a fixed seed (not timed). Tools, each in a process of its
own, interleaved (round r starts with tool r), median of --runs, every result checked
(integrity_check; count, and per scalar column NULLs and total length or sum, equal
across tools; the items column's non-NULL count):

  liteload        liteload import DB orders.json --flatten --table orders (the path found
                  by itself)
  liteload-array  the same orders as a top-level array file, --flatten: the reader without
                  the wrapping, to show what finding and checking it costs
  python          json.load, a flattening function, executemany into the same table in one
                  transaction (the best plain-Python way: ijson streams but is slower)
  duckdb          DuckDB (its sqlite extension from the pip package): ATTACH the database,
                  CREATE TABLE s.orders AS SELECT o.id, o.customer.name AS customer_name, …,
                  to_json(o.items) FROM (SELECT unnest(List) AS o FROM read_json(…))

    python bench/json_shapes.py [--rows 500000] [--runs 3] [--workdir /tmp/jsonshapes]
                                [--tools …] [--json F]
"""
import argparse
import json
import os
import random
import sqlite3
import sys

from benchlib import LITELOAD, checked_rounds, print_medians, write_jsonl

SCALARS = ["id", "placed", "status", "customer_name", "customer_email", "customer_address_city",
           "customer_address_zip", "customer_address_country", "total"]

PYTHON = r'''
import json, sqlite3, sys
db, src = sys.argv[1:3]
doc = json.load(open(src, encoding="utf-8"))
def flat(o, prefix="", out=None):
    out = {} if out is None else out
    for k, v in o.items():
        if isinstance(v, dict):
            flat(v, prefix + k + "_", out)
        else:
            out[prefix + k] = json.dumps(v, ensure_ascii=False, separators=(",", ":")) if isinstance(v, list) else v
    return out
rows = [flat(o) for o in doc["List"]]
cols = list(rows[0])
c = sqlite3.connect(db)
c.execute("PRAGMA journal_mode = OFF")
c.execute("PRAGMA synchronous = OFF")
c.execute("CREATE TABLE orders (" + ", ".join(f'"{n}"' for n in cols) + ")")
with c:
    c.executemany("INSERT INTO orders VALUES (" + ", ".join("?" for _ in cols) + ")",
                  (tuple(r.get(n) for n in cols) for r in rows))
c.close()
'''

DUCKDB = r'''
import sys
sys.path.insert(0, sys.argv[3])
from duckdb_sqlite import connect
db, src = sys.argv[1:3]
con = connect()
con.execute(f"ATTACH '{db}' AS s (TYPE sqlite)")
# (read_json takes `placed` for a TIMESTAMP: written back as the text it was.)
con.execute(f"""CREATE TABLE s.orders AS SELECT o.id AS id,
  strftime(o.placed, '%Y-%m-%dT%H:%M:%SZ') AS placed, o.status AS status,
  o.customer.name AS customer_name, o.customer.email AS customer_email,
  o.customer.address.city AS customer_address_city, o.customer.address.zip AS customer_address_zip,
  o.customer.address.country AS customer_address_country, o.total AS total, to_json(o.items) AS items
  FROM (SELECT unnest(List) AS o FROM read_json('{src}', maximum_object_size = 2147483647))""")
con.close()
'''


def make(path_doc, path_array, rows):
    rnd = random.Random(7)
    cities = ["Köln", "São Paulo", "Zürich", "Oslo", "東京", "Lagos", "Austin"]
    orders = []
    for i in range(rows):
        items = [{"sku": f"SKU-{rnd.randint(1, 99999):05d}", "qty": rnd.randint(1, 5),
                  "price": round(rnd.uniform(1, 200), 2),
                  "discounts": [{"code": "SPRING", "pct": 10}] if rnd.random() < 0.2 else []}
                 for _ in range(rnd.randint(1, 4))]
        orders.append({
            "id": i + 1,
            "placed": f"2026-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}T{rnd.randint(0, 23):02d}:00:00Z",
            "status": rnd.choice(["new", "paid", "shipped", "returned"]),
            "customer": {"name": f"Customer {rnd.randint(1, 10**6)} ü", "email": f"c{i}@example.com",
                         "address": {"city": rnd.choice(cities), "zip": f"{rnd.randint(1000, 99999)}",
                                     "country": rnd.choice(["DE", "BR", "CH", "NO", "JP", "NG", "US"])}},
            "total": round(sum(it["price"] * it["qty"] for it in items), 2),
            "items": items,
        })
    body = ",\n".join(json.dumps(o, ensure_ascii=False) for o in orders)
    with open(path_doc, "w", encoding="utf-8") as f:
        f.write('{"Version": "5.5", "Exported": "2026-11-29", "List": [\n' + body + '\n], "Count": %d}\n' % rows)
    with open(path_array, "w", encoding="utf-8") as f:
        f.write("[\n" + body + "\n]\n")


def checksum(db):
    c = sqlite3.connect(db)
    try:
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        parts = []
        for n in SCALARS:
            parts.append(f'sum("{n}" IS NULL), total(length(CAST("{n}" AS TEXT)))')
            if n in ("id", "total"):
                parts.append(f'round(total("{n}"), 2)')
        got = c.execute(f"SELECT count(*), count(items), {', '.join(parts)} FROM orders").fetchone()
        return ok, got
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/jsonshapes")
    ap.add_argument("--tools", default="liteload,liteload-array,python,duckdb")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    doc = os.path.join(a.workdir, f"orders{a.rows}.json")
    array = os.path.join(a.workdir, f"orders{a.rows}.array.json")
    if not (os.path.exists(doc) and os.path.exists(array)):
        print(f"making the {a.rows:,}-order document ...", flush=True)
        make(doc, array, a.rows)
    db = os.path.join(a.workdir, "run.db")
    peers = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers")
    load = lambda src: [LITELOAD, "import", db, src, "--flatten", "--table", "orders", "-q"]
    tools = {
        "liteload": load(doc),
        "liteload-array": load(array),
        "python": [sys.executable, "-c", PYTHON, db, doc],
        "duckdb": [sys.executable, "-c", DUCKDB, db, doc, peers],
    }
    names = [t for t in a.tools.split(",") if t in tools]
    results, _ = checked_rounds(tools, names, a.runs, db, checksum,
                                good=lambda got: got[1][0] == a.rows)
    size = os.path.getsize(doc)
    print(f"\n{a.rows:,} orders ({size / 1e6:,.0f} MB of JSON, records under \"List\") flattened; "
          f"{os.cpu_count()} cores; medians of {a.runs}")
    out = print_medians(results, a.rows, {"rows": a.rows, "json_bytes": size})
    write_jsonl(a.json, out)


if __name__ == "__main__":
    main()
