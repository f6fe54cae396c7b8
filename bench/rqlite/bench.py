#!/usr/bin/env python3
"""rows of the `user` table into a 3-node rqlite cluster on 127.0.0.1, side by side in
one run, interleaved, medians:

existing cluster (it already holds a table, so /boot is not an option):
  liteload           `liteload import rqlite://… user.csv` (one json_each document per
                     request, its progress row in the same transaction)
  batching-literal   the best hand-written batching: 1,000-row INSERT … VALUES
                     statements with the values written into the SQL, 10 per
                     `?transaction` request (Python, requests built in the timed loop)
  batching-params    the same with bound parameters (safe against injection)
  liteload-sqlite    `liteload import rqlite://… user.db`: the same rows in a SQLite
                     file (made untimed by `sqlite3 .import`), merged into a temporary
                     file, then sent as the CSV's rows are
  db-load            `sqlite3 .import` into a file, then POST /db/load of it (replaces
                     the whole database: shown for scale, not a way into a cluster that
                     holds data)
new cluster (one node, empty; then two nodes join):
  liteload-boot      `liteload import rqlite://…`: built here, POST /boot, then 2 nodes
                     join; timed until every follower's own copy (level=none) has every
                     row

Every run starts a fresh cluster, and every run is checked: count(*), sum(id) and
sum(age) on every node's own copy equal the CSV's.

    python3 bench/rqlite/bench.py [--rows 2000000] [--runs 3] [--profile DIR]

--profile: one more run each of liteload and batching-literal with rqlited -cpu-profile
on every node; the leader's profile is written under DIR and summarized with
`go tool pprof -top`.
"""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LITELOAD = os.path.join(ROOT, "target", "release", "liteload")
RQLITED = os.path.join(ROOT, "target", "rqlited-v8.43.4", "rqlited")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def http(method, url, body=None, ctype="application/json", timeout=600):
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


class Cluster:
    def __init__(self, n, tmp, profile=None):
        self.tmp = tempfile.mkdtemp(dir=tmp)
        self.nodes = []
        self.profile = profile
        for _ in range(n):
            self.add()
            if len(self.nodes) == 1:
                self.wait_leader()
        self.wait_members(n)

    def add(self):
        i = len(self.nodes)
        http_port, raft_port = free_port(), free_port()
        argv = [RQLITED, "-node-id", f"n{i}", "-http-addr", f"127.0.0.1:{http_port}",
                "-raft-addr", f"127.0.0.1:{raft_port}"]
        if self.profile:
            argv += ["-cpu-profile", os.path.join(self.profile, f"n{i}.prof")]
        if i > 0:
            argv += ["-join", f"127.0.0.1:{self.nodes[0]['raft']}"]
        argv.append(os.path.join(self.tmp, f"n{i}"))
        log = open(os.path.join(self.tmp, f"n{i}.log"), "w")
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
        self.nodes.append({"http": http_port, "raft": raft_port, "proc": p})

    def url(self, i=0):
        return f"http://127.0.0.1:{self.nodes[i]['http']}"

    def leader(self):
        for i in range(len(self.nodes)):
            try:
                for n in http("GET", self.url(i) + "/nodes").values():
                    if n.get("leader"):
                        return n["id"]
            except Exception:
                pass
        return None

    def wait_leader(self):
        t0 = time.time()
        while self.leader() is None:
            if time.time() - t0 > 60:
                sys.exit("no leader in 60 s")
            time.sleep(0.1)

    def wait_members(self, n):
        t0 = time.time()
        while True:
            try:
                nodes = http("GET", self.url(0) + "/nodes")
                if sum(1 for v in nodes.values() if v.get("reachable")) >= n:
                    return
            except Exception:
                pass
            if time.time() - t0 > 60:
                sys.exit(f"{n} nodes did not join in 60 s")
            time.sleep(0.1)

    def execute(self, stmts, i=0):
        r = http("POST", self.url(i) + "/db/execute?transaction", json.dumps(stmts).encode())
        for x in r["results"]:
            if "error" in x:
                raise RuntimeError(x["error"])

    def local(self, i, sql):
        r = http("POST", self.url(i) + "/db/query?level=none", json.dumps([[sql]]).encode())
        res = r["results"][0]
        if "error" in res:
            return None
        return res.get("values")

    def wait_complete(self, want, timeout=600):
        """Until every node's own copy of the table sums to `want`."""
        t0 = time.time()
        sql = "SELECT count(*), sum(id), sum(age) FROM user"
        for i in range(len(self.nodes)):
            while True:
                try:
                    got = self.local(i, sql)
                except Exception:
                    got = None
                if got and got[0] == want:
                    break
                if time.time() - t0 > timeout:
                    raise RuntimeError(f"node {i}: {got} != {want}")
                time.sleep(0.02)

    def stop(self):
        for n in self.nodes:
            n["proc"].terminate()
        for n in self.nodes:
            n["proc"].wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


CREATE = "CREATE TABLE user(id INTEGER PRIMARY KEY, area TEXT, age INTEGER, active INTEGER)"


def make_csv(path, rows):
    rnd = random.Random(42)
    total_id = total_age = 0
    with open(path, "w") as f:
        f.write("id,area,age,active\n")
        for i in range(1, rows + 1):
            age = rnd.choice((5, 10, 15))
            f.write(f"{i},{rnd.randrange(1000000):06d},{age},{rnd.randrange(2)}\n")
            total_id += i
            total_age += age
    return [rows, total_id, total_age]


def read_rows(path):
    with open(path) as f:
        next(f)
        return [line.rstrip("\n").split(",") for line in f]


def batching(c, rows, params):
    """1,000-row INSERTs, 10 per ?transaction request, requests built as they go."""
    c.execute([[CREATE]])
    url = c.url(0) + "/db/execute?transaction"
    per_stmt, per_req = 1000, 10
    for s in range(0, len(rows), per_stmt * per_req):
        stmts = []
        for k in range(s, min(len(rows), s + per_stmt * per_req), per_stmt):
            chunk = rows[k:k + per_stmt]
            if params:
                sql = "INSERT INTO user(id, area, age, active) VALUES " + ",".join(["(?,?,?,?)"] * len(chunk))
                stmt = [sql]
                for r in chunk:
                    stmt += [int(r[0]), r[1], int(r[2]), int(r[3])]
            else:
                vals = ",".join(f"({int(r[0])},'{r[1]}',{int(r[2])},{int(r[3])})" for r in chunk)
                stmt = ["INSERT INTO user(id, area, age, active) VALUES " + vals]
            stmts.append(stmt)
        r = http("POST", url, json.dumps(stmts).encode())
        for x in r["results"]:
            if "error" in x:
                raise RuntimeError(x["error"])


def sqlite_copy(csv, tmp):
    """The CSV's rows in a SQLite file, table user (made once, untimed)."""
    db = os.path.join(tmp, "user.db")
    if not os.path.exists(db):
        subprocess.run(["sqlite3", db, CREATE, ".mode csv", f".import --skip 1 {csv} user"], check=True)
    return db


def run_tool(name, csv, rows, want, tmp, profile=None):
    """Seconds from the start of the load until every node has every row."""
    if name == "liteload-boot":
        c = Cluster(1, tmp)
    else:
        c = Cluster(3, tmp, profile)
        if name != "db-load":
            # The cluster holds data already: /boot is not an option.
            c.execute([["CREATE TABLE other(x)"], ["INSERT INTO other VALUES (1)"]])
    try:
        t0 = time.perf_counter()
        if name.startswith("liteload"):
            flag = ["--rqlite-boot"] if name == "liteload-boot" else ["--rqlite-no-boot"]
            # liteload+in-flight=2+request-bytes=8388608: with --rqlite-in-flight 2
            # --rqlite-request-bytes 8388608.
            for opt in name.split("+")[1:]:
                k, v = opt.split("=")
                flag += ["--rqlite-" + k, v]
            if name.startswith("liteload-sqlite"):
                # The table's name comes from the file: no --table.
                source = [sqlite_copy(csv, tmp)]
            else:
                source = [csv, "--table", "user"]
            p = subprocess.run([LITELOAD, "import", "rqlite://" + c.url(0)[7:]] + source + ["--quiet"] + flag,
                               stderr=subprocess.PIPE)
            if p.returncode != 0:
                raise RuntimeError(p.stderr.decode())
            if name == "liteload-boot":
                for _ in range(2):
                    c.add()
        elif name.startswith("batching"):
            batching(c, rows, params=name.endswith("params"))
        elif name == "db-load":
            db = os.path.join(tmp, "load.db")
            if os.path.exists(db):
                os.remove(db)
            subprocess.run(["sqlite3", db, CREATE, ".mode csv", f".import --skip 1 {csv} user"], check=True)
            with open(db, "rb") as f:
                body = f.read()
            http("POST", c.url(0) + "/db/load", body, ctype="application/octet-stream")
        c.wait_complete(want)
        return time.perf_counter() - t0
    finally:
        c.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tools", default="liteload,batching-literal,batching-params,db-load,liteload-boot")
    ap.add_argument("--profile", metavar="DIR")
    a = ap.parse_args()
    subprocess.run(["sh", os.path.join(HERE, "build-rqlited.sh"), RQLITED], check=True)
    if not os.path.exists(LITELOAD):
        sys.exit("build liteload first: cargo build --release")
    tools = a.tools.split(",")
    tmp = tempfile.mkdtemp(prefix="rqlite-bench-")
    try:
        csv = os.path.join(tmp, "user.csv")
        want = make_csv(csv, a.rows)
        rows = read_rows(csv)
        if any(t.startswith("liteload-sqlite") for t in tools):
            sqlite_copy(csv, tmp)
        print(f"{a.rows:,} rows of user(id, area, age, active), CSV {os.path.getsize(csv) / 1e6:.1f} MB; "
              f"3-node rqlite v8.43.4 on 127.0.0.1; {os.cpu_count()} cores", flush=True)
        times = {t: [] for t in tools}
        for r in range(a.runs):
            order = tools[r % len(tools):] + tools[:r % len(tools)]
            for t in order:
                s = run_tool(t, csv, rows, want, tmp)
                times[t].append(s)
                print(f"  run {r + 1}: {t:<18} {s:7.2f} s  {a.rows / s:>10,.0f} rows/s", flush=True)
        base = statistics.median(times["liteload"]) if "liteload" in times else None
        print(f"\n{'tool':<18} {'median s':>9} {'min-max':>13} {'rows/s':>11}  {'liteload faster by':>18}")
        for t in tools:
            m = statistics.median(times[t])
            ratio = f"{m / base:.2f}x" if base and t != "liteload" else ""
            print(f"{t:<18} {m:9.2f} {min(times[t]):6.2f}-{max(times[t]):<6.2f} {a.rows / m:11,.0f}  {ratio:>18}")
        if a.profile:
            # One more run of liteload and of the best batching, rqlited profiling its
            # CPU: where the leader's time goes.
            for t in ("liteload", "batching-literal"):
                d = os.path.join(os.path.abspath(a.profile), t)
                os.makedirs(d, exist_ok=True)
                s = run_tool(t, csv, rows, want, tmp, profile=d)
                print(f"\nprofiled {t} run: {s:.2f} s; the leader's (n0) profile, top functions:")
                top = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=25", RQLITED,
                                      os.path.join(d, "n0.prof")],
                                     capture_output=True, text=True)
                print(top.stdout or top.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
