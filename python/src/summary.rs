//! What a finished job reports, as typed Python objects.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// What a load (`write`, `import_file`, `generate`) did.
#[pyclass(module = "liteload", frozen, get_all)]
#[derive(Clone, Debug)]
pub struct Summary {
    /// Rows written (or, when nothing was written, read).
    pub rows: u64,
    /// The tables written to, in order.
    pub tables: Vec<String>,
    /// Wall-clock seconds, from start to the file in place.
    pub seconds: f64,
    /// Rows per second.
    pub rows_per_second: f64,
    /// Bytes read from the inputs (0 for in-memory data).
    pub bytes_read: u64,
    /// Bad records skipped (with `max_errors` or `rejects`).
    pub rejects: u64,
    /// The first few bad records' messages.
    pub reject_samples: Vec<String>,
    /// Values stored with another type than their column's (SQLite's flexible typing).
    pub mismatches: u64,
    /// The first of those, described.
    pub first_mismatch: Option<String>,
    /// The database file's size afterwards, in bytes.
    pub db_bytes: u64,
    /// The durability profile the data was written under (`atomic-new`, `balanced`, …).
    pub durability: String,
    /// Which writer wrote the rows: `direct` (the page writer) or `sqlite`; `None` when
    /// nothing was written.
    pub engine: Option<String>,
    /// Whether SQLite checked the finished file (`integrity_check`).
    pub verified: bool,
    /// The SQLite version that wrote it.
    pub sqlite_version: String,
    /// Notes worth reading (columns that look like dates, say).
    pub notes: Vec<String>,
    /// What was told from each input's content (`"prices.txt: ';'-separated, header,
    /// UTF-8 with BOM"`), for the inputs whose reading it decided.
    pub sniffed: Vec<String>,
}

impl From<liteload::Summary> for Summary {
    fn from(s: liteload::Summary) -> Self {
        Summary {
            rows: s.rows,
            tables: s.tables,
            seconds: s.seconds,
            rows_per_second: s.rows_per_second,
            bytes_read: s.bytes_read,
            rejects: s.rejects,
            reject_samples: s.reject_samples,
            mismatches: s.type_mismatches,
            first_mismatch: s.first_type_mismatch,
            db_bytes: s.db_bytes,
            durability: s.durability.name().to_string(),
            engine: s.engine.map(|w| w.name().to_string()),
            verified: s.verified,
            sqlite_version: s.sqlite_version,
            sniffed: s
                .sniffed
                .iter()
                .filter(|x| x.changed)
                .map(|x| format!("{}: {}", x.input, x.described))
                .collect(),
            notes: s
                .notes
                .into_iter()
                .chain(s.locale_hints.iter().map(|h| match &h.date_format {
                    None => format!(
                        "{}: column {:?} looks written with a decimal comma ({}); decimal_comma=True reads it so, as numbers",
                        h.input, h.column, h.example
                    ),
                    Some(f) => format!(
                        "{}: column {:?} looks like dates in {f} ({}), kept as text; dates=['{f}'] stores them as ISO 8601",
                        h.input, h.column, h.example
                    ),
                }))
                .collect(),
        }
    }
}

#[pymethods]
impl Summary {
    /// The fields as a dict (for JSON, logging, a DataFrame row).
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("rows", self.rows)?;
        d.set_item("tables", self.tables.clone())?;
        d.set_item("seconds", self.seconds)?;
        d.set_item("rows_per_second", self.rows_per_second)?;
        d.set_item("bytes_read", self.bytes_read)?;
        d.set_item("rejects", self.rejects)?;
        d.set_item("reject_samples", self.reject_samples.clone())?;
        d.set_item("mismatches", self.mismatches)?;
        d.set_item("first_mismatch", self.first_mismatch.clone())?;
        d.set_item("db_bytes", self.db_bytes)?;
        d.set_item("durability", &self.durability)?;
        d.set_item("engine", self.engine.clone())?;
        d.set_item("verified", self.verified)?;
        d.set_item("sqlite_version", &self.sqlite_version)?;
        d.set_item("notes", self.notes.clone())?;
        d.set_item("sniffed", self.sniffed.clone())?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Summary(rows={}, tables={:?}, seconds={:.3}, rejects={}, mismatches={}, engine={}, durability={:?}, db_bytes={})",
            self.rows,
            self.tables,
            self.seconds,
            self.rejects,
            self.mismatches,
            self.engine.as_deref().map_or("None".to_string(), |e| format!("{e:?}")),
            self.durability,
            self.db_bytes
        )
    }
}

/// What an `ingest` did.
#[pyclass(module = "liteload", frozen, get_all)]
#[derive(Clone, Debug)]
pub struct IngestSummary {
    /// Messages read.
    pub messages: u64,
    /// Rows inserted.
    pub inserted: u64,
    /// Rows updated.
    pub updated: u64,
    /// Bad messages skipped.
    pub rejects: u64,
    /// Windows committed.
    pub commits: u64,
    /// Values stored with another type than their column's.
    pub mismatches: u64,
    /// Columns added to the table.
    pub new_columns: u64,
    /// Messages a feed sent again at or before the position asked for (connect only).
    pub replayed: u64,
    /// The feed position of the last applied message that carried one.
    pub last_position: Option<String>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl IngestSummary {
    pub fn new(t: &liteload::ingest::Totals, seconds: f64) -> Self {
        IngestSummary {
            messages: t.messages,
            inserted: t.inserted,
            updated: t.updated,
            rejects: t.rejects,
            commits: t.commits,
            mismatches: t.type_mismatches,
            new_columns: t.new_columns,
            replayed: t.replayed,
            last_position: t.last_position.clone(),
            seconds,
        }
    }
}

#[pymethods]
impl IngestSummary {
    /// The fields as a dict.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("messages", self.messages)?;
        d.set_item("inserted", self.inserted)?;
        d.set_item("updated", self.updated)?;
        d.set_item("rejects", self.rejects)?;
        d.set_item("commits", self.commits)?;
        d.set_item("mismatches", self.mismatches)?;
        d.set_item("new_columns", self.new_columns)?;
        d.set_item("replayed", self.replayed)?;
        d.set_item("last_position", self.last_position.clone())?;
        d.set_item("seconds", self.seconds)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "IngestSummary(messages={}, inserted={}, updated={}, rejects={}, commits={}, seconds={:.3})",
            self.messages, self.inserted, self.updated, self.rejects, self.commits, self.seconds
        )
    }
}
