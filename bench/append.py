#!/usr/bin/env python3
"""Appends: the transit table (TSV, gen_transit.py) loaded as a new table into an
existing database of about 1 GB (a 50M-row `liteload generate` table; `--base-journal
wal` puts it in WAL mode, as side-file loads leave a file, `delete` (the default) leaves
it in rollback mode), by liteload's default engine (in rollback mode: the page writer in
place, past the file's end, under a rollback journal; in WAL mode: the page writer's side
file, moved in by SQLite's transfer optimization), by liteload's SQLite path, and by the
sqlite3 CLI's .import, interleaved; the same rows into a new file by liteload ("new
file": the floor an append is measured against); and into that table made beforehand,
empty, with an index on Stop ("premade, index"). With `--scenario append`, the base is
the same transit rows already loaded as a table (in rollback mode), and each tool adds
the rows again to that table (liteload: in place, after its last rowid). With `--scenario
indexed`, the base is `--base-rows` transit rows (another seed) as a table with indexes on
Stop and on (Route_ID, Time), and each tool adds `--rows` rows to it (liteload: in place,
each index's old entries merged with the new into new pages, when its rule says the merge
pays; `liteload --engine direct` forces the merge; `integrity_check` runs on each tool's
first run only, `quick_check` on the others, as the first takes minutes there). Each run starts from a fresh copy of the database
(copied and synced before the clock starts). Every run is verified: integrity_check, the
new table's row count and sum(Stop), and the old table's row count.

    python3 bench/append.py [--runs 5] [--rows 10000000] [--base-rows 50000000]
                            [--base-journal delete|wal]
                            [--scenario new-table|append|indexed]
                            [--workdir DIR]
                            [--only TOOL ...] [--json results.jsonl]

Needs a release build of liteload (cargo build --release) and Debian's sqlite3.
"""
import argparse
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys

from benchlib import LITELOAD, ROOT, clean, print_table, rotations, run_once


# A schema made beforehand: the transit table, empty, with an index on Stop.
PREMADE = ('CREATE TABLE transit (Route_ID INTEGER, Branch_Code TEXT, Version INTEGER, Stop INTEGER, '
           'Vehicle_Index INTEGER, Day INTEGER, Time TEXT); CREATE INDEX transit_stop ON transit (Stop);')


def tools(src, db, new_db, appending=False):
    """name -> argv; a name ending in "(premade, index)" loads into PREMADE, one ending
    in "(new file)" into a new file."""
    return {
        "liteload (new file)": [LITELOAD, "import", "-q", new_db, src, "--table", "transit"],
        "liteload (premade, index)": [LITELOAD, "import", "-q", db, src, "--table", "transit"],
        "liteload --engine sqlite (premade, index)": [LITELOAD, "import", "-q", "--engine", "sqlite", db, src, "--table", "transit"],
        "liteload": [LITELOAD, "import", "-q", db, src, "--table", "transit"],
        "liteload --durability durable": [LITELOAD, "import", "-q", "--durability", "durable", db, src, "--table", "transit"],
        "liteload --durability unsafe": [LITELOAD, "import", "-q", "--durability", "unsafe", db, src, "--table", "transit"],
        "liteload --engine sqlite": [LITELOAD, "import", "-q", "--engine", "sqlite", db, src, "--table", "transit"],
        "liteload --engine direct": [LITELOAD, "import", "-q", "--engine", "direct", db, src, "--table", "transit"],
        # Into a table that exists, .import reads the header as a row unless skipped.
        "sqlite3 .import": ["sqlite3", db, "-cmd", ".mode tabs",
                            f".import {'--skip 1 ' if appending else ''}{src} transit"],
    }


def verify(db, rows, stop_sum, base_rows, check="integrity_check"):
    """base_rows None: a new file, or a file whose only table is transit."""
    try:
        c = sqlite3.connect(db)
        ok = c.execute(f"PRAGMA {check}").fetchone()[0]
        n, s = c.execute("SELECT count(*), sum(Stop) FROM transit").fetchone()
        old = None if base_rows is None else c.execute("SELECT count(*) FROM user").fetchone()[0]
        mode = c.execute("PRAGMA journal_mode").fetchone()[0]
        c.close()
    except sqlite3.Error as e:
        return False, f"sqlite error: {e}"
    if ok != "ok":
        return False, f"integrity_check: {ok}"
    if (n, s, old) != (rows, stop_sum, base_rows):
        return False, f"{n} rows, sum {s}, {old} old rows; expected {rows}, {stop_sum}, {base_rows}"
    return True, f"journal_mode {mode}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--base-rows", type=int, default=50_000_000)
    ap.add_argument("--base-journal", choices=["delete", "wal"], default="delete")
    ap.add_argument("--scenario", choices=["new-table", "append", "indexed"], default="new-table")
    ap.add_argument("--workdir", default=os.environ.get("TMPDIR", "/tmp") + "/liteload-bench")
    ap.add_argument("--only", nargs="*", help="run only these tools")
    ap.add_argument("--json", help="append one JSON line per run to this file")
    a = ap.parse_args()
    if not os.path.exists(LITELOAD):
        sys.exit("build liteload first: cargo build --release")
    os.makedirs(a.workdir, exist_ok=True)
    out = open(a.json, "a") if a.json else None

    src = os.path.join(a.workdir, f"transit_{a.rows}.tsv")
    if not os.path.exists(src):
        print(f"generating {src} …", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_transit.py"), str(a.rows), src], check=True)
    stop_sum = 0
    with open(src) as f:
        header = next(f).rstrip("\n").split("\t")
        k = header.index("Stop")
        for line in f:
            stop_sum += int(line.split("\t")[k])
    appending = a.scenario in ("append", "indexed")
    base_sum = stop_sum
    if a.scenario == "indexed":
        base_src = os.path.join(a.workdir, f"transit_base_{a.base_rows}.tsv")
        if not os.path.exists(base_src):
            print(f"generating {base_src} …", flush=True)
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_transit.py"), str(a.base_rows),
                            base_src, "--seed", "7"], check=True)
        base_sum = 0
        with open(base_src) as f:
            next(f)
            for line in f:
                base_sum += int(line.split("\t")[k])
        base = os.path.join(a.workdir, f"base_indexed_{a.base_rows}_{a.base_journal}.db")
        if not os.path.exists(base):
            print(f"generating {base} …", flush=True)
            subprocess.run([LITELOAD, "import", "-q", base, base_src, "--table", "transit"], check=True)
            c = sqlite3.connect(base)
            c.executescript("CREATE INDEX transit_stop ON transit (Stop); "
                            "CREATE INDEX transit_route_time ON transit (Route_ID, Time);")
            c.execute(f"PRAGMA journal_mode={a.base_journal.upper()}")
            c.close()
    elif appending:
        base = os.path.join(a.workdir, f"base_transit_{a.rows}_{a.base_journal}.db")
        if not os.path.exists(base):
            print(f"generating {base} …", flush=True)
            subprocess.run([LITELOAD, "import", "-q", base, src, "--table", "transit"], check=True)
            c = sqlite3.connect(base)
            c.execute(f"PRAGMA journal_mode={a.base_journal.upper()}")
            c.close()
        a.base_rows = a.rows
    if not appending:
        base = os.path.join(a.workdir, f"base_{a.base_rows}_{a.base_journal}.db")
    if not appending and not os.path.exists(base):  # new-table
        print(f"generating {base} …", flush=True)
        subprocess.run([LITELOAD, "generate", "-q", "--rows", str(a.base_rows), base], check=True)
        c = sqlite3.connect(base)
        c.execute(f"PRAGMA journal_mode={a.base_journal.upper()}")
        c.close()
    info = json.loads(subprocess.run([LITELOAD, "info", "--json"], capture_output=True, text=True).stdout)
    sqlite3_cli = subprocess.run(["sqlite3", "--version"], capture_output=True, text=True).stdout.split()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    print(f"liteload {info['liteload']} (bundled SQLite {info['sqlite']}); sqlite3 CLI {sqlite3_cli}")
    print(f"{a.rows:,} rows ({os.path.getsize(src) / 1e6:.0f} MB TSV) into {base} "
          f"({os.path.getsize(base) / 1e9:.2f} GB, {a.base_rows:,} rows)")

    db = os.path.join(a.workdir, "append.db")
    new_db = os.path.join(a.workdir, "append_new.db")
    all_tools = tools(src, db, new_db, appending)
    names = [n for n in all_tools if (not a.only or n in a.only) and shutil.which(all_tools[n][0])
             and not (appending and n.endswith("(premade, index)"))]
    results = {}
    for r, order in rotations(names, a.runs):
        for name in order:
            new_file = name.endswith("(new file)")
            clean(db)
            clean(new_db)
            if not new_file:
                shutil.copyfile(base, db)
            if name.endswith("(premade, index)"):
                c = sqlite3.connect(db)
                c.executescript(PREMADE)
                c.close()
            os.sync()
            code, err, wall, cpu = run_once(all_tools[name])
            if code != 0:
                ok, detail = False, f"exit {code}: {err.strip()[:200]}"
            else:
                if appending and not new_file:
                    # integrity_check of a 10M-row table with two indexes takes minutes:
                    # in full on each tool's first run, quick_check (no index lookups)
                    # after.
                    check = "integrity_check" if r == 0 or a.scenario != "indexed" else "quick_check"
                    ok, detail = verify(db, a.base_rows + a.rows, base_sum + stop_sum, None, check)
                else:
                    ok, detail = verify(new_db if new_file else db, a.rows, stop_sum,
                                        None if new_file else a.base_rows)
            written = new_db if new_file else db
            rec = {"rows": a.rows, "tool": name, "run": r, "ok": ok, "detail": detail,
                   "base_journal": a.base_journal, "scenario": a.scenario, "wall_s": round(wall, 4),
                   "cpu_s": round(cpu, 4),
                   "db_bytes": os.path.getsize(written) if os.path.exists(written) else 0}
            print(json.dumps(rec), flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
            results.setdefault((a.rows, name), [])
            if ok:
                results[(a.rows, name)].append((wall, cpu, rec["db_bytes"], detail))
            clean(db)
            clean(new_db)
            for extra in (".liteload-append",):
                if os.path.exists(db + extra):
                    os.remove(db + extra)
    print()
    print_table(results, [a.rows], base="liteload")


if __name__ == "__main__":
    main()
