//! A CSV loaded into a connection the program holds, inside its own transaction: rolled
//! back, no table is left; committed, the rows are there.
//!
//! `cargo run -p liteload --example into_connection`

use liteload::{import_into_connection, ImportOptions, Input, Progress};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut conn = rusqlite::Connection::open(dir.path().join("app.db"))?;
    let csv = Input::bytes(
        "orders.csv",
        &b"id,item,price\n1,tea,3.5\n2,caf\xC3\xA9,4\n"[..],
    );
    let (opts, progress) = (ImportOptions::default(), Progress::default());

    let tx = conn.transaction()?;
    import_into_connection(&tx, std::slice::from_ref(&csv), &opts, &progress)?;
    tx.rollback()?;
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    assert_eq!(tables, 0, "a rolled-back load leaves nothing");

    let tx = conn.transaction()?;
    tx.execute_batch("CREATE TABLE audit(note TEXT); INSERT INTO audit VALUES ('loaded orders')")?;
    let summary = import_into_connection(&tx, &[csv], &opts, &progress)?;
    tx.commit()?;
    let rows: Vec<(i64, String, f64)> = conn
        .prepare("SELECT id, item, price FROM orders ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    assert_eq!(rows, [(1, "tea".into(), 3.5), (2, "café".into(), 4.0)]);
    println!(
        "committed {} rows beside the program's own table",
        summary.rows
    );
    Ok(())
}
