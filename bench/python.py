#!/usr/bin/env python3
"""DataFrames into a new SQLite file from Python: liteload.write against the ways a
Python user does it today (issue "pip install liteload").

Two workloads, each tool in a process of its own that first builds its data (not timed)
and then times only the write, interleaved (round r starts with tool r), median of
--runs:

  transit  write-up 000's transit schedule (7 columns: 6 integers and a short text), 10M
           rows by default, read from Parquet into pyarrow / pandas / polars first
  mixed    1M rows of mixed types from a fixed seed: int64, float64 with NaN, nullable
           Int64, a string column with nulls and non-ASCII, bool, a timezone-aware
           timestamp, a categorical

Tools:
  liteload (pyarrow|pandas|polars)  liteload.write(db, table, frame)
  pandas to_sql                     DataFrame.to_sql(table, sqlite3 connection, index=False)
  pandas to_sql multi               the same with method="multi", chunksize=4000 (under
                                    SQLite's 32,766 bound parameters per statement)
  polars + adbc                     DataFrame.write_database(table, uri, engine="adbc")
  adbc_ingest                       adbc_driver_sqlite cursor.adbc_ingest(table, pyarrow table)
  duckdb                            DuckDB: ATTACH the file (TYPE sqlite), CREATE TABLE AS
                                    SELECT * FROM the Arrow table
  sqlite-utils                      Database(db)[table].insert_all(df.to_dict("records"))
                                    (mixed only: ~30k rows/s; the dict conversion is timed,
                                    as a user with a DataFrame pays it)
  liteload (dicts)                  liteload.write(db, table, df.to_dict("records")): the
                                    same dicts (mixed only)

Every run is checked before it counts (integrity_check ok, the row count, and for
transit the sum of Stop stored as INTEGER). Peak RSS is each process's own (GNU time),
data included.

    python bench/python.py [--rows 10000000] [--mixed-rows 1000000] [--runs 3] [--json FILE]

Run it with a Python that has the peers (pip install -r ../shared/peers/requirements.txt)
and the package (pip install ./python).
"""
import argparse
import importlib.metadata
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import time

from benchlib import ROOT, clean, rotations, transit_parquet

PEERS = os.path.join(ROOT, "..", "shared", "peers")

# Each snippet: argv = [kind, source, db]; builds its frame, times the write, prints
# {"write_s": ...} on its last line.
LOAD = '''
import json, sys, time
kind, src, db = sys.argv[1:4]
def frame(lib):
    if kind == "transit":
        import pyarrow.parquet as pq
        t = pq.read_table(src)
    else:
        sys.path.insert(0, {bench!r})
        from python import mixed_table
        t = mixed_table(int(src))
    if lib == "pyarrow":
        return t
    if lib == "pandas":
        return t.to_pandas()
    import polars as pl
    return pl.from_arrow(t)
'''

TOOLS = {
    "liteload (pyarrow)": ("pyarrow", "import liteload; liteload.write(db, 't', data)"),
    "liteload (pandas)": ("pandas", "import liteload; liteload.write(db, 't', data)"),
    "liteload (polars)": ("polars", "import liteload; liteload.write(db, 't', data)"),
    "pandas to_sql": ("pandas", "import sqlite3; c = sqlite3.connect(db); data.to_sql('t', c, index=False); c.close()"),
    "pandas to_sql multi": ("pandas", "import sqlite3; c = sqlite3.connect(db); data.to_sql('t', c, index=False, method='multi', chunksize=4000); c.close()"),
    "polars + adbc": ("polars", "data.write_database('t', 'sqlite:///' + db, engine='adbc')"),
    "adbc_ingest": ("pyarrow", "import adbc_driver_sqlite.dbapi as a\nc = a.connect(db)\ncur = c.cursor(); cur.adbc_ingest('t', data); c.commit(); c.close()"),
    "duckdb": ("pyarrow", "sys.path.insert(0, {peers!r}); from duckdb_sqlite import connect\ncon = connect(); con.register('src', data)\ncon.execute(\"ATTACH '\" + db.replace(\"'\", \"''\") + \"' AS s (TYPE sqlite)\"); con.execute('CREATE TABLE s.t AS SELECT * FROM src'); con.close()"),
    "sqlite-utils": ("pandas", "import sqlite_utils; sqlite_utils.Database(db)['t'].insert_all(data.to_dict('records'))"),
    "liteload (dicts)": ("pandas", "import liteload; liteload.write(db, 't', data.to_dict('records'))"),
}


def mixed_table(rows, seed=20261124):
    """The mixed-type table: the same rows for every tool."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    words = np.array(["Ada", "zoë", "Åse", "😀 emoji", "o'quote", "", "North-East", "日本"], dtype=object)
    f = rng.normal(size=rows)
    f[rng.random(rows) < 0.05] = np.nan
    nullable = pa.array(rng.integers(-(2**40), 2**40, rows), mask=rng.random(rows) < 0.1)
    text = pa.array(words[rng.integers(0, len(words), rows)], pa.string(), mask=rng.random(rows) < 0.1)
    ts = pa.array(1_700_000_000_000_000 + rng.integers(0, 10**14, rows), pa.timestamp("us", tz="Europe/Oslo"))
    cat = pa.array(np.array(["red", "green", "blue"])[rng.integers(0, 3, rows)]).dictionary_encode()
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "x": pa.array(f),
        "n": nullable,
        "name": text,
        "ok": pa.array(rng.random(rows) < 0.5),
        "at": ts,
        "color": cat,
    })


def program(tool):
    lib, code = TOOLS[tool]
    body = LOAD.format(bench=os.path.join(ROOT, "bench"))
    return body + (
        f"data = frame({lib!r})\n"
        "t0 = time.perf_counter()\n"
        + code.format(peers=PEERS) + "\n"
        "print(json.dumps({'write_s': time.perf_counter() - t0}))\n"
    )


def run(argv):
    rss_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), "liteload-bench-rss.txt")
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file] + argv, capture_output=True, text=True)
    rss_mb = int(open(rss_file).read().split()[-1]) / 1024
    write_s = None
    if p.returncode == 0:
        write_s = json.loads(p.stdout.strip().splitlines()[-1])["write_s"]
    return p.returncode, p.stderr, write_s, rss_mb


def verify(db, rows, stop_sum):
    try:
        c = sqlite3.connect(db)
        ok = c.execute("PRAGMA integrity_check").fetchone()[0]
        n = c.execute("SELECT count(*) FROM t").fetchone()[0]
        if stop_sum is not None:
            s, kind = c.execute("SELECT sum(Stop), (SELECT typeof(Stop) FROM t LIMIT 1) FROM t").fetchone()
        c.close()
    except sqlite3.Error as e:
        return False, f"sqlite error: {e}"
    if ok != "ok":
        return False, f"integrity_check: {ok}"
    if n != rows:
        return False, f"{n} rows; expected {rows}"
    if stop_sum is not None and (s, kind) != (stop_sum, "integer"):
        return False, f"sum(Stop) {s} as {kind}; expected {stop_sum} as integer"
    return True, "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--mixed-rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/tmp") + "/liteload-bench")
    ap.add_argument("--only", nargs="*", help="run only these tools")
    ap.add_argument("--workloads", nargs="*", default=["transit", "mixed"])
    ap.add_argument("--json", help="append one JSON line per run to this file")
    a = ap.parse_args()
    import pyarrow
    import liteload, pandas, polars, duckdb, sqlite_utils  # noqa: F401  (the peers must be there)
    tsv, parquet, stop_sum = transit_parquet(a.workdir, a.rows)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    print(f"liteload {liteload.__version__}; pandas {pandas.__version__}, polars {polars.__version__}, "
          f"pyarrow {pyarrow.__version__}, duckdb {duckdb.__version__}, sqlite-utils {importlib.metadata.version('sqlite-utils')}; "
          f"Python's sqlite3 {sqlite3.sqlite_version}")
    db = os.path.join(a.workdir, "python-bench.db")
    out = open(a.json, "a") if a.json else None
    for workload in a.workloads:
        rows = a.rows if workload == "transit" else a.mixed_rows
        source = parquet if workload == "transit" else str(rows)
        names = [n for n in TOOLS if (not a.only or n in a.only)
                 and not (n in ("sqlite-utils", "liteload (dicts)") and workload == "transit")]
        results = {n: [] for n in names}
        for r, order in rotations(names, a.runs):
            for name in order:
                clean(db)
                code, err, write_s, rss = run([sys.executable, "-c", program(name), workload, source, db])
                ok, detail = (verify(db, rows, stop_sum if workload == "transit" else None) if code == 0
                              else (False, f"exit {code}: {err.strip()[-300:]}"))
                rec = {"workload": workload, "rows": rows, "tool": name, "run": r, "ok": ok, "detail": detail,
                       "write_s": round(write_s, 3) if write_s else None, "peak_rss_mb": round(rss, 1)}
                print(json.dumps(rec), flush=True)
                if out:
                    out.write(json.dumps(rec) + "\n")
                if ok:
                    results[name].append((write_s, rss))
                clean(db)
        print()
        base_runs = results.get("liteload (pyarrow)") or []
        base = statistics.median(w for w, _ in base_runs) if base_runs else None
        print(f"{workload}: {rows:,} rows, new file; write seconds (median of {a.runs}); ratio = tool / liteload (pyarrow)")
        print(f"{'tool':<22} {'runs':>4} {'write s':>9} {'min-max':>13} {'rows/s':>12} {'ratio':>8} {'peak RSS MB':>12}")
        for name in names:
            runs = results[name]
            if not runs:
                print(f"{name:<22} FAILED")
                continue
            walls = [w for w, _ in runs]
            med = statistics.median(walls)
            ratio = f"{med / base:.2f}x" if base else ""
            print(f"{name:<22} {len(runs):>4} {med:>9.3f} {min(walls):>6.2f}-{max(walls):<6.2f} "
                  f"{rows / med:>12,.0f} {ratio:>8} {max(x for _, x in runs):>12.0f}")
        print()


if __name__ == "__main__":
    main()
