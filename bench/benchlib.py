"""Shared pieces of the benchmark scripts: timing a command, cleaning a database's
files, interleaving, and the medians table."""
import os
import resource
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LITELOAD = os.path.join(ROOT, "target", "release", "liteload")


def run_once(argv):
    """(exit code, stderr, wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.returncode, p.stderr.decode(errors="replace"), wall, cpu


def run_rss(argv):
    """(exit code, stderr, wall s, CPU s, peak RSS MB) of one process, measured by GNU
    time (a child forked from this Python would start with its RSS)."""
    rss_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), "liteload-bench-rss.txt")
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", rss_file] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    fields = open(rss_file).read().split()[-3:]
    rss_kb, user, system = int(fields[0]), float(fields[1]), float(fields[2])
    return p.returncode, p.stderr.decode(errors="replace"), wall, user + system, rss_kb / 1024


def clean(db):
    for suffix in ("", "-wal", "-shm", "-journal", ".liteload-tmp"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)


def rotations(names, runs):
    """Round r runs the tools starting at tool r, so no tool always goes first."""
    for r in range(runs):
        k = r % len(names)
        yield r, names[k:] + names[:k]


def print_table(results, sizes, base="liteload", floor=None):
    """results: {(rows, tool): [(wall, cpu, db_bytes, detail), ...]} (empty list = failed)."""
    print(f"{'rows':>12}  {'tool':<34} {'runs':>4} {'wall s (median)':>16} {'min-max':>15} {'CPU s':>8} "
          f"{'rows/s':>12} {base + ' faster by':>20}  {'db MB':>8}  check")
    for rows in sizes:
        b = results.get((rows, base))
        base_wall = statistics.median(w for w, *_ in b) if b else None
        for (r, name), runs in results.items():
            if r != rows:
                continue
            if not runs:
                print(f"{rows:>12,}  {name:<34} FAILED")
                continue
            walls = [w for w, *_ in runs]
            med = statistics.median(walls)
            if name == floor:
                ratio = "(floor)"
            elif base_wall and name != base:
                ratio = f"{med / base_wall:.2f}x"
            else:
                ratio = ""
            cpu = statistics.median(c for _, c, *_ in runs)
            size = runs[0][2] / 1e6
            print(f"{rows:>12,}  {name:<34} {len(runs):>4} {med:>16.3f} {min(walls):>7.2f}-{max(walls):<7.2f} "
                  f"{cpu:>8.2f} {rows / med:>12,.0f} {ratio:>20}  {size:>8.1f}  {runs[0][3]}")


def checked_rounds(tools, names, runs, db, checksum, prepare=None, reference=None, good=None,
                   prepare_tool=None, kind=None):
    """Runs each tool of `names` (argv in `tools`) `runs` times, interleaved, in a process
    of its own on `db`, cleaned and then made ready by `prepare(db)` when given (and by
    `prepare_tool(db, name)`, for one tool's own start, such as an existing file). A run
    counts only when it exits 0 and `checksum(db)` (whose first item is integrity_check's
    answer) says "ok", passes `good` when given, and equals `reference` (the first good
    run's when none is given). With `kind` (a tool's name to the kind of result it makes,
    as a flat load beside related tables), each kind has its own reference, and
    `checksum(db, kind)` and `good(got, kind)` are told it. Returns ({tool: [(wall, cpu,
    peak RSS MB), ...]}, the reference, or with `kind` {kind: reference})."""
    results = {n: [] for n in names}
    references = {}
    width = max(map(len, names), default=0)
    for r, order in rotations(names, runs):
        for name in order:
            clean(db)
            if prepare:
                prepare(db)
            if prepare_tool:
                prepare_tool(db, name)
            rc, err, wall, cpu, rss = run_rss(tools[name])
            if rc != 0:
                print(f"  {name}: FAILED {err[-500:]}", flush=True)
                continue
            key = kind(name) if kind else None
            got = checksum(db, key) if kind else checksum(db)
            passes = good is None or (good(got, key) if kind else good(got))
            ref = references.get(key, reference)
            if got[0] == "ok" and passes:
                ref = references[key] = ref or got
            if got != ref:
                print(f"  {name}: WRONG RESULT {got} != {ref}", flush=True)
                continue
            results[name].append((wall, cpu, rss))
            print(f"  round {r + 1}: {name:<{width}} {wall:8.3f} s  cpu {cpu:7.2f} s  peak RSS {rss:7.1f} MB",
                  flush=True)
    return results, (references if kind else references.get(None, reference))


def write_jsonl(path, records):
    """Writes `records` to `path`, one JSON object a line (nothing without a path)."""
    import json
    if path:
        with open(path, "w") as f:
            for o in records:
                f.write(json.dumps(o) + "\n")


def print_medians(results, count, extra=None, base="liteload"):
    """results: {tool: [(wall, cpu, peak RSS MB), ...]} of the good runs, in tool order;
    count: the rows (or updates) each run did. Prints one line a tool (median wall time,
    min-max, CPU, rows/s, peak RSS, time against `base`) and returns them as JSON-ready
    dicts, each with `extra` (a dict) added."""
    b = results.get(base)
    base_wall = statistics.median(w for w, *_ in b) if b else None
    print(f"{'tool':<17} {'runs':>4} {'wall s':>9} {'min-max':>15} {'CPU s':>8} {'rows/s':>11} "
          f"{'peak RSS MB':>12} {'vs ' + base:>16}")
    out = []
    for name, runs in results.items():
        if not runs:
            print(f"{name:<17} FAILED")
            continue
        walls = [w for w, *_ in runs]
        med = statistics.median(walls)
        cpu = statistics.median(c for _, c, _ in runs)
        rss = max(m for *_, m in runs)
        ratio = f"{med / base_wall:.2f}x" if base_wall else ""
        print(f"{name:<17} {len(runs):>4} {med:>9.3f} {min(walls):>7.2f}-{max(walls):<7.2f} {cpu:>8.2f} "
              f"{count / med:>11,.0f} {rss:>12.1f} {ratio:>16}")
        out.append({"tool": name, **(extra or {}), "wall_s": walls, "median_s": med, "cpu_s": cpu,
                    "peak_rss_mb": rss})
    return out


def run_rounds(tools, rows, runs, db, verify, results, out=None, nothing_written="no database"):
    """Runs every tool `runs` times, interleaved, on a fresh `db` each time.

    tools: {name: (argv, writes_db)}; verify(db, rows) -> (ok, detail) checks a written
    database before its run counts. Appends (wall, cpu, db_bytes, detail) of each good run
    to results[(rows, name)] (a failed run adds nothing, so a tool with no good run shows
    FAILED), prints one JSON line per run, and writes it to `out` when given.
    """
    import json
    for r, order in rotations(list(tools), runs):
        for name in order:
            argv, writes = tools[name]
            clean(db)
            code, err, wall, cpu = run_once(argv)
            if code != 0:
                ok, detail = False, f"exit {code}: {err.strip()[:200]}"
            elif writes:
                ok, detail = verify(db, rows)
            else:
                ok, detail = True, nothing_written
            size = os.path.getsize(db) if writes and os.path.exists(db) else 0
            rec = {"rows": rows, "tool": name, "run": r, "ok": ok, "detail": detail,
                   "wall_s": round(wall, 4), "cpu_s": round(cpu, 4), "db_bytes": size}
            print(json.dumps(rec), flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
            results.setdefault((rows, name), [])
            if ok:
                results[(rows, name)].append((wall, cpu, size, detail))
            clean(db)


def transit_parquet(workdir, rows):
    """The transit table of `rows` rows as TSV (gen_transit.py, fixed seed) and as Parquet
    written by pyarrow (zstd, 1M-row row groups), made once under `workdir`: returns
    (tsv path, parquet path, sum of Stop) for checking the loaded tables."""
    import sys
    import pyarrow, pyarrow.compute, pyarrow.csv, pyarrow.parquet
    os.makedirs(workdir, exist_ok=True)
    tsv = os.path.join(workdir, f"transit_{rows}.tsv")
    parquet = os.path.join(workdir, f"transit_{rows}.zstd-1M.parquet")
    if not os.path.exists(tsv):
        print(f"generating {tsv} …", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_transit.py"), str(rows), tsv], check=True)
    table = pyarrow.csv.read_csv(tsv, parse_options=pyarrow.csv.ParseOptions(delimiter="\t"),
                                 convert_options=pyarrow.csv.ConvertOptions(column_types={"Branch_Code": pyarrow.string()}))
    stop_sum = int(pyarrow.compute.sum(table["Stop"]).as_py())
    if not os.path.exists(parquet):
        pyarrow.parquet.write_table(table, parquet, compression="zstd", row_group_size=1_000_000)
    return tsv, parquet, stop_sum


def print_message_medians(results, messages, width=45):
    """results: {tool: [{"wall_s": ..., "detail": ...}, ...]}, the first tool the base:
    each tool's median wall time, spread, messages/s and ratio to the base."""
    medians = {name: sorted(x["wall_s"] for x in recs)[len(recs) // 2] for name, recs in results.items()}
    base = medians[next(iter(results))]
    for name, recs in results.items():
        med = medians[name]
        spread = f"{min(x['wall_s'] for x in recs):.2f}-{max(x['wall_s'] for x in recs):.2f}"
        print(f"  {name:<{width}} {med:>8.2f} s ({len(recs)} runs, {spread})  {messages / med:>10,.0f} msg/s"
              f"  {med / base:>6.1f}x liteload's time  {recs[0]['detail']}")
