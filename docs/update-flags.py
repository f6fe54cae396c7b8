#!/usr/bin/env python3
"""Rewrites the "Every flag" section at the end of each docs/ page from the command's own
`--help` (run after changing a flag; crates/cli/tests/docs.rs fails while a flag is
missing from its page).

    cargo build -p liteload-cli && python3 docs/update-flags.py [target/debug/liteload]
"""
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
BIN = sys.argv[1] if len(sys.argv) > 1 else str(DOCS.parent / "target" / "debug" / "liteload")
PAGES = {
    "import.md": [["import"]],
    "generate.md": [["generate"]],
    "ingest.md": [["ingest"]],
    "sniff.md": [["sniff"]],
    "kv.md": [["kv", c] for c in ["put", "get", "rm", "ls", "import-dir", "export-dir"]],
    "bench.md": [["bench", c] for c in ["ladder", "pragmas", "upsert", "kv", "generate", "all"]],
}
MARK = "\n## Every flag\n"

for page, commands in PAGES.items():
    path = DOCS / page
    text = path.read_text(encoding="utf-8")
    text = text.split(MARK, 1)[0].rstrip() + "\n"
    parts = [MARK, "\nAs `--help` prints them (kept in step by `docs/update-flags.py`).\n"]
    for cmd in commands:
        out = subprocess.run([BIN, *cmd, "--help"], capture_output=True, text=True, check=True, env={"COLUMNS": "100"}).stdout
        parts.append(f"\n### `liteload {' '.join(cmd)}`\n\n```text\n{out.rstrip()}\n```\n")
    path.write_text(text + "".join(parts), encoding="utf-8")
    print(f"{page}: {len(commands)} command(s)")
