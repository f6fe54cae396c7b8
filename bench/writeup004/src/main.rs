//! Write-up 004's best approach, rebuilt from its description for a fair comparison:
//! rusqlite; the five PRAGMAs it lists (journal_mode OFF, synchronous 0, cache_size
//! 1000000, locking_mode EXCLUSIVE, temp_store MEMORY); one prepared statement that
//! inserts 50 rows; one producer thread sending rows over a channel to one writer; one
//! transaction. It links the same bundled SQLite as liteload, so the measured difference
//! is the approach, not the SQLite build.
//!
//!     writeup004 DB ROWS

#![forbid(unsafe_code)]

use std::sync::mpsc::sync_channel;

const BATCH: usize = 50;

struct Row {
    area: String,
    age: i64,
    active: i64,
}

/// xorshift64: cheap, so the comparison is about the SQLite side.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (path, rows): (&str, usize) = match args.as_slice() {
        [_, p, n] => (p, n.parse()?),
        _ => return Err("usage: writeup004 DB ROWS".into()),
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
    let (tx, rx) = sync_channel::<Vec<Row>>(64);
    let producer = std::thread::spawn(move || {
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        let ages = [5, 10, 15];
        let mut left = rows;
        while left > 0 {
            let n = left.min(BATCH);
            let batch: Vec<Row> = (0..n)
                .map(|_| Row {
                    area: format!("{:06}", rng.next() % 1_000_000),
                    age: ages[(rng.next() % 3) as usize],
                    active: (rng.next() % 2) as i64,
                })
                .collect();
            if tx.send(batch).is_err() {
                return;
            }
            left -= n;
        }
    });
    let one = "(NULL, ?, ?, ?)";
    let sql = |n: usize| format!("INSERT INTO user VALUES {}", vec![one; n].join(", "));
    conn.execute_batch("BEGIN")?;
    {
        let mut full = conn.prepare_cached(&sql(BATCH))?;
        for batch in rx {
            let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(batch.len() * 3);
            for r in &batch {
                params.push(&r.area);
                params.push(&r.age);
                params.push(&r.active);
            }
            if batch.len() == BATCH {
                full.execute(params.as_slice())?;
            } else {
                conn.prepare_cached(&sql(batch.len()))?
                    .execute(params.as_slice())?;
            }
        }
    }
    conn.execute_batch("COMMIT")?;
    producer.join().map_err(|_| "the producer panicked")?;
    Ok(())
}
