#!/usr/bin/env python3
"""Side-by-side ingest benchmark on a flight-feed-like stream (bench/gen_feed.py):
liteload ingest (1 s windows, balanced) vs write-up 002's best approach in Python
(bench/upsert_python.py) vs the strongest plain-Python way we know (the same script
with --coalesce: a dict merge per 1 s window, then one executemany of INSERT … ON
CONFLICT DO UPDATE SET c = COALESCE(excluded.c, t.c) over every column in one BEGIN
IMMEDIATE transaction) vs sqlite-utils upsert --nl --pk id. Each final table is
compared with a reference merge computed here (present fields overwrite, absent ones
stay, null sets NULL; for the COALESCE program and `liteload ingest --null keep`, an
explicit null keeps the value); a tool whose table differs is reported as not matching,
and its time is still shown, marked.

    python3 bench/ingest.py [--messages 1000000] [--keys 300000] [--runs 3] [--sqlite-utils-runs 1] [--workdir DIR]
                            [--kills 10] [--send-rate 50000] [--shape mixed|flight]

--shape flight measures the other stream shape (bench/gen_feed.py --shape flight): every
value a JSON string, keys of about 30 characters, about 12 fields a message, each key's
four messages spread over hours (a quarter of the messages bring a new key; --keys is
ignored). The default, mixed, is short keys drawn at random, 2-8 fields, mixed values.

With --kills N, also measures liteload ingest's loss window: the feed (each line given a
`seq`) is piped in at --send-rate messages/s and the process is killed (kill -9) at a
random moment N times; after each kill the table must be exactly the merge of the first
last-seq+1 messages, and the messages sent but not in it are the loss, reported against
the promise (the open window and the one being written, plus what the pipe holds).
"""
import argparse
import json
import os
import random
import shutil
import signal
import statistics
import time
import sqlite3
import subprocess
import sys

from benchlib import LITELOAD, ROOT, clean, print_message_medians, rotations, run_once


def model_of(path, null_keeps=False):
    """The reference merge: present fields overwrite, absent ones stay; an explicit null
    sets NULL, or, with null_keeps, never overwrites a value."""
    model = {}
    with open(path) as f:
        for line in f:
            m = json.loads(line)
            row = model.setdefault(m.pop("id"), {})
            if null_keeps:
                for k, v in m.items():
                    if v is not None or k not in row:
                        row[k] = v
            else:
                row.update(m)
    return model


def same(want, got):
    if want is None or got is None:
        return want is None and got is None
    if isinstance(want, (dict, list)):
        try:
            return json.loads(got) == want
        except (TypeError, ValueError):
            return False
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        try:
            return float(got) == float(want)
        except (TypeError, ValueError):
            return False
    return str(want) == str(got)


def check(db, table, model):
    c = sqlite3.connect(db)
    cur = c.execute(f'SELECT * FROM "{table}"')
    names = [d[0] for d in cur.description]
    n, bad = 0, 0
    for row in cur:
        n += 1
        r = dict(zip(names, row))
        want = model.get(r["id"])
        if want is None or any(not same(want.get(k), r.get(k)) for k in set(want) | (set(r) - {"id"})):
            bad += 1
    ok = c.execute("PRAGMA integrity_check").fetchone()[0]
    c.close()
    if ok != "ok":
        return False, f"integrity_check: {ok}"
    if n != len(model) or bad:
        return False, f"{n} rows ({len(model)} expected), {bad} differ from the reference merge"
    return True, "matches the reference merge"


def loss_window(feed, workdir, kills, rate, seed=2026):
    """Kills liteload ingest at random moments while the feed is piped in at `rate`."""
    rnd = random.Random(seed)
    with open(feed) as f:
        lines = [f'{{"seq":{i},{l[1:]}' for i, l in enumerate(f)]
    avg = sum(map(len, lines)) / max(1, len(lines))
    promise = int(2 * rate + 65536 / avg)
    db = os.path.join(workdir, "loss.db")
    lost = []
    for k in range(kills):
        clean(db)
        at = 1.2 + 2.3 * rnd.random()
        p = subprocess.Popen([LITELOAD, "ingest", "-q", db, "-", "--table", "flights", "--key", "id"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        start, sent = time.monotonic(), 0
        while time.monotonic() - start < at and sent < len(lines):
            due = min(len(lines), int((time.monotonic() - start) * rate))
            if due > sent:
                p.stdin.write("".join(lines[sent:due]).encode())
                p.stdin.flush()
                sent = due
            time.sleep(0.005)
        p.send_signal(signal.SIGKILL)
        p.wait()
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
        if sent == len(lines):
            sys.exit("loss window: the feed ran out before the kill; use more --messages")
        applied = 0
        if os.path.exists(db):
            c = sqlite3.connect(db)
            ok = c.execute("PRAGMA integrity_check").fetchone()[0]
            has = c.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'flights'").fetchone()[0]
            last = c.execute("SELECT max(seq) FROM flights").fetchone()[0] if has else None
            c.close()
            if ok != "ok":
                sys.exit(f"loss window: kill {k + 1}: integrity_check: {ok}")
            applied = 0 if last is None else int(last) + 1
        if applied:
            model = {}
            for l in lines[:applied]:
                m = json.loads(l)
                model.setdefault(m.pop("id"), {}).update(m)
            good, detail = check(db, "flights", model)
            if not good:
                sys.exit(f"loss window: kill {k + 1}: the table is not the first {applied} messages merged: {detail}")
        rec = {"tool": "liteload ingest", "kill": k + 1, "after_s": round(at, 2), "sent": sent,
               "applied": applied, "lost": sent - applied, "promise": promise}
        print(json.dumps(rec), flush=True)
        lost.append(sent - applied)
    clean(db)
    print(f"\nloss window (kill -9 at {kills} random moments, {rate:,} messages/s piped in, 1 s windows): "
          f"median {statistics.median(lost):,.0f} messages lost, max {max(lost):,}; promise at most {promise:,}; "
          f"every table was the exact merge of a prefix of the stream")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=300_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sqlite-utils-runs", type=int, default=1,
                    help="rounds that also run sqlite-utils (about 2 minutes a run)")
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/tmp") + "/liteload-bench")
    ap.add_argument("--kills", type=int, default=0, help="measure the loss window with this many kill -9s")
    ap.add_argument("--send-rate", type=int, default=50_000, help="messages/s piped in while measuring the loss window")
    ap.add_argument("--shape", choices=["mixed", "flight"], default="mixed", help="the stream's shape (see above)")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    if a.shape == "flight":
        a.keys = max(1, a.messages // 4)
        feed = os.path.join(a.workdir, f"feed_flight_{a.messages}.jsonl")
    else:
        feed = os.path.join(a.workdir, f"feed_{a.messages}_{a.keys}.jsonl")
    if not os.path.exists(feed):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_feed.py"), str(a.messages), str(a.keys), feed,
                        "--shape", a.shape], check=True)
    models = {False: model_of(feed), True: model_of(feed, null_keeps=True)}
    db = os.path.join(a.workdir, "ingest.db")
    tools = {
        "liteload ingest (1 s windows)": [LITELOAD, "ingest", "-q", db, feed, "--table", "flights", "--key", "id"],
        "liteload ingest --null keep (1 s windows)": [LITELOAD, "ingest", "-q", db, feed, "--table", "flights", "--key", "id",
                                                      "--null", "keep"],
        "Python: coalesce 1 s + executemany upsert": ["sh", "-c", f'"{sys.executable}" "{ROOT}/bench/upsert_python.py" "{db}" flights < "{feed}"'],
        "Python: dict merge 1 s + one executemany, COALESCE": ["sh", "-c", f'"{sys.executable}" "{ROOT}/bench/upsert_python.py" --coalesce "{db}" flights < "{feed}"'],
    }
    if shutil.which("sqlite-utils"):
        tools["sqlite-utils upsert --nl --pk id"] = ["sqlite-utils", "upsert", db, "flights", feed, "--nl", "--pk", "id", "--alter"]
    results = {}
    for r, order in rotations(list(tools), a.runs):
        for name in order:
            if name.startswith("sqlite-utils") and r >= a.sqlite_utils_runs:
                continue
            clean(db)
            code, err, wall, cpu = run_once(tools[name])
            keeps = "COALESCE" in name or "--null keep" in name
            ok, detail = check(db, "flights", models[keeps]) if code == 0 else (False, f"exit {code}: {err.strip()[:200]}")
            rec = {"tool": name, "run": r, "ok": ok, "detail": detail, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                   "messages_per_s": round(a.messages / wall)}
            print(json.dumps(rec), flush=True)
            results.setdefault(name, []).append(rec)
            clean(db)
    if results:
        print(f"\n{a.messages:,} messages over {a.keys:,} keys ({a.shape} shape)")
        print_message_medians(results, a.messages)
    if a.kills:
        loss_window(feed, a.workdir, a.kills, a.send_rate)

if __name__ == "__main__":
    main()
