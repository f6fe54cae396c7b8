//! For tests that compare two readers of one input: everything a [`Source`] hands out.

use super::{BadRecord, Fill, Source};
use crate::batch::{Batch, Value};
use crate::error::Error;
use crate::types::ColumnType;

/// Everything a source hands out: its columns and their types, rows with their
/// origins, bad records, the mismatches, and the error that stopped it (as text).
#[derive(Debug, PartialEq)]
pub(crate) struct Outcome {
    pub columns: Vec<(String, ColumnType)>,
    pub rows: Vec<(String, u64, u64)>,
    pub bad: Vec<String>,
    pub mismatches: (u64, Option<String>),
    pub error: Option<String>,
}

/// Reads `src` to its end in batches of 7 rows (typed as its sample says), tolerating
/// `max_errors` bad records.
pub(crate) fn drain(src: &mut dyn Source, max_errors: usize) -> Outcome {
    let mut out = Outcome {
        columns: vec![],
        rows: vec![],
        bad: vec![],
        mismatches: (0, None),
        error: None,
    };
    let sample = match src.sample() {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    let types: Vec<ColumnType> = sample.guesses.iter().map(|g| g.resolve()).collect();
    let mut types = types;
    types.resize(sample.columns.len(), ColumnType::Text);
    out.columns = sample
        .columns
        .iter()
        .cloned()
        .zip(types.iter().copied())
        .collect();
    src.set_types(types);
    let mut bad_seen = vec![];
    loop {
        let mut batch = Batch::new(src.width());
        let mut bad = |b: BadRecord| {
            bad_seen.push(format!("{} {}", b.error, b.fields));
            if bad_seen.len() > max_errors {
                return Err(Error::usage("too many bad records"));
            }
            Ok(())
        };
        let f = src.fill(&mut batch, 7, usize::MAX, &mut bad);
        assert!(batch.is_empty() || batch.ncols() == out.columns.len());
        if let Some(records) = batch.records() {
            // Encoded rows: read back column by column (a short one reads NULL at
            // its end, as SQLite reads it).
            for (r, rec) in records.iter().enumerate() {
                let cells: Vec<String> = (0..out.columns.len())
                    .map(|c| match rec.column(c) {
                        None | Some(liteload_btree::Value::Null) => "NULL".into(),
                        Some(liteload_btree::Value::Integer(i)) => format!("i{i}"),
                        Some(liteload_btree::Value::Real(f)) => format!("r{f:?}"),
                        Some(liteload_btree::Value::Text(t)) => {
                            format!("t{:?}", std::str::from_utf8(t).unwrap())
                        }
                        Some(liteload_btree::Value::Blob(b)) => format!("b{b:?}"),
                    })
                    .collect();
                let o = batch.origin(r);
                out.rows.push((cells.join("|"), o.line, o.record));
            }
        }
        let cell_rows = if batch.records().is_some() {
            0
        } else {
            batch.rows()
        };
        for r in 0..cell_rows {
            let cells: Vec<String> = batch
                .row(r)
                .map(|v| match v {
                    Value::Null => "NULL".into(),
                    Value::Integer(i) => format!("i{i}"),
                    Value::Real(f) => format!("r{f:?}"),
                    Value::Text(t) => format!("t{t:?}"),
                    Value::Blob(b) => format!("b{b:?}"),
                })
                .collect();
            let o = batch.origin(r);
            out.rows.push((cells.join("|"), o.line, o.record));
        }
        match f {
            Ok(Fill::Full) => {}
            Ok(Fill::NewColumns(cols)) => out.columns.extend(cols),
            Ok(Fill::Done) => break,
            Err(e) => {
                out.error = Some(e.to_string());
                break;
            }
        }
    }
    out.bad = bad_seen;
    let m = src.mismatches();
    out.mismatches = (m.count, m.first.clone());
    out
}
