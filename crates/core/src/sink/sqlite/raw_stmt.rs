//! Prepared statements bound through SQLite's C API: [`RawStatement`], and on it
//! [`BatchStatement`], a multi-row INSERT bound straight from a batch.
//!
//! This is the one place liteload goes around rusqlite, because the measured gain is large
//! (bench/README.md, "binding"): rusqlite binds text with `SQLITE_TRANSIENT`, so SQLite
//! mallocs and copies every text value, and it checks the parameter index on every call.
//! Here text is bound with `SQLITE_STATIC`: SQLite reads it in place.
//!
//! Invariants that make `SQLITE_STATIC` sound:
//! - [`RawStatement::bind_text`] is `unsafe`: its caller keeps the text alive and
//!   unchanged until the parameter is bound again, the bindings are cleared, or the
//!   statement is dropped;
//! - [`BatchStatement`] binds from a `&Batch` borrowed for the whole of
//!   [`BatchStatement::execute_rows`] and clears the bindings before that call returns;
//! - parameter indexes are computed from the statement's own row and column counts, which
//!   `prepare` fixed (`debug_assert!`ed against `sqlite3_bind_parameter_count`).

use std::ffi::{c_char, c_int, CStr};
use std::marker::PhantomData;
use std::ptr;

use rusqlite::{ffi, Connection};

use crate::batch::{Batch, Value};

/// A prepared statement of `conn`, bound by 1-based parameter index.
pub(crate) struct RawStatement<'c> {
    db: *mut ffi::sqlite3,
    stmt: *mut ffi::sqlite3_stmt,
    _conn: PhantomData<&'c Connection>,
}

impl<'c> RawStatement<'c> {
    pub fn prepare(conn: &'c Connection, sql: &str) -> rusqlite::Result<Self> {
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
        Ok(RawStatement {
            db,
            stmt,
            _conn: PhantomData,
        })
    }

    pub fn param_count(&self) -> usize {
        // SAFETY: `stmt` is live.
        unsafe { ffi::sqlite3_bind_parameter_count(self.stmt) as usize }
    }

    fn check(&self, rc: c_int) -> rusqlite::Result<()> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(error(self.db, rc))
        }
    }

    pub fn bind_null(&mut self, idx: usize) -> rusqlite::Result<()> {
        debug_assert!(idx >= 1 && idx <= self.param_count());
        // SAFETY: `stmt` is live; SQLite checks the index.
        self.check(unsafe { ffi::sqlite3_bind_null(self.stmt, idx as c_int) })
    }

    pub fn bind_int(&mut self, idx: usize, v: i64) -> rusqlite::Result<()> {
        debug_assert!(idx >= 1 && idx <= self.param_count());
        // SAFETY: `stmt` is live; SQLite checks the index.
        self.check(unsafe { ffi::sqlite3_bind_int64(self.stmt, idx as c_int, v) })
    }

    pub fn bind_real(&mut self, idx: usize, v: f64) -> rusqlite::Result<()> {
        debug_assert!(idx >= 1 && idx <= self.param_count());
        // SAFETY: `stmt` is live; SQLite checks the index.
        self.check(unsafe { ffi::sqlite3_bind_double(self.stmt, idx as c_int, v) })
    }

    /// Binds `text` in place, without a copy.
    ///
    /// # Safety
    /// `text` must stay alive and unchanged until parameter `idx` is bound again,
    /// [`RawStatement::clear_bindings`] runs, or the statement is dropped.
    pub unsafe fn bind_text(&mut self, idx: usize, text: &[u8]) -> rusqlite::Result<()> {
        debug_assert!(idx >= 1 && idx <= self.param_count());
        // SAFETY: `stmt` is live; the caller keeps `text` alive as documented.
        self.check(unsafe {
            ffi::sqlite3_bind_text64(
                self.stmt,
                idx as c_int,
                text.as_ptr().cast::<c_char>(),
                text.len() as u64,
                ffi::SQLITE_STATIC(),
                ffi::SQLITE_UTF8 as u8,
            )
        })
    }

    /// Binds `blob` in place, without a copy.
    ///
    /// # Safety
    /// As [`RawStatement::bind_text`]: `blob` must stay alive and unchanged until
    /// parameter `idx` is bound again, the bindings are cleared, or the statement is
    /// dropped.
    pub unsafe fn bind_blob(&mut self, idx: usize, blob: &[u8]) -> rusqlite::Result<()> {
        debug_assert!(idx >= 1 && idx <= self.param_count());
        // SAFETY: `stmt` is live; the caller keeps `blob` alive as documented. A null
        // pointer would bind NULL, so an empty blob binds a dangling but non-null one
        // (SQLite reads no byte of it).
        self.check(unsafe {
            ffi::sqlite3_bind_blob64(
                self.stmt,
                idx as c_int,
                blob.as_ptr().cast::<std::ffi::c_void>(),
                blob.len() as u64,
                ffi::SQLITE_STATIC(),
            )
        })
    }

    /// Runs the statement to its end (it must return no rows) and resets it; bindings
    /// stay. On error SQLite has undone the statement (its default ABORT).
    pub fn run(&mut self) -> rusqlite::Result<()> {
        // SAFETY: `stmt` is live.
        let rc = unsafe { ffi::sqlite3_step(self.stmt) };
        let result = if rc == ffi::SQLITE_DONE || rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(error(self.db, rc))
        };
        // SAFETY: `stmt` is live; reset makes it runnable again.
        unsafe {
            ffi::sqlite3_reset(self.stmt);
        }
        result
    }

    /// Rows changed by the connection's last finished INSERT, UPDATE or DELETE.
    pub fn changes(&self) -> u64 {
        // SAFETY: `db` is live while 'c.
        unsafe { ffi::sqlite3_changes64(self.db) as u64 }
    }

    /// Unbinds every parameter (to NULL), dropping every pointer to bound text.
    pub fn clear_bindings(&mut self) {
        // SAFETY: `stmt` is live.
        unsafe {
            ffi::sqlite3_clear_bindings(self.stmt);
        }
    }
}

impl Drop for RawStatement<'_> {
    fn drop(&mut self) {
        // SAFETY: `stmt` came from prepare and is finalized once, here.
        unsafe {
            ffi::sqlite3_finalize(self.stmt);
        }
    }
}

/// A statement `INSERT … VALUES (?,…),(?,…)…` of `rows` rows of `cols` values.
pub struct BatchStatement<'c> {
    stmt: RawStatement<'c>,
    rows: usize,
    cols: usize,
}

impl<'c> BatchStatement<'c> {
    /// Prepares `sql`, which must have exactly `rows * cols` parameters.
    pub fn prepare(
        conn: &'c Connection,
        sql: &str,
        rows: usize,
        cols: usize,
    ) -> rusqlite::Result<Self> {
        let stmt = RawStatement::prepare(conn, sql)?;
        debug_assert_eq!(stmt.param_count(), rows * cols);
        Ok(BatchStatement { stmt, rows, cols })
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
        let mut bound = Ok(());
        'bind: for r in 0..self.rows {
            for (j, v) in batch.row(first + r).enumerate() {
                let idx = r * self.cols + j + 1;
                bound = match v {
                    Value::Null => self.stmt.bind_null(idx),
                    Value::Integer(i) => self.stmt.bind_int(idx, i),
                    Value::Real(f) => self.stmt.bind_real(idx, f),
                    // SAFETY: `batch` outlives this call, and the bindings are cleared
                    // before it returns.
                    Value::Text(s) => unsafe { self.stmt.bind_text(idx, s.as_bytes()) },
                    // SAFETY: as for text.
                    Value::Blob(b) => unsafe { self.stmt.bind_blob(idx, b) },
                };
                if bound.is_err() {
                    break 'bind;
                }
            }
        }
        let result = bound.and_then(|()| self.stmt.run());
        self.stmt.clear_bindings();
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
