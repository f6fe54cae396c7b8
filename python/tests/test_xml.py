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

