"""A/B of two liteload builds on three jobs (10M-row TSV import, 1M-message NDJSON import,
1M-message ingest into 300k keys), interleaved rounds (even rounds run the old build
first, odd ones the new), medians; every database is checked (integrity_check, row count).
With `more` as a fourth argument, also: generate 10M rows (write-up 004's table), the
10M-row TSV with an index on Stop, the same TSV appended to a file that holds another
table (the side-file path), a 5M-row Parquet file (bench/parquet.py writes one; its
path in AB_PARQUET), and the TSV's first 4M rows cut into 40 files (written under
/tmp/bench/parts on first use), loaded into one table and into a table each. With
`json` instead, the NDJSON feed and the same objects as one JSON array (written to
/tmp/bench/feed1m.json on first use) alone. With `xml`, bench/xml.py's posts (1M
`<row …/>` records, written to /tmp/bench/posts1m.xml on first use) beside the TSV
import alone.

    python3 bench/gen_transit.py 10000000 /tmp/bench/t10m.tsv
    python3 bench/gen_feed.py 1000000 300000 /tmp/bench/feed1m.jsonl
    python3 bench/ab.py OLD_BINARY NEW_BINARY ROUNDS [more|json|xml]
"""
import os, sqlite3, statistics, subprocess, sys, time
old, new, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
W = "/tmp/bench"
jobs = {
    "import 10M TSV (direct)": (["import", "{db}", f"{W}/t10m.tsv", "--table", "t", "-q"], "SELECT count(*) FROM t", 10_000_000),
    "import 1M NDJSON feed": (["import", "{db}", f"{W}/feed1m.jsonl", "--table", "t", "-q"], "SELECT count(*) FROM t", 1_000_000),
    "ingest 1M feed, 300k keys": (["ingest", "{db}", f"{W}/feed1m.jsonl", "--table", "t", "--key", "id", "-q"], "SELECT count(*) FROM t", None),
}
setup = {}
if len(sys.argv) > 4 and sys.argv[4] == "xml":
    posts = f"{W}/posts1m.xml"
    if not os.path.exists(posts):
        import importlib.util
        spec = importlib.util.spec_from_file_location("xmlbench", os.path.join(os.path.dirname(os.path.abspath(__file__)), "xml.py"))
        xmlbench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(xmlbench)
        xmlbench.write_data(1_000_000, posts, f"{W}/posts1m.csv")
    jobs = {
        "import 10M TSV (direct)": jobs["import 10M TSV (direct)"],
        "import 1M posts XML": (["import", "{db}", posts, "--table", "posts", "-q"], "SELECT count(*) FROM posts", 1_000_000),
    }
if len(sys.argv) > 4 and sys.argv[4] == "json":
    array = f"{W}/feed1m.json"
    if not os.path.exists(array):
        with open(f"{W}/feed1m.jsonl") as f, open(array, "w") as out:
            out.write("[\n" + ",\n".join(line.rstrip("\n") for line in f if line.strip()) + "\n]\n")
    jobs = {
        "import 1M NDJSON feed": jobs["import 1M NDJSON feed"],
        "import 1M objects as one JSON array": (["import", "{db}", array, "--table", "t", "-q"], "SELECT count(*) FROM t", 1_000_000),
    }
if len(sys.argv) > 4 and sys.argv[4] == "more":
    def other_table(db):
        c = sqlite3.connect(db)
        c.execute("CREATE TABLE other(x)")
        c.execute("INSERT INTO other VALUES ('kept')")
        c.commit()
        c.close()
    jobs["generate 10M (write-up 004's table)"] = (["generate", "{db}", "--rows", "10000000", "-q"], "SELECT count(*) FROM user", 10_000_000)
    jobs["import 10M TSV, index on Stop"] = (["import", "{db}", f"{W}/t10m.tsv", "--table", "t", "--index", "Stop", "-q"], "SELECT count(*) FROM t", 10_000_000)
    jobs["append 10M TSV to a file with a table"] = (["import", "{db}", f"{W}/t10m.tsv", "--table", "t", "-q"], "SELECT count(*) FROM t", 10_000_000)
    setup["append 10M TSV to a file with a table"] = other_table
    parts = f"{W}/parts"
    if not os.path.isdir(parts):
        os.makedirs(parts)
        with open(f"{W}/t10m.tsv") as f:
            header = f.readline()
            for k in range(40):
                with open(f"{parts}/p{k:02}.tsv", "w") as out:
                    out.write(header)
                    for _ in range(100_000):
                        out.write(f.readline())
    files = sorted(f"{parts}/{n}" for n in os.listdir(parts) if n.endswith(".tsv"))
    jobs["import 40 TSV files into one table"] = (["import", "{db}", *files, "--table", "t", "-q"], "SELECT count(*) FROM t", 4_000_000)
    jobs["import 40 TSV files, a table each"] = (["import", "{db}", *files, "-q"], "SELECT count(*) FROM sqlite_schema", 40)
    pq = os.environ.get("AB_PARQUET", f"{W}/p5m.parquet")
    if os.path.exists(pq):
        jobs["import 5M-row Parquet"] = (["import", "{db}", pq, "--table", "t", "-q"], "SELECT count(*) FROM t", None)
times = {(j, b): [] for j in jobs for b in ("old", "new")}
counts = {}
for r in range(rounds):
    for j, (args, q, want) in jobs.items():
        order = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
        for name, binary in order:
            db = f"{W}/ab.db"
            for s in ("", "-wal", "-shm", "-journal"):
                if os.path.exists(db + s):
                    os.remove(db + s)
            if j in setup:
                setup[j](db)
            a = [binary] + [x.replace("{db}", db) for x in args]
            t = time.perf_counter()
            subprocess.run(a, check=True, stdout=subprocess.DEVNULL)
            dt = time.perf_counter() - t
            c = sqlite3.connect(db)
            assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            n = c.execute(q).fetchone()[0]
            c.close()
            if want is not None:
                assert n == want, (j, name, n)
            counts.setdefault(j, set()).add(n)
            times[(j, name)].append(dt)
for j in jobs:
    o, n = statistics.median(times[(j, "old")]), statistics.median(times[(j, "new")])
    print(f"{j}: old {o:.3f} s, new {n:.3f} s (new/old {n/o:.3f}); old runs {[round(x,3) for x in times[(j,'old')]]}, new runs {[round(x,3) for x in times[(j,'new')]]}; rows {sorted(counts[j])}")
