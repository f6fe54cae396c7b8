#!/usr/bin/env python3
"""How often each sniffer gets a delimited file's dialect right (issue 18): liteload's
(`liteload sniff --json`), Python's `csv.Sniffer` (what `sqlite-utils --sniff` uses) and
DuckDB's `sniff_csv`, on the same generated corpus: random delimiter (`,` `;` tab `|`),
quote (`"` or `'`), header or not, line ending (LF or CRLF), 2-8 columns of integers,
reals, dates, words and text holding delimiters and quotes (quoted as a spreadsheet
would), 5-200 rows. A sniff is right when its delimiter and header are, and its quote
too when the file quotes any field. Fixed seed: the same corpus every run.

    python3 bench/sniff.py [--files 500] [--seed 18] [--liteload target/release/liteload]

python/tests/test_sniff.py runs a smaller corpus and requires liteload to be right at
least as often as the better of the other two.
"""
import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time

DELIMITERS = [",", ";", "\t", "|"]
QUOTES = ['"', "'"]
WORDS = ["alpha", "Bravo", "charlie", "zoë", "Ünïcode", "x", "long value here", "São Paulo"]


def field(kind, rnd):
    if kind == "int":
        return str(rnd.randint(-5000, 100000))
    if kind == "real":
        return f"{rnd.uniform(-1000, 1000):.{rnd.randint(1, 4)}f}"
    if kind == "date":
        return f"20{rnd.randint(10, 30)}-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}"
    if kind == "words":
        return rnd.choice(WORDS)
    # Text that needs quoting: delimiters, quotes, both kinds.
    return rnd.choice(["a, b", "c; d", "e|f", "g\th", 'say "hi"', "it's", "1,5", "x, y; z"])


def make(rnd):
    """(text, truth) of one file."""
    delim, quote = rnd.choice(DELIMITERS), rnd.choice(QUOTES)
    header, eol = rnd.random() < 0.7, rnd.choice(["\n", "\r\n"])
    ncols = rnd.randint(2, 8)
    kinds = [rnd.choice(["int", "real", "date", "words", "text"]) for _ in range(ncols)]
    if not any(k in ("int", "real", "date") for k in kinds):
        kinds[rnd.randrange(ncols)] = rnd.choice(["int", "real", "date"])
    quote_all_text = rnd.random() < 0.2
    quoted = False

    def cell(v, is_text):
        nonlocal quoted
        if delim in v or quote in v or quote_all_text and is_text:
            quoted = True
            return quote + v.replace(quote, quote * 2) + quote
        return v

    lines = []
    if header:
        lines.append(delim.join(cell(f"col_{i}_{k}", True) for i, k in enumerate(kinds)))
    for _ in range(rnd.randint(5, 200)):
        lines.append(delim.join(cell(field(k, rnd), k in ("words", "text")) for k in kinds))
    return eol.join(lines) + eol, {"delimiter": delim, "quote": quote, "header": header, "quoted": quoted}


def corpus(n, seed, directory):
    rnd = random.Random(seed)
    files = []
    for i in range(n):
        text, truth = make(rnd)
        path = os.path.join(directory, f"f{i:04d}.txt")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        files.append((path, truth))
    return files


def right(guess, truth):
    if guess is None:
        return False
    d, q, h = guess
    return d == truth["delimiter"] and h == truth["header"] and (not truth["quoted"] or q == truth["quote"])


def sniff_liteload(paths, binary):
    out = subprocess.run([*binary, "sniff", "--json", *paths], capture_output=True, text=True, check=True).stdout
    guesses = []
    for line in out.splitlines():
        g = json.loads(line)
        guesses.append((g["delimiter"], g["quote"], g["header"]) if g["format"] == "delimited" else None)
    return guesses


def sniff_python(path):
    with open(path, encoding="utf-8", newline="") as f:
        sample = f.read(64 * 1024)
    try:
        s = csv.Sniffer()
        d = s.sniff(sample, delimiters="".join(DELIMITERS))
        return d.delimiter, d.quotechar, s.has_header(sample)
    except csv.Error:
        return None


def sniff_duckdb(path, duckdb):
    try:
        r = duckdb.sql(f"SELECT Delimiter, Quote, HasHeader FROM sniff_csv('{path}')").fetchone()
        return r[0], r[1], bool(r[2])
    except duckdb.Error:
        return None


def run(n, seed, binary):
    """{tool: (right, seconds)} and the corpus size."""
    import duckdb

    with tempfile.TemporaryDirectory() as d:
        files = corpus(n, seed, d)
        paths = [p for p, _ in files]
        results = {}
        t0 = time.perf_counter()
        ours = sniff_liteload(paths, binary)
        results["liteload sniff"] = (sum(right(g, t) for g, (_, t) in zip(ours, files)), time.perf_counter() - t0)
        t0 = time.perf_counter()
        py = [sniff_python(p) for p in paths]
        results["Python csv.Sniffer"] = (sum(right(g, t) for g, (_, t) in zip(py, files)), time.perf_counter() - t0)
        t0 = time.perf_counter()
        dk = [sniff_duckdb(p, duckdb) for p in paths]
        results["DuckDB sniff_csv"] = (sum(right(g, t) for g, (_, t) in zip(dk, files)), time.perf_counter() - t0)
        misses = [(os.path.basename(p), t, g) for (p, t), g in zip(files, ours) if not right(g, t)]
    return results, misses


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--seed", type=int, default=18)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--liteload", default=os.path.join(root, "target", "release", "liteload"))
    a = ap.parse_args()
    results, misses = run(a.files, a.seed, [a.liteload])
    import duckdb

    print(f"{a.files} generated files (seed {a.seed}); DuckDB {duckdb.__version__}, Python {sys.version.split()[0]}")
    for tool, (ok, secs) in results.items():
        print(f"  {tool:<20} {ok:>5} right ({100 * ok / a.files:5.1f}%)  {1000 * secs / a.files:6.2f} ms a file")
    for name, truth, guess in misses[:10]:
        print(f"  liteload missed {name}: truth {truth}, guessed {guess}")


if __name__ == "__main__":
    main()
