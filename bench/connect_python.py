#!/usr/bin/env python3
"""Write-up 002's system in plain Python, the strongest way we know: a TLS client (the
standard library's `ssl`) that sends an init line, reads newline-delimited JSON, merges
one second of messages per key in a dict (later fields overwrite earlier ones, absent
fields are kept), then writes the window with one executemany of
INSERT ... ON CONFLICT(id) DO UPDATE SET c = COALESCE(excluded.c, t.c), ... in one
BEGIN IMMEDIATE transaction (WAL, synchronous=NORMAL), storing the last position in the
same transaction. JSON parsing is part of the time. COALESCE means an explicit null
keeps the old value: compare with `liteload ingest --null keep`.

With `grouped` last, a window is written instead as one executemany per set of fields
present, each updating just those fields (bench/upsert_python.py's shape).

    python3 bench/connect_python.py DB TABLE HOST:PORT CA.pem INIT_FILE POSITION_FIELD START [grouped]
"""
import json
import signal
import socket
import sqlite3
import ssl
import sys
import time


def q(name):
    return '"' + name.replace('"', '""') + '"'


GROUPED = False


def main():
    global GROUPED
    db, table, addr, ca, init_file, pos_field, start = sys.argv[1:8]
    GROUPED = sys.argv[8:] == ["grouped"]
    host, port = addr.rsplit(":", 1)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"CREATE TABLE IF NOT EXISTS {q(table)} (id TEXT PRIMARY KEY)")
    conn.execute("CREATE TABLE IF NOT EXISTS feed_state (id INTEGER PRIMARY KEY CHECK (id = 1), position TEXT)")
    row = conn.execute("SELECT position FROM feed_state").fetchone()
    position = row[0] if row else start
    columns = [r[1] for r in conn.execute(f"PRAGMA table_info({q(table)})") if r[1] != "id"]
    known = set(columns)
    window = {}
    last = [position]
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))

    def flush():
        if not window:
            return
        conn.execute("BEGIN IMMEDIATE")
        for f in {f for r in window.values() for f in r} - known:
            conn.execute(f"ALTER TABLE {q(table)} ADD COLUMN {q(f)}")
            columns.append(f)
            known.add(f)
        if GROUPED:
            groups = {}
            for k, r in window.items():
                names = tuple(sorted(r))
                groups.setdefault(names, []).append((k, *[r[f] for f in names]))
            for names, rows in groups.items():
                cols = "".join(", " + q(f) for f in names)
                sets = ", ".join(f"{q(f)} = excluded.{q(f)}" for f in names)
                update = f"DO UPDATE SET {sets}" if names else "DO NOTHING"
                conn.executemany(f"INSERT INTO {q(table)} (id{cols}) VALUES ({', '.join('?' * (len(names) + 1))}) "
                                 f"ON CONFLICT(id) {update}", rows)
        else:
            cols = ", ".join(q(c) for c in columns)
            marks = ", ".join("?" * (len(columns) + 1))
            sets = ", ".join(f"{q(c)} = COALESCE(excluded.{q(c)}, {q(table)}.{q(c)})" for c in columns)
            sql = f"INSERT INTO {q(table)} (id, {cols}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {sets}"
            conn.executemany(sql, ((k, *[r.get(c) for c in columns]) for k, r in window.items()))
        conn.execute("INSERT INTO feed_state (id, position) VALUES (1, ?) "
                     "ON CONFLICT(id) DO UPDATE SET position = excluded.position", (last[0],))
        conn.execute("COMMIT")
        window.clear()

    ctx = ssl.create_default_context(cafile=ca)
    with open(init_file) as f:
        init = f.read().rstrip("\n").replace("{position}", str(position)) + "\n"
    raw = socket.create_connection((host, int(port)))
    s = ctx.wrap_socket(raw, server_hostname=host)
    s.sendall(init.encode())
    s.settimeout(0.2)
    buf = b""
    started = None
    while not stop[0]:
        try:
            chunk = s.recv(1 << 20)
        except (socket.timeout, ssl.SSLWantReadError):
            chunk = None
        if chunk == b"":
            break
        if chunk:
            buf += chunk
            lines = buf.split(b"\n")
            buf = lines.pop()
            for line in lines:
                if not line:
                    continue
                m = json.loads(line)
                key = m.pop("id")
                r = window.setdefault(key, {})
                for f, v in m.items():
                    if v is not None:
                        r[f] = json.dumps(v, separators=(",", ":")) if isinstance(v, (dict, list)) else v
                p = m.get(pos_field)
                if p is not None:
                    last[0] = p
                if started is None:
                    started = time.monotonic()
        if started is not None and time.monotonic() - started >= 1.0:
            flush()
            started = None
    flush()


if __name__ == "__main__":
    main()
