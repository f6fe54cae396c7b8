"""liteload: load DataFrames, files and streams into SQLite as fast as the disk allows,
never leaving a half-written database behind.

A thin layer over the liteload Rust library (the same code as the ``liteload`` command,
which this package also installs):

- :func:`write` puts a DataFrame (pandas, polars), a pyarrow Table or RecordBatchReader,
  anything else with ``__arrow_c_stream__``, or an iterable of dicts into a table.
- :func:`import_file` loads CSV, TSV, NDJSON, JSON, Parquet or Arrow files, with every
  option of ``liteload import``.
- :func:`generate` makes rows of test data; :func:`ingest` keeps a current-state table
  from sparse JSON updates; :class:`KvStore` is a blob store in one SQLite file.

Every job runs with the GIL released. A new database file is written beside its name and
appears whole; an existing one is changed in one transaction; Ctrl-C
(``KeyboardInterrupt``) or an error leaves it as it was.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import _liteload
from ._liteload import (
    BadInput,
    ConstraintError,
    Error,
    IngestSummary,
    KvStore,
    SchemaError,
    SqliteError,
    Summary,
    UsageError,
)

__all__ = [
    "write",
    "import_file",
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

# Keyword arguments whose flag has another name.
_FLAG_NAMES = {
    "indexes": "index",
    "unique_indexes": "unique-index",
    "types": "type",
    "columns_spec": "column",
}
# Flags that only shape the command's printed output.
_OUTPUT_ONLY = {"quiet", "summary_json"}
# Options that are on by default: False turns them off with their --no- flag.
_NEGATABLE = {"header", "quote", "detect_types", "sniff"}


def _flags(options: Mapping[str, Any]) -> list:
    """The command line flags that ``options`` (keyword arguments) stand for."""
    out: list = []
    for name, value in options.items():
        if value is None or name in _OUTPUT_ONLY:
            continue
        flag = "--" + _FLAG_NAMES.get(name, name.replace("_", "-"))
        if value is True:
            out.append(flag)
        elif value is False:
            if name in _NEGATABLE:
                out.append("--no-" + flag[2:])
        elif isinstance(value, Mapping):
            for k, v in value.items():
                out += [flag, f"{k}={v}"]
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, (list, tuple)):
                    item = ",".join(str(c) for c in item)
                out += [flag, os.fspath(item) if isinstance(item, os.PathLike) else str(item)]
        elif isinstance(value, os.PathLike):
            out += [flag, os.fspath(value)]
        else:
            out += [flag, str(value)]
    return out


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


def _columns(spec: Union[None, str, Sequence[str]]) -> list:
    if spec is None:
        return []
    if isinstance(spec, str):
        return [spec]
    return [str(c) for c in spec]


def _index_list(indexes: Iterable[Union[str, Sequence[str]]]) -> list:
    return [[i] if isinstance(i, str) else [str(c) for c in i] for i in indexes]


def _is_pandas(data: Any) -> bool:
    return type(data).__module__.startswith("pandas") and hasattr(data, "itertuples")


def _pandas_rows(df: Any) -> Iterable[dict]:
    """A pandas DataFrame's rows as dicts, for frames Arrow cannot hold (an object column
    of mixed types): each value keeps its own type, as SQLite stores it."""
    import pandas as pd

    if not isinstance(df.index, pd.RangeIndex) or df.index.name is not None:
        df = df.reset_index()
    names = [str(c) for c in df.columns]
    for row in df.itertuples(index=False, name=None):
        yield dict(zip(names, row))


def _data(data: Any) -> Any:
    """What to hand to the native layer: Arrow data, or an iterator of dicts."""
    if _is_pandas(data):
        try:
            import pyarrow as pa
        except ImportError:
            return _pandas_rows(data)
        try:
            return pa.Table.from_pandas(data)
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            return _pandas_rows(data)
    return data


def write(
    db: PathLike,
    table: str,
    data: Any,
    *,
    mode: str = "create",
    pk: Union[None, str, Sequence[str]] = None,
    indexes: Iterable[Union[str, Sequence[str]]] = (),
    unique_indexes: Iterable[Union[str, Sequence[str]]] = (),
    durability: Optional[str] = None,
    engine: str = "auto",
    threads: Optional[int] = None,
    progress: Progress = None,
) -> Summary:
    """Write ``data`` into ``table`` of the SQLite database ``db``.

    ``data`` is anything with the Arrow PyCapsule stream interface
    (``__arrow_c_stream__``: a pyarrow Table or RecordBatchReader, a polars DataFrame, a
    DuckDB relation), a pandas DataFrame (through pyarrow when it is installed; a frame
    with object columns of mixed types goes row by row, each value keeping its type), or
    an iterable of dicts (keys are columns; a key first seen after the first 10,000 rows
    adds a column).

    Column types come from the Arrow schema (integers and booleans INTEGER, floats REAL
    with NaN as NULL, strings TEXT, binary BLOB, dates and timestamps ISO 8601 TEXT, a
    timestamp with a zone as the UTC instant with ``Z``, decimals exact TEXT, lists and
    structs JSON TEXT, categoricals their values), or for dicts from the values of the
    first rows.

    ``mode``: ``"create"`` (the table must not exist), ``"append"`` (create it or add to
    it, columns matched by name) or ``"replace"`` (drop it and create it anew, in the
    load's transaction). ``pk`` names the primary key of a created table; ``indexes`` and
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
    try:
        rows_total = len(data)
    except TypeError:
        rows_total = None
    data = _data(data)
    return _run(
        lambda cb: _liteload.write(
            os.fspath(db),
            table,
            data,
            mode=mode,
            pk=_columns(pk),
            indexes=_index_list(indexes),
            unique_indexes=_index_list(unique_indexes),
            durability=durability,
            engine=engine,
            threads=threads,
            rows_total=rows_total,
            progress=cb,
        ),
        progress,
        f"writing {table}",
    )


def import_file(
    db: PathLike,
    path_or_paths: Union[PathLike, Sequence[PathLike]],
    *,
    table: Optional[str] = None,
    progress: Progress = None,
    **options: Any,
) -> Summary:
    """Load files into ``db`` exactly as ``liteload import`` does.

    ``path_or_paths`` is one path or a sequence of them (``"-"`` is stdin; a quoted
    pattern such as ``"days/*.parquet"`` is expanded). Every option of ``liteload
    import`` is a keyword argument with underscores for dashes: ``format="csv"``,
    ``delimiter=";"``, ``header=False``, ``columns=["a", "b"]``, ``encoding="latin1"``,
    ``ragged="pad"``, ``pk="id"``, ``indexes=["city", ("last", "first")]``,
    ``types={"zip": "TEXT"}``, ``detect_types=False``, ``max_errors=100``,
    ``rejects="bad.ndjson"``, ``if_exists="replace"``, ``durability="durable"``,
    ``engine="sqlite"``, ``select=[...]``, ``temporal="epoch"``, … (see ``liteload
    import --help`` for what each does). ``table`` names the table (default: each
    file's name without extensions).

    ``progress`` as for :func:`write`. Raises :class:`BadInput` with ``.path``,
    ``.line``, ``.column`` and ``.record`` for bad input, :class:`UsageError` for
    options that do not fit, ``OSError`` and :class:`SqliteError`.
    """
    paths = [path_or_paths] if isinstance(path_or_paths, (str, os.PathLike)) else list(path_or_paths)
    if not paths:
        raise UsageError("no file to import")
    args = ["import", os.fspath(db)] + [os.fspath(p) for p in paths]
    args += _flags({"table": table, **options})
    return _run(lambda cb: _liteload.import_files(args, cb), progress, "importing")


def generate(
    db: PathLike,
    *,
    rows: int,
    table: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    progress: Progress = None,
    **options: Any,
) -> Summary:
    """Make ``rows`` rows of seeded test data in ``db``, as ``liteload generate`` does.

    ``columns`` are ``NAME=GENERATOR`` specs (see ``liteload generate --help``; default:
    write-up 004's user table). Other options as keyword arguments: ``seed``,
    ``threads``, ``engine``, ``durability``, ``page_size``, ``spec`` (a TOML file), ….
    ``progress`` as for :func:`write`.
    """
    args = ["generate", os.fspath(db)]
    args += _flags({"rows": rows, "table": table, "columns_spec": columns, **options})
    return _run(lambda cb: _liteload.generate(args, cb), progress, "generating")


def ingest(
    db: PathLike,
    source: Optional[Union[PathLike, Iterable[Union[str, bytes, Mapping[str, Any]]]]],
    *,
    table: str,
    key: Union[str, Sequence[str]],
    progress: Progress = None,
    **options: Any,
) -> IngestSummary:
    """Keep ``table`` of ``db`` as the current state of a stream of sparse JSON updates,
    as ``liteload ingest`` does: each message updates the row with its ``key``, fields it
    lacks keep their stored values, and messages are committed in windows
    (``commit_interval`` seconds or ``commit_rows`` messages).

    ``source`` is a file of newline-delimited JSON (a second run resumes where the
    stored position says, unless ``from_start=True``; ``follow=True`` keeps reading as
    it grows until Ctrl-C), or an iterable of lines (str or bytes) or dicts, or ``None``
    with ``connect="HOST:PORT"``: liteload is then the feed's client (``ca``,
    ``no_tls``, ``init_file``, ``init_start``, ``position``, ``stall``, ``retries``;
    see ``liteload ingest --help``) and runs until Ctrl-C or a failure it cannot retry.
    Other options: ``durability``, ``null="keep"``, ``history="TABLE"``, ``rejects``,
    ``strict``, ``max_line_bytes``, ``stats_json``. Bad messages are skipped and counted
    unless ``strict=True``.

    Ctrl-C stops reading, commits what was read and raises ``KeyboardInterrupt``.
    ``progress`` as for :func:`write` (rows are messages).
    """
    args = ["ingest", os.fspath(db)]
    items = None
    if isinstance(source, (str, os.PathLike)):
        args.append(os.fspath(source))
    else:
        items = source
    args += _flags({"table": table, "key": [key] if isinstance(key, str) else list(key), **options})
    return _run(lambda cb: _liteload.ingest(args, items, cb), progress, "ingesting")
