"""Write Parquet and Arrow files as other tools do, into OUT_DIR; print their names.

    python make.py OUT_DIR

pyarrow: every common type (nulls, non-ASCII, NUL, text past SQLite's overflow
threshold, NaN, dictionary-encoded categories), snappy, zstd and gzip pages, many row
groups, and a Feather (Arrow IPC) file compressed with lz4. DuckDB: its own Parquet
writer (COPY ... (FORMAT parquet)), zstd, small row groups.
"""
import datetime
import decimal
import os
import sys

import duckdb
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

out = sys.argv[1]
N = 3000


def val(i, f, null_every=7):
    return None if i % null_every == 3 else f(i)


cols = {
    "id": pa.array(range(N), pa.int64()),
    "small": pa.array([val(i, lambda i: i % 120 - 60) for i in range(N)], pa.int8()),
    "u32": pa.array([val(i, lambda i: 4_000_000_000 - i) for i in range(N)], pa.uint32()),
    "u64": pa.array([val(i, lambda i: 2**63 - 1 - i) for i in range(N)], pa.uint64()),
    "f32": pa.array([val(i, lambda i: float("nan") if i % 11 == 0 else i / 8) for i in range(N)], pa.float32()),
    "f64": pa.array([val(i, lambda i: i * 1e-7 - 3.25) for i in range(N)], pa.float64()),
    "flag": pa.array([val(i, lambda i: i % 2 == 0) for i in range(N)], pa.bool_()),
    "name": pa.array([val(i, lambda i: ["Ada", "Zoë", "", "nul\0x", "名前", "x" * 5000][i % 6]) for i in range(N)]),
    "big": pa.array([val(i, lambda i: "é" * (3000 + i % 50)) for i in range(N)], pa.large_string()),
    "raw": pa.array([val(i, lambda i: bytes([i % 256, 0, 255]) * (1 + i % 3)) for i in range(N)], pa.binary()),
    "day": pa.array([val(i, lambda i: datetime.date(1970, 1, 1) + datetime.timedelta(days=i * 13 - 9000)) for i in range(N)]),
    "at": pa.array([val(i, lambda i: datetime.datetime(2026, 11, 24) + datetime.timedelta(microseconds=i * 7_654_321)) for i in range(N)], pa.timestamp("us")),
    "at_utc": pa.array([val(i, lambda i: datetime.datetime(1999, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=i * 1001)) for i in range(N)], pa.timestamp("ms", tz="Europe/Oslo")),
    "price": pa.array([val(i, lambda i: decimal.Decimal(i * 37 - 50000) / 100) for i in range(N)], pa.decimal128(12, 2)),
    "tags": pa.array([val(i, lambda i: list(range(i % 4))) for i in range(N)], pa.list_(pa.int64())),
    "point": pa.array([val(i, lambda i: {"x": i, "label": "p%d" % i}) for i in range(N)]),
    "kind": pa.array([["bus", "tram", "ferry"][i % 3] for i in range(N)]).dictionary_encode(),
}
table = pa.table(cols)
names = []
for codec in ["snappy", "zstd", "gzip"]:
    name = f"pyarrow_{codec}.parquet"
    pq.write_table(table, os.path.join(out, name), compression=codec, row_group_size=700)
    names.append(name)
name = "pyarrow_v2_pages.parquet"
pq.write_table(table, os.path.join(out, name), data_page_version="2.0", use_dictionary=False, row_group_size=N)
names.append(name)
name = "pyarrow_lz4.feather"
feather.write_feather(table, os.path.join(out, name), compression="lz4")
names.append(name)

con = duckdb.connect()
con.execute("SET threads = 1")
name = "duckdb_zstd.parquet"
con.execute(f"""
COPY (
  SELECT i AS id,
         CASE WHEN i % 7 = 3 THEN NULL ELSE (i * 2654435761) % 4294967296 - 2147483648 END::INTEGER AS n32,
         CASE WHEN i % 5 = 1 THEN NULL ELSE i * 1000003 END::BIGINT AS n64,
         CASE WHEN i % 9 = 2 THEN NULL ELSE i / 7.0 END::DOUBLE AS ratio,
         CASE WHEN i % 6 = 0 THEN NULL ELSE ['Ada', 'Zoë', '', '名前', repeat('y', 4500)][i % 5 + 1] END AS name,
         CASE WHEN i % 4 = 0 THEN NULL ELSE DATE '2000-01-01' + i::INTEGER END AS day,
         CASE WHEN i % 8 = 0 THEN NULL ELSE TIMESTAMP '2026-11-24 10:00:00' + to_microseconds(i * 123457) END AS at,
         CASE WHEN i % 3 = 0 THEN NULL ELSE (i * 12.345)::DECIMAL(14, 3) END AS price,
         i % 2 = 0 AS flag,
         CASE WHEN i % 10 = 0 THEN NULL ELSE [i, i + 1] END AS pair,
         {{'k': i, 'v': 'v' || i}} AS rec,
         encode('blob' || i) AS raw
  FROM range({N}) t(i)
) TO '{os.path.join(out, name)}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1024)
""")
names.append(name)
print("\n".join(names))
