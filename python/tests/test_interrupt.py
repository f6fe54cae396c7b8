"""Ctrl-C (KeyboardInterrupt) stops a load and leaves the target as it was."""

import os
import signal
import threading
import time

import pyarrow as pa
import pytest

import liteload
from conftest import rows


def slow_batches(n=200):
    schema = pa.schema([("n", pa.int64()), ("s", pa.string())])

    def gen():
        for i in range(n):
            time.sleep(0.02)
            yield pa.record_batch([pa.array([i] * 100), pa.array(["x"] * 100)], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, gen())


@pytest.fixture(autouse=True)
def default_ctrl_c():
    """Python's own Ctrl-C handling, whatever this process inherited: a process started
    in the background by a non-interactive shell has SIGINT ignored, and Python then
    leaves it so (these tests are about liteload's handling, not the launcher's)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def interrupt_after(seconds):
    timer = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.parametrize("engine", ["direct", "sqlite"])
def test_ctrl_c_leaves_no_new_file(tmp_path, engine):
    db = tmp_path / "new.db"
    started = time.monotonic()
    interrupt_after(0.5)
    with pytest.raises(KeyboardInterrupt):
        liteload.write(db, "t", slow_batches(), engine=engine)
    # It stopped at the interrupt, not at the end of the 4-second input.
    assert time.monotonic() - started < 3.0
    assert not db.exists()
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_leaves_an_existing_table_as_it_was(tmp_path):
    db = tmp_path / "old.db"
    liteload.write(db, "t", pa.table({"n": [1, 2], "s": ["a", "b"]}))
    before = rows(db)
    interrupt_after(0.5)
    with pytest.raises(KeyboardInterrupt):
        liteload.write(db, "t", slow_batches(), mode="append")
    assert rows(db) == before
    interrupt_after(0.5)
    with pytest.raises(KeyboardInterrupt):
        liteload.write(db, "t", slow_batches(), mode="replace")
    assert rows(db) == before


def test_ctrl_c_stops_an_import(tmp_path):
    src = tmp_path / "big.csv"
    with open(src, "w") as f:
        f.write("a,b\n")
        for i in range(3_000_000):
            f.write(f"{i},row {i}\n")
    db = tmp_path / "out.db"
    # The whole load takes about 0.3 s on a quiet 2-core machine (a release build): the
    # interrupt comes well inside it. (At 0.3 s it could come after the load finished,
    # and Python then raises it on return, with the file rightly in place.)
    interrupt_after(0.05)
    with pytest.raises(KeyboardInterrupt):
        liteload.import_file(db, src, engine="sqlite")
    assert not db.exists()
