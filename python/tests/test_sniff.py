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
