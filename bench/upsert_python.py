#!/usr/bin/env python3
"""Write-up 002's best approach, with the standard library only: read newline-delimited
JSON from stdin, coalesce one second of messages per key in memory (the last value of
each field wins), then write the window in one transaction with executemany of
INSERT … ON CONFLICT(id) DO UPDATE, grouped by the set of fields present. WAL,
synchronous=NORMAL. New fields add (untyped) columns.

With --coalesce, the strongest plain-Python way we know instead: the window merged per
key in a dict with explicit nulls skipped, then ONE executemany over every column,
`INSERT … ON CONFLICT(id) DO UPDATE SET c = COALESCE(excluded.c, t.c), …`, in one
BEGIN IMMEDIATE transaction. An explicit null never overwrites a value (liteload's
`--null keep`).

    python3 bench/upsert_python.py [--coalesce] DB TABLE < feed.jsonl
"""
import json
import sqlite3
import sys
import time


def q(name):
    return '"' + name.replace('"', '""') + '"'


def main():
    args = sys.argv[1:]
    coalesce = "--coalesce" in args
    db, table = [a for a in args if a != "--coalesce"]
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"CREATE TABLE IF NOT EXISTS {q(table)} (id TEXT PRIMARY KEY)")
    columns = {r[1] for r in conn.execute(f"PRAGMA table_info({q(table)})")}
    window, started, n = {}, None, 0

    def flush():
        conn.execute("BEGIN IMMEDIATE" if coalesce else "BEGIN")
        for f in {f for row in window.values() for f in row} - columns:
            conn.execute(f"ALTER TABLE {q(table)} ADD COLUMN {q(f)}")
            columns.add(f)
        if coalesce:
            cols = sorted(columns - {"id"})
            names = "".join(", " + q(c) for c in cols)
            sets = ", ".join(f"{q(c)} = COALESCE(excluded.{q(c)}, {q(table)}.{q(c)})" for c in cols)
            update = f"DO UPDATE SET {sets}" if cols else "DO NOTHING"
            conn.executemany(f"INSERT INTO {q(table)} (id{names}) VALUES ({', '.join('?' * (len(cols) + 1))}) "
                             f"ON CONFLICT(id) {update}",
                             ((k, *[r.get(c) for c in cols]) for k, r in window.items()))
            conn.execute("COMMIT")
            window.clear()
            return
        groups = {}
        for key, row in window.items():
            names = tuple(sorted(row))
            groups.setdefault(names, []).append((key, *[row[f] for f in names]))
        for names, rows in groups.items():
            cols = ", ".join(q(f) for f in names)
            sets = ", ".join(f"{q(f)} = excluded.{q(f)}" for f in names)
            update = f"DO UPDATE SET {sets}" if names else "DO NOTHING"
            sql = (f"INSERT INTO {q(table)} (id{', ' if names else ''}{cols}) "
                   f"VALUES ({', '.join('?' * (len(names) + 1))}) ON CONFLICT(id) {update}")
            conn.executemany(sql, rows)
        conn.execute("COMMIT")
        window.clear()

    for line in sys.stdin:
        msg = json.loads(line)
        key = msg.pop("id")
        row = window.setdefault(key, {})
        for f, v in msg.items():
            if v is None and coalesce:
                row.setdefault(f, None)  # a new column all the same; never a value lost
                continue
            row[f] = json.dumps(v, separators=(",", ":")) if isinstance(v, (dict, list)) else v
        n += 1
        if started is None:
            started = time.monotonic()
        if time.monotonic() - started >= 1.0:
            flush()
            started = None
    if window:
        flush()
    print(f"{n} messages", file=sys.stderr)


if __name__ == "__main__":
    main()
