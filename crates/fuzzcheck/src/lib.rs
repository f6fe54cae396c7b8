//! The checks behind the fuzz targets in `fuzz/` (run with `cargo +nightly fuzz run
//! <target>`). Parsers: see [`parsers`]. Writers (`writers_agree`): arbitrary bytes are read as a page size, a column count and rows of
//! every value kind, the rows are written by `liteload-btree` (some pushed one by one,
//! some filled as [`Leaves`] and appended) and by SQLite through rusqlite, and the two
//! files must read back the same: same rows, same schema, `integrity_check` ok.
//!
//! Every input decodes to some table (missing bytes read as zeros), so the fuzzer spends
//! its time on tables, not on rejected inputs. The same function runs under `cargo test`
//! on inputs from a fixed seed, so the check itself is kept working on stable Rust.

#![forbid(unsafe_code)]

pub mod parsers;

use std::path::Path;

use liteload_btree::{DbWriter, Leaves, Value};
use rusqlite::types::Value as Sql;
use rusqlite::Connection;

/// A value of a test row, owned.
#[derive(Clone, Debug)]
pub enum V {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl V {
    /// As the page writer takes it.
    pub fn direct(&self) -> Value<'_> {
        match self {
            V::Null => Value::Null,
            V::Int(i) => Value::Integer(*i),
            V::Real(f) => Value::Real(*f),
            V::Text(s) => Value::Text(s.as_bytes()),
            V::Blob(b) => Value::Blob(b),
        }
    }

    /// As rusqlite takes it.
    pub fn sql(&self) -> Sql {
        match self {
            V::Null => Sql::Null,
            V::Int(i) => Sql::Integer(*i),
            V::Real(f) => Sql::Real(*f),
            V::Text(s) => Sql::Text(s.clone()),
            V::Blob(b) => Sql::Blob(b.clone()),
        }
    }
}

/// Reads the input front to back; past its end every byte is 0.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, _| (v << 8) | u64::from(self.u8()))
    }

    fn done(&self) -> bool {
        self.0.is_empty()
    }
}

/// Integers at every serial-type width boundary.
const EDGES: [i64; 14] = [
    0,
    1,
    -1,
    127,
    128,
    -129,
    32_768,
    -32_769,
    8_388_608,
    2_147_483_648,
    -2_147_483_649,
    140_737_488_355_328,
    i64::MAX,
    i64::MIN,
];

fn value(b: &mut Bytes<'_>, page: usize) -> V {
    // Lengths cluster around the overflow thresholds of this page size.
    let x = page - 35;
    let m = (page - 12) * 32 / 255 - 23;
    let len = |b: &mut Bytes<'_>| -> usize {
        let base = [0, 1, m, x, m + page - 4, x + page - 4][usize::from(b.u8() % 6)];
        (base + usize::from(b.u8() % 16)).saturating_sub(8)
    };
    match b.u8() % 7 {
        0 => V::Null,
        1 => V::Int(EDGES[usize::from(b.u8()) % EDGES.len()]),
        2 => V::Int(b.u64() as i64),
        3 => {
            let f = f64::from_bits(b.u64());
            // NaN reads back as NULL from both writers; keep it out of the comparison.
            if f.is_nan() {
                V::Null
            } else {
                V::Real(f)
            }
        }
        4 => {
            let n = len(b);
            let c = char::from(b'a' + b.u8() % 26);
            V::Text(c.to_string().repeat(n))
        }
        5 => V::Text("é".repeat(usize::from(b.u16() % 40))),
        _ => {
            let n = len(b);
            let seed = b.u8();
            V::Blob((0..n).map(|i| (i as u8).wrapping_mul(seed)).collect())
        }
    }
}

/// The table an input decodes to: page size, column count, rows (rowid, values), and
/// where the rows switch between being pushed and being appended as `Leaves`.
type Table = (u32, usize, Vec<(i64, Vec<V>)>, Vec<usize>);

fn table(data: &[u8]) -> Table {
    let mut b = Bytes(data);
    let page = 512u32 << (b.u8() % 8);
    let cols = 1 + usize::from(b.u8() % 8);
    let cuts: Vec<usize> = (0..b.u8() % 4).map(|_| usize::from(b.u8())).collect();
    let mut rows = vec![];
    let mut rowid = i64::from(b.u16()) - 30_000;
    while !b.done() && rows.len() < 300 {
        rowid += 1 + i64::from(b.u8() % 4) * i64::from(b.u16());
        let row = (0..cols).map(|_| value(&mut b, page as usize)).collect();
        rows.push((rowid, row));
    }
    (page, cols, rows, cuts)
}

/// `CREATE TABLE "t" ("c0", "c1", …)`.
pub fn create_sql(cols: usize) -> String {
    let defs: Vec<String> = (0..cols).map(|c| format!("\"c{c}\"")).collect();
    format!("CREATE TABLE \"t\" ({})", defs.join(", "))
}

/// A test's result.
pub type R<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// Writes `rows` (rowid, values) into table `t` of a new file at `path` with the page
/// writer. The segments between `cuts` (row positions) go alternately through
/// `TableWriter::push` and through `Leaves` filled on threads of their own, then appended.
pub fn write_direct(
    path: &Path,
    page: u32,
    cols: usize,
    rows: &[(i64, Vec<V>)],
    cuts: &[usize],
) -> R {
    let mut db = DbWriter::create(path, page)?;
    let mut t = db.table("t", &create_sql(cols));
    let mut bounds: Vec<usize> = cuts.iter().map(|&c| c.min(rows.len())).collect();
    bounds.sort_unstable();
    bounds.insert(0, 0);
    bounds.push(rows.len());
    let segments: Vec<&[(i64, Vec<V>)]> = bounds.windows(2).map(|w| &rows[w[0]..w[1]]).collect();
    let filled: Vec<Result<Leaves, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = segments
            .iter()
            .skip(1)
            .step_by(2)
            .map(|seg| {
                s.spawn(move || {
                    let mut l = Leaves::new(page as usize);
                    for (rowid, row) in seg.iter() {
                        let vals: Vec<Value<'_>> = row.iter().map(V::direct).collect();
                        l.push(*rowid, &vals).map_err(|e| e.to_string())?;
                    }
                    Ok(l)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a filling thread panicked".into()))
            })
            .collect()
    });
    let mut filled = filled.into_iter();
    let mut vals = Vec::with_capacity(cols);
    for (i, seg) in segments.iter().enumerate() {
        if i % 2 == 1 {
            let mut l = filled.next().ok_or("one Leaves per odd segment")??;
            t.append(&mut l)?;
            if l.rows() != 0 {
                return Err("append left rows in the leaves".into());
            }
            continue;
        }
        for (rowid, row) in seg.iter() {
            vals.clear();
            vals.extend(row.iter().map(V::direct));
            t.push(*rowid, &vals)?;
        }
    }
    if t.rows() != rows.len() as u64 {
        return Err(format!("{} rows written of {}", t.rows(), rows.len()).into());
    }
    t.finish()?;
    db.finish()?.sync_all()?;
    Ok(())
}

/// Writes the same table as [`write_direct`] through SQLite.
pub fn write_sqlite(path: &Path, page: u32, cols: usize, rows: &[(i64, Vec<V>)]) -> R {
    let mut c = Connection::open(path)?;
    c.execute_batch(&format!("PRAGMA page_size={page};"))?;
    c.execute_batch(&create_sql(cols))?;
    let tx = c.transaction()?;
    {
        let marks = vec!["?"; cols + 1].join(", ");
        let names: Vec<String> = (0..cols).map(|c| format!("\"c{c}\"")).collect();
        let mut st = tx.prepare(&format!(
            "INSERT INTO \"t\" (rowid, {}) VALUES ({marks})",
            names.join(", ")
        ))?;
        for (rowid, row) in rows {
            let mut params = vec![Sql::Integer(*rowid)];
            params.extend(row.iter().map(V::sql));
            st.execute(rusqlite::params_from_iter(params))?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// Rows of `t` (rowid first) and of `sqlite_schema`.
pub type Dump = (Vec<Vec<Sql>>, Vec<Vec<Sql>>);

/// The file's [`Dump`], after `integrity_check` said ok.
pub fn dump(path: &Path) -> R<Dump> {
    let c = Connection::open(path)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if ok != "ok" {
        return Err(format!("integrity_check: {ok}").into());
    }
    let mut st = c.prepare("SELECT rowid, * FROM \"t\" ORDER BY rowid")?;
    let n = st.column_count();
    let rows = st
        .query_map([], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())?
        .collect::<Result<Vec<Vec<Sql>>, _>>()?;
    let mut st = c.prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name")?;
    let schema = st
        .query_map([], |r| (0..4).map(|i| r.get::<_, Sql>(i)).collect())?
        .collect::<Result<Vec<Vec<Sql>>, _>>()?;
    Ok((rows, schema))
}

/// Decodes `data` into a table, writes it both ways and compares. `Err` names what
/// differed; a fuzz target panics on it.
pub fn writers_agree(data: &[u8]) -> Result<(), String> {
    let table = table(data);
    let run = || -> R {
        let d = tempfile::tempdir()?;
        let (a, b) = (d.path().join("direct.db"), d.path().join("sqlite.db"));
        let (page, cols, rows, cuts) = &table;
        write_direct(&a, *page, *cols, rows, cuts)?;
        write_sqlite(&b, *page, *cols, rows)?;
        let (got, want) = (dump(&a)?, dump(&b)?);
        if got != want {
            return Err("the page writer's file and SQLite's differ".into());
        }
        Ok(())
    };
    run().map_err(|e| {
        format!(
            "{e} (page {}, {} columns, {} rows, cuts {:?})",
            table.0,
            table.1,
            table.2.len(),
            table.3
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs from a fixed seed (xorshift), of every length up to a few KiB.
    #[test]
    fn random_inputs_from_a_fixed_seed_agree() {
        let mut s: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for case in 0..200 {
            let len = (next() % 4096) as usize;
            let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if let Err(e) = writers_agree(&data) {
                panic!("case {case}: {e}");
            }
        }
    }

    #[test]
    fn the_empty_input_is_an_empty_table() {
        assert_eq!(table(&[]).2.len(), 0);
        writers_agree(&[]).unwrap();
    }
}
