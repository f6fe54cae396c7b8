"""Spreadsheets through import_file: workbooks written by xlsxwriter with every cell type
(numbers, text with non-ASCII and XML's special characters, long text, booleans, dates,
date-times and times in both of Excel's date systems, formulas with cached values, error
cells, merged ranges, empty rows and columns), compared cell by cell with what openpyxl
reads, mapped by the documented rules in a reference written here; `.xls` books written
by xlwt and `.ods` books written by pandas through odfpy, compared with the values
written."""
import datetime
import json
import math
import pathlib
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import liteload
from conftest import checked

openpyxl = pytest.importorskip("openpyxl")
xlsxwriter = pytest.importorskip("xlsxwriter")

ERRORS = ["#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!"]
TEXTS = ["a", "é 😀 ß", "<&>\"'", "  padded  ", "x" * 5000, "line\nbreak\ttab", "007", "12", "2024-01-02"]

cell = st.one_of(
    st.none(),
    st.integers(-(2**40), 2**40).map(lambda i: ("int", i)),
    st.sampled_from([0.25, -1.5, 1e-3, 123456.789, 1e300]).map(lambda f: ("real", f)),
    st.sampled_from(TEXTS).map(lambda t: ("text", t)),
    st.booleans().map(lambda b: ("bool", b)),
    st.integers(1, 60_000).map(lambda d: ("date", d)),
    st.tuples(st.integers(1, 60_000), st.integers(1, 86_399)).map(lambda t: ("datetime", t)),
    st.integers(0, 86_399).map(lambda s: ("time", s)),
    st.sampled_from(ERRORS).map(lambda e: ("error", e)),
    st.integers(-1000, 1000).map(lambda i: ("formula", i)),
)


def write_book(path, grid, names, date_1904, merge):
    wb = xlsxwriter.Workbook(str(path), {"date_1904": date_1904, "strings_to_numbers": False})
    ws = wb.add_worksheet("Data")
    fmt = {
        "date": wb.add_format({"num_format": "yyyy-mm-dd"}),
        "datetime": wb.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"}),
        "time": wb.add_format({"num_format": "hh:mm:ss"}),
    }
    base = datetime.datetime(1900 if not date_1904 else 1904, 3 if not date_1904 else 1, 1)
    # One empty column (A) and one empty row (1) before the table: both dropped.
    ws.write_row(1, 1, names)
    for r, row in enumerate(grid):
        for c, v in enumerate(row):
            at = (r + 2, c + 1)
            if v is None:
                continue
            kind, x = v
            if kind == "int":
                ws.write_number(*at, x)
            elif kind == "real":
                ws.write_number(*at, x)
            elif kind == "text":
                ws.write_string(*at, x)
            elif kind == "bool":
                ws.write_boolean(*at, x)
            elif kind == "date":
                ws.write_datetime(*at, base + datetime.timedelta(days=x), fmt["date"])
            elif kind == "datetime":
                ws.write_datetime(*at, base + datetime.timedelta(days=x[0], seconds=x[1]), fmt["datetime"])
            elif kind == "time":
                ws.write_datetime(*at, datetime.time(x // 3600, x // 60 % 60, x % 60), fmt["time"])
            elif kind == "error":
                ws.write_formula(*at, "=NA()", None, x)
            elif kind == "formula":
                ws.write_formula(*at, f"={x}+0", None, x)
    if merge and grid and len(names) >= 2:
        # A merged range over the last row's first two cells: its value in the first.
        r = len(grid) + 2
        ws.merge_range(r, 1, r, 2, "merged é")
        grid.append([("text", "merged é"), None] + [None] * (len(names) - 2))
    wb.close()


def reference(path):
    """What openpyxl reads, mapped by the documented rules: (columns, rows as values)."""
    wb = openpyxl.load_workbook(path, data_only=True)
    ws = wb["Data"]
    rows = [list(r) for r in ws.iter_rows(values_only=True)]
    rows = [r for r in rows if any(v is not None for v in r)]
    lo = min(i for r in rows for i, v in enumerate(r) if v is not None)
    hi = max(i for r in rows for i, v in enumerate(r) if v is not None)
    rows = [r[lo:hi + 1] + [None] * (hi + 1 - len(r)) for r in rows]
    header, data = rows[0], rows[1:]

    def value(v):
        if isinstance(v, bool):
            return ("n", int(v))
        if isinstance(v, int):
            return ("n", v)
        if isinstance(v, float):
            if v.is_integer() and abs(v) < 2**53:
                return ("n", int(v))
            return ("r", v)
        if isinstance(v, (datetime.datetime, datetime.time)):
            # To the millisecond, as Excel shows it (a serial's float error is far less).
            day = v.date() if isinstance(v, datetime.datetime) else None
            t = v.time() if day else v
            ms = round(((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond / 1000)
            if day and ms >= 86_400_000:
                day, ms = day + datetime.timedelta(days=1), ms - 86_400_000
            clock = f"{ms // 3_600_000:02}:{ms // 60_000 % 60:02}:{ms // 1000 % 60:02}"
            clock += f".{ms % 1000:03}" if ms % 1000 else ""
            if day is None:
                return ("t", clock)
            return ("t", day.isoformat() if ms == 0 else f"{day.isoformat()} {clock}")
        if isinstance(v, str) and v in ERRORS:
            return None
        if isinstance(v, str):
            return ("t", v)
        assert v is None, v
        return None

    cells = [[value(v) for v in r] for r in data]
    types = []
    for c in range(len(header)):
        kinds = {x[0] for r in cells if (x := r[c]) is not None}
        types.append("TEXT" if "t" in kinds or not kinds else "REAL" if "r" in kinds else "INTEGER")

    def stored(x, ty):
        if x is None:
            return None
        kind, v = x
        if ty == "TEXT":
            if kind == "t":
                return v
            return v if kind == "r" else str(v)
        return float(v) if ty == "REAL" else v

    return [str(h) for h in header], types, [[stored(x, types[c]) for c, x in enumerate(r)] for r in cells]


def same_cells(got, want, types):
    """Every cell of `got` is `want`'s, a real to within its float's rounding (in a
    TEXT column, as its text)."""
    for r, (g, w) in enumerate(zip(got, want)):
        for c, (a, b) in enumerate(zip(g, w)):
            if isinstance(b, float) and types[c] == "TEXT":
                assert math.isclose(float(a), b), (r, c, a, b)
            elif isinstance(b, float):
                assert math.isclose(a, b), (r, c, a, b)
            else:
                assert a == b, (r, c, a, b)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    grid=st.integers(1, 6).flatmap(
        lambda w: st.lists(st.one_of(st.lists(cell, min_size=w, max_size=w), st.just([None] * w)), min_size=1, max_size=25)
    ),
    date_1904=st.booleans(),
    merge=st.booleans(),
)
def test_every_cell_is_what_openpyxl_reads(tmp_path, grid, date_1904, merge):
    width = len(grid[0])
    if not any(v is not None for r in grid for v in r) and not merge:
        grid[0][0] = ("int", 1)
    names = [f"c{k} é" for k in range(width)]
    # Hypothesis runs every example in the one tmp_path (and seeds `random` alike).
    here = pathlib.Path(tempfile.mkdtemp(dir=tmp_path))
    book, db = here / "b.xlsx", here / "b.db"
    write_book(book, grid, names, date_1904, merge)
    header, types, want = reference(book)
    s = liteload.import_file(db, book, table="t")
    conn = checked(db)
    got_types = [(r[1], r[2]) for r in conn.execute('PRAGMA table_info("t")')]
    assert got_types == list(zip(header, types))
    got = [list(r) for r in conn.execute('SELECT * FROM "t" ORDER BY rowid')]
    assert len(got) == len(want) == s.as_dict()["rows"]
    same_cells(got, want, types)
    errors = sum(1 for row in grid for v in row if v is not None and v[0] == "error")
    notes = " ".join(s.as_dict()["notes"])
    assert (f"{errors} error cell" in notes) == (errors > 0), notes


def test_sheets_become_tables_and_one_can_be_named(tmp_path):
    book = tmp_path / "book.xlsx"
    wb = xlsxwriter.Workbook(str(book))
    a = wb.add_worksheet("Orders 2024")
    a.write_row(0, 0, ["id", "what"])
    a.write_row(1, 0, [1, "x"])
    wb.add_worksheet("Empty")
    b = wb.add_worksheet("people")
    b.write_row(0, 0, ["name"])
    b.write_row(1, 0, ["Ada"])
    b.write_row(2, 0, ["Alan"])
    wb.close()
    s = liteload.import_file(tmp_path / "all.db", book).as_dict()
    assert s["rows"] == 3
    assert sorted(s["tables"]) == ["Orders 2024", "people"]
    assert any('"Empty" holds no value' in n for n in s["notes"])
    s = liteload.import_file(tmp_path / "one.db", book, sheet="people", table="p").as_dict()
    assert s["tables"] == ["p"]
    assert checked(tmp_path / "one.db").execute("SELECT name FROM p ORDER BY rowid").fetchall() == [("Ada",), ("Alan",)]
    s = liteload.import_file(tmp_path / "named.db", book, sheet="Orders 2024").as_dict()
    assert (s["tables"], s["rows"]) == (["Orders 2024"], 1)
    with pytest.raises(liteload.BadInput, match=r"no sheet named \"nope\""):
        liteload.import_file(tmp_path / "none.db", book, sheet="nope")
    assert not (tmp_path / "none.db").exists()


def test_a_value_outside_the_sampled_columns_is_a_bad_record(tmp_path):
    book = tmp_path / "wide.xlsx"
    wb = xlsxwriter.Workbook(str(book))
    ws = wb.add_worksheet("S")
    ws.write_row(0, 0, ["a", "b"])
    for r in range(1, 30):
        ws.write_row(r, 0, [r, "x"])
    ws.write(30, 4, "far")
    wb.close()
    with pytest.raises(liteload.BadInput, match=r"cell E31, outside the table's columns A..B") as e:
        liteload.import_file(tmp_path / "w.db", book, sample=10)
    assert (e.value.line, e.value.column) == (31, 5)
    assert not (tmp_path / "w.db").exists()
    rejects = tmp_path / "rejects.jsonl"
    s = liteload.import_file(tmp_path / "w.db", book, sample=10, max_errors=5, rejects=rejects).as_dict()
    assert (s["rows"], s["rejects"]) == (29, 1)
    assert checked(tmp_path / "w.db").execute("SELECT count(*), sum(a) FROM S").fetchone() == (29, 435)
    assert json.loads(rejects.read_text().splitlines()[0])["fields"] == {"E": "far"}


def written_value(v):
    """A value as written to an .xls or .ods cell, mapped by the documented rules:
    (kind, value) with kind n (a number or boolean), r (a real) or t (text), or None
    for no value."""
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return ("n", int(v))
    if isinstance(v, int):
        return ("n", v)
    if isinstance(v, float):
        return ("n", int(v)) if v.is_integer() and abs(v) < 2**53 else ("r", v)
    if isinstance(v, datetime.datetime):
        return ("t", v.strftime("%Y-%m-%d %H:%M:%S"))
    if isinstance(v, datetime.date):
        return ("t", v.isoformat())
    if isinstance(v, datetime.time):
        return ("t", v.strftime("%H:%M:%S"))
    return ("t", v)


def random_grid(rng, width, height, times):
    """Rows of values of every kind a writer takes, None for an empty cell."""
    def one():
        kind = rng.choice(["none", "int", "real", "text", "bool", "date", "datetime"] + (["time"] if times else []))
        if kind == "none":
            return None
        if kind == "int":
            return rng.randint(-(2**40), 2**40)
        if kind == "real":
            return rng.choice([0.25, -1.5, 1e-3, 123456.789, 1e300, 0.1])
        if kind == "text":
            return rng.choice(TEXTS[:4] + ["x" * 3000, "line\nbreak\ttab", "007", "12", ""])
        if kind == "bool":
            return rng.random() < 0.5
        day = datetime.date(1905, 1, 1) + datetime.timedelta(days=rng.randint(0, 60_000))
        if kind == "date":
            return day
        clock = datetime.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
        if kind == "time":
            return clock
        return datetime.datetime.combine(day, clock)

    return [[one() for _ in range(width)] for _ in range(height)]


def expected(grid):
    """The table the documented rules make of `grid` under a header: (types, rows)."""
    cells = [[written_value(v) for v in r] for r in grid]
    cells = [r for r in cells if any(x is not None for x in r)]
    types = []
    for c in range(len(grid[0])):
        kinds = {x[0] for r in cells if (x := r[c]) is not None}
        types.append("TEXT" if "t" in kinds or not kinds else "REAL" if "r" in kinds else "INTEGER")

    def stored(x, ty):
        if x is None:
            return None
        kind, v = x
        if ty == "TEXT":
            return v if kind in "tr" else str(v)
        return float(v) if ty == "REAL" else v

    return types, [[stored(x, types[c]) for c, x in enumerate(r)] for r in cells]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["xls", "ods"])
def test_xls_and_ods_cells_are_what_was_written(tmp_path, seed, kind):
    """Workbooks written by xlwt (.xls, either date system) and by pandas through odfpy
    (.ods, a missing value written as a text cell holding nothing): every cell of the
    table is the written value mapped by the documented rules."""
    import random

    rng = random.Random(seed)
    width, height = rng.randint(1, 6), rng.randint(1, 60)
    grid = random_grid(rng, width, height, times=kind == "xls")
    names = [f"c{k} é" for k in range(width)]
    book = tmp_path / f"b.{kind}"
    if kind == "xls":
        xlwt = pytest.importorskip("xlwt")
        wb = xlwt.Workbook(encoding="utf-8")
        wb.dates_1904 = seed % 2 == 1
        ws = wb.add_sheet("Data")
        style = {
            datetime.datetime: xlwt.easyxf(num_format_str="YYYY-MM-DD HH:MM:SS"),
            datetime.date: xlwt.easyxf(num_format_str="YYYY-MM-DD"),
            datetime.time: xlwt.easyxf(num_format_str="HH:MM:SS"),
        }
        for c, n in enumerate(names):
            ws.write(0, c, n)
        for r, row in enumerate(grid):
            for c, v in enumerate(row):
                if v is not None and v != "":
                    ws.write(r + 1, c, v, style.get(type(v), xlwt.Style.default_style))
        wb.save(str(book))
    else:
        pytest.importorskip("odf")
        import pandas

        pandas.DataFrame(grid, columns=names, dtype=object).to_excel(book, engine="odf", index=False, sheet_name="Data")
    types, want = expected(grid)
    db = tmp_path / "b.db"
    if not want:
        return
    s = liteload.import_file(db, book, table="t", header=True)
    conn = checked(db)
    assert [(r[1], r[2]) for r in conn.execute('PRAGMA table_info("t")')] == list(zip(names, types))
    got = [list(r) for r in conn.execute('SELECT * FROM "t" ORDER BY rowid')]
    assert len(got) == len(want) == s.as_dict()["rows"]
    same_cells(got, want, types)
