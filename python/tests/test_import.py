"""liteload.import_file agrees with the `liteload` command (installed by the same pip
install) on the same files and options, table for table and row for row; errors are the
package's exceptions with the place of the bad input."""

import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import liteload
from conftest import checked, columns, rows


def command():
    found = shutil.which("liteload", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    assert found, "pip install puts the liteload command on the PATH"
    return found


def cli(*args):
    return subprocess.run([command(), *map(str, args)], capture_output=True, text=True)


def write_files(tmp_path):
    csv = tmp_path / "people.csv"
    csv.write_text('id,name,note\n1,Ada,"a, b"\n2,zoë 😀,"line\nbreak"\n3,,007\n4,"q""uote",1e3\n', encoding="utf-8")
    euro = tmp_path / "euro.txt"
    euro.write_bytes("\ufeffid;amount\r\n1;1,5\r\n2;2\r\n".encode("utf-8"))
    nd = tmp_path / "events.ndjson"
    nd.write_text('{"id": 1, "tags": ["a"], "x": 1.5}\n{"id": 2, "extra": "late", "x": null}\n', encoding="utf-8")
    pqf = tmp_path / "trips.parquet"
    pq.write_table(pa.table({"id": [1, 2], "at": pa.array([0, 86_400_000_000], pa.timestamp("us", tz="UTC"))}), pqf)
    return csv, euro, nd, pqf


CASES = [
    ("people.csv", {}),
    ("people.csv", {"table": "p", "pk": "id", "indexes": ["name"], "types": {"note": "TEXT"}}),
    ("people.csv", {"detect_types": False, "engine": "sqlite"}),
    ("euro.txt", {"format": "csv", "delimiter": ";", "table": "euro"}),
    ("people.csv", {"header": False, "columns": ["a", "b", "c"], "skip": 1, "table": "nohead"}),
    ("events.ndjson", {}),
    ("trips.parquet", {"temporal": "epoch"}),
]


def flags(options):
    out = []
    for k, v in options.items():
        if k == "types":
            for c, t in v.items():
                out += ["--type", f"{c}={t}"]
        elif k == "indexes":
            for i in v:
                out += ["--index", i]
        elif v is False:
            out.append("--no-" + k.replace("_", "-"))
        elif isinstance(v, list):
            out += ["--" + k, ",".join(v)]
        else:
            out += ["--" + k.replace("_", "-"), str(v)]
    return out


@pytest.mark.parametrize("name,options", CASES)
def test_import_file_agrees_with_the_command(tmp_path, name, options):
    write_files(tmp_path)
    src = tmp_path / name
    by_py = tmp_path / "py.db"
    by_cli = tmp_path / "cli.db"
    summary = liteload.import_file(by_py, src, **options)
    done = cli("import", "-q", by_cli, src, *flags(options))
    assert done.returncode == 0, done.stderr
    table = summary.tables[0]
    assert columns(by_py, table) == columns(by_cli, table)
    assert rows(by_py, table) == rows(by_cli, table)
    assert summary.rows == len(rows(by_py, table)) > 0
    schema = lambda db: checked(db).execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    assert schema(by_py) == schema(by_cli)


def test_bad_input_names_file_line_and_column(tmp_path):
    src = tmp_path / "bad.csv"
    src.write_text("a,b\n1,2\n3,4,5\n", encoding="utf-8")
    with pytest.raises(liteload.BadInput) as e:
        liteload.import_file(tmp_path / "x.db", src)
    err = e.value
    assert err.path.endswith("bad.csv") and err.line == 3 and err.record == 2 and err.column > 0
    assert "ragged='pad'" in str(err) and "--ragged" not in str(err)
    assert not (tmp_path / "x.db").exists()
    # The same bad record, skipped as asked.
    s = liteload.import_file(tmp_path / "y.db", src, max_errors=1)
    assert s.rows == 1 and s.rejects == 1


def test_usage_errors(tmp_path):
    src = tmp_path / "a.csv"
    src.write_text("a\n1\n", encoding="utf-8")
    with pytest.raises(liteload.UsageError, match="delimiter"):
        liteload.import_file(tmp_path / "x.db", src, delimiter="ab")
    with pytest.raises(TypeError, match="no_such_option"):
        liteload.import_file(tmp_path / "x.db", src, no_such_option=1)
    liteload.import_file(tmp_path / "x.db", src)
    # A table in the way is a SchemaError, which is a UsageError too.
    with pytest.raises(liteload.SchemaError, match="exists already"):
        liteload.import_file(tmp_path / "x.db", src, if_exists="fail")


def test_io_errors_are_oserrors(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        liteload.import_file(tmp_path / "x.db", tmp_path / "missing.csv")
    assert "missing.csv" in str(e.value)


def test_a_file_that_is_not_a_database_is_an_sqlite_error(tmp_path):
    src = tmp_path / "a.csv"
    src.write_text("a\n1\n", encoding="utf-8")
    db = tmp_path / "x.db"
    db.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(liteload.SqliteError, match="not a database"):
        liteload.import_file(db, src)
    assert db.read_bytes() == b"this is not SQLite" * 100


def test_summary_is_typed_and_a_dict(tmp_path):
    src = tmp_path / "a.csv"
    src.write_text("a,b\n1,x\n2,y\n", encoding="utf-8")
    s = liteload.import_file(tmp_path / "x.db", src)
    d = s.as_dict()
    assert d["rows"] == s.rows == 2 and d["engine"] == s.engine == "direct"
    assert d["durability"] == "atomic-new" and d["db_bytes"] == os.path.getsize(tmp_path / "x.db")
    assert set(d) >= {"rows", "seconds", "rejects", "mismatches", "engine", "durability", "db_bytes"}
    assert "Summary(rows=2" in repr(s)


def test_the_command_from_pip_runs(tmp_path):
    assert cli("--version").stdout.startswith("liteload ")
    bad = cli("import", tmp_path / "x.db", tmp_path / "missing.csv")
    assert bad.returncode == 3 and "missing.csv" in bad.stderr
    assert cli("import", "--no-such-flag").returncode == 2


def test_progress_true_draws_a_tqdm_bar(tmp_path, capsys):
    src = tmp_path / "a.csv"
    src.write_text("a\n" + "".join(f"{i}\n" for i in range(200_000)), encoding="utf-8")
    liteload.import_file(tmp_path / "x.db", src, progress=True)
    assert "importing" in capsys.readouterr().err


def test_a_spreadsheet_export_loads_with_no_options_and_converts_when_asked(tmp_path):
    src = tmp_path / "prices.txt"
    src.write_bytes("\ufeffArtikel;Preis;Datum\r\nÄpfel;1.234,56;23.11.2026\r\nKäse;0,5;01.12.2026\r\n".encode())
    db = tmp_path / "p.db"
    s = liteload.import_file(db, src)
    assert s.rows == 2 and s.tables == ["prices"]
    assert s.sniffed == [f"{src}: ';'-separated, header, UTF-8 with BOM"]
    assert any("decimal_comma=True" in n for n in s.notes) and any("dates=['%d.%m.%Y']" in n for n in s.notes)
    assert rows(db, "prices") == [("Äpfel", "1.234,56", "23.11.2026"), ("Käse", "0,5", "01.12.2026")]
    liteload.import_file(db, src, table="converted", decimal_comma=True, dates=["%d.%m.%Y"])
    assert rows(db, "converted") == [("Äpfel", 1234.56, "2026-11-23"), ("Käse", 0.5, "2026-12-01")]


@pytest.mark.parametrize("engine", ["direct", "sqlite"])
def test_a_parquet_page_whose_checksum_fails_is_refused(tmp_path, engine):
    """A file written with page checksums loads; the same file with one byte of a data
    page changed is refused, as pyarrow refuses it when it verifies checksums."""
    marker = 0x1122334455667788
    table = pa.table({"v": pa.array([marker + i for i in range(1000)], pa.int64())})
    good = tmp_path / "good.parquet"
    pq.write_table(table, good, compression="NONE", write_page_checksum=True, use_dictionary=False)
    raw = bytearray(good.read_bytes())
    at = raw.find((marker + 500).to_bytes(8, "little"))
    assert at > 0
    raw[at] ^= 0xFF
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(raw))
    with pytest.raises(Exception):
        pq.read_table(bad, page_checksum_verification=True)
    ok = liteload.import_file(tmp_path / "good.db", good, engine=engine)
    assert ok.rows == 1000
    assert rows(tmp_path / "good.db", "good")[500] == (marker + 500,)
    with pytest.raises(liteload.Error, match="(?i)checksum"):
        liteload.import_file(tmp_path / "bad.db", bad, engine=engine)
    assert not (tmp_path / "bad.db").exists()
