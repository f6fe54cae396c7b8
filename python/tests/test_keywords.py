"""The package speaks Python: keyword arguments map onto the library's options (never
command-line flags), an unknown keyword is a TypeError naming it, a bad value a
ValueError (the package's UsageError) naming the keyword and what it takes, a value of
the wrong type a TypeError; import_file reads paths, bytes and file objects; ingest
checks its source."""

import io

import pyarrow as pa
import pytest

import liteload
from conftest import checked, rows

CSV = "id,name\n1,Ada\n2,zoë\n"


def csv_file(tmp_path, name="people.csv", text=CSV):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def no_flags(message):
    """A message in Python's words names no command-line flag."""
    assert "--" not in message, message


@pytest.mark.parametrize(
    "call",
    [
        lambda db, src: liteload.import_file(db, src, delimter=";"),
        lambda db, src: liteload.generate(db, rows=1, colums=["a=int:1..2"]),
        lambda db, src: liteload.ingest(db, src, table="t", key="id", comit_rows=1),
        lambda db, src: liteload.write(db, "t", [{"a": 1}], alter=True, nonsense=1),
    ],
)
def test_an_unknown_keyword_is_a_type_error_naming_it(tmp_path, call):
    with pytest.raises(TypeError, match="unexpected keyword argument") as e:
        call(tmp_path / "x.db", csv_file(tmp_path))
    no_flags(str(e.value))
    assert not (tmp_path / "x.db").exists()


BAD_VALUES = [
    ({"delimiter": "ab"}, "delimiter"),
    ({"durability": "fast"}, "durability"),
    ({"engine": "turbo"}, "engine"),
    ({"if_exists": "upsert"}, "if_exists"),
    ({"types": {"id": "FLOATY"}}, "FLOATY"),
    ({"ragged": "fill"}, "ragged"),
    ({"temporal": "unix"}, "temporal"),
    ({"decimals": "float"}, "decimals"),
    ({"encoding": "ebcdic"}, "encoding"),
    ({"format": "dbf"}, "format"),
    ({"max_errors": -1}, "max_errors"),
    ({"skip": -2}, "skip"),
    ({"sample": 0}, "sample"),
    ({"page_size": 1000}, "page size"),
    ({"indexes": [[]]}, "index"),
    ({"sniff": False, "guess_encoding": True}, "guess_encoding"),
]


@pytest.mark.parametrize("options,named", BAD_VALUES)
def test_a_bad_value_is_a_value_error_in_python_words(tmp_path, options, named):
    db = tmp_path / "x.db"
    with pytest.raises(ValueError, match=named) as e:
        liteload.import_file(db, csv_file(tmp_path), **options)
    assert isinstance(e.value, liteload.UsageError)
    no_flags(str(e.value))
    assert not db.exists()


WRONG_TYPES = [
    {"delimiter": 5},
    {"header": "yes"},
    {"max_errors": "10"},
    {"types": ["id", "text"]},
    {"types": {"id": int}},
    {"indexes": "name"},
    {"pk": 3},
    {"quote": 1.5},
    {"columns": [1, 2]},
]


@pytest.mark.parametrize("options", WRONG_TYPES)
def test_a_value_of_the_wrong_type_is_a_type_error(tmp_path, options):
    (name,) = [k for k in options]
    with pytest.raises(TypeError, match=name) as e:
        liteload.import_file(tmp_path / "x.db", csv_file(tmp_path), **options)
    no_flags(str(e.value))


def test_generate_and_ingest_values_in_python_words(tmp_path):
    db = tmp_path / "x.db"
    for call, named in [
        (lambda: liteload.generate(db, rows=-1), "rows"),
        (lambda: liteload.generate(db, rows=10, columns=["x=nonsense"]), "columns"),
        (lambda: liteload.generate(db, rows=10, engine="direct", generate_only=True), "pick one"),
        (lambda: liteload.generate(db, rows=10, page_size=3), "page size"),
        (lambda: liteload.ingest(db, [], table="t", key="id", commit_interval=0), "commit_interval"),
        (lambda: liteload.ingest(db, [], table="t", key="id", null="drop"), "null"),
        (lambda: liteload.ingest(db, [], table="t", key="id", retries=3), "connect"),
        (lambda: liteload.ingest(db, [], table="t", key=[]), "key"),
    ]:
        with pytest.raises(ValueError, match=named) as e:
            call()
        no_flags(str(e.value))
    assert not db.exists()


def test_every_keyword_reaches_the_library(tmp_path):
    """Each function passes every keyword it declares to its native half, which takes
    each by name (a keyword either side lacks fails any call): a call with the
    defaults works."""
    src = csv_file(tmp_path)
    liteload.import_file(tmp_path / "a.db", src)
    liteload.generate(tmp_path / "b.db", rows=3)
    liteload.ingest(tmp_path / "c.db", ['{"id": 1}'], table="t", key="id")
    liteload.write(tmp_path / "d.db", "t", [{"a": 1}])


def test_import_file_reads_bytes_and_file_objects(tmp_path):
    db = tmp_path / "x.db"
    liteload.import_file(db, CSV.encode(), table="from_bytes")
    liteload.import_file(db, io.StringIO(CSV), table="from_text")
    liteload.import_file(db, io.BytesIO(CSV.encode("utf-8")), table="from_binary")
    liteload.import_file(db, bytearray(b"a\tb\n1\t2\n"), table="tabs")
    with open(csv_file(tmp_path, "named.csv"), "rb") as f:
        s = liteload.import_file(db, f)
    assert s.tables == ["named"]
    want = [(1, "Ada"), (2, "zoë")]
    for t in ("from_bytes", "from_text", "from_binary", "named"):
        assert rows(db, t) == want, t
    assert rows(db, "tabs") == [(1, 2)]
    assert checked(db).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_source_without_a_name_needs_a_table(tmp_path):
    with pytest.raises(liteload.UsageError, match="table=") as e:
        liteload.import_file(tmp_path / "x.db", io.StringIO(CSV))
    no_flags(str(e.value))
    assert not (tmp_path / "x.db").exists()


def test_a_file_object_that_fails_raises_its_own_error(tmp_path):
    class Broken(io.RawIOBase):
        def __init__(self):
            self.calls = 0

        def readable(self):
            return True

        def read(self, n=-1):
            self.calls += 1
            if self.calls > 1:
                raise ConnectionResetError("the pipe broke")
            return b"a,b\n1,2\n"

    with pytest.raises(ConnectionResetError, match="the pipe broke"):
        liteload.import_file(tmp_path / "x.db", Broken(), table="t")
    assert not (tmp_path / "x.db").exists()


def test_a_frame_given_to_import_file_points_to_write(tmp_path):
    with pytest.raises(TypeError, match="write"):
        liteload.import_file(tmp_path / "x.db", pa.table({"a": [1]}))
    pd = pytest.importorskip("pandas")
    with pytest.raises(TypeError, match="write"):
        liteload.import_file(tmp_path / "x.db", pd.DataFrame({"a": [1]}))


def test_a_pattern_names_its_files(tmp_path):
    for i in range(3):
        csv_file(tmp_path, f"part{i}.csv", f"id,name\n{i},n{i}\n")
    s = liteload.import_file(tmp_path / "x.db", str(tmp_path / "part*.csv"), table="parts")
    assert s.rows == 3 and rows(tmp_path / "x.db", "parts") == [(0, "n0"), (1, "n1"), (2, "n2")]
    with pytest.raises(FileNotFoundError):
        liteload.import_file(tmp_path / "y.db", str(tmp_path / "none*.csv"))


def test_ingest_checks_its_source(tmp_path):
    db = tmp_path / "x.db"
    with pytest.raises(TypeError, match="source"):
        liteload.ingest(db, None, table="t", key="id")
    with pytest.raises(TypeError, match="message 1 is a int"):
        liteload.ingest(db, [1, 2], table="t", key="id")
    with pytest.raises(TypeError, match="iterable"):
        liteload.ingest(db, 42, table="t", key="id")
    with pytest.raises(ValueError, match="connect"):
        liteload.ingest(db, ['{"id": 1}'], table="t", key="id", connect="localhost:1", no_tls=True)


def test_usage_error_is_a_value_error_and_schema_error_a_usage_error(tmp_path):
    assert issubclass(liteload.UsageError, ValueError) and issubclass(liteload.UsageError, liteload.Error)
    assert issubclass(liteload.SchemaError, liteload.UsageError)
    db = tmp_path / "x.db"
    liteload.write(db, "t", [{"a": 1}])
    with pytest.raises(ValueError, match="exists already"):
        liteload.write(db, "t", [{"a": 1}])
