"""The sniffer against Python's csv.Sniffer and DuckDB's sniff_csv on one generated
corpus of dialects (bench/sniff.py): liteload must be right at least as often as the
better of the two."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_sniff", ROOT / "bench" / "sniff.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_liteload_sniffs_as_well_as_the_better_of_python_and_duckdb():
    bench = load_bench()
    # The command pip installed, run as this interpreter runs it.
    command = [sys.executable, "-m", "liteload._cli"]
    results, misses = bench.run(150, 2026, command)
    ours = results["liteload sniff"][0]
    best_other = max(results["Python csv.Sniffer"][0], results["DuckDB sniff_csv"][0])
    assert ours >= best_other, (results, misses[:5])


def test_sniff_from_python_speaks_import_files_keywords(tmp_path):
    """liteload.sniff() says what the command's sniff says, as import_file's keywords:
    importing with them gives the table that importing without them gives."""
    import json
    import subprocess

    import liteload
    from conftest import rows

    src = tmp_path / "export.txt"
    src.write_bytes("\ufeffid;name;note\r\n1;Zoë;\"a;b\"\r\n2;Ada;x\r\n".encode("utf-8"))
    got = liteload.sniff(src)
    assert (got["format"], got["delimiter"], got["quote"], got["header"], got["encoding"], got["bom"]) == (
        "csv", ";", '"', True, "utf-8", True
    )
    done = subprocess.run([sys.executable, "-m", "liteload._cli", "sniff", "--json", str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    assert (cli["delimiter"], cli["quote"], cli["header"], cli["encoding"]) == (";", '"', True, "utf-8")
    keywords = {k: got[k] for k in ("format", "delimiter", "quote", "header", "encoding")}
    liteload.import_file(tmp_path / "a.db", src, table="t", **keywords)
    liteload.import_file(tmp_path / "b.db", src, table="t")
    assert rows(tmp_path / "a.db", "t") == rows(tmp_path / "b.db", "t") == [(1, "Zoë", "a;b"), (2, "Ada", "x")]
    tabs = liteload.sniff(b"a\tb\n1\t2\n")
    assert tabs["format"] in ("csv", "tsv") and tabs["delimiter"] == "\t"
    assert liteload.sniff(b'{"a": 1}\n{"a": 2}\n')["format"] == "ndjson"
    plain = liteload.sniff(b"a,b\n1,2\n")
    assert plain["delimiter"] == "," and plain["quote"] in ('"', False)
