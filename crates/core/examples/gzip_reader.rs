//! Gzip bytes from any `impl Read` (here a file opened by the program; a socket or an
//! HTTP body works the same): the input's name says gzip, the format and the table.
//!
//! `cargo run -p liteload --example gzip_reader`

use std::io::Write;

use liteload::{import, ImportOptions, Input, Progress};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let gz_path = dir.path().join("blob");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for i in 0..10_000 {
        writeln!(gz, "{{\"id\": {i}, \"tag\": \"t{}\"}}", i % 7)?;
    }
    std::fs::write(&gz_path, gz.finish()?)?;

    let reader = std::fs::File::open(&gz_path)?; // any Read + Send + 'static
    let db = dir.path().join("events.db");
    let input = Input::reader("events.ndjson.gz", reader);
    let summary = import(
        &db,
        &[input],
        &ImportOptions::default(),
        &Progress::default(),
    )?;
    assert_eq!(summary.tables, ["events"]);
    let conn = rusqlite::Connection::open(&db)?;
    let (n, tags): (i64, i64) = conn.query_row(
        "SELECT count(*), count(DISTINCT tag) FROM events",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    assert_eq!((n, tags), (10_000, 7));
    println!("{} rows from a gzip reader into table events", summary.rows);
    Ok(())
}
