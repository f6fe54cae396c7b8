"""Type stubs for liteload's native module (see ``liteload/__init__.py`` for the public
functions, which call these)."""

import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Union

__version__: str

Key = Union[int, str]
_Callback = Optional[Callable[[int, Optional[int], int, Optional[int]], Any]]

class Error(Exception):
    """The base of liteload's own errors."""

class BadInput(Error):
    """The input is not what was expected at ``path``, ``line``, ``column`` (from 1; 0
    when not known), record number ``record``; ``field`` names the column when known."""

    path: Optional[str]
    line: int
    column: int
    record: int
    field: Optional[str]

class UsageError(Error, ValueError):
    """The options do not fit together, or do not fit the data or the database, or a
    keyword argument has a bad value; nothing was written."""

class SchemaError(UsageError):
    """The database does not fit the load (a table exists already or is a view, lacks a
    column, would pass SQLite's limits); nothing was written."""

class ConstraintError(BadInput):
    """SQLite refused a row for its contents (UNIQUE, NOT NULL, CHECK, FOREIGN KEY, a
    STRICT column's type, a value too big); ``code`` is SQLite's extended result code
    (2067 for UNIQUE), ``None`` when not known."""

    code: Optional[int]

class SqliteError(Error):
    """SQLite refused a statement; the message says what liteload was doing."""

class Summary:
    """What a load (``write``, ``import_file``, ``generate``) did."""

    rows: int
    tables: List[str]
    seconds: float
    rows_per_second: float
    bytes_read: int
    rejects: int
    reject_samples: List[str]
    mismatches: int
    first_mismatch: Optional[str]
    db_bytes: int
    durability: str
    engine: Optional[str]
    verified: bool
    sqlite_version: str
    notes: List[str]
    sniffed: List[str]
    def as_dict(self) -> dict:
        """The fields as a dict."""

class IngestSummary:
    """What an ``ingest`` did."""

    messages: int
    inserted: int
    updated: int
    rejects: int
    commits: int
    mismatches: int
    new_columns: int
    replayed: int
    last_position: Optional[str]
    seconds: float
    def as_dict(self) -> dict:
        """The fields as a dict."""

class KvStore:
    """A blob store in one SQLite file: keys are ints or strs, values bytes. Every write
    commits on its own, except those of one ``put_many``."""

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        *,
        durability: str = "balanced",
        mmap_size: int = 0,
        page_size: Optional[int] = None,
        cache_size: Optional[int] = None,
        int_keys: bool = False,
        create: bool = False,
    ) -> None:
        """Opens or creates the store. ``int_keys=True`` makes a new store whose keys
        are ints only, each the row's rowid; an existing store keeps its file's kind. A
        file with other tables and no store is refused unless ``create=True``."""
    def get(self, key: Key, default: Any = None) -> Any:
        """The value under ``key`` (bytes), or ``default``."""
    def put(self, key: Key, value: Any) -> None:
        """Stores bytes, or a binary file-like object read to its end, under ``key``."""
    def put_many(self, items: Iterable[tuple]) -> int:
        """Stores every ``(key, value)`` pair in one transaction; how many."""
    def delete(self, key: Key) -> bool:
        """Removes ``key``; whether it was there."""
    def keys(self, prefix: Optional[str] = None) -> List[Key]:
        """The keys in key order, or the str keys starting with ``prefix``."""
    def read_into(self, key: Key, out: Any) -> bool:
        """Copies the value under ``key`` into a binary file-like object in pieces."""
    def close(self) -> None:
        """Closes the store."""
    def __enter__(self) -> "KvStore": ...
    def __exit__(self, *exc: Any) -> None: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: object) -> bool: ...
    def __getitem__(self, key: Key) -> bytes: ...
    def __setitem__(self, key: Key, value: Any) -> None: ...
    def __delitem__(self, key: Key) -> None: ...
    def __iter__(self) -> Iterator[Key]: ...

# Each job takes the Python function's keyword arguments as one dict (``options``),
# every keyword present; see liteload/__init__.py for what each means.
def write(
    db: str,
    table: str,
    data: Any,
    options: Dict[str, Any],
    rows_total: Optional[int] = None,
    progress: _Callback = None,
) -> Summary: ...
def import_file(db: str, sources: Sequence[Any], options: Dict[str, Any], progress: _Callback = None) -> Summary: ...
def sniff(source: Any) -> Dict[str, Any]: ...
def generate(db: str, options: Dict[str, Any], progress: _Callback = None) -> Summary: ...
def ingest(db: str, source: Any, options: Dict[str, Any], progress: _Callback = None) -> IngestSummary: ...
def cli(argv: Sequence[str]) -> int: ...
