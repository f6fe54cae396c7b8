"""liteload: load DataFrames, files and streams into SQLite as fast as the disk allows,
never leaving a half-written database behind.

A thin layer over the liteload Rust library (the same code as the ``liteload`` command,
which this package also installs):

- :func:`write` puts a DataFrame (pandas, polars), a pyarrow Table or RecordBatchReader,
  anything else with ``__arrow_c_stream__``, or an iterable of dicts into a table.
- :func:`import_file` loads CSV, TSV, NDJSON, JSON, Parquet or Arrow files, bytes or
  file objects, with the options of ``liteload import`` as keyword arguments.
- :func:`generate` makes rows of test data; :func:`ingest` keeps a current-state table
  from sparse JSON updates; :class:`KvStore` is a blob store in one SQLite file.

Every job runs with the GIL released. A new database file is written beside its name and
appears whole; an existing one is changed in one transaction; Ctrl-C
(``KeyboardInterrupt``) or an error leaves it as it was.
"""

from __future__ import annotations

import os
import datetime
import glob
from collections.abc import MutableMapping
from typing import IO, Any, Callable, Iterable, Literal, Mapping, Optional, Sequence, Union

from . import _liteload
from ._liteload import (
    BadInput,
    ConstraintError,
    Error,
    IngestSummary,
    SchemaError,
    SqliteError,
    Summary,
    UsageError,
)

__all__ = [
    "write",
    "import_file",
    "sniff",
    "generate",
    "ingest",
    "KvStore",
    "Summary",
    "IngestSummary",
    "Error",
    "BadInput",
    "UsageError",
    "SchemaError",
    "ConstraintError",
    "SqliteError",
]
__version__: str = _liteload.__version__

PathLike = Union[str, "os.PathLike[str]"]
#: ``callback(rows, rows_total, bytes_read, bytes_total)``; a total is None when unknown.
ProgressCallback = Callable[[int, Optional[int], int, Optional[int]], Any]
Progress = Union[None, bool, ProgressCallback]

Durability = Literal["atomic-new", "balanced", "durable", "unsafe"]
Engine = Literal["auto", "direct", "sqlite"]
IfExists = Literal["append", "fail", "replace"]
Format = Literal["csv", "tsv", "ndjson", "json", "xml", "parquet", "arrow"]
Columns = Union[str, Sequence[str]]
#: What :func:`import_file` reads: a path (``"-"`` is stdin), bytes, or a file object.
Source = Union[PathLike, bytes, bytearray, memoryview, IO[bytes], IO[str]]


def _keywords(values: Mapping[str, Any], *leave: str) -> dict:
    """A function's keyword arguments (its ``locals()`` at the start) for its native
    half, which takes each by name: the parameters in ``leave`` are passed apart."""
    return {k: (os.fspath(v) if isinstance(v, os.PathLike) else v) for k, v in values.items() if k not in leave}


class KvStore(_liteload.KvStore, MutableMapping):
    """A blob store in one SQLite file, as a mutable mapping: keys are ints or strs,
    values bytes (any bytes-like value, or a binary file object read to its end, is
    stored as bytes). Every write commits on its own, except those of one
    :meth:`put_many` or :meth:`update`, which commit together.

    ``KvStore(path, durability="balanced", mmap_size=0, page_size=None, cache_size=None,
    int_keys=False, create=False)``: opens the store, creating the file if needed. A
    file that holds other tables and no store is refused (:class:`SchemaError`) unless
    ``create=True``. ``int_keys=True`` makes a new store whose keys are ints only, each
    the row's rowid.
    """

    def update(self, other: Any = (), /, **kwds: Any) -> None:
        """Stores every pair of ``other`` (a mapping, or an iterable of pairs) and of the
        keyword arguments, in one transaction: all or none."""
        if isinstance(other, Mapping):
            pairs: Iterable = other.items()
        elif hasattr(other, "keys"):
            pairs = ((k, other[k]) for k in other.keys())
        else:
            pairs = other
        self.put_many(pairs)
        if kwds:
            self.put_many(kwds.items())


def _reporter(progress: Progress, desc: str) -> tuple:
    """The callback for ``progress``, and the tqdm bar to close (or None)."""
    if progress is None or progress is False:
        return None, None
    if callable(progress):
        return progress, None
    if progress is not True:
        raise TypeError("progress is True, False, None or a callable")
    try:
        from tqdm.auto import tqdm
    except ImportError:
        import warnings

        warnings.warn("progress=True draws a bar with tqdm, which is not installed (pip install tqdm)", stacklevel=4)
        return None, None
    state: dict = {}

    def update(rows: int, rows_total: Optional[int], bytes_read: int, bytes_total: Optional[int]) -> None:
        bar = state.get("bar")
        by_bytes = bool(bytes_total)
        if bar is None:
            bar = tqdm(
                desc=desc,
                total=bytes_total if by_bytes else rows_total,
                unit="B" if by_bytes else " rows",
                unit_scale=True,
            )
            state["bar"] = bar
        bar.n = bytes_read if by_bytes else rows
        bar.refresh()

    class _Closer:
        def close(self) -> None:
            bar = state.get("bar")
            if bar is not None:
                bar.close()

    return update, _Closer()


def _run(job: Callable[[Any], Any], progress: Progress, desc: str) -> Any:
    callback, bar = _reporter(progress, desc)
    try:
        return job(callback)
    finally:
        if bar is not None:
            bar.close()


def _is_pandas(data: Any) -> bool:
    return type(data).__module__.startswith("pandas") and hasattr(data, "itertuples")


def _frame(df: Any, index: bool) -> Any:
    """A pandas frame as it is written: its index as the first column(s) when ``index``
    (named, or ``index`` when unnamed, as ``to_sql`` does), else without it; a Period
    column refused by name (its ordinals would be stored silently)."""
    import pandas as pd

    for name, dtype in df.dtypes.items():
        if isinstance(dtype, pd.PeriodDtype):
            raise UsageError(
                f"write(): column {name!r} holds Periods ({dtype}), which SQLite has no type for: "
                f"convert it first, e.g. df[{name!r}].dt.to_timestamp() or .astype(str)"
            )
        if pd.api.types.is_complex_dtype(dtype):
            raise UsageError(
                f"write(): column {name!r} holds complex numbers ({dtype}), which SQLite has no type for: "
                f"convert it first, e.g. into two columns of .real and .imag"
            )
    if index:
        return df.reset_index()
    return df


def _is_polars(data: Any) -> bool:
    return type(data).__module__.startswith("polars") and hasattr(data, "schema") and hasattr(data, "with_columns")


def _polars_frame(df: Any) -> Any:
    """A polars frame as it is written: a column of Python objects, or of 128-bit
    integers (which Arrow's C interface does not carry), refused by name; a column of
    the Null type (no value at all) made TEXT, as an empty pandas object column is."""
    import polars as pl

    wide = {getattr(pl, n) for n in ("Int128", "UInt128") if hasattr(pl, n)}
    nulls = []
    for name, dtype in df.schema.items():
        if dtype == pl.Object:
            raise UsageError(
                f"write(): column {name!r} holds Python objects (polars Object), which have no "
                f"SQLite type: convert it first (to pl.String, or pl.Binary)"
            )
        if any(dtype == w for w in wide):
            raise UsageError(
                f"write(): column {name!r} is {dtype}, wider than SQLite's 64-bit INTEGER: "
                f"cast it to pl.Int64 where the values fit, or to pl.String to keep every digit"
            )
        if dtype == pl.Null:
            nulls.append(name)
    if nulls:
        df = df.with_columns([pl.col(n).cast(pl.String) for n in nulls])
    return df


def _by_columns(df: Any) -> Any:
    """A frame Arrow cannot take whole, column by column: each column Arrow takes as it
    would in the frame, and an object column of mixed types as the text its TEXT column
    would store for each value; None when such a column would not be TEXT (bytes among
    its values, or no text in the sampled rows), and the frame then goes row by row."""
    import pyarrow as pa

    arrays = []
    for i in range(df.shape[1]):
        column = df.iloc[:, [i]]
        try:
            arrays.append(pa.Table.from_pandas(column, preserve_index=False).column(0))
        except (pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
            texts = _liteload.column_text(column.iloc[:, 0].tolist())
            if texts is None:
                return None
            arrays.append(pa.array(texts, pa.string()))
    return pa.Table.from_arrays(arrays, names=[str(c) for c in df.columns])


def _pandas_rows(df: Any) -> Iterable[dict]:
    """A pandas DataFrame's rows as dicts, for frames Arrow cannot hold (an object column
    of mixed types): each value keeps its own type, as SQLite stores it."""
    names = [str(c) for c in df.columns]
    for row in df.itertuples(index=False, name=None):
        yield dict(zip(names, row))


def _data(data: Any, index: bool) -> Any:
    """What to hand to the native layer: Arrow data, or an iterator of dicts."""
    if _is_pandas(data):
        data = _frame(data, index)
        try:
            import pyarrow as pa
        except ImportError:
            return _pandas_rows(data)
        try:
            t = pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
            t = _by_columns(data)
            if t is None:
                return _pandas_rows(data)
        # pyarrow takes str among bytes as bytes: such a column keeps each value's type
        # only row by row.
        for i, field in enumerate(t.schema):
            binary = pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type)
            if binary and data.dtypes.iloc[i] == object and any(isinstance(x, str) for x in data.iloc[:, i]):
                return _pandas_rows(data)
        # An object column with no value (an empty frame, or all None) has Arrow's null
        # type; pandas holds text in object columns, so it is declared TEXT.
        for i, field in enumerate(t.schema):
            if pa.types.is_null(field.type) and data.dtypes.iloc[i] == object:
                t = t.set_column(i, field.with_type(pa.string()), t.column(i).cast(pa.string()))
        return t
    if _is_polars(data):
        return _polars_frame(data)
    return data


def write(
    db: PathLike,
    table: str,
    data: Any,
    *,
    if_exists: Optional[IfExists] = None,
    mode: Optional[Literal["create", "append", "replace"]] = None,
    alter: bool = False,
    index: bool = False,
    dtype: Optional[Mapping[str, Literal["integer", "real", "text"]]] = None,
    pk: Optional[Columns] = None,
    on_conflict: Literal["fail", "ignore", "replace", "update"] = "fail",
    key: Optional[Columns] = None,
    indexes: Iterable[Columns] = (),
    unique_indexes: Iterable[Columns] = (),
    durability: Optional[Durability] = None,
    engine: Engine = "auto",
    threads: Optional[int] = None,
    flatten: Union[bool, str] = False,
    nested: Literal["json", "tables"] = "json",
    scalar_arrays: Literal["table", "json"] = "table",
    child_tables: Optional[Mapping[str, str]] = None,
    progress: Progress = None,
) -> Summary:
    """Write ``data`` into ``table`` of the SQLite database ``db`` (a path, or an rqlite
    cluster: ``"rqlite://HOST:PORT"``, as the command takes it).

    ``data`` is anything with the Arrow PyCapsule stream interface
    (``__arrow_c_stream__``: a pyarrow Table or RecordBatchReader, a polars DataFrame, a
    DuckDB relation), a pandas DataFrame (through pyarrow when it is installed; an object
    column of mixed types that holds text is converted alone, to the text its TEXT
    column stores; one with bytes, or with no text among its first 10,000 values, makes
    the frame go row by row, each value keeping its type), or
    an iterable of dicts (keys are columns; a key first seen after the first 10,000 rows
    adds a column).

    Column types come from the Arrow schema (integers and booleans INTEGER, floats REAL
    with NaN as NULL, strings TEXT, binary BLOB, dates and timestamps ISO 8601 TEXT, a
    timestamp with a zone as the UTC instant with ``Z``, decimals exact TEXT, lists and
    structs JSON TEXT, categoricals their values), or for dicts from the values of the
    first rows. ``flatten`` (True: a struct's fields, or a dict's members that are
    dicts, become columns, ``owner_address_city``, as :func:`import_file` flattens
    JSON objects; a str: the separator). Arrow data only: ``nested="tables"`` (every list
    column becomes a child table ``<table>_<column>`` with ``_id``, ``_parent`` and
    ``_position``, as :func:`import_file` makes them from Parquet), ``scalar_arrays``
    and ``child_tables`` as there.

    ``if_exists`` (as pandas ``to_sql``): ``"fail"`` (the default: the table must not
    exist), ``"append"`` (create it or add to it, columns matched by name; ``alter=True``
    adds the columns it lacks) or ``"replace"`` (drop it and create it anew, in the
    load's transaction). ``mode`` is its older spelling (``"create"`` for ``"fail"``).
    A pandas frame's index is not written unless ``index=True``, which writes it as the
    first column(s), named after it (``index`` when unnamed). ``dtype`` (as ``to_sql``'s)
    declares columns ``"integer"``, ``"real"`` or ``"text"`` (``{"zip": "text"}``):
    Arrow data is cast (a value that does not convert is an error), dict rows are
    typed so, as ``import_file``'s ``types``. ``pk`` names the primary
    key of a created table; ``on_conflict`` (``"fail"``, ``"ignore"``, ``"replace"``,
    ``"update"``) and ``key`` as for :func:`import_file`; ``indexes`` and
    ``unique_indexes`` are built after the rows (a column name or a sequence of them).
    ``durability``: None picks ``"atomic-new"`` for a new file (built beside it and
    moved into place whole) and ``"balanced"`` for an existing one (WAL, one
    transaction); ``"durable"`` also survives power loss; ``"unsafe"`` can corrupt the
    file on a crash. ``engine``: ``"auto"`` writes a new file's pages directly (the
    page writer) where it applies, else through SQLite's insert path; ``"direct"`` or
    ``"sqlite"`` insist. Arrow data is converted to SQLite records on ``threads``
    threads (default: every core).

    The GIL is released while loading. ``progress`` is a callable
    ``(rows, rows_total, bytes_read, bytes_total)`` called about ten times a second, or
    True for a tqdm bar (when tqdm is installed). Ctrl-C stops the load and leaves the
    database as it was, as does any exception (from the callback, or from iterating
    ``data``), which is raised.

    Raises :class:`BadInput` (a value that cannot be stored), :class:`UsageError`
    (options that do not fit the data or the database), ``OSError`` and
    :class:`SqliteError`.
    """
    options = _keywords(locals(), "db", "table", "data", "progress", "index")
    if index and not _is_pandas(data):
        raise UsageError("write(): index=True writes a pandas frame's index, and this data has none")
    try:
        rows_total = len(data)
    except TypeError:
        rows_total = None
    data = _data(data, index)
    if dtype and hasattr(data, "__arrow_c_stream__"):
        # Arrow data is cast here; dict rows take dtype= in the library's typing.
        data = _cast(data, dtype)
        options["dtype"] = None
    return _run(
        lambda cb: _liteload.write(os.fspath(db), table, data, options, rows_total, cb),
        progress,
        f"writing {table}",
    )


_ARROW_TYPES = {"integer": "int64", "int": "int64", "real": "float64", "float": "float64", "double": "float64", "text": "string", "string": "string"}


def _cast(data: Any, dtype: Mapping[str, str]) -> Any:
    """Arrow data with the columns ``dtype`` names cast to Arrow's int64, float64 or
    string, so that they are declared INTEGER, REAL or TEXT; a column it names that the
    data lacks, a type it does not know, or a value that does not convert is a
    UsageError naming the column."""
    import pyarrow as pa

    if _is_polars(data):
        data = data.to_arrow()
    if not isinstance(data, (pa.Table, pa.RecordBatchReader)):
        data = pa.RecordBatchReader.from_stream(data)
    schema = data.schema
    fields = list(schema)
    for column, kind in dtype.items():
        if not isinstance(kind, str) or kind.lower() not in _ARROW_TYPES:
            raise UsageError(f"write(): dtype={{{column!r}: {kind!r}}}: expected 'integer', 'real' or 'text'")
        found = [i for i, f in enumerate(fields) if f.name.lower() == str(column).lower()]
        if not found:
            raise UsageError(f"write(): dtype= names column {column!r}, which the data does not have (columns: {', '.join(schema.names)})")
        i = found[0]
        fields[i] = fields[i].with_type(pa.type_for_alias(_ARROW_TYPES[kind.lower()]))
    target = pa.schema(fields)

    def cast(batch: Any) -> Any:
        try:
            return batch.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise UsageError(f"write(): dtype=: {e}") from None

    if isinstance(data, pa.Table):
        return cast(data)
    return pa.RecordBatchReader.from_batches(target, (cast(b) for b in data))


def _sources(source: Union[Source, Sequence[Source]]) -> list:
    """The sources :func:`import_file` reads, patterns expanded."""
    if _is_pandas(source) or hasattr(source, "__arrow_c_stream__"):
        raise TypeError("import_file() reads files; write() puts a DataFrame or Arrow data into a table")
    one = isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)) or hasattr(source, "read")
    items = [source] if one else list(source)
    if not items:
        raise UsageError("import_file(): no source to read")
    out: list = []
    for item in items:
        if isinstance(item, os.PathLike):
            item = os.fspath(item)
        if isinstance(item, str) and item.lower().startswith(
            ("postgresql://", "postgres://", "mysql://", "mariadb://")
        ):
            out.append(item)
        elif isinstance(item, str) and any(c in item for c in "*?[") and not os.path.exists(item):
            # A pattern names the files it matches, in name order (as the command does
            # for a pattern quoted against the shell).
            found = sorted(p for p in glob.glob(item) if os.path.isfile(p))
            if not found:
                raise FileNotFoundError(2, "no file matches this pattern", item)
            out += found
        else:
            out.append(item)
    return out


def import_file(
    db: PathLike,
    source: Union[Source, Sequence[Source]],
    *,
    table: Optional[str] = None,
    format: Optional[Format] = None,
    delimiter: Optional[str] = None,
    quote: Union[None, str, bool] = None,
    header: Optional[bool] = None,
    columns: Optional[Sequence[str]] = None,
    skip: int = 0,
    encoding: Optional[str] = None,
    sniff: bool = True,
    guess_encoding: bool = False,
    decimal_comma: bool = False,
    dates: Union[None, str, Sequence[str]] = None,
    select: Optional[Sequence[str]] = None,
    record: Optional[str] = None,
    flatten: Union[bool, str] = False,
    sheet: Optional[str] = None,
    nested: Literal["json", "tables"] = "json",
    scalar_arrays: Literal["table", "json"] = "table",
    child_tables: Optional[Mapping[str, str]] = None,
    temporal: Literal["iso", "epoch"] = "iso",
    decimals: Literal["text", "real"] = "text",
    if_exists: IfExists = "fail",
    alter: bool = False,
    pk: Optional[Columns] = None,
    on_conflict: Literal["fail", "ignore", "replace", "update"] = "fail",
    key: Optional[Columns] = None,
    indexes: Iterable[Columns] = (),
    unique_indexes: Iterable[Columns] = (),
    types: Optional[Mapping[str, Literal["integer", "real", "text"]]] = None,
    detect_types: bool = True,
    nulls: Literal["typed", "all", "unquoted"] = "typed",
    empty_null: bool = False,
    sample: Optional[int] = None,
    rejects: Optional[PathLike] = None,
    max_errors: Optional[int] = None,
    ragged: Optional[Literal["pad", "truncate"]] = None,
    max_record_bytes: Optional[int] = None,
    threads: Optional[int] = None,
    durability: Optional[Durability] = None,
    engine: Engine = "auto",
    verify: bool = False,
    page_size: Optional[int] = None,
    cache_size: Optional[int] = None,
    parse_only: bool = False,
    batch_rows: Optional[int] = None,
    rows_per_statement: Optional[int] = None,
    index_memory: Optional[int] = None,
    schema: Optional[str] = None,
    tables: Optional[Columns] = None,
    query: Optional[str] = None,
    connections: Optional[int] = None,
    views: bool = False,
    foreign_keys: bool = False,
    keep_rowids: bool = False,
    progress: Progress = None,
) -> Summary:
    """Load CSV, TSV, NDJSON, JSON, XML, Parquet or Arrow data into ``db`` (a path, or
    an rqlite cluster: ``"rqlite://HOST:PORT"``), or copy a PostgreSQL, MySQL or
    MariaDB database or SQLite files.

    PostgreSQL: ``source`` is a ``"postgresql://USER@HOST:PORT/DBNAME"`` URI (libpq's
    syntax, ``?host=/socket/dir`` for a socket; the password from the URI,
    ``PGPASSWORD`` or ``~/.pgpass``). Every base table of ``schema`` (default
    ``"public"``), or those ``tables`` names, goes into a table of the same name, all
    read inside one snapshot; ``query`` copies a query's rows into ``table``;
    ``connections`` copy at once (default: one per core, at most 8); ``views=True``
    copies views and materialized views too, each as a table of its rows (their SQL,
    and every object not copied, named in the summary's notes); ``foreign_keys=True``
    declares the foreign keys between the copied tables (one column, to a key), the rows
    checked by ``PRAGMA foreign_key_check`` after the copy. The types map as
    ``liteload import --help`` shows (``decimals`` applies to numeric); a one-column
    integer primary key becomes the INTEGER PRIMARY KEY, other keys and b-tree indexes
    are rebuilt.

    MySQL and MariaDB: ``source`` is a ``"mysql://USER@HOST:PORT/DBNAME"`` (or
    ``"mariadb://…"``) URI (``?socket=``, ``?ssl-mode=`` as the ``mysql`` client's,
    ``?ssl-ca=``; the password from the URI, ``MYSQL_PWD`` or the option files'
    ``[client]`` group). Every base table of the URI's database (or ``schema``'s), or
    those ``tables`` names, is copied the same way, inside one snapshot; ``query``,
    ``connections``, ``views`` and ``foreign_keys`` as for PostgreSQL. Triggers,
    routines, events and CHECKs are named in the summary's notes, not copied.

    SQLite files: a source that starts with SQLite's header is a database (whatever its
    name), and all sources must then be: every table (or those ``tables`` names) is
    copied with its declared schema and indexes; tables of one name are merged (the
    same columns, or refused; an INTEGER PRIMARY KEY kept, a conflict to
    ``on_conflict``; implicit rowids numbered anew unless one file alone makes the
    table, or ``keep_rowids=True``, which refuses a rowid in the table already). Each
    file is read read-only, inside one snapshot. Into a cluster: an empty one is booted
    with the merged file.

    ``source`` is a path, a sequence of paths (``"-"`` is stdin; a pattern such as
    ``"days/*.parquet"`` names the files it matches, in name order), bytes, or a file
    object opened in binary or text mode. All sources load in one transaction. A path
    (or a file object's ``name``) gives the table (its name without extensions) and the
    format (its extension); bytes and unnamed streams need ``table``, and their format
    is sniffed from their first bytes.

    Format: ``format`` (default: from the extension, else sniffed), ``delimiter`` (one
    character or ``"tab"``), ``quote`` (a character, or False for none; default ``"``
    where the sample's fields are quoted), ``header`` (None: sniffed; True: the first
    record names the columns; False: it is data), ``columns`` (names that replace the
    header's), ``skip`` (lines before the header), ``encoding`` (``"utf-8"``,
    ``"latin1"`` read as Windows-1252, ``"utf-16"``, …; given, it wins over a
    byte-order mark and an XML declaration), ``sniff=False`` (take nothing from the content),
    ``guess_encoding`` (read non-UTF-8 as Windows-1252), ``decimal_comma``
    (``1.234,56`` is a number), ``dates`` (strftime formats stored as ISO 8601).
    Parquet and Arrow: ``select`` (columns to load), ``temporal`` (``"iso"`` text or
    ``"epoch"`` integers), ``decimals`` (``"text"`` exact or ``"real"``). XML:
    ``record`` (the record elements' path from the root, such as ``"posts/row"``;
    default: the root and the first element name that repeats under it, or under the
    one element a root holds, as in ``"rss/channel/item"``); each record
    is a row, its attributes and text-only children its columns. JSON: ``record``
    (the keys from the top-level object to the array of records, ``"data.items"``, or
    a JSON Pointer, ``"/data/items"``; default: a top-level array, or the one member of
    a top-level object holding an array of objects). JSON, NDJSON, XML, Parquet,
    Arrow: ``flatten`` (True: the members of nested objects, the attributes and
    children of nested elements, or the fields of structs, become
    columns, ``owner_address_city``; a str: the separator instead of ``"_"``; arrays
    stay JSON text). JSON, NDJSON, XML, Parquet, Arrow: ``nested="tables"`` (every
    array, list column, or structured or repeated XML element in a record becomes
    rows of a child table ``<table>_<key>``, in the same atomic load: each table gets
    ``_id INTEGER PRIMARY KEY``, a child's rows ``_parent``, a FOREIGN KEY to the
    parent's ``_id``, and ``_position`` from 0; an object element gives its members as
    columns, another element the column ``value``; with ``pk="id"`` the records' table
    is keyed by each record's ``id`` instead, which its children's ``_parent``
    references), ``scalar_arrays="json"`` (an array of scalars only stays JSON text),
    ``child_tables`` (names for child tables by the path of their arrays, keys joined
    by ``.``: ``{"items.discounts": "discounts"}``). Spreadsheets (``.xlsx``, ``.xlsm``, ``.xlsb``, ``.xls``, ``.ods``):
    ``sheet`` (one worksheet, by name; default: every worksheet holding a value, each
    into a table named after it); numbers are INTEGER or REAL as in CSV, booleans 1/0,
    dates and times ISO 8601 text, error cells NULL with a note.

    Table: ``table``, ``if_exists`` (``"fail"``, the default as in pandas ``to_sql``: a
    table that exists already is refused; ``"append"``; ``"replace"``),
    ``alter`` (add the columns an existing table lacks), ``pk`` and ``indexes`` /
    ``unique_indexes`` (a column name or a sequence of them, each). A row whose key is
    in the table already: ``on_conflict`` ``"fail"`` (a bad record), ``"ignore"``
    (``INSERT OR IGNORE``), ``"replace"`` (``INSERT OR REPLACE``) or ``"update"`` (its
    loaded columns set, the others kept, as sqlite-utils ``upsert``), matched by ``key``
    (default: the table's primary key, else its one UNIQUE index).
    Types: ``types`` (``{"zip": "text"}``), ``detect_types=False`` (all TEXT),
    ``nulls`` (which empty fields are NULL: ``"typed"``, in INTEGER and REAL columns;
    ``"all"``; ``"unquoted"``, PostgreSQL's CSV rule: ``a,,b`` is NULL in any column and
    ``a,"",b`` the empty string), ``empty_null`` (the same as ``nulls="all"``),
    ``sample`` (records read to infer
    types; 10,000). Bad input: ``max_errors`` (keep going past that many bad records),
    ``rejects`` (write each bad record to this NDJSON file and keep going),
    ``ragged`` (``"pad"`` or ``"truncate"`` rows of another length),
    ``max_record_bytes``. Speed and safety: ``threads`` (parser threads; every core),
    ``durability`` (None: ``"atomic-new"`` for a new file, ``"balanced"`` for an
    existing one; ``"durable"``, ``"unsafe"``), ``engine`` (``"auto"``, ``"direct"``:
    the page writer, ``"sqlite"``), ``verify`` (SQLite checks a page-written file
    before it is put in place), ``page_size``, ``cache_size``, ``parse_only`` (read
    and convert, write nothing). ``liteload import --help`` says more of each.

    ``progress`` as for :func:`write`. Raises :class:`BadInput` with ``.path``,
    ``.line``, ``.column`` and ``.record`` for bad input, :class:`UsageError` (a
    ``ValueError``) for a bad value or options that do not fit, ``TypeError`` for a
    value of the wrong type, ``OSError`` and :class:`SqliteError`; ``ConnectionError``
    (an ``OSError``) when a PostgreSQL server cannot be reached, refuses the login or
    fails during the copy.
    """
    options = _keywords(locals(), "db", "source", "progress")
    sources = _sources(source)
    return _run(
        lambda cb: _liteload.import_file(os.fspath(db), sources, options, cb),
        progress,
        "importing",
    )


def sniff(source: Source) -> dict:
    """What :func:`import_file` would take ``source`` (a path, bytes or a file object) to
    be, from its name and first bytes, without loading it: a dict whose ``format``,
    ``delimiter``, ``quote`` (a character, or False for none), ``header``, ``encoding``
    and ``record`` are :func:`import_file`'s keywords (None where they do not apply), and
    ``input``, ``bom``, ``compression``, ``described`` (in words) and ``changed``
    (whether the content said more than the name). A file object is read from (its
    first 64 KiB at most)."""
    sources = _sources(source)
    if len(sources) != 1:
        raise UsageError(f"sniff() reads one source, and this names {len(sources)}")
    return _liteload.sniff(sources[0])


def generate(
    db: PathLike,
    *,
    rows: int,
    table: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    spec: Optional[PathLike] = None,
    seed: int = 0,
    threads: Optional[int] = None,
    engine: Engine = "auto",
    durability: Optional[Durability] = None,
    verify: bool = False,
    page_size: Optional[int] = None,
    cache_size: Optional[int] = None,
    generate_only: bool = False,
    rows_per_statement: Optional[int] = None,
    progress: Progress = None,
) -> Summary:
    """Make ``rows`` rows of seeded test data in ``table`` of ``db`` (default: write-up
    004's ``user`` table).

    ``columns`` are ``NAME=GENERATOR`` specs (``"id=rowid"``, ``"age=int:18..99"``,
    ``"name=text:3..12"``, …; see ``liteload generate --help``), or ``spec`` names a
    TOML file of them. ``seed`` fixes the values; ``threads`` generate them (every
    core); ``engine``, ``durability``, ``verify``, ``page_size``, ``cache_size`` as
    for :func:`import_file`; ``generate_only`` makes the rows and writes nothing.
    ``progress`` as for :func:`write`.
    """
    options = _keywords(locals(), "db", "progress")
    return _run(lambda cb: _liteload.generate(os.fspath(db), options, cb), progress, "generating")


def ingest(
    db: PathLike,
    source: Union[None, PathLike, Iterable[Union[str, bytes, Mapping[str, Any]]]],
    *,
    table: str,
    key: Columns,
    commit_interval: Union[None, float, "datetime.timedelta"] = None,
    commit_rows: Optional[int] = None,
    durability: Optional[Durability] = None,
    null: Literal["set", "keep"] = "set",
    history: Optional[str] = None,
    rejects: Optional[PathLike] = None,
    strict: bool = False,
    max_line_bytes: Optional[int] = None,
    stats_json: Optional[PathLike] = None,
    follow: bool = False,
    from_start: bool = False,
    connect: Optional[str] = None,
    ca: Optional[PathLike] = None,
    no_tls: bool = False,
    init_file: Optional[PathLike] = None,
    init_start: Union[None, str, int] = None,
    position: Optional[str] = None,
    stall: Union[None, float, "datetime.timedelta"] = None,
    retries: Optional[int] = None,
    progress: Progress = None,
) -> IngestSummary:
    """Keep ``table`` of ``db`` as the current state of a stream of sparse JSON updates,
    as ``liteload ingest`` does: each message updates the row with its ``key``, fields it
    lacks keep their stored values, and messages are committed in windows
    (``commit_interval`` seconds, 1 by default, or ``commit_rows`` messages).

    ``source`` is a file of newline-delimited JSON (a second run resumes where the
    stored position says, unless ``from_start=True``; ``follow=True`` keeps reading as
    it grows until Ctrl-C), an iterable of lines (str or bytes) or dicts, or ``None``
    with ``connect="HOST:PORT"``: liteload is then the feed's client (TLS unless
    ``no_tls=True``, to loopback only; ``ca``, ``init_file``, ``init_start``,
    ``position``, ``stall`` seconds, ``retries``; see ``liteload ingest --help``) and
    runs until Ctrl-C or a failure it cannot retry. Other options: ``durability``
    (``"balanced"`` by default), ``null="keep"`` (a JSON null keeps the stored value),
    ``history="TABLE"``, ``rejects``, ``strict``, ``max_line_bytes``, ``stats_json``.
    Bad messages are skipped and counted unless ``strict=True``.

    Ctrl-C stops reading, commits what was read and raises ``KeyboardInterrupt``.
    ``progress`` as for :func:`write` (rows are messages).
    """
    options = _keywords(locals(), "db", "source", "progress")
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    return _run(lambda cb: _liteload.ingest(os.fspath(db), source, options, cb), progress, "ingesting")
