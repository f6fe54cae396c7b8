"""JSON as people have it, through import_file: records under keys, and nested objects
flattened into columns, each compared with what Python's json reads, mapped by the
documented rules in a reference written here."""
import json
import random

import pytest

import liteload
from conftest import checked


def test_json_records_at_a_path_equal_what_json_reads(tmp_path):
    """JSON records under keys: what Python's json finds at the path, row for row."""
    recs = [{"id": i, "name": f"n{i} é 😀", "v": i / 7, "o": {"x": [i]}} for i in range(200)]
    doc = {"Version": "5.5", "data": {"a.b": {"items": recs}, "more": [1, 2]}, "z": None}
    src = tmp_path / "export.json"
    src.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    for i, path in enumerate(["/data/a.b/items"]):
        s = liteload.import_file(tmp_path / "j.db", src, table=f"t{i}", record=path)
        assert s.as_dict()["rows"] == 200
        conn = checked(tmp_path / "j.db")
        got = conn.execute(f"SELECT id, name, v, o FROM t{i} ORDER BY rowid").fetchall()
        # Closed now: sqlite3 frees a connection only when its cycle is collected, and a
        # load refuses a file another copy of SQLite in the process holds open.
        conn.close()
        want = [(r["id"], r["name"], r["v"], json.dumps(r["o"], separators=(",", ":"))) for r in json.load(open(src))["data"]["a.b"]["items"]]
        assert got == want
    with pytest.raises(liteload.BadInput, match=r"has no member \"a\""):
        liteload.import_file(tmp_path / "j.db", src, table="bad", record="data.a.b.items")
    # Without a path: the top-level object's one member holding objects.
    src.write_text(json.dumps({"v": 1, "List": recs[:3]}), encoding="utf-8")
    assert liteload.import_file(tmp_path / "j.db", src, table="auto").as_dict()["rows"] == 3
    assert liteload.sniff(src)["record"] == "List"


def allocated(wanted):
    """Column names for ``wanted`` by the documented rule: a name SQLite would take for
    an earlier one (ASCII case ignored) gets ``_2``, ``_3``, …"""
    names, taken = [], set()
    for w in wanted:
        name, k = w, 2
        while name.lower() in taken:
            name, k = f"{w}_{k}", k + 1
        taken.add(name.lower())
        names.append(name)
    return names


def reference_flatten(records, sep):
    """Columns (names by the documented rule) and rows of ``records`` flattened."""
    paths, rows = [], []
    for rec in records:
        out = {}

        def walk(prefix, obj):
            for k, v in obj.items():
                p = prefix + (k,)
                if isinstance(v, dict):
                    walk(p, v)
                else:
                    out[p] = v

        walk((), rec)
        for p in out:
            if p not in paths:
                paths.append(p)
        rows.append(out)
    names = allocated([sep.join(p).strip() and sep.join(p) or f"c{i + 1}" for i, p in enumerate(paths)])

    def cell(v):
        if isinstance(v, list):
            return json.dumps(v, separators=(",", ":"), ensure_ascii=False)
        if isinstance(v, bool):
            return int(v)
        return v

    return names, [tuple(cell(r.get(p)) for p in paths) for r in rows]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sep", ["_", "."])
def test_flattened_records_equal_the_reference(tmp_path, seed, sep):
    rnd = random.Random(seed)
    keys = ["a", "b", "a_b", "A", "é", "😀 x", "", "owner", "name"]

    def tree(depth):
        """A shape: each key a leaf kind or a nested shape."""
        return {k: (tree(depth + 1) if depth < 3 and rnd.random() < 0.35 else rnd.choice(["int", "str", "bool", "list"]))
                for k in rnd.sample(keys, rnd.randint(1, 4))}

    def value(kind):
        if rnd.random() < 0.15:
            return None
        return {"int": lambda: rnd.randint(-10**12, 10**12), "str": lambda: rnd.choice(["x", "Zoë", "😀", "", "a,b\n\"q\""]),
                "bool": lambda: rnd.random() < 0.5, "list": lambda: [1, {"k": "é"}, None]}[kind]()

    def record(shape):
        out = {}
        for k, v in shape.items():
            if rnd.random() < 0.2:
                continue
            if isinstance(v, dict):
                r = rnd.random()
                out[k] = None if r < 0.1 else {} if r < 0.2 else record(v)
            else:
                out[k] = value(v)
        return out

    shape = tree(0)
    records = [record(shape) for _ in range(300)]
    src = tmp_path / "r.ndjson"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    names, want = reference_flatten(records, sep)
    if not names:
        return
    flatten = sep if sep != "_" else True
    liteload.import_file(tmp_path / "f.db", src, table="t", flatten=flatten)
    # The same records as dict rows (sampled from the same first rows).
    liteload.write(tmp_path / "w.db", "t", records, flatten=flatten)
    for db in ["f.db", "w.db"]:
        conn = checked(tmp_path / db)
        got_names = [r[1] for r in conn.execute('PRAGMA table_info("t")')]
        assert got_names == names, db
        assert conn.execute('SELECT * FROM "t" ORDER BY rowid').fetchall() == want, db
        conn.close()


@pytest.mark.parametrize("seed", range(4))
def test_flattened_structs_equal_pyarrows_flatten(tmp_path, seed):
    """Parquet struct columns flattened: every cell equals pyarrow's own Table.flatten()
    applied until no struct is left (its NULL where a struct above is NULL), names joined
    by ".", as --flatten-separator . names them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rnd = random.Random(seed)
    n = 500

    def maybe(v):
        return None if rnd.random() < 0.15 else v

    inner = pa.struct([("city", pa.string()), ("zip", pa.int64()), ("geo", pa.struct([("lat", pa.float64())]))])
    owner_t = pa.struct([("name", pa.string()), ("address", inner), ("tags", pa.list_(pa.int32()))])
    owners = [maybe({"name": maybe(rnd.choice(["Zoë", "😀", "", "x"])),
                     "address": maybe({"city": maybe("Köln"), "zip": maybe(rnd.randint(-2**40, 2**40)),
                                       "geo": maybe({"lat": maybe(rnd.random())})}),
                     "tags": maybe([rnd.randint(0, 9)])}) for _ in range(n)]
    t = pa.table({"id": list(range(n)), "owner": pa.array(owners, type=owner_t),
                  "owner.name": [f"top {i}" for i in range(n)]})
    pq.write_table(t, tmp_path / "s.parquet", row_group_size=97)
    flat = t
    while any(pa.types.is_struct(c.type) for c in flat.columns):
        flat = flat.flatten()
    liteload.import_file(tmp_path / "p.db", tmp_path / "s.parquet", table="t", flatten=".")
    conn = checked(tmp_path / "p.db")
    names = [r[1] for r in conn.execute('PRAGMA table_info("t")')]
    # The top-level "owner.name" collides with the struct's field: it gets "_2".
    assert names == ["id", "owner.name", "owner.address.city", "owner.address.zip", "owner.address.geo.lat",
                     "owner.tags", "owner.name_2"]
    # (By column: two of pyarrow's columns share a name.)
    want = [tuple(json.dumps(v, separators=(",", ":")) if isinstance(v, list) else v for v in r)
            for r in zip(*[c.to_pylist() for c in flat.columns])]
    assert conn.execute('SELECT * FROM "t" ORDER BY rowid').fetchall() == want


def reference_xml_flatten(root, sep):
    """The columns and rows of each record element under ``root`` flattened by the
    documented rules, read by ElementTree: attributes and text-only children named once
    are text; a child with attributes or children is flattened in turn; a name that
    repeats is one JSON array; an element's own text (trimmed) is ``text``."""
    import xml.etree.ElementTree as ET

    def as_json(el):
        if not el.attrib and len(el) == 0:
            return el.text or ""
        m = {f"@{k}": v for k, v in el.attrib.items()}
        groups = {}
        for c in el:
            groups.setdefault(c.tag, []).append(c)
        for tag, g in groups.items():
            m[tag] = as_json(g[0]) if len(g) == 1 else [as_json(c) for c in g]
        t = (el.text or "").strip(" \t\r\n")
        if t:
            m["#text"] = t
        return m

    def fields(el, path, out, top):
        for k, v in el.attrib.items():
            out[path + (k if top else "@" + k,)] = v
        groups = {}
        for c in el:
            groups.setdefault(c.tag, []).append(c)
        for tag, g in groups.items():
            p = path + (tag,)
            if len(g) > 1:
                out[p] = json.dumps([as_json(c) for c in g], ensure_ascii=False, separators=(",", ":"))
            elif not g[0].attrib and len(g[0]) == 0:
                out[p] = g[0].text or ""
            else:
                fields(g[0], p, out, False)
        t = (el.text or "").strip(" \t\r\n")
        if t:
            out[path + ("#text",)] = t
        return out

    rows = [fields(el, (), {}, True) for el in root]
    paths = []
    for r in rows:
        for p in r:
            if p not in paths:
                paths.append(p)
    names = allocated([sep.join("text" if s == "#text" else s.lstrip("@") for s in p) for p in paths])
    return names, [tuple(r.get(p) for p in paths) for r in rows]


@pytest.mark.parametrize("seed", range(4))
def test_flattened_xml_equals_the_reference(tmp_path, seed):
    """Random records with nested children, attributes at every level, repeats, own text
    and names that collide once joined: the columns and every cell equal ElementTree's
    reading mapped by the rules (all values text here, so no typing is involved)."""
    import xml.etree.ElementTree as ET
    from xml.sax.saxutils import escape, quoteattr

    rnd = random.Random(seed)
    names = ["a", "b", "a_b", "name", "city", "é"]

    def element(tag, depth):
        attrs = "".join(f" {k}={quoteattr(rnd.choice(['x', 'Zoë', '😀 & <', 'v']))}"
                        for k in rnd.sample(["id", "a", "kind"], rnd.randint(0, 2)))
        if depth >= 3 or rnd.random() < 0.4:
            return f"<{tag}{attrs}>{escape(rnd.choice(['t', 'Köln', 'x y', 'w']))}</{tag}>"
        kids = [rnd.choice(names) for _ in range(rnd.randint(1, 3))]
        own = escape(rnd.choice(["", "", " note "]))
        return f"<{tag}{attrs}>{own}" + "".join(element(k, depth + 1) for k in kids) + f"</{tag}>"

    recs = []
    for i in range(200):
        kids = "".join(element(k, 1) for k in rnd.sample(names, rnd.randint(1, 4)))
        recs.append(f'<r n="w{i}">{kids}</r>')
    doc = "<root>" + "\n".join(recs) + "</root>"
    src = tmp_path / "d.xml"
    src.write_text(doc, encoding="utf-8")
    want_names, want = reference_xml_flatten(ET.fromstring(doc), "_")
    liteload.import_file(tmp_path / "x.db", src, table="t", flatten=True, types={n: "text" for n in want_names})
    conn = checked(tmp_path / "x.db")
    assert [r[1] for r in conn.execute('PRAGMA table_info("t")')] == want_names
    assert conn.execute('SELECT * FROM "t" ORDER BY rowid').fetchall() == want


def split_reference(records, top, scalars_as_json=False, key=None):
    """The documented related-tables rules, written plainly for records whose keys are
    names other than _id, _parent, _position and value, without flattening: {table:
    [row dicts in _id order]}; `key`: the records' member that keys them. Table and
    column names taken (ASCII case ignored) get `_2`, `_3`, … as first met."""
    tables = {top: []}
    names = {top: top}
    used = {top.lower()}

    def allocate(wanted):
        name, k = wanted, 2
        while name.lower() in used:
            name, k = f"{wanted}_{k}", k + 1
        used.add(name.lower())
        return name

    columns, taken = {}, {}

    def column(table, k):
        """The column of member `k` in `table`: named when first met, `_2` where the
        name is taken (ASCII case ignored)."""
        if table not in columns:
            keyed_top = key and table == top
            columns[table] = {key: key} if keyed_top else {}
            taken[table] = ({key.lower()} if keyed_top else {"_id"} if table == top
                            else {"_id", "_parent", "_position"})
        m = columns[table]
        if k not in m:
            name, n = k, 2
            while name.lower() in taken[table]:
                name, n = f"{k}_{n}", n + 1
            taken[table].add(name.lower())
            m[k] = name
        return m[k]

    def takes(a):
        return not scalars_as_json or any(isinstance(e, (dict, list)) for e in a)

    def row(table, obj, parent):
        rid = len(tables[table]) + 1
        r = {"_id": rid}
        if key and table == top:
            rid = obj[key]
            r = {}
        if parent:
            r["_parent"], r["_position"] = parent
        tables[table].append(r)
        for k, v in obj.items():
            if isinstance(v, list) and takes(v):
                if (table, k) not in names:
                    names[(table, k)] = allocate(f"{table}_{k}")
                child = names[(table, k)]
                tables.setdefault(child, [])
                for i, e in enumerate(v):
                    row(child, e if isinstance(e, dict) else {"value": e}, (rid, i))
            else:
                c = column(table, k)
                r[c] = json.dumps(v, separators=(",", ":"), ensure_ascii=False) if isinstance(v, (dict, list)) else v
        return rid

    for rec in records:
        row(top, rec, None)
    return {t: rows for t, rows in tables.items() if rows or t == top}


@pytest.mark.parametrize("scalars_as_json,keyed", [(False, False), (True, False), (False, True)])
def test_nested_arrays_become_related_tables_as_documented(tmp_path, scalars_as_json, keyed):
    """nested="tables": every table equals the reference's rows, keys and positions,
    with SQLite's foreign_key_check clean and an index on each _parent; `keyed`, the
    records keyed by their own id (shuffled), which their children reference."""
    rng = random.Random(53)
    words = ["a", "é 😀", "", "x" * 300, "007", "12"]
    recs = []
    ids = list(range(-1500, 1500))
    rng.shuffle(ids)
    for i in range(3000):
        rec = {"id": ids[i], "name": rng.choice(words), "v": rng.choice([1.5, -2, None, True])}
        if rng.random() < 0.8:
            rec["items"] = [
                {"sku": rng.choice(words), "qty": rng.randint(0, 9),
                 "discounts": [{"pct": rng.randint(1, 50)} for _ in range(rng.randint(0, 2))]}
                for _ in range(rng.randint(0, 3))
            ]
        if rng.random() < 0.5:
            rec["tags"] = [rng.choice(words) for _ in range(rng.randint(0, 3))]
        if rng.random() < 0.1:
            rec["grid"] = [[rng.randint(0, 9) for _ in range(2)], []]
        if rng.random() < 0.2:
            rec["meta"] = {"k": [1, {"z": None}]}
        recs.append(rec)
    src = tmp_path / "orders.ndjson"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    db = tmp_path / "o.db"
    kw = {"scalar_arrays": "json"} if scalars_as_json else {}
    if keyed:
        kw["pk"] = "id"
    s = liteload.import_file(db, src, table="orders", nested="tables", **kw)
    want = split_reference(recs, "orders", scalars_as_json, "id" if keyed else None)
    if keyed:
        # An INTEGER key is the rowid: the rows read back in its order.
        want["orders"].sort(key=lambda r: r["id"])
    assert s.as_dict()["rows"] == sum(len(r) for r in want.values())
    conn = checked(db)
    got_tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert got_tables == set(want)
    for table, rows_ in want.items():
        cols = [c for (c,) in conn.execute(f"SELECT name FROM pragma_table_info('{table}')")]
        got = conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
        expected = [tuple(1 if r.get(c) is True else r.get(c) for c in cols) for r in rows_]
        assert got == expected, table
    assert conn.execute("SELECT count(*) FROM pragma_foreign_key_check").fetchone() == (0,)
    indexed = conn.execute(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND sql LIKE '%(\"_parent\")'"
    ).fetchone()[0]
    assert indexed == len(want) - 1
    if not keyed and not scalars_as_json:
        liteload.import_file(tmp_path / "n.db", src, table="orders", nested="tables",
                             child_tables={"items": "lines", "items.discounts": "d"})
        named = checked(tmp_path / "n.db").execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").fetchall()
        assert [n for (n,) in named] == sorted(["d", "lines", *(t for t in want if "items" not in t)])
    with pytest.raises(liteload.UsageError, match="scalar_arrays"):
        liteload.import_file(tmp_path / "x.db", src, scalar_arrays="json")
    with pytest.raises(liteload.UsageError, match="nested"):
        liteload.import_file(tmp_path / "x.db", src, nested="deep")
    assert not (tmp_path / "x.db").exists()


def arrow_reference_records(table, lists, structs, of_lists):
    """Python's records of a pyarrow table as the related-tables rules read typed
    input: a NULL list (a column or field named in `lists`) gives no row, as an empty
    one; a NULL element of a list of structs (`structs`) is a row of NULLs; the
    elements of a list of lists (`of_lists`) are lists too."""
    def fix(v, key):
        if isinstance(v, dict):
            return {k: fix(x, k) for k, x in v.items()}
        if key in lists and v is None:
            return []
        if isinstance(v, list):
            return [{} if e is None and key in structs else fix(e, "value" if key in of_lists else None)
                    for e in v]
        return v

    lists = set(lists) | {"value"}
    return [fix(r, None) for r in table.to_pylist()]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
@pytest.mark.parametrize("keyed", [False, True])
def test_parquet_and_arrow_lists_become_related_tables_as_documented(tmp_path, seed, fmt, keyed):
    """nested="tables" on typed input: every list column is a child table (a list of
    structs, of scalars, of lists), NULLs at every level, row groups and batches of
    several sizes; every table equals the documented split of pyarrow's own records,
    foreign_key_check clean. `keyed`: the records keyed by their own column (shuffled
    integers, or strings), which their children reference."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.feather
    import pyarrow.parquet

    rng = random.Random(seed)
    words = ["a", "é 😀", "", "x" * 300, "nul\x00inside", None]
    n = rng.choice([1, 7, 3000])

    def maybe(v, p=0.15):
        return None if rng.random() < p else v

    item = pa.struct([("sku", pa.string()), ("qty", pa.int64()), ("pct", pa.list_(pa.float64()))])
    ids = list(range(-n, n))
    rng.shuffle(ids)
    text_key = keyed and seed % 2 == 1
    columns = {
        "id": (pa.array([f"k{ids[i]}é" for i in range(n)], pa.string()) if text_key
               else pa.array([ids[i] for i in range(n)], pa.int64()) if keyed
               else pa.array([maybe(i) for i in range(n)], pa.int64())),
        "name": pa.array([rng.choice(words) for _ in range(n)], pa.string()),
        "flag": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
        "items": pa.array([
            maybe([maybe({"sku": rng.choice(words), "qty": maybe(rng.randint(-5, 5)),
                          "pct": maybe([maybe(rng.random()) for _ in range(rng.randint(0, 2))])})
                   for _ in range(rng.randint(0, 3))])
            for _ in range(n)], pa.list_(item)),
        "tags": pa.array([maybe([rng.choice(words) for _ in range(rng.randint(0, 3))]) for _ in range(n)],
                         pa.large_list(pa.string())),
        "grid": pa.array([maybe([maybe([rng.randint(0, 9) for _ in range(rng.randint(0, 2))])
                                 for _ in range(rng.randint(0, 2))]) for _ in range(n)],
                         pa.list_(pa.list_(pa.int32()))),
    }
    table = pa.table(columns)
    src = tmp_path / f"t.{fmt}"
    if fmt == "parquet":
        pyarrow.parquet.write_table(table, src, row_group_size=rng.choice([5, 1000, 100_000]))
    else:
        pyarrow.feather.write_feather(table, src, chunksize=rng.choice([5, 1000, 100_000]))
    db = tmp_path / "t.db"
    liteload.import_file(db, src, table="t", nested="tables", **({"pk": "id"} if keyed else {}))

    recs = arrow_reference_records(table, {"items", "tags", "grid", "pct"}, {"items"}, {"grid"})
    want = split_reference(recs, "t", key="id" if keyed else None)
    if keyed and not text_key:
        # An INTEGER key is the rowid: the rows read back in its order.
        want["t"].sort(key=lambda r: r["id"])
    conn = checked(db)
    got_tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert got_tables == set(want)
    for name, rows_ in want.items():
        cols = [c for (c,) in conn.execute(f"SELECT name FROM pragma_table_info('{name}')")]
        assert {k for r in rows_ for k in r} <= set(cols), name
        got = conn.execute(f'SELECT * FROM "{name}" ORDER BY rowid').fetchall()
        expected = [tuple(r.get(c) for c in cols) for r in rows_]
        assert got == expected, name
    assert conn.execute("SELECT count(*) FROM pragma_foreign_key_check").fetchone() == (0,)


def test_write_takes_arrow_data_apart_as_import_file_takes_parquet(tmp_path):
    """write(nested="tables", flatten=True) on a pyarrow table and a polars frame: the
    same tables as import_file makes of the same rows in a Parquet file; dict rows are
    refused."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet

    table = pa.table({
        "id": [1, 2, 3],
        "owner": [{"name": "Zoë", "phones": ["1", "2"]}, None, {"name": "x", "phones": []}],
        "items": [[{"sku": "a", "n": 2}, None], None, [{"sku": "b", "n": None}]],
    })
    pyarrow.parquet.write_table(table, tmp_path / "t.parquet")
    kw = dict(nested="tables", flatten=True, child_tables={"owner.phones": "phones"})
    liteload.import_file(tmp_path / "f.db", tmp_path / "t.parquet", table="t", **kw)
    frames = [table]
    try:
        import polars
        frames.append(polars.from_arrow(table))
    except ImportError:
        pass
    want = checked(tmp_path / "f.db")
    names = [n for (n,) in want.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")]
    assert names == ["phones", "t", "t_items"]
    for i, data in enumerate(frames):
        db = tmp_path / f"w{i}.db"
        liteload.write(db, "t", data, **kw)
        got = checked(db)
        for n in names:
            q = f'SELECT * FROM "{n}" ORDER BY _id'
            assert got.execute(q).fetchall() == want.execute(q).fetchall(), (i, n)
        assert got.execute("SELECT count(*) FROM pragma_foreign_key_check").fetchone() == (0,)
    with pytest.raises(liteload.UsageError, match="applies to Arrow data"):
        liteload.write(tmp_path / "d.db", "t", [{"a": [{"b": 1}]}], nested="tables")
    assert not (tmp_path / "d.db").exists()


def xml_object(el):
    """An element as the related-tables rules for XML read it: attributes and text-only
    children named once are strings, children with attributes or children of their own
    lists of objects (of one, too), text-only children that repeat lists of strings, the
    element's own text (trimmed) `text`; a name taken in the element (ASCII case
    ignored) gets `_2`."""
    m, taken = {}, []

    def put(name, v):
        n, k = name, 2
        while n.lower() in taken:
            n, k = f"{name}_{k}", k + 1
        taken.append(n.lower())
        m[n] = v

    def simple(c):
        return not c.attrib and len(c) == 0

    for k, v in el.attrib.items():
        put(k, v)
    groups = {}
    for c in el:
        groups.setdefault(c.tag, []).append(c)
    for name, group in groups.items():
        if len(group) == 1 and simple(group[0]):
            put(name, group[0].text or "")
        else:
            put(name, [c.text or "" if simple(c) else xml_object(c) for c in group])
    own = ((el.text or "") + "".join(c.tail or "" for c in el)).strip(" \t\r\n")
    if own:
        put("text", own)
    return m


def csv_typed(values):
    """A column's type and values from its text values, as CSV fields are typed."""
    import re
    ints = re.compile(r"-?(0|[1-9][0-9]*)$")
    reals = re.compile(r"-?(0|[1-9][0-9]*)\.[0-9]+$")
    present = [v for v in values if v not in (None, "")]
    if present and all(ints.match(v) and abs(int(v)) < 2**63 for v in present):
        return "INTEGER", [int(v) if v not in (None, "") else None for v in values]
    if present and all(ints.match(v) or reals.match(v) for v in present):
        return "REAL", [float(v) if v not in (None, "") else None for v in values]
    return "TEXT", values


@pytest.mark.parametrize("seed", range(6))
def test_xml_repeated_children_become_related_tables_as_documented(tmp_path, seed):
    """nested="tables" on XML: random documents (attributes and children that collide
    by name, repeated and single children, elements with and without attributes, own
    text, entities) split by the documented rules in a reference read by
    xml.etree, every table's types and rows equal, foreign_key_check clean."""
    import xml.etree.ElementTree as ET

    rng = random.Random(seed)
    texts = ["12", "-3", "0", "1.5", "-2.25", "abc", "007", "é 😀", "a & b <c>", "", "x y"]

    def esc(v):
        return v.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")

    def element(name, depth):
        attrs = {k: rng.choice(texts) for k in rng.sample(["id", "sku", "Kind"], rng.randint(0, 2))}
        parts = []
        for _ in range(rng.randint(0, 4)):
            child = rng.choice(["status", "note", "id", "tag", "tag", "text", "Status"]
                               + (["item", "discount"] if depth < 3 else []))
            if child in ("item", "discount"):
                parts.append(element(child, depth + 1))
            else:
                parts.append(f"<{child}>{esc(rng.choice(texts))}</{child}>")
        own = esc(rng.choice(texts)) if rng.random() < 0.3 else ""
        body = own + "\n  ".join(parts)
        a = "".join(f' {k}="{esc(v)}"' for k, v in attrs.items())
        return f"<{name}{a}>{body}</{name}>" if body else f"<{name}{a}/>"

    records = [element("rec", 1) for _ in range(rng.randint(1, 60))]
    doc = "<?xml version=\"1.0\"?>\n<root>\n" + "\n".join(records) + "\n</root>\n"
    src = tmp_path / "t.xml"
    src.write_text(doc, encoding="utf-8")
    db = tmp_path / "t.db"
    liteload.import_file(db, src, table="t", nested="tables", record="root/rec")
    recs = [xml_object(el) for el in ET.parse(src).getroot()]
    want = split_reference(recs, "t")
    conn = checked(db)
    got_tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert got_tables == set(want)
    for name, rows_ in want.items():
        info = [(c, ty) for (_, c, ty, *_rest) in conn.execute(f"PRAGMA table_info('{name}')")]
        cols = [c for c, _ in info]
        assert {k for r in rows_ for k in r} <= set(cols), name
        expected = {}
        for c, ty in info:
            values = [r.get(c) for r in rows_]
            if c in ("_id", "_parent", "_position"):
                expected[c] = ("INTEGER", values)
            else:
                expected[c] = csv_typed(values)
        assert [(c, expected[c][0]) for c in cols] == info, name
        got = conn.execute(f'SELECT * FROM "{name}" ORDER BY _id').fetchall()
        assert got == list(zip(*(expected[c][1] for c in cols))), name
    assert conn.execute("SELECT count(*) FROM pragma_foreign_key_check").fetchone() == (0,)


def test_xml_records_keyed_by_an_attribute_through_import_file(tmp_path):
    """pk= on XML with nested="tables": the records' table keyed by its own attribute
    (INTEGER where every key is an integer written plainly), each child's _parent that
    key, declared as a FOREIGN KEY to it; a repeated key is a bad record, refused unless
    max_errors allows it."""
    ids = [(i * 7) % 50 for i in range(50)]
    doc = "<orders>" + "".join(
        f'<order id="{k}"><note>é &amp; {k}</note><item sku="a{k}"/><item sku="b{k}"/></order>'
        for k in ids) + "</orders>"
    src = tmp_path / "o.xml"
    src.write_text(doc, encoding="utf-8")
    db = tmp_path / "o.db"
    liteload.import_file(db, src, table="orders", nested="tables", pk="id")
    conn = checked(db)
    assert conn.execute("SELECT id, typeof(id), note FROM orders ORDER BY rowid").fetchall() == [
        (k, "integer", f"é & {k}") for k in sorted(ids)]
    got = conn.execute("SELECT _parent, _position, sku FROM orders_item ORDER BY _id").fetchall()
    assert got == [(k, p, f"{'ab'[p]}{k}") for k in ids for p in (0, 1)]
    assert conn.execute("SELECT \"table\", \"to\" FROM pragma_foreign_key_list('orders_item')"
                        ).fetchall() == [("orders", "id")]
    assert conn.execute("SELECT count(*) FROM pragma_foreign_key_check").fetchone() == (0,)

    src.write_text('<orders><order id="1"/><order id="1"/><order id="2"/></orders>', encoding="utf-8")
    bad = tmp_path / "bad.db"
    with pytest.raises(liteload.BadInput, match="record 1's already"):
        liteload.import_file(bad, src, table="orders", nested="tables", pk="id")
    assert not bad.exists()
    liteload.import_file(bad, src, table="orders", nested="tables", pk="id", max_errors=1)
    assert checked(bad).execute("SELECT id FROM orders ORDER BY id").fetchall() == [(1,), (2,)]


def test_nested_tables_without_type_detection_keep_integer_keys(tmp_path):
    """nested="tables", detect_types=False: every column of the input is TEXT (a number
    its JSON text, as the flat load stores it), while `_id`, `_parent` and `_position`
    stay INTEGER keys; every row equals the reference's."""
    recs = [
        {"a": 1, "xs": [{"b": 2.5, "s": "é\u0000😀"}, {"b": "x"}]},
        {"a": "two", "xs": [{"b": 12345678901234567890123}], "n": None},
        {"a": -0.0, "xs": []},
    ]
    src = tmp_path / "t.json"
    src.write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")
    db = tmp_path / "t.db"
    liteload.import_file(db, src, table="t", nested="tables", detect_types=False)
    conn = checked(db)
    declared = lambda t: conn.execute(
        f"SELECT name, type, pk FROM pragma_table_info('{t}')").fetchall()
    assert declared("t") == [("_id", "INTEGER", 1), ("a", "TEXT", 0), ("n", "TEXT", 0)]
    assert declared("t_xs") == [("_id", "INTEGER", 1), ("_parent", "INTEGER", 0),
                                ("_position", "INTEGER", 0), ("b", "TEXT", 0), ("s", "TEXT", 0)]
    text = lambda v: v if isinstance(v, str) or v is None else json.dumps(v)
    flat = tmp_path / "flat.db"
    liteload.import_file(flat, src, table="t", detect_types=False)
    # The records' own columns as the flat load stores them (its `xs` is JSON text).
    want_top = [(i + 1, *row) for i, row in enumerate(
        checked(flat).execute("SELECT a, n FROM t ORDER BY rowid").fetchall())]
    assert conn.execute("SELECT _id, a, n FROM t ORDER BY _id").fetchall() == want_top
    want_xs, n = [], 0
    for p, r in enumerate(recs, 1):
        for pos, x in enumerate(r["xs"]):
            n += 1
            want_xs.append((n, p, pos, text(x["b"]), x.get("s")))
    assert conn.execute("SELECT _id, _parent, _position, b, s FROM t_xs ORDER BY _id").fetchall() == want_xs
    assert conn.execute("SELECT typeof(_parent), typeof(_position) FROM t_xs LIMIT 1").fetchone() == (
        "integer", "integer")
    assert conn.execute("SELECT count(*) FROM pragma_foreign_key_check").fetchone() == (0,)
