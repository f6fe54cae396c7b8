"""XML through import_file: every cell equals what Python's own xml.etree reads, mapped
by the documented rules (attributes as columns, values typed as CSV fields are)."""
import sqlite3
import xml.etree.ElementTree as ET

import pytest

import liteload
from conftest import checked


def test_posts_like_rows_equal_what_etree_reads(tmp_path):
    rows = []
    for i in range(1, 301):
        r = {"Id": str(i), "Score": str((i * 7) % 23 - 5), "Body": f"<p>row {i} & \"more\" — ü</p>\n"}
        if i % 3:
            r["Title"] = f"Title {i} <x>"
        if i % 5 == 0:
            r["ParentId"] = str(i // 5)
        rows.append(r)

    def esc(v):
        return v.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;").replace("\n", "&#10;")

    doc = '<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "".join(
        "  <row " + " ".join(f'{k}="{esc(v)}"' for k, v in r.items()) + "/>\n" for r in rows
    ) + "</posts>\n"
    src = tmp_path / "Posts.xml"
    src.write_text(doc, encoding="utf-8")
    s = liteload.import_file(tmp_path / "so.db", src, record="posts/row")
    assert s.as_dict()["rows"] == 300
    got = checked(tmp_path / "so.db").execute(
        "SELECT Id, Score, Body, Title, ParentId FROM Posts ORDER BY rowid").fetchall()
    want = []
    for el in ET.parse(src).getroot().iter("row"):
        a = el.attrib
        want.append((int(a["Id"]), int(a["Score"]), a["Body"], a.get("Title"),
                     int(a["ParentId"]) if "ParentId" in a else None))
    assert got == want
    assert liteload.sniff(src)["format"] == "xml"
    assert liteload.sniff(src)["record"] == "posts/row"


def test_xml_from_bytes_with_elements_and_errors(tmp_path):
    doc = b"<lib><book id='1'><title>A</title><tag>x</tag><tag>y</tag></book><book id='2'><title>B</title></book></lib>"
    liteload.import_file(tmp_path / "b.db", doc, table="books")
    got = checked(tmp_path / "b.db").execute("SELECT id, title, tag FROM books").fetchall()
    assert got == [(1, "A", '["x","y"]'), (2, "B", None)]
    with pytest.raises(liteload.BadInput) as e:
        liteload.import_file(tmp_path / "c.db", b"<lib>\n<book id='1'></lib>", table="t", record="lib/book")
    assert (e.value.line, e.value.column) == (2, 14)  # the `<` of `</lib>`
    assert not (tmp_path / "c.db").exists()



@pytest.mark.parametrize("doc", [
    '<r><meta><a>x</b></meta><row v="1"/><row v="2"/></r>',
    '<r><meta>&undefined;</meta><row v="1"/><row v="2"/></r>',
    '<r><meta a="1" a="2"/><row v="1"/><row v="2"/></r>',
    '<r><row v="1"/> a & b <row v="2"/></r>',
    '<r><row v="1"/><row v="2"/><!-- a -- b --></r>',
    '<r><row v="1"/><row v="2\x01"/></r>',
])
def test_xml_broken_anywhere_is_refused_as_etree_refuses_it(tmp_path, doc):
    """Faults above, between and inside the records: refused with a position, no file left,
    where xml.etree (a conforming parser) refuses the same document."""
    src = tmp_path / "broken.xml"
    src.write_text(doc, encoding="utf-8")
    with pytest.raises(ET.ParseError):
        ET.parse(src)
    db = tmp_path / "broken.db"
    with pytest.raises(liteload.BadInput, match=r"broken\.xml:1:\d+"):
        liteload.import_file(db, src, record="r/row")
    assert not db.exists()


def test_indexes_whose_natural_names_collide_get_names_of_their_own(tmp_path):
    """An index on column a_b and a UNIQUE one on (a, b) were both idx_t_a_b: the file
    was malformed. Now each has a name of its own, and appending again makes none twice."""
    src = tmp_path / "t.csv"
    db = tmp_path / "n.db"
    for body in ("a_b,a,b\n1,1,1\n2,2,2\n", "a_b,a,b\n3,3,3\n"):
        src.write_text(body, encoding="utf-8")
        liteload.import_file(db, src, table="t", if_exists="append", indexes=["a_b"], unique_indexes=[["a", "b"]])
    c = checked(db)
    assert c.execute("SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name").fetchall() == [
        ("idx_t_a_b",), ("idx_t_a_b_2",)]
    assert c.execute("SELECT count(*) FROM t").fetchone() == (3,)
    with pytest.raises(sqlite3.IntegrityError):
        c.execute("INSERT INTO t VALUES (9, 1, 1)")

