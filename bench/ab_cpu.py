"""A/B of two liteload builds by CPU time (user + system of the process, from wait4),
beside wall time: on a shared machine wall time of one binary swings by a quarter
between runs, CPU time much less. Imports of the 10M-row TSV, the 1M-message NDJSON feed
and the same objects as one JSON array (bench/ab.py json writes it), interleaved (even
rounds run the old build first), medians; a run counts only when it exits 0 and SQLite's
integrity_check says ok with every row in.

    python3 bench/ab_cpu.py OLD_BINARY NEW_BINARY ROUNDS
"""
import os, sqlite3, subprocess, sys, time, statistics
old, new, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
W="/tmp/bench"
jobs = {
 "tsv": ["import","{db}",f"{W}/t10m.tsv","--table","t","-q"],
 "ndjson": ["import","{db}",f"{W}/feed1m.jsonl","--table","t","-q"],
 "array": ["import","{db}",f"{W}/feed1m.json","--table","t","-q"],
}
want = {"tsv": 10_000_000, "ndjson": 1_000_000, "array": 1_000_000}
res = {(j,b):[] for j in jobs for b in ("old","new")}
for r in range(rounds):
    for j,args in jobs.items():
        order = [("old",old),("new",new)] if r%2==0 else [("new",new),("old",old)]
        for name,b in order:
            db=f"/tmp/bench/cpu_ab.db"
            for suf in ("","-wal","-journal"):
                try: os.remove(db+suf)
                except FileNotFoundError: pass
            t=time.time()
            p=subprocess.Popen([b]+[a.replace("{db}",db) for a in args])
            _,st,ru=os.wait4(p.pid,0)
            wall=time.time()-t
            assert st==0, f"{name} {j} exited {st}"
            # A run counts only when SQLite reads the file back whole with every row.
            c=sqlite3.connect(db)
            ok=c.execute("PRAGMA integrity_check").fetchone()[0]
            n=c.execute("SELECT count(*) FROM t").fetchone()[0]
            c.close()
            assert ok=="ok" and n==want[j], f"{name} {j}: integrity_check {ok}, {n} rows"
            res[(j,name)].append((wall, ru.ru_utime+ru.ru_stime))
for j in jobs:
    o=res[(j,"old")]; n=res[(j,"new")]
    mo=statistics.median(x[1] for x in o); mn=statistics.median(x[1] for x in n)
    wo=statistics.median(x[0] for x in o); wn=statistics.median(x[0] for x in n)
    print(f"{j}: cpu old {mo:.3f} new {mn:.3f} ({mn/mo:.3f}); wall old {wo:.3f} new {wn:.3f} ({wn/wo:.3f}); cpu old {[round(x[1],2) for x in o]} new {[round(x[1],2) for x in n]}")
