"""generate, ingest (merge semantics against an in-memory model) and KvStore."""

import io
import json
import random
import socket
import threading

import pytest

import liteload
from conftest import checked, rows
from test_import import cli


def test_generate_matches_the_command(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    s = liteload.generate(a, rows=5000, seed=7, columns=["id=rowid", "name=text:5..12", "n=int:1..100"])
    assert s.rows == 5000 and s.tables == ["user"]
    done = cli("generate", b, "-q", "--rows", 5000, "--seed", 7, "--column", "id=rowid", "--column", "name=text:5..12", "--column", "n=int:1..100")
    assert done.returncode == 0, done.stderr
    assert rows(a, "user") == rows(b, "user")
    with pytest.raises(liteload.UsageError):
        liteload.generate(tmp_path / "c.db", rows=10, columns=["x=nonsense"])


def model(messages, key="id"):
    """The current state the messages describe: later fields overwrite earlier ones,
    absent fields keep their values."""
    state = {}
    for m in messages:
        state.setdefault(m[key], {}).update({k: v for k, v in m.items() if v is not None})
    return state


def test_ingest_from_an_iterable_keeps_the_current_state(tmp_path):
    rng = random.Random(5)
    # Each field keeps one type, so that SQLite's column affinity stores values as given.
    domains = {
        "alt": [0, -1, 2**62, -(2**63)],
        "speed": [1.5, -0.25, 1e300],
        "callsign": ["zoë 😀", "a\0b", "", "007", "x" * 3000, "'; DROP TABLE t; --"],
        "note": ["a", "b\nc", "\ufeff"],
    }
    messages = []
    for _ in range(3000):
        m = {"id": rng.randrange(200)}
        for f in rng.sample(sorted(domains), rng.randrange(1, 4)):
            m[f] = rng.choice(domains[f])
        messages.append(m)
    db = tmp_path / "state.db"
    # Lines and dicts may be mixed.
    source = [json.dumps(m) if i % 3 == 0 else m for i, m in enumerate(messages)]
    s = liteload.ingest(db, iter(source), table="flights", key="id", commit_rows=500)
    assert s.messages == 3000 and s.inserted == len(model(messages))
    conn = checked(db)
    names = [d[0] for d in conn.execute("SELECT * FROM flights").description]
    got = {r[names.index("id")]: {n: v for n, v in zip(names, r) if v is not None and n != "id"} for r in conn.execute("SELECT * FROM flights")}
    want = {k: {f: v for f, v in m.items() if f != "id"} for k, m in model(messages).items()}
    assert got == want


def test_ingest_a_file_resumes_where_it_stopped(tmp_path):
    feed = tmp_path / "feed.ndjson"
    feed.write_text("".join(json.dumps({"id": i % 10, "n": i}) + "\n" for i in range(100)))
    db = tmp_path / "s.db"
    first = liteload.ingest(db, feed, table="t", key="id")
    assert first.messages == 100
    with open(feed, "a") as f:
        f.write(json.dumps({"id": 3, "n": 1000}) + "\n")
    second = liteload.ingest(db, feed, table="t", key="id")
    assert second.messages == 1
    assert dict(checked(db).execute("SELECT id, n FROM t").fetchall())[3] == 1000


def test_ingest_bad_messages_are_counted_or_refused(tmp_path):
    db = tmp_path / "s.db"
    s = liteload.ingest(db, ['{"id": 1}', "not json", '{"no_key": 2}'], table="t", key="id")
    assert s.messages >= 1 and s.rejects == 2
    with pytest.raises(liteload.BadInput):
        liteload.ingest(tmp_path / "strict.db", ['{"id": 1}', "not json"], table="t", key="id", strict=True)
    # The bad message's place: its line, and its number (one message a line).
    feed = tmp_path / "feed.ndjson"
    feed.write_text('{"id": 1}\n{"id": 2}\n{"id": 3, oops}\n', encoding="utf-8")
    with pytest.raises(liteload.BadInput) as e:
        liteload.ingest(tmp_path / "strict2.db", feed, table="t", key="id", strict=True)
    assert (e.value.line, e.value.record) == (3, 3) and e.value.path.endswith("feed.ndjson")
    with pytest.raises(liteload.BadInput) as e:
        liteload.ingest(tmp_path / "strict3.db", ['{"id": 1}', '{"id": 2}', "[1]"], table="t", key="id", strict=True)
    assert (e.value.line, e.value.record) == (3, 3)


def test_ingest_connects_to_a_feed_and_stores_its_position(tmp_path):
    """A plain-TCP feed on loopback: the first connection streams 500 messages and
    drops; the second is answered with an error line (the init line's credentials are
    not accepted any more). The run ends with that error, after committing what it read,
    and the position of the last message is stored and asked for."""
    messages = [{"id": i % 37, "seq": i, "v": f"zoë {i}"} for i in range(1, 501)]
    asked = []
    srv = socket.create_server(("127.0.0.1", 0))

    def serve():
        for n in range(2):
            c, _ = srv.accept()
            with c:
                line = c.makefile("rb").readline().decode()
                asked.append(line)
                if n == 0:
                    c.sendall("".join(json.dumps(m) + "\n" for m in messages).encode())
                else:
                    c.sendall(b'{"error":"account suspended"}\n')

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    init = tmp_path / "init.txt"
    init.write_text("login s3cret-pass from {position}\n")
    db = tmp_path / "feed.db"
    with pytest.raises(liteload.Error) as e:
        liteload.ingest(db, None, table="t", key="id", connect=f"127.0.0.1:{srv.getsockname()[1]}",
                        no_tls=True, init_file=init, position="seq", init_start=0, commit_interval=0.05)
    t.join(10)
    assert "account suspended" in str(e.value) and "s3cret" not in str(e.value)
    assert asked == ["login s3cret-pass from 0\n", "login s3cret-pass from 500\n"]
    conn = checked(db)
    assert conn.execute("SELECT position FROM liteload_ingest_state").fetchone() == ("500",)
    got = dict(conn.execute("SELECT id, seq FROM t"))
    assert got == {m["id"]: m["seq"] for m in messages}


def test_kv_store(tmp_path):
    path = tmp_path / "kv.db"
    with liteload.KvStore(path) as kv:
        kv.put(1, b"one")
        kv["name/zoë"] = b"\0" * 10
        kv.put("big", io.BytesIO(b"x" * 300_000))
        assert kv.get(1) == b"one" and kv[("name/zoë")] == b"\0" * 10
        assert kv.get("missing") is None and kv.get("missing", b"d") == b"d"
        assert len(kv) == 3 and "big" in kv and 2 not in kv
        assert list(kv) == [1, "big", "name/zoë"] and kv.keys(prefix="name/") == ["name/zoë"]
        out = io.BytesIO()
        assert kv.read_into("big", out) and out.getvalue() == b"x" * 300_000
        assert kv.delete(1) and not kv.delete(1)
        with pytest.raises(KeyError):
            kv[1]
        # put_many is all or nothing.
        with pytest.raises(TypeError):
            kv.put_many([(10, b"a"), (11, "not bytes")])
        assert 10 not in kv
        assert kv.put_many((i, bytes([i])) for i in range(100)) == 100
        assert kv[99] == b"c"
        with pytest.raises(TypeError):
            kv.put(1.5, b"x")
    with pytest.raises(ValueError, match="closed"):
        kv.get(1)
    checked(path)


def test_kv_store_of_int_keys(tmp_path):
    path = tmp_path / "ints.db"
    with liteload.KvStore(path, int_keys=True) as kv:
        kv.put(-5, b"neg")
        kv.put(2**63 - 1, b"max")
        with pytest.raises(liteload.UsageError, match="keys by integer"):
            kv.put("7", b"text")
        assert kv.get("7") is None and "7" not in kv
        assert list(kv) == [-5, 2**63 - 1]
    conn = checked(path)
    # The key is the rowid: write-up 001's layout.
    assert conn.execute("SELECT rowid, v FROM kv ORDER BY rowid").fetchall() == [
        (-5, b"neg"), (2**63 - 1, b"max")]
    conn.close()
    # Reopened without the option, the file decides.
    with liteload.KvStore(path) as kv:
        with pytest.raises(liteload.UsageError):
            kv.put("x", b"text")
        assert kv[-5] == b"neg"
