"""Where a JSON error is, against Python's json module: files (NDJSON and one array,
small and over 8 MiB so the parallel reader runs) with one fault at a random place: a
raw line break, tab or other control character inside a string, a missing comma or
colon, a stray byte. liteload's `FILE:LINE:COLUMN` must be where json.loads puts it
(its `lineno`, `colno`; the text is ASCII, so columns in bytes and characters agree).

    python3 json_positions.py LITELOAD_BINARY WORK_DIR
"""

import json
import random
import re
import subprocess
import sys
from pathlib import Path

liteload, work = sys.argv[1], Path(sys.argv[2])
rng = random.Random(36)
FAULTS = ["\n", "\t", "\x01", "\x1f"]


def element(i):
    return json.dumps({"id": i, "name": f"item {i}", "tags": ["a", "b"], "n": i * 1.5})


def faulty(i):
    """An element with one fault; the fault kind decides what json.loads says."""
    text = element(i)
    kind = rng.randrange(3)
    if kind == 0:
        at = text.index("item") + rng.randrange(1, 5)
        return text[:at] + rng.choice(FAULTS) + text[at:]
    if kind == 1:
        return text.replace(", ", " ", 1)  # a missing comma between members
    return text.replace('": ', '" ', 1)  # a missing colon


failures, cases = [], 0
for big in [False, True]:
    for n in range(12 if not big else 3):
        cases += 1
        count = 130_000 if big else rng.randrange(3, 30)
        bad_at = count - 1 - rng.randrange(3) if big else rng.randrange(count)
        elements = [faulty(i) if i == bad_at else element(i) for i in range(count)]
        for array in [False, True]:
            if array:
                text = "[" + ",\n ".join(elements) + "]\n"
                name = f"j{cases}.json"
            else:
                text = "\n".join(elements) + "\n"
                name = f"j{cases}.ndjson"
            path = work / name
            path.write_text(text, encoding="ascii")
            if array:
                try:
                    json.loads(text)
                    continue
                except json.JSONDecodeError as e:
                    want = (e.lineno, e.colno)
            else:
                # A line is a record: the fault is found in its own line.
                line = text.split("\n")[bad_at]
                try:
                    json.loads(line)
                    continue
                except json.JSONDecodeError as e:
                    want = (bad_at + 1, e.colno)
                if "\n" in elements[bad_at]:
                    # The record's line ends inside a string. Python, given that line,
                    # names where the string starts; liteload names the line's last
                    # byte, where the string is still open.
                    first = elements[bad_at].split("\n")[0]
                    want = (bad_at + 1, len(first))
            out = subprocess.run(
                [liteload, "import", str(work / f"{name}.db"), str(path), "-q"],
                capture_output=True,
                text=True,
            )
            m = re.search(re.escape(name) + r":(\d+):(\d+)", out.stderr)
            got = (int(m.group(1)), int(m.group(2))) if m else None
            if out.returncode == 0 or got != want:
                failures.append(f"{name} (fault in element {bad_at}): want {want}, got {got}: {out.stderr.strip()[:300]}")

print(json.dumps({"cases": cases, "failures": len(failures)}))
for f in failures:
    print(f)
sys.exit(1 if failures else 0)
