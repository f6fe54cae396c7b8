//! `import_into_connection`: a load inside the caller's transaction, undone alone on
//! error, and committed by the caller (or by itself, outside a transaction).

use liteload::{import_into_connection, ImportOptions, Input, Progress};

type R = Result<(), Box<dyn std::error::Error>>;

fn count(conn: &rusqlite::Connection, sql: &str) -> rusqlite::Result<i64> {
    conn.query_row(sql, [], |r| r.get(0))
}

#[test]
fn a_failed_load_leaves_the_callers_transaction_as_it_was() -> R {
    let dir = tempfile::tempdir()?;
    let good = dir.path().join("good.csv");
    let bad = dir.path().join("bad.csv");
    std::fs::write(&good, "n,s\n1,é\n2,ü\n")?;
    // The third record has a field too many: without a rejects file it stops the load
    // after the first rows went in.
    std::fs::write(&bad, "n,s\n1,a\n2,b\n3,c,x\n")?;
    let mut conn = rusqlite::Connection::open(dir.path().join("app.db"))?;
    let (opts, progress) = (ImportOptions::default(), Progress::default());

    let tx = conn.transaction()?;
    tx.execute_batch("CREATE TABLE mine(x); INSERT INTO mine VALUES (42);")?;
    let err = import_into_connection(&tx, &[Input::Path(bad)], &opts, &progress)
        .err()
        .ok_or("the bad file loaded")?;
    assert!(err.to_string().contains("bad.csv:4:"), "{err}");
    // The caller's work is there, the load's is not, and the transaction goes on.
    assert_eq!(count(&tx, "SELECT x FROM mine")?, 42);
    assert_eq!(
        count(&tx, "SELECT count(*) FROM sqlite_schema WHERE name = 'bad'")?,
        0
    );
    import_into_connection(&tx, &[Input::Path(good.clone())], &opts, &progress)?;
    tx.commit()?;
    assert_eq!(count(&conn, "SELECT count(*) FROM good")?, 2);
    assert_eq!(count(&conn, "SELECT count(*) FROM mine")?, 1);

    // Outside a transaction the load commits by itself.
    let s = import_into_connection(&conn, &[Input::Path(good)], &opts, &progress)?;
    assert_eq!(s.rows, 2);
    assert_eq!(count(&conn, "SELECT count(*) FROM good")?, 4);
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    Ok(())
}
