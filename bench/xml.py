#!/usr/bin/env python3
"""Record-oriented XML into a new SQLite table: liteload import against the ways a
Python user does it today (issue "XML in").

The data is shaped like a Stack Exchange dump's Posts.xml, made from a fixed seed: one
`<row …/>` per post with up to 19 attributes (ids, dates, a score, counts, an escaped
HTML body of 40-1,500 characters, a title and tags on questions only, optional
attributes missing as in the dumps). The same rows are also written as CSV, to compare
liteload with itself.

Tools, each in a process of its own, interleaved (round r starts with tool r), median of
--runs, every result checked (integrity_check ok, row count, and a checksum of the
table equal to liteload's XML load):

  liteload xml           liteload import DB posts.xml --table posts
  liteload csv           liteload import DB posts.csv --table posts --empty-null (the
                         same rows; an absent attribute is an empty field there)
  lxml iterparse         lxml.etree.iterparse(tag="row") with elem.clear() (and earlier
                         siblings dropped), rows batched into executemany of one
                         INSERT, one transaction, into the table liteload makes
  pandas read_xml        pandas.read_xml(iterparse={"row": columns}) + to_sql, into the
                         same table

    python bench/xml.py [--rows 2000000] [--runs 3] [--workdir /tmp/xmlbench] [--json F]

Run it with a Python that has the peers (pip install -r ../shared/peers/requirements.txt).
"""
import argparse
import csv
import os
import platform
import random
import sqlite3
import sys

from benchlib import LITELOAD, checked_rounds, clean, print_medians, run_rss, write_jsonl

COLUMNS = ["Id", "PostTypeId", "AcceptedAnswerId", "ParentId", "CreationDate", "Score",
           "ViewCount", "Body", "OwnerUserId", "OwnerDisplayName", "LastEditorUserId",
           "LastEditDate", "LastActivityDate", "Title", "Tags", "AnswerCount",
           "CommentCount", "FavoriteCount", "ContentLicense"]

WORDS = ("sqlite insert transaction index page cache journal fast slow query table row "
         "column value pragma wal commit python rust disk memory bulk load import csv "
         "xml json file speed lock writer reader").split()
TAGS = ["sqlite", "python", "performance", "sql", "database", "c++", "rust", "xml",
        "indexing", "transactions", "bulk-insert", "pandas"]


def escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def body(rnd):
    paras = []
    for _ in range(rnd.randint(1, 5)):
        words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(6, 40)))
        if rnd.random() < 0.3:
            words += f" <code>PRAGMA journal_mode = {rnd.choice(['WAL', 'OFF'])};</code>"
        if rnd.random() < 0.1:
            words += ' <a href="https://example.com/q?id=1&amp;x=2">link</a> "quoted" — naïve'
        paras.append(f"<p>{words}</p>")
    return "\n\n".join(paras) + "\n"


def date(rnd):
    return (f"20{rnd.randint(8, 24):02d}-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}"
            f"T{rnd.randint(0, 23):02d}:{rnd.randint(0, 59):02d}:{rnd.randint(0, 59):02d}"
            f".{rnd.randint(0, 999):03d}")


def posts(n, seed=42):
    rnd = random.Random(seed)
    for i in range(1, n + 1):
        question = rnd.random() < 0.4
        r = {"Id": str(i), "PostTypeId": "1" if question else "2"}
        if question and rnd.random() < 0.5:
            r["AcceptedAnswerId"] = str(rnd.randint(1, n))
        if not question:
            r["ParentId"] = str(rnd.randint(1, max(1, i - 1)))
        r["CreationDate"] = date(rnd)
        r["Score"] = str(rnd.randint(-5, 500))
        if question:
            r["ViewCount"] = str(rnd.randint(1, 100000))
        r["Body"] = body(rnd)
        if rnd.random() < 0.97:
            r["OwnerUserId"] = str(rnd.randint(1, 500000))
        else:
            r["OwnerDisplayName"] = rnd.choice(["anon", "user" + str(rnd.randint(1, 99)), "José"])
        if rnd.random() < 0.3:
            r["LastEditorUserId"] = str(rnd.randint(1, 500000))
            r["LastEditDate"] = date(rnd)
        r["LastActivityDate"] = date(rnd)
        if question:
            r["Title"] = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 12))).capitalize() + "?"
            r["Tags"] = "".join(f"<{t}>" for t in rnd.sample(TAGS, rnd.randint(1, 4)))
            r["AnswerCount"] = str(rnd.randint(0, 30))
        r["CommentCount"] = str(rnd.randint(0, 20))
        if question and rnd.random() < 0.2:
            r["FavoriteCount"] = str(rnd.randint(0, 50))
        r["ContentLicense"] = rnd.choice(["CC BY-SA 2.5", "CC BY-SA 3.0", "CC BY-SA 4.0"])
        yield r


def write_data(n, xml_path, csv_path):
    with open(xml_path, "w", encoding="utf-8", newline="\n") as x, \
            open(csv_path, "w", encoding="utf-8", newline="") as c:
        x.write('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n')
        w = csv.writer(c)
        w.writerow(COLUMNS)
        for r in posts(n):
            # Newlines in attribute values are written as character references, as
            # the dumps do (a literal one would be read back as a space).
            attrs = " ".join(f'{k}="{escape(v).replace(chr(10), "&#xA;")}"' for k, v in r.items())
            x.write(f"  <row {attrs} />\n")
            w.writerow([r.get(k, "") for k in COLUMNS])
        x.write("</posts>\n")


LXML = r'''
import sqlite3, sys
from lxml import etree
src, db, ddl, cols = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
conn = sqlite3.connect(db)
conn.execute(ddl)
sql = "INSERT INTO posts VALUES (" + ",".join("?" * len(cols)) + ")"
batch = []
conn.execute("BEGIN")
for _, el in etree.iterparse(src, events=("end",), tag="row"):
    get = el.get
    batch.append(tuple(get(c) for c in cols))
    el.clear()
    while el.getprevious() is not None:
        del el.getparent()[0]
    if len(batch) >= 10000:
        conn.executemany(sql, batch)
        batch.clear()
conn.executemany(sql, batch)
conn.commit()
conn.close()
'''

PANDAS = r'''
import sqlite3, sys
import pandas as pd
src, db, ddl, cols = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
df = pd.read_xml(src, iterparse={"row": cols}, parser="lxml")
df = df.astype(object).where(df.notna(), None)
conn = sqlite3.connect(db)
conn.execute(ddl)
df.to_sql("posts", conn, if_exists="append", index=False)
conn.commit()
conn.close()
'''


def checksum(db):
    c = sqlite3.connect(db)
    try:
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        row = c.execute(
            "SELECT count(*), total(Id), total(Score), total(ParentId), count(Title), "
            "total(length(Body)), count(OwnerDisplayName), total(length(Tags)), "
            "count(FavoriteCount), total(typeof(Score) = 'integer') FROM posts").fetchone()
        return ok, row
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/xmlbench")
    ap.add_argument("--tools", default="liteload xml,liteload csv,lxml iterparse,pandas read_xml")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    xml_path = os.path.join(a.workdir, f"posts{a.rows}.xml")
    csv_path = os.path.join(a.workdir, f"posts{a.rows}.csv")
    if not (os.path.exists(xml_path) and os.path.exists(csv_path)):
        print(f"writing {a.rows:,} posts to {xml_path} and {csv_path} ...", flush=True)
        write_data(a.rows, xml_path + ".part", csv_path + ".part")
        os.replace(csv_path + ".part", csv_path)
        os.replace(xml_path + ".part", xml_path)
    db = os.path.join(a.workdir, "out.db")
    # The peers load into the table liteload makes from the XML, so that every tool
    # stores the same values (SQLite's column affinity does the typing for them).
    clean(db)
    rc, err, *_ = run_rss([LITELOAD, "import", db, xml_path, "--table", "posts"])
    assert rc == 0, err
    ddl = sqlite3.connect(db).execute("SELECT sql FROM sqlite_master WHERE name = 'posts'").fetchone()[0]
    cols = [r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(posts)")]
    assert sorted(cols) == sorted(COLUMNS), cols
    reference = checksum(db)
    assert reference[0] == "ok" and reference[1][0] == a.rows, reference
    tools = {
        "liteload xml": [LITELOAD, "import", db, xml_path, "--table", "posts"],
        # Absent attributes are NULL; in the CSV they are empty fields.
        "liteload csv": [LITELOAD, "import", db, csv_path, "--table", "posts", "--empty-null"],
        "lxml iterparse": [sys.executable, "-c", LXML, xml_path, db, ddl, ",".join(cols)],
        "pandas read_xml": [sys.executable, "-c", PANDAS, xml_path, db, ddl, ",".join(cols)],
    }
    names = [t for t in a.tools.split(",") if t in tools]
    # The CSV holds the same values, so the whole checksum must match the reference.
    results, _ = checked_rounds(tools, names, a.runs, db, checksum, reference=reference)
    size = os.path.getsize(xml_path)
    print(f"\n{a.rows:,} posts, XML {size / 1e6:,.0f} MB, CSV {os.path.getsize(csv_path) / 1e6:,.0f} MB; "
          f"{platform.node()}, {os.cpu_count()} cores; medians of {a.runs}")
    out = print_medians(results, a.rows, {"rows": a.rows, "xml_bytes": size}, base="liteload xml")
    write_jsonl(a.json, out)

if __name__ == "__main__":
    main()
