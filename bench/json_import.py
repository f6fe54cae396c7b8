#!/usr/bin/env python3
"""JSON into a new SQLite file: liteload against DuckDB, NDJSON and one JSON array.

The file has the shape of a sparse update feed: OBJECTS objects (1.42M by default), each
with an "id" and a "type" and 5-14 further fields drawn from a pool of 37 names, so 39
columns in all, 7-16 per object; values are integers, reals, strings, nulls and now and
then a nested object (written from a fixed seed, about 323 MB as NDJSON). The same
objects are written once more as one JSON array. Each tool loads each layout into a new
SQLite file, interleaved (round r starts with tool r), median of --runs:

  liteload NDJSON / JSON array   liteload import DB FILE --table feed
  duckdb NDJSON / JSON array     ATTACH ... (TYPE sqlite); CREATE TABLE s.feed AS SELECT *
                                 FROM read_json(FILE), its sqlite extension from the pip
                                 package (it reads on every core)

Every run is checked before it counts: integrity_check ok, the row count, the number of
non-null values of every column against the generator's count, and sum(alt).

    python bench/json_import.py [--objects 1420000] [--runs 3] [--workdir DIR] [--json FILE]

Run it with a Python that has DuckDB and its sqlite extension installed (the versions
../shared/peers pins) and a release build of liteload (cargo build --release).
"""
import argparse
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys

from benchlib import LITELOAD, clean, rotations, run_rss as run

POOL = (
    [("int%02d" % i, "int") for i in range(10)]
    + [("real%02d" % i, "real") for i in range(8)]
    + [("text%02d" % i, "text") for i in range(14)]
    + [("alt", "int"), ("lat", "real"), ("lon", "real"), ("route", "nested"), ("status", "text")]
)
assert len(POOL) == 37

DUCKDB = """
import glob, os, sys, duckdb, duckdb_extension_sqlite_scanner as ext
src, fmt, db = sys.argv[1:4]
so = glob.glob(os.path.join(os.path.dirname(ext.__file__), "extensions", "*", "*.duckdb_extension"))[0]
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute(f"LOAD '{so}'")
con.execute("ATTACH '%s' AS s (TYPE sqlite)" % db.replace("'", "''"))
con.execute("CREATE TABLE s.feed AS SELECT * FROM read_json(?, format = ?)", [src, fmt])
con.close()
"""


def value(rnd, kind):
    if rnd.random() < 0.03:
        return None
    if kind == "int":
        return rnd.randint(0, 2_000_000_000)
    if kind == "real":
        return round(rnd.uniform(-180, 180), 5)
    if kind == "nested":
        return [{"lat": round(rnd.uniform(-90, 90), 3), "lon": round(rnd.uniform(-180, 180), 3)}
                for _ in range(rnd.randint(1, 2))]
    return "%s-%06d" % (kind[:3].upper(), rnd.randint(0, 999999))


def make_files(workdir, objects, seed=2026):
    """(ndjson path, array path, expected non-null counts per column, sum of alt)."""
    os.makedirs(workdir, exist_ok=True)
    ndjson = os.path.join(workdir, f"feed_{objects}.jsonl")
    array = os.path.join(workdir, f"feed_{objects}.json")
    meta = os.path.join(workdir, f"feed_{objects}.meta.json")
    if not (os.path.exists(ndjson) and os.path.exists(array) and os.path.exists(meta)):
        rnd = random.Random(seed)
        counts = {"id": 0, "type": 0}
        alt = 0
        with open(ndjson + ".part", "w") as f, open(array + ".part", "w") as g:
            g.write("[\n")
            for n in range(objects):
                obj = {"id": "FL%06d" % rnd.randrange(300_000), "type": rnd.choice(["position", "plan", "arrival"])}
                for name, kind in rnd.sample(POOL, rnd.randint(5, 14)):
                    obj[name] = value(rnd, kind)
                for k, v in obj.items():
                    if v is not None:
                        counts[k] = counts.get(k, 0) + 1
                if obj.get("alt") is not None:
                    alt += obj["alt"]
                line = json.dumps(obj, separators=(",", ":"))
                f.write(line + "\n")
                g.write(("," if n else "") + line + "\n")
            g.write("]\n")
        os.rename(ndjson + ".part", ndjson)
        os.rename(array + ".part", array)
        json.dump({"counts": counts, "alt": alt}, open(meta, "w"))
    m = json.load(open(meta))
    return ndjson, array, m["counts"], m["alt"]


def verify(db, objects, counts, alt):
    try:
        c = sqlite3.connect(db)
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        n = c.execute("SELECT count(*) FROM feed").fetchone()[0]
        cols = [r[1] for r in c.execute("PRAGMA table_info(feed)")]
        got = {k: c.execute('SELECT count("%s") FROM feed' % k).fetchone()[0] for k in cols}
        s = c.execute("SELECT sum(alt) FROM feed").fetchone()[0]
        c.close()
    except sqlite3.Error as e:
        return False, f"sqlite error: {e}"
    if ok != "ok":
        return False, f"integrity_check: {ok}"
    if n != objects:
        return False, f"{n} rows; expected {objects}"
    if got != counts:
        return False, f"non-null counts differ: {sorted(set(got.items()) ^ set(counts.items()))[:4]}"
    if s != alt:
        return False, f"sum(alt) {s}; expected {alt}"
    return True, "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=1_420_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/tmp") + "/liteload-bench")
    ap.add_argument("--only", nargs="*", help="run only these tools")
    ap.add_argument("--json", help="append one JSON line per run to this file")
    a = ap.parse_args()
    if not os.path.exists(LITELOAD):
        sys.exit("build liteload first: cargo build --release")
    ndjson, array, counts, alt = make_files(a.workdir, a.objects)
    db = os.path.join(a.workdir, "json-bench.db")
    py = sys.executable
    all_tools = {
        "liteload NDJSON": [LITELOAD, "import", "-q", db, ndjson, "--table", "feed"],
        "liteload JSON array": [LITELOAD, "import", "-q", db, array, "--table", "feed"],
        "duckdb NDJSON": [py, "-c", DUCKDB, ndjson, "newline_delimited", db],
        "duckdb JSON array": [py, "-c", DUCKDB, array, "array", db],
    }
    names = [n for n in all_tools if not a.only or n in a.only]
    info = json.loads(subprocess.run([LITELOAD, "info", "--json"], capture_output=True, text=True).stdout)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    try:
        import duckdb
        peer = f"duckdb {duckdb.__version__}"
    except ImportError:
        peer = "no duckdb"
    print(f"liteload {info['liteload']} (SQLite {info['sqlite']}); {peer}")
    print(f"{ndjson}: {os.path.getsize(ndjson) / 1e6:.1f} MB; {array}: {os.path.getsize(array) / 1e6:.1f} MB; "
          f"{a.objects:,} objects, {len(counts)} columns")
    out = open(a.json, "a") if a.json else None
    results = {n: [] for n in names}
    for r, order in rotations(names, a.runs):
        for name in order:
            clean(db)
            code, err, wall, cpu, rss = run(all_tools[name])
            ok, detail = (verify(db, a.objects, counts, alt) if code == 0
                          else (False, f"exit {code}: {err.strip()[-300:]}"))
            rec = {"objects": a.objects, "tool": name, "run": r, "ok": ok, "detail": detail,
                   "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "peak_rss_mb": round(rss, 1)}
            print(json.dumps(rec), flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
            if ok:
                results[name].append((wall, cpu, rss))
            clean(db)
    print()
    print(f"{'tool':<20} {'runs':>4} {'wall s (median)':>16} {'min-max':>13} {'CPU s':>7} {'peak RSS MB':>12} "
          f"{'objects/s':>12} {'vs duckdb, same layout':>23}")
    for name in names:
        runs = results[name]
        if not runs:
            print(f"{name:<20} FAILED")
            continue
        walls = [w for w, *_ in runs]
        med = statistics.median(walls)
        layout = name.split(" ", 1)[1]
        peer_runs = results.get("duckdb " + layout)
        ratio = ""
        if name.startswith("liteload") and peer_runs:
            ratio = f"{statistics.median(w for w, *_ in peer_runs) / med:.2f}x faster"
        print(f"{name:<20} {len(runs):>4} {med:>16.3f} {min(walls):>6.2f}-{max(walls):<6.2f} "
              f"{statistics.median(c for _, c, _ in runs):>7.2f} {max(x for *_, x in runs):>12.0f} "
              f"{a.objects / med:>12,.0f} {ratio:>23}")


if __name__ == "__main__":
    main()
