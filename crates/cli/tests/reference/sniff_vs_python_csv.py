"""Sniffing against Python's csv module, on generated files of every shape that moves a
sniffer: quoted delimiters in every record, in some, only in the header; LF, CRLF and
lone-CR line ends; `,` `;` `|` and tab; TSV with quoted fields; quoting of every field.

Each file is written by Python's csv.writer with a known dialect, and read back by
csv.reader with that dialect: the reference. `liteload import` (sniffing on, types off)
must store exactly the reference's records; csv.Sniffer's guess is shown beside it.

    python3 sniff_vs_python_csv.py LITELOAD_BINARY WORK_DIR
"""

import csv
import io
import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

liteload, work = sys.argv[1], Path(sys.argv[2])

WORDS = ["Doe", "John", "zoë", "😀", "naïve", "x", "Paris", "Rome", "007", "1e3", "-0", "a b"]


def value(rng, delim, quote_delims):
    """A field: words, sometimes holding the delimiter, a quote or a line break."""
    v = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
    if quote_delims and rng.random() < 0.5:
        v = v.replace(" ", delim + " ", 1) if " " in v else v + delim + "z"
    r = rng.random()
    if r < 0.08:
        v = 'say "' + v + '"'
    elif r < 0.12:
        v = v + "\nnext line"
    elif r < 0.15:
        v = ""
    return v


def make(rng, delim, terminator, shape, quoting):
    ncols = rng.randint(2, 6)
    header = [f"col {i}" for i in range(ncols)]
    if shape == "header":
        header[0] = "name" + delim + " first"
    rows = []
    for r in range(rng.randint(3, 40)):
        quote_delims = shape == "every" or (shape == "some" and r % 3 == 0)
        row = [value(rng, delim, quote_delims and c == r % ncols) for c in range(ncols)]
        if shape == "every":
            row[r % ncols] = "a" + delim + " " + row[r % ncols]
        rows.append(row)
    # Lone-CR files cannot hold a line break inside a value and stay unambiguous.
    if terminator == "\r":
        rows = [[v.replace("\n", " ") for v in row] for row in rows]
    buf = io.StringIO(newline="")
    w = csv.writer(buf, delimiter=delim, lineterminator=terminator, quoting=quoting, quotechar='"')
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue(), header, rows


def loaded(db):
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        table = con.execute("SELECT name FROM sqlite_schema WHERE type = 'table'").fetchone()[0]
        got = con.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
    finally:
        con.close()
    return [["" if v is None else str(v) for v in row] for row in got]


rng = random.Random(20261126)
failures, cases, sniffer_right = [], 0, 0
for delim in [",", ";", "|", "\t"]:
    for terminator in ["\n", "\r\n", "\r"]:
        for shape in ["every", "some", "header", "none"]:
            for quoting in [csv.QUOTE_MINIMAL, csv.QUOTE_ALL]:
                for ext in ([".csv", ".txt"] if delim != "\t" else [".tsv", ".txt"]):
                    cases += 1
                    text, header, rows = make(rng, delim, terminator, shape, quoting)
                    name = f"c{cases}{ext}"
                    path = work / name
                    path.write_bytes(text.encode("utf-8"))
                    ref = list(csv.reader(io.StringIO(text, newline=""), delimiter=delim, quotechar='"'))
                    assert ref[0] == header and ref[1:] == rows, "csv round trip"
                    try:
                        guess = csv.Sniffer().sniff(text[:4096], delimiters=",;|\t")
                        sniffer_right += guess.delimiter == delim
                    except csv.Error:
                        pass
                    db = work / f"c{cases}.db"
                    out = subprocess.run(
                        [liteload, "import", str(db), str(path), "--header", "--no-detect-types", "-q"],
                        capture_output=True,
                        text=True,
                    )
                    if out.returncode != 0:
                        failures.append(f"{name} {delim!r} {terminator!r} {shape} q{quoting}: exit {out.returncode}: {out.stderr.strip()}")
                        continue
                    got = loaded(db)
                    if got != rows:
                        sniff = subprocess.run([liteload, "sniff", str(path)], capture_output=True, text=True).stdout
                        failures.append(
                            f"{name} {delim!r} {terminator!r} {shape} q{quoting}: {len(got)} rows, first {got[:1]} != {rows[:1]}; sniff: {sniff.strip()}"
                        )

print(json.dumps({"cases": cases, "failures": len(failures), "python_sniffer_right": sniffer_right}))
for f in failures:
    print(f)
sys.exit(1 if failures else 0)
