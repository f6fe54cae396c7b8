//! The checks behind the parser fuzz targets in `fuzz/`: arbitrary bytes through each
//! parser, compared with a second reading of the same bytes.
//!
//! - [`delimited_agree`]: the sequential reader, the parallel reader (tiny chunks, so
//!   that records and quoted fields cross chunk ends) and [`reference_records`], a plain
//!   state machine written from the documented rules, read the same rows.
//! - [`json_agree`]: NDJSON and JSON-array text read by liteload keep exactly the
//!   objects serde_json finds, and the rest are bad records.
//! - [`ingest_line_agrees`]: an ingest line is a good message only if serde_json reads an
//!   object with a usable key, and never if serde_json cannot read it.
//! - [`spec_never_panics`]: any `generate` column spec parses or is refused, and a
//!   parsed one makes values.
//!
//! Each is run under `cargo test` on a corpus from a fixed seed (see the tests).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use liteload::source::parallel::ParallelDelimited;
use liteload::source::tabular::DelimitedSource;
use liteload::source::{BadRecord, Fill, Format, Ragged, ReadOptions, Source};
use liteload::{Batch, Error, Value};

/// Everything a source hands out: column names, rows with their line and record, bad
/// records, and the error that stopped it.
#[derive(Debug, PartialEq)]
pub struct Outcome {
    pub columns: Vec<String>,
    pub rows: Vec<(Vec<String>, u64, u64)>,
    pub bad: Vec<String>,
    pub error: Option<String>,
}

/// Reads `src` to its end (or its first error), every column TEXT.
pub fn drain(src: &mut dyn Source) -> Outcome {
    let mut out = Outcome {
        columns: vec![],
        rows: vec![],
        bad: vec![],
        error: None,
    };
    let sample = match src.sample() {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    out.columns = sample.columns.clone();
    src.set_types(vec![liteload::ColumnType::Text; sample.columns.len()]);
    loop {
        let mut batch = Batch::new(src.width());
        let mut bad = |b: BadRecord| {
            out.bad.push(b.error.to_string());
            if out.bad.len() > 50 {
                return Err(Error::usage("too many bad records"));
            }
            Ok(())
        };
        let f = src.fill(&mut batch, 5, usize::MAX, &mut bad);
        for r in 0..batch.rows() {
            let cells = batch
                .row(r)
                .map(|v| match v {
                    Value::Null => "NULL".to_string(),
                    Value::Integer(i) => format!("i{i}"),
                    Value::Real(f) => format!("r{f}"),
                    Value::Text(t) => t.to_string(),
                    Value::Blob(b) => format!("b{b:?}"),
                })
                .collect();
            let o = batch.origin(r);
            out.rows.push((cells, o.line, o.record));
        }
        match f {
            Ok(Fill::Done) => break,
            Ok(_) => {}
            Err(e) => {
                out.error = Some(e.to_string());
                break;
            }
        }
    }
    out
}

/// Reads `text` as delimited records by the documented rules, written out plainly: a
/// field that starts with the quote is quoted until a quote not doubled, and what
/// follows the closing quote up to the delimiter is kept as it is; a quote elsewhere is
/// a byte like any other; records end at `\n`, `\r\n` or a lone `\r` outside quotes; an
/// empty line is no record unless there is one column (lines before the header are
/// skipped regardless). `None` for an unterminated quote or no header.
pub fn reference_records(text: &[u8], delim: u8, quote: Option<u8>) -> Option<Vec<Vec<Vec<u8>>>> {
    let mut records = vec![];
    let mut record: Vec<Vec<u8>> = vec![];
    let mut field = vec![];
    let mut i = 0;
    let mut at_field_start = true;
    let mut in_quotes = false;
    let mut any = false; // the record has a byte (an empty line has none)
    while i < text.len() {
        let c = text[i];
        if in_quotes {
            if Some(c) == quote {
                if text.get(i + 1) == Some(&c) {
                    field.push(c);
                    i += 2;
                    continue;
                }
                in_quotes = false;
            } else {
                field.push(c);
            }
            i += 1;
            continue;
        }
        if at_field_start && Some(c) == quote {
            in_quotes = true;
            at_field_start = false;
            any = true;
            i += 1;
            continue;
        }
        at_field_start = false;
        if c == delim {
            record.push(std::mem::take(&mut field));
            at_field_start = true;
            any = true;
        } else if c == b'\n' || c == b'\r' {
            if c == b'\r' && text.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            record.push(std::mem::take(&mut field));
            records.push((std::mem::take(&mut record), any));
            at_field_start = true;
            any = false;
        } else {
            field.push(c);
            any = true;
        }
        i += 1;
    }
    if in_quotes {
        return None;
    }
    if any || !field.is_empty() {
        record.push(field);
        records.push((record, true));
    }
    // The header is the first line that is not empty; it tells the width.
    let header = records.iter().position(|(_, any)| *any)?;
    let one_column = records[header].0.len() == 1;
    Some(
        records
            .into_iter()
            .skip(header)
            .filter(|(_, any)| *any || one_column)
            .map(|(r, _)| r)
            .collect(),
    )
}

/// Reading options from the first input byte: the delimiter, quoting and ragged rows.
fn delimited_options(b: u8) -> (ReadOptions, u8, Option<u8>) {
    let delim = [b',', b'\t', b';', b'|'][usize::from(b & 3)];
    let quote = if b & 4 == 0 { Some(b'"') } else { Some(b'\'') };
    let quote = if b & 8 == 0 { quote } else { None };
    let ragged = [Ragged::Error, Ragged::Pad, Ragged::Truncate][usize::from(b >> 4) % 3];
    let opts = {
        let mut built = ReadOptions::default();
        built.format = if delim == b'\t' {
            Format::Tsv
        } else {
            Format::Csv
        };
        built.delimiter = delim;
        built.quote = quote;
        built.ragged = ragged;
        built.sample_rows = 3;
        built
    };
    (opts, delim, quote)
}

/// The sequential and parallel readers agree on `data` (its first bytes choose the
/// options, the chunk size and the thread count); where the input is whole UTF-8 and
/// every record has the header's width, both read the reference's rows. Returns
/// whether the reference was compared.
pub fn delimited_agree(data: &[u8]) -> Result<bool, String> {
    let (Some(&o), Some(&c)) = (data.first(), data.get(1)) else {
        return Ok(false);
    };
    let text = &data[2..];
    let (opts, delim, quote) = delimited_options(o);
    let d = tempfile::tempdir().map_err(|e| e.to_string())?;
    let p = d.path().join("in.csv");
    std::fs::write(&p, text).map_err(|e| e.to_string())?;
    let name: Arc<str> = "in.csv".into();
    let reader = std::io::BufReader::new(std::io::Cursor::new(text.to_vec()));
    let seq = drain(&mut DelimitedSource::new(
        reader,
        name.clone(),
        opts.clone(),
    ));
    let threads = 2 + usize::from(c & 1);
    let mut par =
        ParallelDelimited::new(&p, name, opts.clone(), threads, Arc::new(AtomicU64::new(0)))
            .map_err(|e| e.to_string())?
            .with_chunk_bytes(1 + u64::from(c >> 1) % 64);
    let par = drain(&mut par);
    if seq != par {
        return Err(format!(
            "sequential and parallel readers differ:\n{seq:#?}\n{par:#?}"
        ));
    }
    // The reference knows nothing of byte-order marks, encodings or widths.
    let clean = seq.error.is_none() && seq.bad.is_empty() && !text.starts_with(b"\xEF\xBB\xBF");
    if clean && opts.ragged == Ragged::Error {
        let Some(records) = reference_records(text, delim, quote) else {
            if seq.rows.is_empty() {
                return Ok(false); // no header: nothing to read, for both
            }
            return Err("the reference finds an unterminated quote; liteload read it".into());
        };
        let want: Vec<Vec<String>> = records
            .iter()
            .skip(1)
            .map(|r| {
                r.iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect()
            })
            .collect();
        let got: Vec<Vec<String>> = seq.rows.iter().map(|r| r.0.clone()).collect();
        if want != got {
            return Err(format!("liteload read {got:?}, the reference {want:?}"));
        }
        return Ok(true);
    }
    Ok(false)
}

/// liteload's NDJSON and JSON-array readers keep the objects serde_json finds.
pub fn json_agree(data: &[u8]) -> Result<(), String> {
    // NDJSON: each non-blank line is an object (a row) or a bad record.
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .collect();
    let objects = lines
        .iter()
        .filter(|l| matches!(serde_json::from_slice(l), Ok(serde_json::Value::Object(m)) if !m.keys().any(|k| k.contains('\0'))))
        .count();
    let out = read_json(data, Format::Ndjson)?;
    if out.error.is_none() && (out.rows.len(), out.bad.len()) != (objects, lines.len() - objects) {
        return Err(format!(
            "NDJSON: {} rows and {} bad records, serde_json finds {objects} objects in {} lines: {out:#?}",
            out.rows.len(),
            out.bad.len(),
            lines.len()
        ));
    }
    if out.error.is_some()
        && objects > 0
        && std::str::from_utf8(data).is_ok()
        && !out.columns.is_empty()
    {
        return Err(format!("NDJSON with {objects} objects stopped: {out:#?}"));
    }
    // A JSON array: read whole when serde_json reads it as an array.
    let out = read_json(data, Format::Json)?;
    if let Ok(serde_json::Value::Array(items)) = serde_json::from_slice::<serde_json::Value>(data) {
        let objects = items
            .iter()
            .filter(|v| matches!(v, serde_json::Value::Object(m) if !m.keys().any(|k| k.contains('\0'))))
            .count();
        if objects > 0 && (out.error.is_some() || out.rows.len() != objects) {
            return Err(format!("an array of {objects} objects read as {out:#?}"));
        }
    }
    Ok(())
}

fn read_json(data: &[u8], format: Format) -> Result<Outcome, String> {
    let name = if format == Format::Json {
        "in.json"
    } else {
        "in.ndjson"
    };
    let input = liteload::Input::bytes(name, data.to_vec());
    let opts = {
        let mut built = ReadOptions::default();
        built.format = format;
        built.sample_rows = 4;
        built
    };
    let mut src = liteload::source::open_source(&input, &opts, &liteload::Progress::default())
        .map_err(|e| e.to_string())?;
    Ok(drain(src.as_mut()))
}

/// An ingest line is good only when serde_json reads an object whose key `id` is a
/// string or an integer; a line serde_json cannot read is bad.
pub fn ingest_line_agrees(line: &[u8]) -> Result<(), String> {
    use liteload::ingest::{LineMeta, Messages};
    let line = match line.iter().position(|&b| b == b'\n') {
        Some(n) => &line[..n],
        None => line,
    };
    let mut msgs = Messages::new(&["id".to_string()]);
    msgs.push_line(line, false, LineMeta::default());
    let good = msgs.messages()[0].bad.is_none();
    let theirs = serde_json::from_slice::<serde_json::Value>(line);
    let usable = matches!(&theirs, Ok(serde_json::Value::Object(m))
        if matches!(m.get("id"), Some(serde_json::Value::String(_)))
            || m.get("id").is_some_and(|v| v.as_i64().is_some() || v.as_u64().is_some()));
    if good && !usable {
        return Err(format!(
            "a good message that serde_json reads as {theirs:?}"
        ));
    }
    if theirs.is_err() && good {
        return Err("a good message that is not JSON".into());
    }
    Ok(())
}

/// Any text as a `generate` column spec: parsed or refused, and a parsed column makes
/// values of its type.
pub fn spec_never_panics(data: &[u8]) -> Result<(), String> {
    use liteload::generate::rng::Rng;
    use liteload::generate::ColumnSpec;
    let text = String::from_utf8_lossy(data);
    if let Ok(spec) = ColumnSpec::parse(&text) {
        let mut rng = Rng::for_chunk(7, 0);
        let mut batch = Batch::new(1);
        let mut scratch = String::new();
        for rowid in 1..=20 {
            spec.push(&mut rng, rowid, &mut batch, &mut scratch);
            batch.finish_row(Default::default());
        }
        if batch.rows() != 20 {
            return Err(format!("{text:?} made {} rows of 20", batch.rows()));
        }
    }
    Ok(())
}
