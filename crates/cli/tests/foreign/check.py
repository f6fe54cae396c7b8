"""Compare a table that liteload loaded with DuckDB's own reading of the same file.

    python check.py FILE DB TABLE

Each value must be what liteload promises for its Arrow type: integers and booleans as
INTEGER, floats as REAL (NaN as NULL), text and blobs as they are, dates and timestamps
as ISO 8601 text of the same day or instant, decimals as their exact text, lists and
structs as JSON of the same value. Prints each difference; exits 1 if there is any.
"""
import datetime
import decimal
import json
import math
import sqlite3
import sys

import duckdb

path, db, table = sys.argv[1:4]
con = duckdb.connect()
con.execute("SET threads = 1")
reader = "read_parquet" if path.endswith(".parquet") else None
if reader:
    rel = con.execute(f"SELECT * FROM read_parquet(?)", [path])
else:
    import pyarrow.feather as feather
    t = feather.read_table(path)
    rel = con.execute("SELECT * FROM t")
want_cols = [d[0] for d in rel.description]
want = rel.fetchall()
lite = sqlite3.connect(db)
ok = lite.execute("PRAGMA integrity_check").fetchone()[0]
problems = [] if ok == "ok" else [f"integrity_check: {ok}"]
cur = lite.execute(f'SELECT * FROM "{table}" ORDER BY rowid')
got_cols = [d[0] for d in cur.description]
got = cur.fetchall()
if got_cols != want_cols:
    problems.append(f"columns: {got_cols} != {want_cols}")
if len(got) != len(want):
    problems.append(f"rows: {len(got)} != {len(want)}")


def same(w, g):
    if w is None:
        return g is None
    if isinstance(w, bool):
        return g == int(w) and type(g) is int
    if isinstance(w, int):
        return g == w and type(g) is int
    if isinstance(w, float):
        return g is None if math.isnan(w) else (type(g) is float and g == w)
    if isinstance(w, (str, bytes)):
        return g == w
    if isinstance(w, decimal.Decimal):
        return isinstance(g, str) and decimal.Decimal(g) == w and str(w) == g
    if isinstance(w, datetime.datetime):
        if not isinstance(g, str):
            return False
        parsed = datetime.datetime.fromisoformat(g)
        if w.tzinfo is not None:
            return g.endswith("Z") and parsed == w
        return parsed == w
    if isinstance(w, datetime.date):
        return g == w.isoformat()
    if isinstance(w, (list, dict)):
        return isinstance(g, str) and json.loads(g) == w
    return False


for r, (wr, gr) in enumerate(zip(want, got)):
    for c, (w, g) in enumerate(zip(wr, gr)):
        if not same(w, g):
            problems.append(f"row {r + 1}, column {want_cols[c]!r}: DuckDB reads {w!r:.80}, liteload stored {g!r:.80}")
            if len(problems) > 20:
                break
for p in problems[:20]:
    print(p)
sys.exit(1 if problems else 0)
