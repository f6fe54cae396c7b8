//! Write-up 004's best approaches, rebuilt from its description for a fair comparison.
//! Both use rusqlite, the five PRAGMAs it lists (journal_mode OFF, synchronous 0,
//! cache_size 1000000, locking_mode EXCLUSIVE, temp_store MEMORY), one prepared
//! statement that inserts 50 rows, a small fast RNG and one transaction:
//!
//! - default: its best single-thread version. One loop draws each row's values and binds
//!   them straight into the prepared statement's parameters (the area code formatted
//!   into a stack buffer, no allocation per row);
//! - `--producer-thread`: its threaded version's shape, one producer thread sending
//!   batches of rows over a channel to the writer (the write-up used four producers on
//!   four cores; this machine has two).
//!
//! It links the same bundled SQLite as liteload, so the measured difference is the
//! approach, not the SQLite build.
//!
//!     writeup004 DB ROWS [--producer-thread]

#![forbid(unsafe_code)]

use std::sync::mpsc::sync_channel;

const BATCH: usize = 50;
const AGES: [i64; 3] = [5, 10, 15];

/// xorshift64: cheap, so the comparison is about the SQLite side.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A six-digit area code, as ASCII digits.
    fn area(&mut self) -> [u8; 6] {
        let mut n = self.next() % 1_000_000;
        let mut out = [b'0'; 6];
        for d in out.iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
        }
        out
    }

    fn age(&mut self) -> i64 {
        AGES[(self.next() % 3) as usize]
    }

    fn active(&mut self) -> i64 {
        (self.next() % 2) as i64
    }
}

fn insert_sql(n: usize) -> String {
    format!(
        "INSERT INTO user VALUES {}",
        vec!["(NULL, ?, ?, ?)"; n].join(", ")
    )
}

/// The single-thread loop: draw, bind, execute, 50 rows at a time.
fn single_thread(conn: &rusqlite::Connection, rows: usize) -> rusqlite::Result<()> {
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let mut left = rows;
    while left > 0 {
        let n = left.min(BATCH);
        let mut stmt = conn.prepare_cached(&insert_sql(n))?;
        for r in 0..n {
            let area = rng.area();
            let area = std::str::from_utf8(&area).expect("ASCII digits");
            stmt.raw_bind_parameter(3 * r + 1, area)?;
            stmt.raw_bind_parameter(3 * r + 2, rng.age())?;
            stmt.raw_bind_parameter(3 * r + 3, rng.active())?;
        }
        stmt.raw_execute()?;
        left -= n;
    }
    Ok(())
}

struct Row {
    area: String,
    age: i64,
    active: i64,
}

/// One producer thread feeding batches of rows to this (the writer's) thread.
fn producer_thread(
    conn: &rusqlite::Connection,
    rows: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let (tx, rx) = sync_channel::<Vec<Row>>(64);
    let producer = std::thread::spawn(move || {
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        let mut left = rows;
        while left > 0 {
            let n = left.min(BATCH);
            let batch: Vec<Row> = (0..n)
                .map(|_| Row {
                    area: String::from_utf8(rng.area().to_vec()).expect("ASCII digits"),
                    age: rng.age(),
                    active: rng.active(),
                })
                .collect();
            if tx.send(batch).is_err() {
                return;
            }
            left -= n;
        }
    });
    for batch in rx {
        let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(batch.len() * 3);
        for r in &batch {
            params.push(&r.area);
            params.push(&r.age);
            params.push(&r.active);
        }
        conn.prepare_cached(&insert_sql(batch.len()))?
            .execute(params.as_slice())?;
    }
    producer.join().map_err(|_| "the producer panicked")?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (path, rows, threaded): (&str, usize, bool) = match args.as_slice() {
        [_, p, n] => (p, n.parse()?, false),
        [_, p, n, f] if f == "--producer-thread" => (p, n.parse()?, true),
        _ => return Err("usage: writeup004 DB ROWS [--producer-thread]".into()),
    };
    let conn = rusqlite::Connection::open(path)?;
    conn.execute_batch(
        "PRAGMA journal_mode = OFF;
         PRAGMA synchronous = 0;
         PRAGMA cache_size = 1000000;
         PRAGMA locking_mode = EXCLUSIVE;
         PRAGMA temp_store = MEMORY;
         CREATE TABLE IF NOT EXISTS user (
             id INTEGER not null primary key,
             area CHAR(6),
             age INTEGER not null,
             active INTEGER not null);",
    )?;
    conn.execute_batch("BEGIN")?;
    if threaded {
        producer_thread(&conn, rows)?;
    } else {
        single_thread(&conn, rows)?;
    }
    conn.execute_batch("COMMIT")?;
    Ok(())
}
