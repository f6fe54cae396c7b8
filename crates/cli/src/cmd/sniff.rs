//! `liteload sniff`: what `liteload import` would take each file to be, without loading.

use anyhow::Result;
use clap::Args;
use liteload::source::sniff::shown;
use liteload::{read_plan, Format, ImportOptions, Input};

/// Show how `liteload import` with no format flags would read each file: compression,
/// encoding, format, delimiter, quote and header (XML, and JSON in an object: the record
/// path), told from the name and the first 64 KiB.
/// Nothing is loaded.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  liteload sniff export.txt
  gzip -dc dump.gz | liteload sniff -
  liteload sniff --json *.csv")]
pub struct SniffArgs {
    /// The files (`-` for stdin).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// One JSON object per file instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Csv | Format::Tsv => "delimited",
        Format::Ndjson => "ndjson",
        Format::Json => "json",
        Format::Parquet => "parquet",
        Format::Arrow => "arrow",
        Format::Xml => "xml",
        Format::Spreadsheet => "spreadsheet",
        _ => "other",
    }
}

pub fn run(a: SniffArgs) -> Result<()> {
    let opts = ImportOptions::default();
    let mut rows = vec![];
    let mut databases = vec![];
    for f in &a.files {
        let input = Input::from_arg(f);
        if let Input::Path(p) = &input {
            if liteload::sqlite_files::is_sqlite_file(p) {
                let tables = liteload::sqlite_files::table_names(p)?;
                if a.json {
                    let row = serde_json::json!({
                        "input": input.display_name(),
                        "format": "sqlite",
                        "tables": tables,
                    });
                    println!("{row}");
                }
                databases.push((input.display_name(), tables));
                continue;
            }
        }
        let (ro, sniffed) = read_plan(&input, &opts)?;
        let delimited = matches!(ro.format, Format::Csv | Format::Tsv);
        let d = sniffed.as_ref().map(|s| &s.dialect);
        let row = serde_json::json!({
            "input": input.display_name(),
            "format": format_name(ro.format),
            "delimiter": delimited.then(|| char::from(ro.delimiter).to_string()),
            "quote": if delimited { ro.quote.map(|q| char::from(q).to_string()) } else { None },
            "header": delimited.then_some(ro.header),
            "encoding": d.map_or(ro.encoding, |d| d.encoding).name(),
            // JSON: the path the head shows (the reader finds it itself).
            "record": ro.record.clone().or_else(|| d.and_then(|d| d.record.clone())),
            "bom": d.is_some_and(|d| d.bom),
            "compression": d.and_then(|d| d.compression).map(|c| c.name()),
            "sniffed": sniffed.as_ref().map(|s| s.described.clone()),
            "delimiter_found": d.map(|d| d.delimiter_found),
        });
        if a.json {
            println!("{row}");
        }
        rows.push((input.display_name(), ro, sniffed));
    }
    if a.json {
        return Ok(());
    }
    let width = rows
        .iter()
        .map(|r| r.0.len())
        .chain(databases.iter().map(|d| d.0.len()))
        .max()
        .unwrap_or(4)
        .max(4);
    println!(
        "{:<width$}  {:<9}  {:<9}  {:<5}  {:<9}  {:<12}  {:<11}",
        "FILE", "FORMAT", "DELIMITER", "QUOTE", "HEADER", "ENCODING", "COMPRESSION"
    );
    for (name, ro, sniffed) in &rows {
        let delimited = matches!(ro.format, Format::Csv | Format::Tsv);
        let d = sniffed.as_ref().map(|s| &s.dialect);
        let dash = || "-".to_string();
        let enc = format!(
            "{}{}",
            d.map_or(ro.encoding, |d| d.encoding).name(),
            if d.is_some_and(|d| d.bom) {
                " (BOM)"
            } else {
                ""
            }
        );
        println!(
            "{:<width$}  {:<9}  {:<9}  {:<5}  {:<9}  {:<12}  {:<11}",
            name,
            format_name(ro.format),
            if delimited {
                shown(ro.delimiter)
            } else {
                dash()
            },
            match (delimited, ro.quote) {
                (true, Some(q)) => shown(q),
                (true, None) => "none".into(),
                _ => dash(),
            },
            if !delimited {
                dash()
            } else if ro.header {
                "yes".into()
            } else {
                "no".into()
            },
            enc,
            d.and_then(|d| d.compression).map_or("none", |c| c.name()),
        );
        if ro.format == Format::Xml {
            match &ro.record {
                Some(r) => println!("{:<width$}  records: the elements at {r}", ""),
                None => println!(
                    "{:<width$}  note: the sample shows no repeated element under the root: name the records with --record",
                    ""
                ),
            }
        }
        if ro.format == Format::Json {
            if let Some(r) = ro.record.as_ref().or(d.and_then(|d| d.record.as_ref())) {
                println!("{:<width$}  records: the objects of the array at {r}", "");
            }
        }
        if d.is_some_and(|d| delimited && !d.delimiter_found) {
            println!(
                "{:<width$}  note: no delimiter makes every sampled record the same width: one column, or name it with --delimiter",
                ""
            );
        }
    }
    for (name, tables) in &databases {
        let dash = "-";
        println!(
            "{name:<width$}  {:<9}  {dash:<9}  {dash:<5}  {dash:<9}  {dash:<12}  {dash:<11}",
            "sqlite"
        );
        println!(
            "{:<width$}  a database: its tables are copied as they are declared ({})",
            "",
            if tables.is_empty() {
                "none".to_string()
            } else {
                tables
                    .iter()
                    .map(|t| liteload::quote_ident(t))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
    }
    Ok(())
}
