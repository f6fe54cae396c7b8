#!/usr/bin/env python3
"""A live feed over loopback TLS (issue 21): `liteload ingest --connect` against
write-up 002's system rebuilt in plain Python the strongest way we know
(bench/connect_python.py: ssl socket, a dict merge per 1 s window, one executemany
upsert with COALESCE per window, the position stored in the window's transaction).

A TLS server here (Python `ssl`, a certificate made with openssl) checks each client's
init line and streams the same bytes to both: bench/gen_feed.py's messages, each with
a `pitr` position field added in front, then holds the connection open as a live feed
does. A client's time runs from its start until its database has committed the last
message's position (polled every 20 ms: the same for both), then it is stopped. COALESCE
keeps the old value on an explicit null, so liteload runs with `--null keep`; both final
tables are compared with a reference merge of the same semantics. Interleaved runs,
medians.

    python3 bench/connect.py [--messages 1000000] [--keys 300000] [--runs 3] [--workdir DIR]
"""
import argparse
import json
import os
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import time

from benchlib import LITELOAD, ROOT, clean, print_message_medians, rotations
from ingest import check

TOKEN = "bench-token"


def model_keep(path):
    """The merge with explicit nulls ignored (COALESCE's and --null keep's semantics)."""
    model = {}
    with open(path, "rb") as f:
        for line in f:
            m = json.loads(line)
            row = model.setdefault(m.pop("id"), {})
            row.update({k: v for k, v in m.items() if v is not None})
    return model


def with_positions(feed, out):
    """The feed with `"pitr":"N"` first in message N (from 1); returns the count."""
    n = 0
    with open(feed, "rb") as f, open(out, "wb") as o:
        for line in f:
            n += 1
            o.write(b'{"pitr":"%d",' % n + line[1:])
    return n


def certificate(workdir):
    cert, key = os.path.join(workdir, "feed-cert.pem"), os.path.join(workdir, "feed-key.pem")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "30", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost", "-addext", "basicConstraints=critical,CA:FALSE",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
    return cert, key


class Server:
    """Streams `data` from the message after the asked position to each client whose init
    line is `live TOKEN pitr N`, then keeps the connection open."""

    def __init__(self, cert, key, data):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.data = data
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            c, _ = self.sock.accept()
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        try:
            s = self.ctx.wrap_socket(c, server_side=True)
            f = s.makefile("rb")
            parts = f.readline().decode().split()
            if parts[:3] != ["live", TOKEN, "pitr"]:
                s.sendall(b'{"error":"bad init line"}\n')
                return
            after = int(parts[3])
            at = 0
            for _ in range(after):
                at = self.data.find(b"\n", at) + 1
                if at == 0:
                    at = len(self.data)
                    break
            view = memoryview(self.data)[at:]
            for i in range(0, len(view), 1 << 20):
                s.sendall(view[i:i + (1 << 20)])
            while s.recv(1 << 16):
                pass
        except (OSError, ValueError, IndexError):
            pass
        finally:
            c.close()


def committed_position(db, sql):
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            r = c.execute(sql).fetchone()
        finally:
            c.close()
        return r[0] if r else None
    except sqlite3.Error:
        return None


def run_client(argv, db, sql, last, limit=600):
    """Runs a client until `db` has committed position `last`; (seconds, error or None)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = None
    while True:
        if committed_position(db, sql) == last:
            wall = time.perf_counter() - t0
            break
        if p.poll() is not None:
            wall, err = time.perf_counter() - t0, f"exit {p.returncode}: {p.stderr.read().decode()[-300:]}"
            break
        if time.perf_counter() - t0 > limit:
            wall, err = time.perf_counter() - t0, "timed out"
            break
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return wall, err


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=300_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", action="append", help="run only the tools whose name starts with this (repeatable)")
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/tmp") + "/liteload-bench")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    feed = os.path.join(a.workdir, f"feed_{a.messages}_{a.keys}.jsonl")
    if not os.path.exists(feed):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_feed.py"), str(a.messages), str(a.keys), feed], check=True)
    positioned = feed + ".pitr"
    n = with_positions(feed, positioned)
    with open(positioned, "rb") as f:
        data = f.read()
    model = model_keep(positioned)
    cert, key = certificate(a.workdir)
    server = Server(cert, key, data)
    addr = f"localhost:{server.port}"
    init = os.path.join(a.workdir, "feed-init.txt")
    with open(init, "w") as f:
        f.write(f"live {TOKEN} pitr {{position}}\n")
    db = os.path.join(a.workdir, "connect.db")
    tools = {
        "liteload ingest --connect (1 s windows, --null keep)": (
            [LITELOAD, "ingest", "-q", db, "--table", "flights", "--key", "id", "--null", "keep",
             "--connect", addr, "--ca", cert, "--init-file", init, "--position", "pitr", "--init-start", "0"],
            "SELECT position FROM liteload_ingest_state"),
        "Python: ssl + dict merge 1 s + executemany COALESCE upsert": (
            [sys.executable, os.path.join(ROOT, "bench", "connect_python.py"), db, "flights", addr, cert, init, "pitr", "0"],
            "SELECT position FROM feed_state"),
        "Python: ssl + dict merge 1 s + executemany per field set": (
            [sys.executable, os.path.join(ROOT, "bench", "connect_python.py"), db, "flights", addr, cert, init, "pitr", "0",
             "grouped"],
            "SELECT position FROM feed_state"),
    }
    if a.only:
        tools = {k: v for k, v in tools.items() if any(k.startswith(o) for o in a.only)}
    results = {}
    for r, order in rotations(list(tools), a.runs):
        for name in order:
            clean(db)
            argv, sql = tools[name]
            wall, err = run_client(argv, db, sql, str(n))
            ok, detail = check(db, "flights", model) if err is None else (False, err)
            rec = {"tool": name, "run": r, "ok": ok, "detail": detail, "wall_s": round(wall, 3),
                   "messages_per_s": round(n / wall)}
            print(json.dumps(rec), flush=True)
            results.setdefault(name, []).append(rec)
            clean(db)
    print(f"\n{n:,} messages over {a.keys:,} keys, {len(data) / 1e6:.0f} MB over loopback TLS")
    print_message_medians(results, n, width=60)

if __name__ == "__main__":
    main()
