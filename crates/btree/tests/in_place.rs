//! Tables added to a database that exists, in place ([`DbWriter::extend`] and
//! [`journal`]): SQLite must read the old tables as they were and the new ones as written
//! (`integrity_check` ok), and a crash after any write or sync must leave exactly the
//! old file or exactly the new one once SQLite has opened it (playing its journal back).

use std::cell::RefCell;
use std::io::{self, Cursor, Seek, SeekFrom, Write};
use std::path::Path;
use std::rc::Rc;

use liteload_btree::journal::{self, DiskFiles, Files};
use liteload_btree::{DbWriter, Existing, SeqFile, Value};
use rusqlite::Connection;

/// An existing database of `tables` tables (with indexes and long SQL text every third,
/// so that the schema spans pages and overflows), rows in each, in rollback mode.
fn base(path: &Path, page_size: u32, tables: usize) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA page_size={page_size}; PRAGMA journal_mode=DELETE;"
    ))
    .unwrap();
    // A header even with no table (SQLite writes none until something is stored).
    conn.execute_batch("PRAGMA user_version=7; BEGIN").unwrap();
    for t in 0..tables {
        let pad = if t % 3 == 0 {
            format!(", c{} TEXT DEFAULT '{}'", t, "p".repeat(700))
        } else {
            String::new()
        };
        conn.execute_batch(&format!(
            "CREATE TABLE \"old {t}\"(a INTEGER, b TEXT{pad});
             INSERT INTO \"old {t}\"(a, b) VALUES ({t}, 'row of {t}'), (NULL, x'00ff');"
        ))
        .unwrap();
        if t % 2 == 0 {
            conn.execute_batch(&format!("CREATE INDEX \"ix {t}\" ON \"old {t}\"(b)"))
                .unwrap();
        }
    }
    conn.execute_batch("COMMIT").unwrap();
}

/// The rows of the new table: integers, text with non-ASCII and NUL, and blobs long
/// enough to overflow at every page size.
fn new_rows(n: usize) -> Vec<(i64, String, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let text = format!("é\0{}", "z".repeat(i % 37));
            let blob = vec![(i % 251) as u8; if i % 17 == 0 { 9000 } else { i % 50 }];
            (i as i64 + 1, text, blob)
        })
        .collect()
}

const NEW_SQL: &str = "CREATE TABLE \"new one\"(k INTEGER, t TEXT, b BLOB)";
const NEW_INDEX: &str = "CREATE INDEX \"new one by k\" ON \"new one\"(k)";

/// Writes the new table (and its index) through `db`.
fn add_table<W: Write + Seek>(db: &mut DbWriter<W>, rows: &[(i64, String, Vec<u8>)]) {
    let mut t = db.table("new one", NEW_SQL);
    for (k, text, blob) in rows {
        t.push(
            *k,
            &[
                Value::Integer(*k * 3),
                Value::Text(text.as_bytes()),
                Value::Blob(blob),
            ],
        )
        .unwrap();
    }
    t.finish().unwrap();
    let pairs: Vec<(i64, i64)> = rows.iter().map(|(k, _, _)| (*k * 3, *k)).collect();
    db.index_int_pairs("new one by k", "new one", NEW_INDEX, &pairs)
        .unwrap();
}

/// Everything a reader sees: the schema and every table's rows, as text.
fn dump(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut out = vec![];
    let mut s = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid")
        .unwrap();
    let rows: Vec<(String, String, String, Option<String>)> = s
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (kind, name, table, sql) in &rows {
        out.push(format!("{kind} {name} {table} {sql:?}"));
        if kind == "table" {
            let q = format!(
                "SELECT * FROM \"{}\" ORDER BY rowid",
                name.replace('"', "\"\"")
            );
            let mut s = conn.prepare(&q).unwrap();
            let n = s.column_count();
            let mut r = s.query([]).unwrap();
            while let Some(row) = r.next().unwrap() {
                let vals: Vec<String> = (0..n)
                    .map(|i| format!("{:?}", row.get_ref(i).unwrap()))
                    .collect();
                out.push(vals.join("|"));
            }
        }
    }
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    out.push(format!("integrity {ok}"));
    out
}

/// The new table (and its index) added to the database at `path` by SQLite's own
/// CREATE and INSERT, for reference.
fn sqlite_adds_table(path: &Path, rows: &[(i64, String, Vec<u8>)]) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(&format!("{NEW_SQL}; {NEW_INDEX};"))
        .unwrap();
    let mut ins = c
        .prepare("INSERT INTO \"new one\"(rowid, k, t, b) VALUES (?1, ?2, ?3, ?4)")
        .unwrap();
    for (k, t, b) in rows {
        ins.execute(rusqlite::params![k, k * 3, t, b]).unwrap();
    }
}

/// Extends the database at `path` through the real files, holding SQLite's EXCLUSIVE
/// lock on a connection throughout; returns that connection, its transaction ended.
fn extend_on_disk(path: &Path, rows: &[(i64, String, Vec<u8>)]) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE; SELECT count(*) FROM sqlite_schema;")
        .unwrap();
    let mut files = DiskFiles::open(path).unwrap();
    let base = Existing::read(files.db()).unwrap();
    journal::begin(&mut files, &base, journal::nonce()).unwrap();
    let offset = u64::from(base.pages()) * u64::from(base.page_size());
    let page_size = base.page_size();
    let out = SeqFile::extend(path, offset).unwrap();
    let mut db = DbWriter::extend(out, base);
    add_table(&mut db, rows);
    let (out, changed) = db.finish_in_place().unwrap();
    journal::commit(&mut files, page_size, &changed).unwrap();
    conn.execute_batch("COMMIT").unwrap();
    // The descriptors close only now, after the lock is released.
    drop((out, files));
    conn
}

#[test]
fn sqlite_reads_the_old_tables_as_they_were_and_the_new_one_as_written() {
    for page_size in [512u32, 4096] {
        for tables in [0usize, 3, 40] {
            for n in [0usize, 5, 3000] {
                let d = tempfile::tempdir().unwrap();
                let (ours, theirs) = (d.path().join("ours.db"), d.path().join("sqlite.db"));
                base(&ours, page_size, tables);
                base(&theirs, page_size, tables);
                let rows = new_rows(n);
                let (version_before, pages_before): (i64, i64) = {
                    let c = Connection::open(&ours).unwrap();
                    (
                        c.query_row("PRAGMA schema_version", [], |r| r.get(0))
                            .unwrap(),
                        c.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap(),
                    )
                };
                let conn = extend_on_disk(&ours, &rows);
                // The locking connection sees the new table at once.
                let seen: i64 = conn
                    .query_row("SELECT count(*) FROM \"new one\"", [], |r| r.get(0))
                    .unwrap_or_else(|e| panic!("page {page_size}, {tables} tables, {n} rows: {e}"));
                assert_eq!(seen as usize, n);
                drop(conn);
                sqlite_adds_table(&theirs, &rows);
                let case = format!("page {page_size}, {tables} tables, {n} rows");
                assert_eq!(dump(&ours), dump(&theirs), "{case}");
                assert!(!d.path().join("ours.db-journal").exists(), "{case}");
                let c = Connection::open(&ours).unwrap();
                let q = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
                assert!(q("PRAGMA schema_version") > version_before, "{case}");
                assert!(q("PRAGMA page_count") >= pages_before, "{case}");
                assert_eq!(
                    q("PRAGMA page_count") as u64 * u64::from(page_size),
                    std::fs::metadata(&ours).unwrap().len(),
                    "{case}"
                );
                assert_eq!(q("PRAGMA freelist_count"), 0, "{case}");
                // SQLite goes on writing the file as its own.
                c.execute_batch("INSERT INTO \"new one\"(k) VALUES (-1); CREATE TABLE after(x);")
                    .unwrap();
                let ok: String = c
                    .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(ok, "ok", "{case}");
            }
        }
    }
}

#[test]
fn files_it_cannot_extend_are_refused_before_anything_is_written() {
    let d = tempfile::tempdir().unwrap();
    let wal = d.path().join("wal.db");
    base(&wal, 4096, 1);
    Connection::open(&wal)
        .unwrap()
        .execute_batch("PRAGMA journal_mode=WAL")
        .unwrap();
    let vacuum = d.path().join("vacuum.db");
    {
        let c = Connection::open(&vacuum).unwrap();
        c.execute_batch("PRAGMA auto_vacuum=FULL; CREATE TABLE t(x);")
            .unwrap();
    }
    let text = d.path().join("text.db");
    std::fs::write(&text, "a,b\n1,2\n".repeat(100)).unwrap();
    for (path, why) in [
        (&wal, "WAL"),
        (&vacuum, "auto-vacuum"),
        (&text, "not an SQLite"),
    ] {
        let before = std::fs::read(path).unwrap();
        let e = Existing::read(&mut std::fs::File::open(path).unwrap()).unwrap_err();
        assert!(e.to_string().contains(why), "{}: {e}", path.display());
        assert_eq!(std::fs::read(path).unwrap(), before);
    }
}

/// One file operation of a change, as the disk model records it.
#[derive(Clone, Debug)]
enum Op {
    DbWrite(u64, Vec<u8>),
    DbSync,
    DbTruncate(u64),
    JournalWrite(u64, Vec<u8>),
    JournalSync,
    JournalRemove,
}

/// Records every operation, through [`Files`] and through the page writer's output.
#[derive(Clone, Default)]
struct Log(Rc<RefCell<Vec<Op>>>);

impl Files for Log {
    fn db_write(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.0
            .borrow_mut()
            .push(Op::DbWrite(offset, bytes.to_vec()));
        Ok(())
    }
    fn db_sync(&mut self) -> io::Result<()> {
        self.0.borrow_mut().push(Op::DbSync);
        Ok(())
    }
    fn db_truncate(&mut self, len: u64) -> io::Result<()> {
        self.0.borrow_mut().push(Op::DbTruncate(len));
        Ok(())
    }
    fn journal_write(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.0
            .borrow_mut()
            .push(Op::JournalWrite(offset, bytes.to_vec()));
        Ok(())
    }
    fn journal_sync(&mut self) -> io::Result<()> {
        self.0.borrow_mut().push(Op::JournalSync);
        Ok(())
    }
    fn journal_remove(&mut self) -> io::Result<()> {
        self.0.borrow_mut().push(Op::JournalRemove);
        Ok(())
    }
}

/// The page writer's output into the log, at its own position.
struct LogWriter(Log, u64);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.db_write(self.1, buf)?;
        self.1 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for LogWriter {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match to {
            SeekFrom::Start(p) => self.1 = p,
            _ => return Err(io::Error::other("the log writer seeks from the start only")),
        }
        Ok(self.1)
    }
}

/// What happens to the writes not yet synced when the power goes.
#[derive(Clone, Copy, Debug)]
enum Loss {
    /// None of them reached the disk.
    Dropped,
    /// All of them did.
    Kept,
    /// Some of their 512-byte sectors did, chosen by this seed.
    Torn(u64),
}

fn put(file: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let end = offset as usize + bytes.len();
    if file.len() < end {
        file.resize(end, 0);
    }
    file[offset as usize..end].copy_from_slice(bytes);
}

/// Applies pending operations to `file` as `loss` says.
fn settle(file: &mut Vec<u8>, pending: &[Op], loss: Loss, rng: &mut u64) {
    for op in pending {
        let mut keep = |_: usize| match loss {
            Loss::Dropped => false,
            Loss::Kept => true,
            Loss::Torn(_) => {
                *rng ^= *rng << 13;
                *rng ^= *rng >> 7;
                *rng ^= *rng << 17;
                (*rng).is_multiple_of(2)
            }
        };
        match op {
            Op::DbWrite(offset, bytes) | Op::JournalWrite(offset, bytes) => {
                for (i, sector) in bytes.chunks(512).enumerate() {
                    if keep(i) {
                        put(file, offset + 512 * i as u64, sector);
                    }
                }
            }
            Op::DbTruncate(len) if keep(0) => file.truncate(*len as usize),
            _ => {}
        }
    }
}

/// The database file and journal (if any) on the disk after the power went with
/// `ops` done.
fn after_crash(old: &[u8], ops: &[Op], loss: Loss) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut rng = match loss {
        Loss::Torn(seed) => seed | 1,
        _ => 1,
    };
    let mut db = old.to_vec();
    let mut db_pending = vec![];
    // The journal as synced (None: no durable file), and what was written since.
    let mut journal: Option<Vec<u8>> = None;
    let mut created = false;
    let mut journal_pending = vec![];
    for op in ops {
        match op {
            Op::DbWrite(..) | Op::DbTruncate(_) => db_pending.push(op.clone()),
            Op::DbSync => {
                settle(&mut db, &db_pending, Loss::Kept, &mut rng);
                db_pending.clear();
            }
            Op::JournalWrite(..) => {
                created = true;
                journal_pending.push(op.clone());
            }
            Op::JournalSync => {
                let mut j = journal.take().unwrap_or_default();
                settle(&mut j, &journal_pending, Loss::Kept, &mut rng);
                journal = Some(j);
                journal_pending.clear();
            }
            Op::JournalRemove => {
                journal = None;
                created = false;
                journal_pending.clear();
            }
        }
    }
    settle(&mut db, &db_pending, loss, &mut rng);
    let journal = match journal {
        Some(mut j) => {
            settle(&mut j, &journal_pending, loss, &mut rng);
            Some(j)
        }
        // A journal never synced: its directory entry may not have survived.
        None if created && !matches!(loss, Loss::Dropped) => {
            let mut j = vec![];
            settle(&mut j, &journal_pending, loss, &mut rng);
            Some(j)
        }
        None => None,
    };
    (db, journal)
}

/// Journals, writes through `write` and commits a change of `base` against a log of
/// the disk's operations; returns them.
fn logged_ops(base: Existing, nonce: u32, write: impl FnOnce(&mut DbWriter<LogWriter>)) -> Vec<Op> {
    let log = Log::default();
    let mut files = log.clone();
    journal::begin(&mut files, &base, nonce).unwrap();
    let page_size = base.page_size();
    let offset = u64::from(base.pages()) * u64::from(page_size);
    let mut db = DbWriter::extend(LogWriter(log.clone(), offset), base);
    write(&mut db);
    let (_, changed) = db.finish_in_place().unwrap();
    journal::commit(&mut files, page_size, &changed).unwrap();
    let ops = log.0.borrow().clone();
    ops
}

/// Runs a whole change against the log; returns the operations and the new file.
fn logged_change(old: &[u8], rows: &[(i64, String, Vec<u8>)]) -> (Vec<Op>, Vec<u8>) {
    // A file in WAL mode is read as its checkpointed self (the tests' are).
    let base = Existing::read_checkpointed(&mut Cursor::new(old.to_vec())).unwrap();
    let ops = logged_ops(base, 0x5eed_1234, |db| add_table(db, rows));
    let (new, journal) = after_crash(old, &ops, Loss::Dropped);
    assert!(journal.is_none());
    (ops, new)
}

/// Opens the file after a crash as SQLite would (playing back a hot journal), and
/// checks that it is exactly the old file or exactly the new one.
fn check_crash(dir: &Path, old: &[u8], new: &[u8], state: (Vec<u8>, Option<Vec<u8>>), case: &str) {
    let path = dir.join("crashed.db");
    let journal = dir.join("crashed.db-journal");
    let _ = std::fs::remove_file(&journal);
    std::fs::write(&path, &state.0).unwrap();
    if let Some(j) = &state.1 {
        std::fs::write(&journal, j).unwrap();
    }
    {
        let c = Connection::open(&path).unwrap();
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(ok, "ok", "{case}");
    }
    let now = std::fs::read(&path).unwrap();
    assert!(
        now == old || now == new,
        "{case}: the file is neither the old one nor the new one ({} bytes; old {}, new {})",
        now.len(),
        old.len(),
        new.len()
    );
    // A journal SQLite found hot is gone; one it found empty or dead may stay, harmless.
    if journal.exists() {
        let j = std::fs::read(&journal).unwrap();
        assert!(
            j.len() < 28 || j[..8] != journal::MAGIC || j[8..12] == [0; 4] || now == new,
            "{case}: a journal with records is left beside the old file"
        );
    }
}

/// Stops the change `ops` (of the file `old`) after each of its operations, the writes
/// not synced dropped, kept or torn, and checks what SQLite then finds.
fn crash_after_every_op(dir: &Path, old: &[u8], ops: &[Op], label: &str) {
    let (new, _) = after_crash(old, ops, Loss::Dropped);
    assert_eq!(dump_bytes(dir, &new).last().unwrap(), "integrity ok");
    for k in 0..=ops.len() {
        for loss in [Loss::Dropped, Loss::Kept, Loss::Torn(k as u64 * 31 + 7)] {
            let case = format!("{label}: crash after {k} of {} ops, {loss:?}", ops.len());
            check_crash(dir, old, &new, after_crash(old, &ops[..k], loss), &case);
        }
    }
}

#[test]
fn a_crash_after_any_write_or_sync_leaves_the_old_file_or_the_new_one() {
    let d = tempfile::tempdir().unwrap();
    // A schema over several 512-byte pages (so its right edge grows), a new table with
    // overflowing rows and an index.
    for (tables, n) in [(0usize, 3usize), (12, 40), (40, 2)] {
        let basep = d.path().join(format!("base{tables}.db"));
        base(&basep, 512, tables);
        let old = std::fs::read(&basep).unwrap();
        let rows = new_rows(n);
        let (ops, _) = logged_change(&old, &rows);
        crash_after_every_op(d.path(), &old, &ops, &format!("{tables} tables, {n} rows"));
    }
}

#[test]
fn a_change_rolled_back_by_the_writer_leaves_the_old_file() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("db.db");
    base(&path, 4096, 5);
    let old = std::fs::read(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE; SELECT count(*) FROM sqlite_schema;")
        .unwrap();
    let mut files = DiskFiles::open(&path).unwrap();
    let base = Existing::read(files.db()).unwrap();
    journal::begin(&mut files, &base, journal::nonce()).unwrap();
    let offset = u64::from(base.pages()) * u64::from(base.page_size());
    let out = SeqFile::extend(&path, offset).unwrap();
    let mut db = DbWriter::extend(out, base.clone());
    add_table(&mut db, &new_rows(500));
    let (out, changed) = db.finish_in_place().unwrap();
    // The pages changed in place are written, then the writer gives up before the
    // commit point.
    for (pgno, page) in &changed {
        files
            .db_write(u64::from(pgno - 1) * u64::from(base.page_size()), page)
            .unwrap();
    }
    journal::roll_back(&mut files, &base).unwrap();
    conn.execute_batch("ROLLBACK").unwrap();
    drop((out, files, conn));
    assert_eq!(std::fs::read(&path).unwrap(), old);
    assert!(!d.path().join("db.db-journal").exists());
}

/// [`dump`] of a file given as bytes.
fn dump_bytes(dir: &Path, bytes: &[u8]) -> Vec<String> {
    let p = dir.join("dumped.db");
    std::fs::write(&p, bytes).unwrap();
    dump(&p)
}

/// A table "grow"(k, t, b) of `rows` rows (rowids 1..=rows, some deleted in the middle
/// so that rowids have gaps) beside the base's tables.
fn with_grow(path: &Path, page_size: u32, tables: usize, rows: usize) {
    base(path, page_size, tables);
    let c = Connection::open(path).unwrap();
    c.execute_batch("BEGIN; CREATE TABLE grow(k INTEGER, t TEXT, b BLOB);")
        .unwrap();
    for (k, t, b) in new_rows(rows) {
        c.execute(
            "INSERT INTO grow(rowid, k, t, b) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![k, k * 3, t, b],
        )
        .unwrap();
    }
    c.execute_batch("DELETE FROM grow WHERE rowid % 7 = 3; COMMIT;")
        .unwrap();
}

/// Appends `rows` to the table whose right edge is `edge` (read from `base`) through `db`, with rowids
/// after its largest, as SQLite's INSERT without a rowid would give them.
fn append_rows<W: Write + Seek>(
    db: &mut DbWriter<W>,
    edge: liteload_btree::TableEdge,
    rows: &[(i64, String, Vec<u8>)],
) {
    let first = edge.max_rowid() + 1;
    let mut t = db.append_to(edge);
    for (i, (k, text, blob)) in rows.iter().enumerate() {
        t.push(
            first + i as i64,
            &[
                Value::Integer(*k * 3),
                Value::Text(text.as_bytes()),
                Value::Blob(blob),
            ],
        )
        .unwrap();
    }
    t.finish().unwrap();
}

/// Appends `rows` to "grow" of the database at `path` through the real files, under
/// SQLite's EXCLUSIVE lock; returns the table's largest rowid before.
fn append_on_disk(path: &Path, rows: &[(i64, String, Vec<u8>)]) -> i64 {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE; SELECT count(*) FROM sqlite_schema;")
        .unwrap();
    let root = root_of(&conn, "grow");
    let mut files = DiskFiles::open(path).unwrap();
    let mut base = Existing::read(files.db()).unwrap();
    let edge = base.table_edge(files.db(), root).unwrap();
    let max = edge.max_rowid();
    journal::begin(&mut files, &base, journal::nonce()).unwrap();
    let page_size = base.page_size();
    let offset = u64::from(base.pages()) * u64::from(page_size);
    let mut db = DbWriter::extend(SeqFile::extend(path, offset).unwrap(), base);
    append_rows(&mut db, edge, rows);
    let (out, changed) = db.finish_in_place().unwrap();
    journal::commit(&mut files, page_size, &changed).unwrap();
    conn.execute_batch("COMMIT").unwrap();
    drop((out, files));
    max
}

fn root_of(conn: &Connection, table: &str) -> u32 {
    conn.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
        [table],
        |r| r.get(0),
    )
    .unwrap()
}

/// SQLite's own INSERT of the same rows into the same table.
fn insert_rows(path: &Path, rows: &[(i64, String, Vec<u8>)]) {
    let c = Connection::open(path).unwrap();
    c.execute_batch("BEGIN").unwrap();
    for (k, t, b) in rows {
        c.execute(
            "INSERT INTO grow(k, t, b) VALUES (?1, ?2, ?3)",
            rusqlite::params![k * 3, t, b],
        )
        .unwrap();
    }
    c.execute_batch("COMMIT").unwrap();
}

#[test]
fn rows_appended_to_a_table_read_as_sqlites_insert_stores_them() {
    for page_size in [512u32, 4096] {
        for had in [0usize, 1, 40, 3000] {
            for n in [0usize, 1, 7, 2500] {
                let d = tempfile::tempdir().unwrap();
                let (ours, theirs) = (d.path().join("ours.db"), d.path().join("sqlite.db"));
                with_grow(&ours, page_size, 3, had);
                with_grow(&theirs, page_size, 3, had);
                let rows = new_rows(n);
                let version: i64 = Connection::open(&ours)
                    .unwrap()
                    .query_row("PRAGMA schema_version", [], |r| r.get(0))
                    .unwrap();
                append_on_disk(&ours, &rows);
                let seen: i64 = Connection::open(&ours)
                    .unwrap()
                    .query_row("SELECT count(*) FROM grow", [], |r| r.get(0))
                    .unwrap_or_else(|e| panic!("page {page_size}, {had} had, {n} appended: {e}"));
                assert!(seen as usize >= n);
                insert_rows(&theirs, &rows);
                let case = format!("page {page_size}, {had} rows had, {n} appended");
                assert_eq!(dump(&ours), dump(&theirs), "{case}");
                let c = Connection::open(&ours).unwrap();
                let q = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
                assert_eq!(
                    q("PRAGMA schema_version"),
                    version,
                    "{case}: no schema change"
                );
                assert_eq!(
                    q("PRAGMA page_count") as u64 * u64::from(page_size),
                    std::fs::metadata(&ours).unwrap().len(),
                    "{case}"
                );
                // SQLite goes on writing the table as its own.
                c.execute_batch(
                    "INSERT INTO grow(k) VALUES (-1); DELETE FROM grow WHERE rowid % 5 = 1;",
                )
                .unwrap();
                let ok: String = c
                    .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(ok, "ok", "{case}");
            }
        }
    }
}

#[test]
fn a_crash_during_an_append_leaves_the_old_file_or_the_new_one() {
    let d = tempfile::tempdir().unwrap();
    for (had, n) in [(0usize, 3usize), (30, 25), (200, 2)] {
        let basep = d.path().join(format!("grow{had}.db"));
        with_grow(&basep, 512, 2, had);
        let old = std::fs::read(&basep).unwrap();
        let root = root_of(&Connection::open(&basep).unwrap(), "grow");
        let rows = new_rows(n);
        let mut cursor = Cursor::new(old.clone());
        let mut base = Existing::read(&mut cursor).unwrap();
        let edge = base.table_edge(&mut cursor, root).unwrap();
        let ops = logged_ops(base, 0x5eed_4321, |db| append_rows(db, edge, &rows));
        crash_after_every_op(
            d.path(),
            &old,
            &ops,
            &format!("{had} rows had, {n} appended"),
        );
    }
}

#[test]
fn a_table_whose_rowids_end_at_zero_or_below_is_continued_after_its_largest() {
    for last in [0i64, -5] {
        let d = tempfile::tempdir().unwrap();
        let (ours, theirs) = (d.path().join("ours.db"), d.path().join("sqlite.db"));
        for p in [&ours, &theirs] {
            let c = Connection::open(p).unwrap();
            c.execute_batch(&format!(
                "PRAGMA page_size=512; CREATE TABLE grow(k INTEGER, t TEXT, b BLOB);
                 INSERT INTO grow(rowid, k) VALUES (-9, 1), ({last}, 2);"
            ))
            .unwrap();
        }
        let rows = new_rows(30);
        assert_eq!(append_on_disk(&ours, &rows), last);
        insert_rows(&theirs, &rows);
        let mut rowids = vec![];
        let c = Connection::open(&ours).unwrap();
        let mut s = c.prepare("SELECT rowid FROM grow ORDER BY rowid").unwrap();
        let mut r = s.query([]).unwrap();
        while let Some(row) = r.next().unwrap() {
            rowids.push(row.get::<_, i64>(0).unwrap());
        }
        assert_eq!(rowids[..3], [-9, last, last + 1]);
        assert_eq!(dump(&ours), dump(&theirs), "last rowid {last}");
    }
}

const MADE: &str = "CREATE TABLE made(k INTEGER NOT NULL, t TEXT, b BLOB, UNIQUE (t, k));
                    CREATE INDEX made_k ON made(k);";

/// A table made beforehand, empty, with two indexes (a UNIQUE constraint's automatic one
/// over text and integer, and an integer one) beside the base's tables.
fn with_made(path: &Path, page_size: u32, tables: usize) {
    base(path, page_size, tables);
    Connection::open(path).unwrap().execute_batch(MADE).unwrap();
}

/// Reads the (empty) right edge of "made" and its two empty index roots from `file`
/// (read as `base`), which journals them.
fn fill_made<R: io::Read + Seek>(
    base: &mut Existing,
    file: &mut R,
    roots: [u32; 3],
) -> (liteload_btree::TableEdge, [liteload_btree::IndexRoot; 2]) {
    let edge = base.table_edge(file, roots[0]).unwrap();
    let unique = base.empty_index(file, roots[1]).unwrap();
    let by_k = base.empty_index(file, roots[2]).unwrap();
    (edge, [unique, by_k])
}

/// Writes `rows` into "made" through `db`: after its edge, then each index into its own
/// root page.
fn write_made<W: Write + Seek>(
    db: &mut DbWriter<W>,
    edge: liteload_btree::TableEdge,
    [unique, by_k]: [liteload_btree::IndexRoot; 2],
    roots: [u32; 3],
    rows: &[(i64, String, Vec<u8>)],
) {
    append_rows(db, edge, rows);
    // (t, k, rowid) in SQLite's index order, then (k, rowid).
    let mut entries: Vec<Vec<u8>> = rows
        .iter()
        .enumerate()
        .map(|(i, (k, t, _))| {
            let mut e = vec![];
            liteload_btree::record::encode(
                &[
                    Value::Text(t.as_bytes()),
                    Value::Integer(*k * 3),
                    Value::Integer(i as i64 + 1),
                ],
                &mut e,
            );
            e
        })
        .collect();
    entries.sort_by(|a, b| liteload_btree::index::compare(a, b));
    let refs: Vec<&[u8]> = entries.iter().map(Vec::as_slice).collect();
    db.fill_index(unique).unwrap();
    assert_eq!(db.index("ignored", "made", "", &refs).unwrap(), roots[1]);
    let mut pairs: Vec<(i64, i64)> = rows
        .iter()
        .enumerate()
        .map(|(i, (k, _, _))| (*k * 3, i as i64 + 1))
        .collect();
    pairs.sort();
    db.fill_index(by_k).unwrap();
    assert_eq!(
        db.index_int_pairs("ignored", "made", "", &pairs).unwrap(),
        roots[2]
    );
}

/// The root pages of "made" and its two indexes.
fn made_roots(conn: &Connection) -> [u32; 3] {
    [
        root_of(conn, "made"),
        root_of(conn, "sqlite_autoindex_made_1"),
        root_of(conn, "made_k"),
    ]
}

/// Rows with distinct keys for "made" (its UNIQUE constraint holds).
fn made_rows(n: usize) -> Vec<(i64, String, Vec<u8>)> {
    new_rows(n)
        .into_iter()
        .map(|(k, t, b)| (k, format!("{}{t}", (k * 7919) % 1009), b))
        .collect()
}

#[test]
fn a_table_made_beforehand_filled_in_place_reads_as_sqlites_insert_stores_it() {
    for page_size in [512u32, 4096] {
        for n in [0usize, 1, 30, 3000] {
            let d = tempfile::tempdir().unwrap();
            let (ours, theirs) = (d.path().join("ours.db"), d.path().join("sqlite.db"));
            with_made(&ours, page_size, 4);
            with_made(&theirs, page_size, 4);
            let rows = made_rows(n);
            let conn = Connection::open(&ours).unwrap();
            conn.execute_batch("BEGIN EXCLUSIVE; SELECT count(*) FROM sqlite_schema;")
                .unwrap();
            let roots = made_roots(&conn);
            let version: i64 = conn
                .query_row("PRAGMA schema_version", [], |r| r.get(0))
                .unwrap();
            let mut files = DiskFiles::open(&ours).unwrap();
            let mut base = Existing::read(files.db()).unwrap();
            let (edge, indexes) = fill_made(&mut base, files.db(), roots);
            journal::begin(&mut files, &base, journal::nonce()).unwrap();
            let offset = u64::from(base.pages()) * u64::from(page_size);
            let mut db = DbWriter::extend(SeqFile::extend(&ours, offset).unwrap(), base);
            write_made(&mut db, edge, indexes, roots, &rows);
            let (out, changed) = db.finish_in_place().unwrap();
            journal::commit(&mut files, page_size, &changed).unwrap();
            conn.execute_batch("COMMIT").unwrap();
            drop((out, files, conn));
            let c = Connection::open(&theirs).unwrap();
            c.execute_batch("BEGIN").unwrap();
            for (k, t, b) in &rows {
                c.execute(
                    "INSERT INTO made(k, t, b) VALUES (?1, ?2, ?3)",
                    rusqlite::params![k * 3, t, b],
                )
                .unwrap();
            }
            c.execute_batch("COMMIT").unwrap();
            let case = format!("page {page_size}, {n} rows");
            assert_eq!(dump(&ours), dump(&theirs), "{case}");
            let c = Connection::open(&ours).unwrap();
            let q = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
            assert_eq!(q("PRAGMA schema_version"), version, "{case}");
            assert_eq!(q("PRAGMA freelist_count"), 0, "{case}");
            assert_eq!(
                q("PRAGMA page_count") as u64 * u64::from(page_size),
                std::fs::metadata(&ours).unwrap().len(),
                "{case}"
            );
            // The indexes answer as SQLite's own: by each key, and the constraint holds.
            let (k, t) = rows
                .last()
                .map_or((0, String::new()), |r| (r.0 * 3, r.1.clone()));
            let by_k: i64 = c
                .query_row(
                    "SELECT count(*) FROM made INDEXED BY made_k WHERE k = ?1",
                    [k],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(by_k, i64::from(n > 0), "{case}");
            if n > 0 {
                let e = c
                    .execute(
                        "INSERT INTO made(k, t) VALUES (?1, ?2)",
                        rusqlite::params![k, t],
                    )
                    .unwrap_err();
                assert!(e.to_string().contains("UNIQUE"), "{case}: {e}");
            }
            c.execute_batch(
                "INSERT INTO made(k, t) VALUES (-1, 'new'); DELETE FROM made WHERE rowid % 5 = 1;",
            )
            .unwrap();
            let ok: String = c
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(ok, "ok", "{case}");
        }
    }
}

#[test]
fn a_crash_while_filling_a_made_table_leaves_the_old_file_or_the_new_one() {
    let d = tempfile::tempdir().unwrap();
    for (tables, n) in [(0usize, 2usize), (6, 60)] {
        let basep = d.path().join(format!("made{tables}.db"));
        with_made(&basep, 512, tables);
        let old = std::fs::read(&basep).unwrap();
        let roots = made_roots(&Connection::open(&basep).unwrap());
        let rows = made_rows(n);
        let mut cursor = Cursor::new(old.clone());
        let mut base = Existing::read(&mut cursor).unwrap();
        let (edge, indexes) = fill_made(&mut base, &mut cursor, roots);
        let ops = logged_ops(base, 0x5eed_9876, |db| {
            write_made(db, edge, indexes, roots, &rows)
        });
        crash_after_every_op(
            d.path(),
            &old,
            &ops,
            &format!("made, {tables} tables, {n} rows"),
        );
    }
}

#[test]
fn only_an_empty_index_root_is_filled() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("db.db");
    with_made(&p, 4096, 1);
    let c = Connection::open(&p).unwrap();
    let [table, unique, _] = made_roots(&c);
    c.execute_batch(
        "CREATE TABLE full(a); CREATE INDEX full_a ON full(a); INSERT INTO full VALUES (1);",
    )
    .unwrap();
    let full = root_of(&c, "full_a");
    drop(c);
    let mut f = std::fs::File::open(&p).unwrap();
    let mut base = Existing::read(&mut f).unwrap();
    for root in [table, full, 1, 0, base.pages() + 1] {
        assert!(base.empty_index(&mut f, root).is_err(), "root {root}");
    }
    assert!(base.empty_index(&mut f, unique).is_ok());
}

/// [`base`] in WAL mode: the header's file format versions are 2, and the WAL was
/// checkpointed and removed when the last connection closed.
fn wal_base(path: &Path, page_size: u32, tables: usize) {
    base(path, page_size, tables);
    let c = Connection::open(path).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_crash_while_extending_a_wal_file_leaves_the_old_file_or_the_new_one_in_wal_mode() {
    let d = tempfile::tempdir().unwrap();
    for (tables, n) in [(0usize, 3usize), (12, 40)] {
        let basep = d.path().join(format!("wal{tables}.db"));
        wal_base(&basep, 512, tables);
        let old = std::fs::read(&basep).unwrap();
        assert_eq!(old[18..20], [2, 2]);
        assert!(Existing::read(&mut Cursor::new(old.clone())).is_err());
        let (ops, new) = logged_change(&old, &new_rows(n));
        assert_eq!(new[18..20], [2, 2], "the new file stays in WAL mode");
        crash_after_every_op(
            d.path(),
            &old,
            &ops,
            &format!("WAL, {tables} tables, {n} rows"),
        );
    }
}

/// A file in WAL mode extended through the real files as a load does it: one connection
/// in EXCLUSIVE locking mode (no shared memory; its first read takes SQLite's EXCLUSIVE
/// lock, which no other connection then gets), the WAL checkpointed and emptied, the
/// change journaled and committed, that connection closed without a checkpoint. SQLite
/// then reads the new table as its own INSERT writes it, and the file is still in WAL
/// mode.
#[test]
fn a_file_in_wal_mode_is_extended_under_an_exclusive_lock_and_stays_in_wal_mode() {
    for n in [0usize, 5, 3000] {
        let d = tempfile::tempdir().unwrap();
        let (ours, theirs) = (d.path().join("ours.db"), d.path().join("sqlite.db"));
        // Rows left in the WAL (copied while a connection has them there, as after a
        // crash), which the checkpoint moves into the file first.
        let src = d.path().join("src.db");
        wal_base(&src, 4096, 3);
        {
            let c = Connection::open(&src).unwrap();
            c.execute_batch(
                "PRAGMA wal_autocheckpoint=0; INSERT INTO \"old 1\"(a, b) VALUES (99, 'in the wal');",
            )
            .unwrap();
            for p in [&ours, &theirs] {
                std::fs::copy(&src, p).unwrap();
                let mut wal = p.clone().into_os_string();
                wal.push("-wal");
                std::fs::copy(d.path().join("src.db-wal"), &wal).unwrap();
            }
        }
        let rows = new_rows(n);
        let conn = Connection::open(&ours).unwrap();
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
        conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=FULL;")
            .unwrap();
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
            .unwrap();
        let (busy, log): (i64, i64) = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((busy, log), (0, 0));
        conn.execute_batch("BEGIN EXCLUSIVE; SELECT count(*) FROM sqlite_schema;")
            .unwrap();
        // Another connection is kept out meanwhile.
        let other = Connection::open(&ours).unwrap();
        assert!(other
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r
                .get::<_, i64>(0))
            .is_err());
        drop(other);
        let mut files = DiskFiles::open(&ours).unwrap();
        assert!(Existing::read(files.db()).is_err(), "read refuses WAL");
        let base = Existing::read_checkpointed(files.db()).unwrap();
        journal::begin(&mut files, &base, journal::nonce()).unwrap();
        let page_size = base.page_size();
        let offset = u64::from(base.pages()) * u64::from(page_size);
        let mut db = DbWriter::extend(SeqFile::extend(&ours, offset).unwrap(), base);
        add_table(&mut db, &rows);
        let (out, changed) = db.finish_in_place().unwrap();
        journal::commit(&mut files, page_size, &changed).unwrap();
        drop((out, files));
        conn.execute_batch("COMMIT").unwrap();
        drop(conn);
        sqlite_adds_table(&theirs, &rows);
        let case = format!("WAL, {n} rows");
        assert_eq!(dump(&ours), dump(&theirs), "{case}");
        let c = Connection::open(&ours).unwrap();
        let mode: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal", "{case}");
        c.execute_batch("INSERT INTO \"new one\"(k) VALUES (-1); CREATE TABLE after(x);")
            .unwrap();
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok", "{case}");
        assert!(!d.path().join("ours.db-journal").exists(), "{case}");
    }
}

/// [`with_grow`] with two indexes on "grow" (an integer one, and one over text and blobs
/// whose long entries overflow) and a freelist left by a dropped table.
fn with_indexed(path: &Path, page_size: u32, rows: usize) {
    with_grow(path, page_size, 2, rows);
    Connection::open(path)
        .unwrap()
        .execute_batch(
            "CREATE INDEX grow_k ON grow(k); CREATE INDEX grow_tb ON grow(t, b);
             CREATE TABLE junk(x); INSERT INTO junk VALUES (zeroblob(20000)), (zeroblob(3000));
             DROP TABLE junk;",
        )
        .unwrap();
}

/// The root pages of "grow" and its two indexes.
fn indexed_roots(conn: &Connection) -> [u32; 3] {
    [
        root_of(conn, "grow"),
        root_of(conn, "grow_k"),
        root_of(conn, "grow_tb"),
    ]
}

/// Appends `rows` to "grow" through `db` (its edge and index roots read from `file`, as
/// `base`), then writes each index into its own root: its old entries (read from `file`)
/// merged with the new rows' ones, its old pages freed.
fn merge_indexed<R: io::Read + Seek, W: Write + Seek>(
    db: &mut DbWriter<W>,
    file: &mut R,
    edge: liteload_btree::TableEdge,
    indexes: [liteload_btree::IndexRoot; 2],
    rows: &[(i64, String, Vec<u8>)],
) {
    let first = edge.max_rowid() + 1;
    append_rows(db, edge, rows);
    let entry = |values: &[Value<'_>]| {
        let mut e = vec![];
        liteload_btree::record::encode(values, &mut e);
        e
    };
    let keys: [Vec<Vec<u8>>; 2] = [
        rows.iter()
            .enumerate()
            .map(|(i, (k, _, _))| entry(&[Value::Integer(k * 3), Value::Integer(first + i as i64)]))
            .collect(),
        rows.iter()
            .enumerate()
            .map(|(i, (_, t, b))| {
                entry(&[
                    Value::Text(t.as_bytes()),
                    Value::Blob(b),
                    Value::Integer(first + i as i64),
                ])
            })
            .collect(),
    ];
    for (root, mut new) in indexes.into_iter().zip(keys) {
        new.sort_by(|a, b| liteload_btree::index::compare(a, b));
        let mut old = root.entries(&mut *file);
        db.fill_index(root.clone()).unwrap();
        let mut builder = db.index_builder("ignored", "grow", "");
        let mut new = new.into_iter().peekable();
        loop {
            let next_old = old.next_entry().unwrap().map(<[u8]>::to_vec);
            while let Some(n) = new.next_if(|n| {
                next_old
                    .as_deref()
                    .is_none_or(|o| liteload_btree::index::compare(n, o).is_lt())
            }) {
                builder.push(&n).unwrap();
            }
            match next_old {
                Some(o) => builder.push(&o).unwrap(),
                None => break,
            }
        }
        builder.finish().unwrap();
        let freed = old.finish().unwrap();
        db.free(freed).unwrap();
    }
}

#[test]
fn rows_appended_to_an_indexed_table_with_its_indexes_merged_read_as_sqlites_insert_stores_them() {
    for page_size in [512u32, 4096] {
        for had in [0usize, 1, 40, 3000] {
            for n in [0usize, 1, 7, 2500] {
                let d = tempfile::tempdir().unwrap();
                let (ours, theirs) = (d.path().join("ours.db"), d.path().join("sqlite.db"));
                with_indexed(&ours, page_size, had);
                with_indexed(&theirs, page_size, had);
                let rows = new_rows(n);
                let conn = Connection::open(&ours).unwrap();
                conn.execute_batch("BEGIN EXCLUSIVE; SELECT count(*) FROM sqlite_schema;")
                    .unwrap();
                let [table, k, tb] = indexed_roots(&conn);
                let q = |c: &Connection, sql: &str| -> i64 {
                    c.query_row(sql, [], |r| r.get(0)).unwrap()
                };
                let (version, free_before) = (
                    q(&conn, "PRAGMA schema_version"),
                    q(&conn, "PRAGMA freelist_count"),
                );
                assert!(free_before > 0);
                let mut files = DiskFiles::open(&ours).unwrap();
                let mut base = Existing::read(files.db()).unwrap();
                let edge = base.table_edge(files.db(), table).unwrap();
                let indexes = [
                    base.index_root(files.db(), k).unwrap(),
                    base.index_root(files.db(), tb).unwrap(),
                ];
                journal::begin(&mut files, &base, journal::nonce()).unwrap();
                let offset = u64::from(base.pages()) * u64::from(page_size);
                let mut db = DbWriter::extend(SeqFile::extend(&ours, offset).unwrap(), base);
                merge_indexed(&mut db, files.db(), edge, indexes, &rows);
                let (out, changed) = db.finish_in_place().unwrap();
                journal::commit(&mut files, page_size, &changed).unwrap();
                conn.execute_batch("COMMIT").unwrap();
                drop((out, files, conn));
                insert_rows(&theirs, &rows);
                let case = format!("page {page_size}, {had} rows had, {n} appended");
                assert_eq!(dump(&ours), dump(&theirs), "{case}");
                let c = Connection::open(&ours).unwrap();
                assert_eq!(q(&c, "PRAGMA schema_version"), version, "{case}");
                // The old indexes' pages other than their roots are free (the first row's
                // 9000-byte blob overflows its entry over text and blobs).
                let free = q(&c, "PRAGMA freelist_count");
                assert!(free >= free_before, "{case}");
                assert_eq!(free > free_before, had > 0, "{case}: {free} free pages");
                assert_eq!(
                    q(&c, "PRAGMA page_count") as u64 * u64::from(page_size),
                    std::fs::metadata(&ours).unwrap().len(),
                    "{case}"
                );
                // Each index answers as SQLite's own does, entry for entry.
                let theirs_c = Connection::open(&theirs).unwrap();
                for sql in [
                    "SELECT group_concat(k || ':' || rowid) FROM grow INDEXED BY grow_k",
                    "SELECT group_concat(hex(t) || hex(b) || rowid) FROM grow INDEXED BY grow_tb \
                     WHERE t > ''",
                ] {
                    let get = |c: &Connection| -> Option<String> {
                        c.query_row(sql, [], |r| r.get(0)).unwrap()
                    };
                    assert_eq!(get(&c), get(&theirs_c), "{case}: {sql}");
                }
                // SQLite goes on writing the file as its own, taking the freed pages.
                c.execute_batch(
                    "INSERT INTO grow(k, t, b) SELECT k + 1, t || 'x', b FROM grow;
                     DELETE FROM grow WHERE rowid % 5 = 1;",
                )
                .unwrap();
                let ok: String = c
                    .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(ok, "ok", "{case}");
            }
        }
    }
}

#[test]
fn a_crash_during_an_index_merge_leaves_the_old_file_or_the_new_one() {
    let d = tempfile::tempdir().unwrap();
    for (had, n) in [(3usize, 2usize), (60, 25), (300, 3)] {
        let basep = d.path().join(format!("indexed{had}.db"));
        with_indexed(&basep, 512, had);
        let old = std::fs::read(&basep).unwrap();
        let [table, k, tb] = indexed_roots(&Connection::open(&basep).unwrap());
        let rows = new_rows(n);
        let mut cursor = Cursor::new(old.clone());
        let mut base = Existing::read(&mut cursor).unwrap();
        let edge = base.table_edge(&mut cursor, table).unwrap();
        let indexes = [
            base.index_root(&mut cursor, k).unwrap(),
            base.index_root(&mut cursor, tb).unwrap(),
        ];
        let ops = logged_ops(base, 0x5eed_5555, |db| {
            merge_indexed(db, &mut cursor, edge, indexes, &rows)
        });
        crash_after_every_op(
            d.path(),
            &old,
            &ops,
            &format!("merge, {had} rows had, {n} appended"),
        );
    }
}

#[test]
fn an_index_that_is_not_what_sqlite_writes_is_refused_before_it_is_used() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("db.db");
    with_indexed(&p, 512, 300);
    let c = Connection::open(&p).unwrap();
    let [table, k, _] = indexed_roots(&c);
    drop(c);
    let good = std::fs::read(&p).unwrap();
    // Not an index root at all.
    let mut base = Existing::read(&mut Cursor::new(good.clone())).unwrap();
    for root in [table, 1, 0, base.pages() + 1] {
        assert!(
            base.index_root(&mut Cursor::new(good.clone()), root)
                .is_err(),
            "root {root}"
        );
    }
    // An index whose root names itself as a child: a cycle, found before any entry of
    // it is used twice.
    let page_size = 512usize;
    let mut bad = good.clone();
    let at = (k as usize - 1) * page_size;
    assert_eq!(bad[at], 0x02, "the index spans pages");
    bad[at + 8..at + 12].copy_from_slice(&k.to_be_bytes());
    let root = base.index_root(&mut Cursor::new(bad.clone()), k).unwrap();
    let mut entries = root.entries(Cursor::new(bad));
    let e = loop {
        match entries.next_entry() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a cycle read to its end"),
            Err(e) => break e,
        }
    };
    assert!(e.to_string().contains("twice"), "{e}");
    // Its pages are freed only once every entry is read.
    let root = base.index_root(&mut Cursor::new(good.clone()), k).unwrap();
    let mut entries = root.entries(Cursor::new(good.clone()));
    entries.next_entry().unwrap();
    assert!(entries.finish().is_err());
}
