"""Shared helpers: every database a test writes is checked by SQLite itself."""

import sqlite3

import pytest


def checked(db):
    """A connection to ``db`` after SQLite's own integrity check passed."""
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    return conn


def rows(db, table="t", order="rowid"):
    conn = checked(db)
    try:
        return conn.execute(f'SELECT * FROM "{table}" ORDER BY {order}').fetchall()
    finally:
        conn.close()


def columns(db, table="t"):
    conn = checked(db)
    try:
        return [(r[1], r[2]) for r in conn.execute(f"PRAGMA table_info(\"{table}\")")]
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path):
    return tmp_path / "out.db"
