//! [`BatchStatement`]: a prepared INSERT bound straight from a batch through SQLite's C API.
//!
//! This is the one place liteload goes around rusqlite, because the measured gain is large
//! (bench/README.md, "binding"): rusqlite binds text with `SQLITE_TRANSIENT`, so SQLite
//! mallocs and copies every text value, and it checks the parameter index on every call.
//! Here text is bound with `SQLITE_STATIC`: SQLite reads it in place.
//!
//! Invariants that make `SQLITE_STATIC` sound:
//! - values are bound from a `&Batch` that is borrowed for the whole of [`BatchStatement::execute_rows`];
//! - bindings are cleared (`sqlite3_clear_bindings`) before that call returns, so no
//!   pointer into the batch outlives the borrow;
//! - parameter indexes are computed from the statement's own row and column counts, which
//!   `prepare` fixed (`debug_assert!`ed against `sqlite3_bind_parameter_count`).

use std::ffi::{c_char, c_int, CStr};
use std::marker::PhantomData;
use std::ptr;

use rusqlite::{ffi, Connection};

use crate::batch::{Batch, Value};

/// A statement `INSERT … VALUES (?,…),(?,…)…` of `rows` rows of `cols` values.
pub struct BatchStatement<'c> {
    db: *mut ffi::sqlite3,
    stmt: *mut ffi::sqlite3_stmt,
    rows: usize,
    cols: usize,
    _conn: PhantomData<&'c Connection>,
}

impl<'c> BatchStatement<'c> {
    /// Prepares `sql`, which must have exactly `rows * cols` parameters.
    pub fn prepare(
        conn: &'c Connection,
        sql: &str,
        rows: usize,
        cols: usize,
    ) -> rusqlite::Result<Self> {
        // SAFETY: the handle is valid while `conn` lives, and 'c ties us to it.
        let db = unsafe { conn.handle() };
        let mut stmt = ptr::null_mut();
        // SAFETY: `sql` is valid for its length; `stmt` is an out-pointer.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                db,
                sql.as_ptr().cast::<c_char>(),
                sql.len() as c_int,
                ffi::SQLITE_PREPARE_PERSISTENT as _,
                &mut stmt,
                ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(error(db, rc));
        }
        // SAFETY: prepare succeeded, so `stmt` is a live statement.
        debug_assert_eq!(
            unsafe { ffi::sqlite3_bind_parameter_count(stmt) } as usize,
            rows * cols
        );
        Ok(BatchStatement {
            db,
            stmt,
            rows,
            cols,
            _conn: PhantomData,
        })
    }

    /// Rows per execution.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Binds rows `first..first + self.rows()` of `batch` and runs the statement once.
    /// On error SQLite has undone the statement (its default ABORT), and the error says why.
    pub fn execute_rows(&mut self, batch: &Batch, first: usize) -> rusqlite::Result<()> {
        assert!(
            first + self.rows <= batch.rows() && batch.ncols() == self.cols,
            "rows out of range"
        );
        let mut rc = ffi::SQLITE_OK;
        'bind: for r in 0..self.rows {
            for (j, v) in batch.row(first + r).enumerate() {
                let idx = (r * self.cols + j + 1) as c_int;
                // SAFETY: `stmt` is live; `idx` is within the parameter count (see the
                // invariants above); text points into `batch`, which outlives this call,
                // and bindings are cleared before we return.
                rc = unsafe {
                    match v {
                        Value::Null => ffi::sqlite3_bind_null(self.stmt, idx),
                        Value::Integer(i) => ffi::sqlite3_bind_int64(self.stmt, idx, i),
                        Value::Real(f) => ffi::sqlite3_bind_double(self.stmt, idx, f),
                        Value::Text(s) => ffi::sqlite3_bind_text(
                            self.stmt,
                            idx,
                            s.as_ptr().cast::<c_char>(),
                            s.len() as c_int,
                            ffi::SQLITE_STATIC(),
                        ),
                    }
                };
                if rc != ffi::SQLITE_OK {
                    break 'bind;
                }
            }
        }
        if rc == ffi::SQLITE_OK {
            // SAFETY: `stmt` is live and fully bound.
            rc = unsafe { ffi::sqlite3_step(self.stmt) };
        }
        let result = if rc == ffi::SQLITE_DONE || rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(error(self.db, rc))
        };
        // SAFETY: `stmt` is live; reset makes it runnable again, and clearing drops every
        // pointer into `batch`.
        unsafe {
            ffi::sqlite3_reset(self.stmt);
            ffi::sqlite3_clear_bindings(self.stmt);
        }
        result
    }
}

/// The error for result code `rc`, with SQLite's message (read before anything else runs).
fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    // SAFETY: `db` is a live handle; the message is copied out at once.
    let (code, msg) = unsafe {
        let code = ffi::sqlite3_extended_errcode(db);
        let m = ffi::sqlite3_errmsg(db);
        let msg = if m.is_null() {
            None
        } else {
            Some(CStr::from_ptr(m).to_string_lossy().into_owned())
        };
        (if code == ffi::SQLITE_OK { rc } else { code }, msg)
    };
    rusqlite::Error::SqliteFailure(ffi::Error::new(code), msg)
}

impl Drop for BatchStatement<'_> {
    fn drop(&mut self) {
        // SAFETY: `stmt` came from prepare and is finalized once, here.
        unsafe {
            ffi::sqlite3_finalize(self.stmt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{Cell, RowOrigin};

    #[test]
    fn binds_every_kind_and_reports_constraint_errors() -> rusqlite::Result<()> {
        let c = Connection::open_in_memory()?;
        c.execute_batch("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT, c REAL)")?;
        let mut st = BatchStatement::prepare(&c, "INSERT INTO t VALUES (?,?,?),(?,?,?)", 2, 3)?;
        let mut b = Batch::new(3);
        for (k, s) in [(1, "x"), (2, "")] {
            b.push(Cell::Integer(k));
            b.push_text(s);
            b.push(if k == 1 { Cell::Real(0.5) } else { Cell::Null });
            b.finish_row(RowOrigin::default());
        }
        st.execute_rows(&b, 0)?;
        drop(b);
        let got: Vec<(i64, String, Option<f64>)> = c
            .prepare("SELECT a, b, c FROM t ORDER BY a")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        assert_eq!(
            got,
            vec![(1, "x".into(), Some(0.5)), (2, String::new(), None)]
        );
        let mut again = Batch::new(3);
        for k in [3, 1] {
            again.push(Cell::Integer(k));
            again.push_text("y");
            again.push(Cell::Null);
            again.finish_row(RowOrigin::default());
        }
        match st.execute_rows(&again, 0) {
            Err(rusqlite::Error::SqliteFailure(e, Some(m))) => {
                assert_eq!(e.code, rusqlite::ErrorCode::ConstraintViolation);
                assert!(m.contains("UNIQUE"), "{m}");
            }
            other => panic!("expected a constraint error, got {other:?}"),
        }
        // The failed statement was undone as a whole: row 3 is not there.
        let n: i64 = c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
        assert_eq!(n, 2);
        Ok(())
    }
}
