#!/usr/bin/env python3
"""Nested JSON into related tables (issue "data as people have it"): a JSON array of
--mb megabytes of orders (each with a customer object, an array of line items, and in
each item an array of discounts), made once from a fixed seed (not timed), loaded into
three tables of a new SQLite file: orders, orders_items, orders_items_discounts, each with
_id INTEGER PRIMARY KEY, a child's _parent (FOREIGN KEY to its parent's _id, indexed) and
_position, the customer object as JSON text.

Tools, each in a process of its own, interleaved (round r starts with tool r), median of
--runs, every result checked (integrity_check, foreign_key_check, and per table the row
count and sums of every column, equal across the three tools that make the tables):

  liteload       liteload import DB orders.json --nested tables
  python-json    json.load of the whole file, then executemany into the same tables in
                 one transaction (journal off, synchronous off), the indexes after
  python-ijson   the same, the orders streamed by ijson (its C backend, yajl2_c)
  liteload-flat  liteload import DB orders.json: the same bytes into one table, the
                 arrays as JSON text (the issue's "at most 1.5x flat" reference)

With --ndjson the same orders are one a line (NDJSON): Python reads each line with
json.loads, ijson with multiple_values.

    python bench/nested.py [--mb 300] [--runs 3] [--workdir /tmp/nested] [--ndjson]
                           [--tools …] [--json F]
"""
import argparse
import json
import os
import random
import sqlite3
import sys

from benchlib import LITELOAD, checked_rounds, print_medians, write_jsonl

PYTHON = r'''
import json, sqlite3, sys
db, src, how = sys.argv[1:4]
c = sqlite3.connect(db, isolation_level=None)
c.execute("PRAGMA journal_mode = OFF")
c.execute("PRAGMA synchronous = OFF")
c.execute("BEGIN")
c.execute("""CREATE TABLE orders (_id INTEGER PRIMARY KEY, order_id INTEGER, created TEXT,
  status TEXT, customer TEXT, note TEXT)""")
c.execute("""CREATE TABLE orders_items (_id INTEGER PRIMARY KEY, _parent INTEGER,
  _position INTEGER, sku TEXT, qty INTEGER, price REAL,
  FOREIGN KEY (_parent) REFERENCES orders (_id))""")
c.execute("""CREATE TABLE orders_items_discounts (_id INTEGER PRIMARY KEY, _parent INTEGER,
  _position INTEGER, code TEXT, pct INTEGER,
  FOREIGN KEY (_parent) REFERENCES orders_items (_id))""")
if how == "json":
    with open(src, "rb") as f:
        records = json.load(f)
elif how == "json-lines":
    records = (json.loads(line) for line in open(src, "rb") if line.strip())
else:
    import ijson
    f = open(src, "rb")
    if how == "ijson-lines":
        records = ijson.items(f, "", multiple_values=True, use_float=True)
    else:
        records = ijson.items(f, "item", use_float=True)
orders, items, discounts = [], [], []
dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
oid = iid = did = 0
def flush():
    c.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", orders)
    c.executemany("INSERT INTO orders_items VALUES (?, ?, ?, ?, ?, ?)", items)
    c.executemany("INSERT INTO orders_items_discounts VALUES (?, ?, ?, ?, ?)", discounts)
    orders.clear(); items.clear(); discounts.clear()
for o in records:
    oid += 1
    orders.append((oid, o["order_id"], o["created"], o["status"], dumps(o["customer"]), o["note"]))
    for i, it in enumerate(o["items"]):
        iid += 1
        items.append((iid, oid, i, it["sku"], it["qty"], it["price"]))
        for j, d in enumerate(it["discounts"]):
            did += 1
            discounts.append((did, iid, j, d["code"], d["pct"]))
    if len(items) > 50_000:
        flush()
flush()
c.execute("CREATE INDEX idx_orders_items__parent ON orders_items (_parent)")
c.execute("CREATE INDEX idx_orders_items_discounts__parent ON orders_items_discounts (_parent)")
c.execute("COMMIT")
c.close()
'''

TABLES = {
    "orders": ["_id", "order_id", "created", "status", "customer", "note"],
    "orders_items": ["_id", "_parent", "_position", "sku", "qty", "price"],
    "orders_items_discounts": ["_id", "_parent", "_position", "code", "pct"],
}


def make(path, mb, ndjson=False):
    """A JSON array of orders, about `mb` MB, from a fixed seed (with `ndjson`, the
    same orders one a line)."""
    rng = random.Random(20261130)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyzäöüé") for _ in range(rng.randint(3, 10)))
             for _ in range(3000)]
    status = ["new", "paid", "shipped", "returned"]
    target = mb * 1_000_000
    written = 0
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        if not ndjson:
            f.write("[\n")
        while written < target:
            n += 1
            order = {
                "order_id": 10_000_000 + n,
                "created": f"2026-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}T"
                           f"{rng.randint(0, 23):02}:{rng.randint(0, 59):02}:00Z",
                "status": rng.choice(status),
                "customer": {
                    "id": rng.randint(1, 10**6),
                    "name": f"{rng.choice(words).title()} {rng.choice(words).title()}",
                    "email": f"{rng.choice(words)}@{rng.choice(words)}.example",
                    "address": {"city": rng.choice(words).title(), "zip": f"{rng.randint(0, 99999):05}"},
                },
                "items": [
                    {
                        "sku": f"SKU-{rng.randint(0, 10**6):07}",
                        "qty": rng.randint(1, 9),
                        "price": round(rng.uniform(0.5, 500), 2),
                        "discounts": [
                            {"code": rng.choice(words).upper(), "pct": rng.randint(1, 40)}
                            for _ in range(rng.choice([0, 0, 1, 1, 2]))
                        ],
                    }
                    for _ in range(rng.randint(1, 5))
                ],
                "note": " ".join(rng.choice(words) for _ in range(rng.randint(0, 6))),
            }
            text = json.dumps(order, ensure_ascii=False, separators=(",", ":"))
            if n > 1 and not ndjson:
                f.write(",\n")
            f.write(text)
            if ndjson:
                f.write("\n")
            written += len(text.encode()) + 2
        if not ndjson:
            f.write("\n]\n")
    return n


def checksum(db, flat):
    c = sqlite3.connect(db)
    try:
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        if flat:
            got = c.execute("SELECT count(*), total(order_id), total(length(items)) FROM orders").fetchone()
            return ok, got
        fk = c.execute("SELECT count(*) FROM pragma_foreign_key_check").fetchone()[0]
        parts = []
        for table, cols in TABLES.items():
            sums = [f'total(length("{k}"))' if k in ("created", "status", "customer", "note", "sku", "code")
                    else f'total("{k}")' for k in cols]
            got = c.execute(f"SELECT count(*), {', '.join(sums)} FROM {table}").fetchone()
            parts.append(tuple(round(x, 2) if isinstance(x, float) else x for x in got))
        indexes = c.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'index'").fetchone()[0]
        return ok, fk, indexes, tuple(parts)
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/nested")
    ap.add_argument("--tools", default="liteload,python-json,python-ijson,liteload-flat")
    ap.add_argument("--ndjson", action="store_true", help="the orders one a line (NDJSON)")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    src = os.path.join(a.workdir, f"orders{a.mb}.{'ndjson' if a.ndjson else 'json'}")
    if not os.path.exists(src):
        print(f"making {a.mb} MB of orders ...", flush=True)
        make(src + ".part", a.mb, a.ndjson)
        os.rename(src + ".part", src)
    lines = "-lines" if a.ndjson else ""
    db = os.path.join(a.workdir, "run.db")
    tools = {
        "liteload": [LITELOAD, "import", db, src, "--table", "orders", "--nested", "tables", "-q"],
        "python-json": [sys.executable, "-c", PYTHON, db, src, "json" + lines],
        "python-ijson": [sys.executable, "-c", PYTHON, db, src, "ijson" + lines],
        "liteload-flat": [LITELOAD, "import", db, src, "--table", "orders", "-q"],
    }
    names = [t for t in a.tools.split(",") if t in tools]
    results, reference = checked_rounds(
        tools, names, a.runs, db, checksum, kind=lambda name: name == "liteload-flat",
        good=lambda got, flat: flat or (got[1] == 0 and got[2] == 2))
    size = os.path.getsize(src)
    rows = sum(t[0] for t in reference[False][3]) if reference.get(False) else 0
    layout = "NDJSON" if a.ndjson else "a JSON array"
    print(f"\n{size / 1e6:,.0f} MB of nested JSON ({layout}), {rows:,} rows in 3 tables; {os.cpu_count()} cores; "
          f"medians of {a.runs}")
    out = print_medians(results, rows, {"json_bytes": size, "rows": rows, "layout": layout})
    write_jsonl(a.json, out)


if __name__ == "__main__":
    main()
