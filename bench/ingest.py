#!/usr/bin/env python3
"""Side-by-side ingest benchmark on a flight-feed-like stream (bench/gen_feed.py):
liteload ingest (1 s windows, balanced) vs write-up 002's best approach in Python
(bench/upsert_python.py) vs sqlite-utils upsert --nl --pk id. Each final table is
compared with a reference merge computed here (present fields overwrite, absent ones
stay, null sets NULL); a tool whose table differs is reported as not matching, and its
time is still shown, marked.

    python3 bench/ingest.py [--messages 1000000] [--keys 300000] [--runs 3] [--sqlite-utils-runs 1] [--workdir DIR]
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys

from benchlib import LITELOAD, ROOT, clean, print_message_medians, rotations, run_once


def model_of(path):
    model = {}
    with open(path) as f:
        for line in f:
            m = json.loads(line)
            row = model.setdefault(m.pop("id"), {})
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=300_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sqlite-utils-runs", type=int, default=1,
                    help="rounds that also run sqlite-utils (about 2 minutes a run)")
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/tmp") + "/liteload-bench")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    feed = os.path.join(a.workdir, f"feed_{a.messages}_{a.keys}.jsonl")
    if not os.path.exists(feed):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_feed.py"), str(a.messages), str(a.keys), feed], check=True)
    model = model_of(feed)
    db = os.path.join(a.workdir, "ingest.db")
    tools = {
        "liteload ingest (1 s windows)": [LITELOAD, "ingest", "-q", db, feed, "--table", "flights", "--key", "id"],
        "Python: coalesce 1 s + executemany upsert": ["sh", "-c", f'"{sys.executable}" "{ROOT}/bench/upsert_python.py" "{db}" flights < "{feed}"'],
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
            ok, detail = check(db, "flights", model) if code == 0 else (False, f"exit {code}: {err.strip()[:200]}")
            rec = {"tool": name, "run": r, "ok": ok, "detail": detail, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                   "messages_per_s": round(a.messages / wall)}
            print(json.dumps(rec), flush=True)
            results.setdefault(name, []).append(rec)
            clean(db)
    print(f"\n{a.messages:,} messages over {a.keys:,} keys")
    print_message_medians(results, a.messages)

if __name__ == "__main__":
    main()
