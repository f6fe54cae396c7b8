#!/usr/bin/env python3
"""Nested XML into related tables (issue "data as people have it", the XML door): the
orders of bench/nested.py (--mb megabytes of them as NDJSON, from its fixed seed)
written once as XML (not timed), each order an element whose attributes are its id and
status, with text children (created, note), a customer element (attributes, text
children, an address element), item elements (attributes, discount elements inside).
Loaded into the five tables the documented rules make of it: orders, orders_customer,
orders_customer_address, orders_item, orders_item_discount, each with _id INTEGER
PRIMARY KEY, a child's _parent (FOREIGN KEY to its parent's _id, indexed) and
_position, values typed as CSV fields are.

Tools, each in a process of its own, interleaved (round r starts with tool r), median of
--runs, every result checked (integrity_check, foreign_key_check, the four indexes, per
table the row count and per column the total of its numbers and of its values' text
lengths, equal across the tools that make the tables):

  liteload       liteload import DB orders.xml --nested tables
  lxml           lxml.etree.iterparse(tag="order") with elem.clear(), rows built by
                 hand, executemany into the same tables in one transaction (journal
                 off, synchronous off), the indexes after: the peers' XML road
  liteload-flat  liteload import DB orders.xml: the same records into one table, the
                 structured children as JSON text

    python bench/nested_xml.py [--mb 300] [--runs 3] [--workdir /tmp/nested]
                               [--tools …] [--json F]

Run it with a Python that has lxml (../shared/peers).
"""
import argparse
import json
import os
import sqlite3
import sys
from benchlib import LITELOAD, checked_rounds, print_medians, write_jsonl
from nested import make

TABLES = {
    "orders": ["_id", "order_id", "status", "created", "note"],
    "orders_customer": ["_id", "_parent", "_position", "id", "name", "email"],
    "orders_customer_address": ["_id", "_parent", "_position", "city", "zip"],
    "orders_item": ["_id", "_parent", "_position", "sku", "qty", "price"],
    "orders_item_discount": ["_id", "_parent", "_position", "code", "pct"],
}

LXML = r'''
import sqlite3, sys
from lxml import etree
db, src = sys.argv[1:3]
c = sqlite3.connect(db, isolation_level=None)
c.execute("PRAGMA journal_mode = OFF")
c.execute("PRAGMA synchronous = OFF")
c.executescript("""
CREATE TABLE orders (_id INTEGER PRIMARY KEY, order_id INTEGER, status TEXT, created TEXT, note TEXT);
CREATE TABLE orders_customer (_id INTEGER PRIMARY KEY, _parent INTEGER, _position INTEGER,
  id INTEGER, name TEXT, email TEXT, FOREIGN KEY (_parent) REFERENCES orders (_id));
CREATE TABLE orders_customer_address (_id INTEGER PRIMARY KEY, _parent INTEGER, _position INTEGER,
  city TEXT, zip TEXT, FOREIGN KEY (_parent) REFERENCES orders_customer (_id));
CREATE TABLE orders_item (_id INTEGER PRIMARY KEY, _parent INTEGER, _position INTEGER,
  sku TEXT, qty INTEGER, price REAL, FOREIGN KEY (_parent) REFERENCES orders (_id));
CREATE TABLE orders_item_discount (_id INTEGER PRIMARY KEY, _parent INTEGER, _position INTEGER,
  code TEXT, pct INTEGER, FOREIGN KEY (_parent) REFERENCES orders_item (_id));
""")
c.execute("BEGIN")
rows = {k: [] for k in ("o", "c", "a", "i", "d")}
n = {k: 0 for k in rows}
def flush():
    c.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", rows["o"])
    c.executemany("INSERT INTO orders_customer VALUES (?, ?, ?, ?, ?, ?)", rows["c"])
    c.executemany("INSERT INTO orders_customer_address VALUES (?, ?, ?, ?, ?)", rows["a"])
    c.executemany("INSERT INTO orders_item VALUES (?, ?, ?, ?, ?, ?)", rows["i"])
    c.executemany("INSERT INTO orders_item_discount VALUES (?, ?, ?, ?, ?)", rows["d"])
    for v in rows.values():
        v.clear()
for _, o in etree.iterparse(src, tag="order"):
    n["o"] += 1
    oid = n["o"]
    rows["o"].append((oid, int(o.get("order_id")), o.get("status"), o.findtext("created"), o.findtext("note")))
    cu = o.find("customer")
    n["c"] += 1
    rows["c"].append((n["c"], oid, 0, int(cu.get("id")), cu.findtext("name"), cu.findtext("email")))
    ad = cu.find("address")
    n["a"] += 1
    rows["a"].append((n["a"], n["c"], 0, ad.get("city"), ad.get("zip")))
    for i, it in enumerate(o.iterfind("item")):
        n["i"] += 1
        rows["i"].append((n["i"], oid, i, it.get("sku"), int(it.get("qty")), float(it.get("price"))))
        for j, d in enumerate(it.iterfind("discount")):
            n["d"] += 1
            rows["d"].append((n["d"], n["i"], j, d.get("code"), int(d.get("pct"))))
    o.clear()
    while o.getprevious() is not None:
        del o.getparent()[0]
    if len(rows["i"]) > 50_000:
        flush()
flush()
c.execute("CREATE INDEX idx_orders_customer__parent ON orders_customer (_parent)")
c.execute("CREATE INDEX idx_orders_customer_address__parent ON orders_customer_address (_parent)")
c.execute("CREATE INDEX idx_orders_item__parent ON orders_item (_parent)")
c.execute("CREATE INDEX idx_orders_item_discount__parent ON orders_item_discount (_parent)")
c.execute("COMMIT")
c.close()
'''


def escape(s):
    """`s` as XML text (bench/xml.py is `xml` on this folder's path: no stdlib xml)."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def quoteattr(s):
    """`s` as a double-quoted XML attribute value."""
    return '"' + escape(s).replace('"', "&quot;") + '"'


def make_xml(ndjson, path):
    """The NDJSON orders as one XML document (see the module comment)."""
    with open(ndjson, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n<orders>\n')
        for line in f:
            o = json.loads(line)
            cu = o["customer"]
            parts = [
                f"<order order_id=\"{o['order_id']}\" status={quoteattr(o['status'])}>",
                f"<created>{escape(o['created'])}</created>",
                f"<customer id=\"{cu['id']}\"><name>{escape(cu['name'])}</name>"
                f"<email>{escape(cu['email'])}</email>"
                f"<address city={quoteattr(cu['address']['city'])} zip={quoteattr(cu['address']['zip'])}/>"
                "</customer>",
            ]
            for it in o["items"]:
                ds = "".join(f"<discount code={quoteattr(d['code'])} pct=\"{d['pct']}\"/>" for d in it["discounts"])
                head = f"<item sku={quoteattr(it['sku'])} qty=\"{it['qty']}\" price=\"{it['price']}\""
                parts.append(f"{head}>{ds}</item>" if ds else f"{head}/>")
            parts.append(f"<note>{escape(o['note'])}</note></order>\n")
            out.write("".join(parts))
        out.write("</orders>\n")


def checksum(db, flat):
    c = sqlite3.connect(db)
    try:
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        if flat:
            got = c.execute("SELECT count(*), total(order_id), total(length(item)) FROM orders").fetchone()
            return ok, got
        fk = c.execute("SELECT count(*) FROM pragma_foreign_key_check").fetchone()[0]
        parts = []
        for table, cols in TABLES.items():
            sums = [f'total(CASE WHEN typeof("{k}") IN (\'integer\', \'real\') THEN "{k}" END), '
                    f'total(length(CAST("{k}" AS TEXT)))' for k in cols]
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
    ap.add_argument("--tools", default="liteload,lxml,liteload-flat")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    ndjson = os.path.join(a.workdir, f"orders{a.mb}.ndjson")
    if not os.path.exists(ndjson):
        print(f"making {a.mb} MB of orders ...", flush=True)
        make(ndjson + ".part", a.mb, True)
        os.rename(ndjson + ".part", ndjson)
    src = os.path.join(a.workdir, f"orders{a.mb}.xml")
    if not os.path.exists(src):
        make_xml(ndjson, src + ".part")
        os.rename(src + ".part", src)
    db = os.path.join(a.workdir, "run.db")
    tools = {
        "liteload": [LITELOAD, "import", db, src, "--table", "orders", "--nested", "tables", "-q"],
        "lxml": [sys.executable, "-c", LXML, db, src],
        "liteload-flat": [LITELOAD, "import", db, src, "--table", "orders", "-q"],
    }
    names = [t for t in a.tools.split(",") if t in tools]
    results, reference = checked_rounds(
        tools, names, a.runs, db, checksum, kind=lambda name: name == "liteload-flat",
        good=lambda got, flat: flat or (got[1] == 0 and got[2] == 4))
    size = os.path.getsize(src)
    rows = sum(t[0] for t in reference[False][3]) if reference.get(False) else 0
    print(f"\n{size / 1e6:,.0f} MB of nested XML ({len(TABLES)} tables, {rows:,} rows); "
          f"{os.cpu_count()} cores; medians of {a.runs}")
    out = print_medians(results, rows, {"xml_bytes": size, "rows": rows})
    write_jsonl(a.json, out)


if __name__ == "__main__":
    main()
