"""A/B of two liteload builds by CPU time (user + system of the process, from wait4),
beside wall time: on a shared machine wall time of one binary swings by a quarter
between runs, CPU time much less. Imports of the 10M-row TSV, the 1M-message NDJSON feed
and the same objects as one JSON array (bench/ab.py json writes it), interleaved (even
rounds run the old build first), medians.

    python3 bench/ab_cpu.py OLD_BINARY NEW_BINARY ROUNDS
"""
import os, subprocess, sys, time, statistics
old, new, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
W="/tmp/bench"
jobs = {
 "tsv": ["import","{db}",f"{W}/t10m.tsv","--table","t","-q"],
 "ndjson": ["import","{db}",f"{W}/feed1m.jsonl","--table","t","-q"],
 "array": ["import","{db}",f"{W}/feed1m.json","--table","t","-q"],
}
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
            assert st==0
            res[(j,name)].append((time.time()-t, ru.ru_utime+ru.ru_stime))
for j in jobs:
    o=res[(j,"old")]; n=res[(j,"new")]
    mo=statistics.median(x[1] for x in o); mn=statistics.median(x[1] for x in n)
    wo=statistics.median(x[0] for x in o); wn=statistics.median(x[0] for x in n)
    print(f"{j}: cpu old {mo:.3f} new {mn:.3f} ({mn/mo:.3f}); wall old {wo:.3f} new {wn:.3f} ({wn/wo:.3f}); cpu old {[round(x[1],2) for x in o]} new {[round(x[1],2) for x in n]}")
