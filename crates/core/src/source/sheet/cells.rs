//! One worksheet's cells, read on a thread of their own and handed over as rows: what
//! calamine gives mapped to the values a table holds.
//!
//! The mapping (documented in `docs/import.md`):
//! - a number is an integer when it is whole and exactly representable (below 2^53 in
//!   magnitude), as the text `3` is in CSV; otherwise a real;
//! - a boolean is 1 or 0;
//! - a date is `YYYY-MM-DD`, a date-time `YYYY-MM-DD HH:MM:SS` (with `.mmm` when it has
//!   milliseconds), a time of day (a serial number below 1) `HH:MM:SS`, and a duration
//!   `H:MM:SS` (hours past 24 kept), whichever of Excel's date systems (1900 or 1904) the
//!   workbook uses; OpenDocument's ISO 8601 values are kept, with a space for the `T`;
//! - an error (`#N/A`, `#DIV/0!`, …) is NULL, counted for a note;
//! - a formula is its cached value; a merged range has its value in its top-left cell
//!   only, the others empty (what the file stores);
//! - an empty cell, or a text cell holding nothing, is no value, and a row with no
//!   value is no row.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use calamine::{Data, Reader, Sheets};
use crossbeam_channel::{bounded, Receiver, Sender};

/// A cell's value as loaded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Integer(i64),
    Real(f64),
    Bool(bool),
    Text(String),
    /// A date, time or duration, written as the module comment says.
    Date(String),
    /// An error value (`#N/A`): loaded as NULL.
    Error(String),
}

/// One row with at least one value: its number in the sheet (from 1) and its cells'
/// columns (from 1), in column order.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Row {
    pub(crate) number: u64,
    pub(crate) cells: Vec<(u32, Value)>,
}

/// What the reading thread sends: rows in sheet order, or why it stopped.
pub(crate) type Sent = std::result::Result<Vec<Row>, String>;

/// Rows per message: enough to make the channel's cost small.
const ROWS_PER_SEND: usize = 512;

/// The workbook at `path`, opened by its extension or, for another name, by its first
/// bytes (a zip archive is tried as `.xlsx`, `.xlsb` then `.ods`; an OLE file as `.xls`).
pub(crate) fn open(path: &Path) -> std::result::Result<Workbook, String> {
    use calamine::{open_workbook, Ods, Xls, Xlsb, Xlsx};
    no_bomb(path, BOMB_FLOOR, BOMB_RATIO)?;
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if matches!(
        ext.as_deref(),
        Some("xls" | "xla" | "xlsx" | "xlsm" | "xlam" | "xlsb" | "ods")
    ) {
        return calamine::open_workbook_auto(path).map_err(|e| e.to_string());
    }
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .map_err(|e| e.to_string())?;
    match head {
        [b'P', b'K', 3, 4] => open_workbook::<Xlsx<_>, _>(path)
            .map(Sheets::Xlsx)
            .map_err(|e| e.to_string())
            .or_else(|_| {
                open_workbook::<Xlsb<_>, _>(path)
                    .map(Sheets::Xlsb)
                    .map_err(|e| e.to_string())
            })
            .or_else(|_| {
                open_workbook::<Ods<_>, _>(path)
                    .map(Sheets::Ods)
                    .map_err(|e| e.to_string())
            }),
        [0xD0, 0xCF, 0x11, 0xE0] => open_workbook::<Xls<_>, _>(path)
            .map(Sheets::Xls)
            .map_err(|e| e.to_string()),
        _ => Err("not a workbook (neither a zip archive nor an OLE file)".into()),
    }
}

/// A part of a zip-based workbook may inflate past this many bytes only at a ratio to
/// its compressed size that real workbooks have ([`BOMB_RATIO`]).
const BOMB_FLOOR: u64 = 256 << 20;
/// Real workbooks' XML inflates to about 5 times its compressed size (the 1M-row books
/// of `bench/spreadsheets.py`: 4.3x and 5.0x), one text repeated on every row to a few
/// hundred at most (each cell's reference differs); a zip bomb to about a thousand
/// (deflate's limit).
const BOMB_RATIO: u64 = 500;

/// Refuses a zip archive with a part declared to inflate past `floor` bytes at more than
/// `ratio` times its compressed size: calamine holds the shared strings, styles and any
/// sheet it does not stream whole, and a streamed sheet's cell whole, so such a part
/// would grow memory with the file's cleverness rather than its size. The zip reader
/// holds every part to its declared size, so checking the declarations is enough. A file
/// that is no zip archive passes (calamine tells what it is).
fn no_bomb(path: &Path, floor: u64, ratio: u64) -> std::result::Result<(), String> {
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let Ok(mut zip) = zip::ZipArchive::new(std::io::BufReader::new(f)) else {
        return Ok(());
    };
    for i in 0..zip.len() {
        let part = zip.by_index_raw(i).map_err(|e| e.to_string())?;
        let (inflated, compressed) = (part.size(), part.compressed_size().max(1));
        if inflated > floor && inflated / compressed > ratio {
            return Err(format!(
                "part {:?} of the workbook inflates {compressed} bytes to {inflated} ({}x): refused as a zip bomb (real workbooks inflate less than {ratio}x)",
                part.name().unwrap_or_else(|_| "?".into()),
                inflated / compressed
            ));
        }
    }
    Ok(())
}

/// A workbook open for reading.
pub(crate) type Workbook = Sheets<std::io::BufReader<std::fs::File>>;

/// The names of the workbook's worksheets in its order, those with a value and those
/// without (chart sheets and dialog sheets hold no cells and are left out; hidden
/// worksheets are in). Only an `.xlsx` sheet is read just up to its first value.
pub(crate) fn worksheets(path: &Path) -> std::result::Result<(Vec<String>, Vec<String>), String> {
    let mut wb = open(path)?;
    let names: Vec<String> = wb
        .sheets_metadata()
        .iter()
        .filter(|s| matches!(s.typ, calamine::SheetType::WorkSheet))
        .map(|s| s.name.clone())
        .collect();
    let (mut with, mut without) = (vec![], vec![]);
    for name in names {
        let any = match &mut wb {
            Sheets::Xlsx(x) => {
                let mut cells = x.worksheet_cells_reader(&name).map_err(|e| e.to_string())?;
                loop {
                    match cells.next_cell().map_err(|e| e.to_string())? {
                        None => break false,
                        Some(c) if value(Data::from(c.get_value().clone())).is_none() => {}
                        Some(_) => break true,
                    }
                }
            }
            wb => {
                let range = wb.worksheet_range(&name).map_err(|e| e.to_string())?;
                let any = range
                    .used_cells()
                    .any(|(_, _, d)| value(d.clone()).is_some());
                any
            }
        };
        if any {
            with.push(name);
        } else {
            without.push(name);
        }
    }
    Ok((with, without))
}

/// Starts reading worksheet `sheet` of `path` on a thread: its rows arrive in order on
/// the receiver, which closes after the last (or after an `Err`). `bytes_read` grows
/// towards the file's size as the rows go by (as far as the sheet says how many it has);
/// the thread stops at its next send once the receiver is dropped or `cancel` is set.
pub(crate) fn start(
    path: PathBuf,
    sheet: String,
    bytes_read: Arc<AtomicU64>,
    cancel: Arc<AtomicBool>,
) -> std::io::Result<Receiver<Sent>> {
    let (tx, rx) = bounded::<Sent>(8);
    std::thread::Builder::new()
        .name("liteload-sheet".into())
        .spawn(move || {
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let mut out = Out {
                tx,
                rows: vec![],
                row: Row::default(),
                bytes_read,
                cancel,
                len,
                last_row: 0,
                reported: 0,
            };
            if let Err(m) = read(&path, &sheet, &mut out) {
                let _ = out.tx.send(Err(m));
                return;
            }
            if out.flush_row() && out.send() {
                out.report(len);
            }
        })?;
    Ok(rx)
}

/// Where the thread's cells go: grouped into rows, sent in batches.
struct Out {
    tx: Sender<Sent>,
    rows: Vec<Row>,
    row: Row,
    bytes_read: Arc<AtomicU64>,
    cancel: Arc<AtomicBool>,
    len: u64,
    /// The sheet's last row as its dimensions declare it (0: not known).
    last_row: u64,
    /// Of the file's bytes, those added to `bytes_read` so far.
    reported: u64,
}

impl Out {
    /// Adds the cell at `(row, column)` (from 0, as calamine counts); `false`: stop.
    fn cell(&mut self, (row, column): (u32, u32), v: Value) -> bool {
        let number = u64::from(row) + 1;
        if number != self.row.number && !self.flush_row() {
            return false;
        }
        self.row.number = number;
        self.row.cells.push((column + 1, v));
        true
    }

    /// Ends the row being filled; `false`: stop.
    fn flush_row(&mut self) -> bool {
        if !self.row.cells.is_empty() {
            let mut row = std::mem::take(&mut self.row);
            // Cells come in column order in every format calamine reads, but a file
            // may list them otherwise; the last of one column wins.
            if !row.cells.is_sorted_by_key(|c| c.0) {
                row.cells.sort_by_key(|c| c.0);
            }
            row.cells.dedup_by(|b, a| {
                let same = a.0 == b.0;
                if same {
                    std::mem::swap(a, b);
                }
                same
            });
            self.rows.push(row);
        }
        self.rows.len() < ROWS_PER_SEND || self.send()
    }

    /// Counts the file's first `share` bytes as read (the shared counter only grows).
    fn report(&mut self, share: u64) {
        if share > self.reported {
            self.bytes_read
                .fetch_add(share - self.reported, Ordering::Relaxed);
            self.reported = share;
        }
    }

    fn send(&mut self) -> bool {
        if self.cancel.load(Ordering::Relaxed) {
            return false;
        }
        if self.rows.is_empty() {
            return true;
        }
        if let (Some(last), true) = (self.rows.last(), self.last_row > 0) {
            let share = (last.number.min(self.last_row) as f64 / self.last_row as f64
                * self.len as f64) as u64;
            // The file's whole size only at the end.
            self.report(share.min(self.len.saturating_sub(1)));
        }
        self.tx.send(Ok(std::mem::take(&mut self.rows))).is_ok()
    }
}

/// Reads the sheet into `out`. An `Err` is calamine's message.
fn read(path: &Path, sheet: &str, out: &mut Out) -> std::result::Result<(), String> {
    no_bomb(path, BOMB_FLOOR, BOMB_RATIO)?;
    if let Some(book) = super::xlsx::Book::open(path, sheet)? {
        if fast_read(book, out)? {
            return Ok(());
        }
    }
    read_calamine(path, sheet, out)
}

/// Reads the book's `.xlsx` sheet into `out` on several threads (`xlsx.rs`);
/// `Ok(false)`: declined, nothing sent.
fn fast_read(book: super::xlsx::Book, out: &mut Out) -> std::result::Result<bool, String> {
    // (The dimension is told before the first cell; `out` takes it in the cells'
    // closure, which holds it.)
    let rows = AtomicU64::new(0);
    let mut told = false;
    super::xlsx::read(
        book,
        value,
        |n| rows.store(n, Ordering::Relaxed),
        |at, v| {
            if !told {
                out.last_row = rows.load(Ordering::Relaxed);
                told = true;
            }
            out.cell(at, v)
        },
    )
}

/// Reads the sheet into `out` through calamine alone.
fn read_calamine(path: &Path, sheet: &str, out: &mut Out) -> std::result::Result<(), String> {
    let mut wb = open(path)?;
    if !wb.sheet_names().iter().any(|s| s == sheet) {
        let names = wb.sheet_names();
        return Err(format!(
            "no sheet named {sheet:?} (the workbook has {})",
            names
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    match &mut wb {
        // The one format calamine streams: a sheet of any size in bounded memory.
        Sheets::Xlsx(x) => {
            let mut cells = x.worksheet_cells_reader(sheet).map_err(|e| e.to_string())?;
            out.last_row = u64::from(cells.dimensions().end.0) + 1;
            while let Some(cell) = cells.next_cell().map_err(|e| e.to_string())? {
                // A shared string is copied here, once (the rows cross threads).
                let Some(v) = value(Data::from(cell.get_value().clone())) else {
                    continue;
                };
                if !out.cell(cell.get_position(), v) {
                    return Ok(());
                }
            }
        }
        // The others are read whole by calamine (an .xls is at most 65,536 rows).
        wb => {
            let range = wb.worksheet_range(sheet).map_err(|e| e.to_string())?;
            let Some((r0, c0)) = range.start() else {
                return Ok(());
            };
            out.last_row = range.end().map_or(0, |e| u64::from(e.0) + 1);
            for (r, c, d) in range.used_cells() {
                let Some(v) = value(d.clone()) else { continue };
                if !out.cell((r0 + r as u32, c0 + c as u32), v) {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// A cell's value as loaded (the module comment); `None` for an empty cell.
fn value(d: Data) -> Option<Value> {
    Some(match d {
        Data::Empty => return None,
        // A text cell holding nothing shows as an empty cell (pandas writes a missing
        // value to an .ods so).
        Data::String(s) if s.is_empty() => return None,
        Data::Int(i) => Value::Integer(i),
        Data::Float(f) => number(f),
        Data::String(s) => Value::Text(s),
        Data::Bool(b) => Value::Bool(b),
        Data::DateTime(d) => date_time(&d),
        Data::DateTimeIso(s) => Value::Date(iso_date(&s)),
        Data::DurationIso(s) => Value::Date(iso_duration(&s)),
        Data::Error(e) => Value::Error(e.to_string()),
    })
}

/// A number: an integer when whole and exact (CSV's rule for `3`), else a real.
fn number(f: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if f.fract() == 0.0 && f.abs() < EXACT && !(f == 0.0 && f.is_sign_negative()) {
        Value::Integer(f as i64)
    } else if f.is_finite() {
        Value::Real(f)
    } else {
        Value::Error("#NUM!".into())
    }
}

/// An Excel serial date-time (either date system) as ISO 8601 text.
fn date_time(d: &calamine::ExcelDateTime) -> Value {
    let serial = d.as_f64();
    if !serial.is_finite() || serial < 0.0 {
        return number(serial);
    }
    if d.is_duration() {
        // Milliseconds, rounded as Excel shows them.
        let ms = (serial * 86_400_000.0).round() as u64;
        return Value::Date(clock(ms / 3_600_000, ms % 3_600_000));
    }
    let (y, mo, day, h, mi, s, milli) = d.to_ymd_hms_milli();
    let time_ms =
        ((u64::from(h) * 60 + u64::from(mi)) * 60 + u64::from(s)) * 1000 + u64::from(milli);
    if serial < 1.0 {
        // A time of day alone (the serial's whole part is the date: none).
        return Value::Date(clock(u64::from(h), time_ms % 3_600_000));
    }
    if time_ms == 0 {
        Value::Date(format!("{y:04}-{mo:02}-{day:02}"))
    } else {
        Value::Date(format!(
            "{y:04}-{mo:02}-{day:02} {}",
            clock(u64::from(h), time_ms % 3_600_000)
        ))
    }
}

/// `HH:MM:SS` (`.mmm` when there are milliseconds) from hours and the milliseconds
/// within the hour.
fn clock(hours: u64, ms: u64) -> String {
    let (m, rest) = (ms / 60_000, ms % 60_000);
    let (s, milli) = (rest / 1000, rest % 1000);
    if milli == 0 {
        format!("{hours:02}:{m:02}:{s:02}")
    } else {
        format!("{hours:02}:{m:02}:{s:02}.{milli:03}")
    }
}

/// OpenDocument's date or date-time (`2024-01-02T10:00:00`) with a space for the `T`.
fn iso_date(s: &str) -> String {
    s.replacen('T', " ", 1)
}

/// OpenDocument's duration (`PT10H30M05S`, `PT1H2M3.5S`) as `HH:MM:SS`; another shape
/// is kept as it is.
fn iso_duration(s: &str) -> String {
    let Some(rest) = s.strip_prefix("PT") else {
        return s.to_owned();
    };
    let (mut h, mut m, mut sec) = (0u64, 0u64, 0f64);
    let mut num = String::new();
    for c in rest.chars() {
        match c {
            '0'..='9' | '.' => num.push(c),
            'H' | 'M' | 'S' => {
                let Ok(v) = num.parse::<f64>() else {
                    return s.to_owned();
                };
                match c {
                    'H' => h = v as u64,
                    'M' => m = v as u64,
                    _ => sec = v,
                }
                num.clear();
            }
            _ => return s.to_owned(),
        }
    }
    if !num.is_empty() {
        return s.to_owned();
    }
    let ms = (((h * 60 + m) * 60) as f64 * 1000.0 + (sec * 1000.0).round()) as u64;
    clock(ms / 3_600_000, ms % 3_600_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use calamine::{ExcelDateTime, ExcelDateTimeType};

    /// A zip of one part: `n` spaces, deflated.
    fn zip_of(path: &Path, name: &str, n: usize) {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        let o = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        w.start_file(name, o).unwrap();
        w.write_all(&vec![b' '; n]).unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn a_part_that_inflates_like_a_bomb_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let bomb = dir.path().join("bomb.xlsx");
        zip_of(&bomb, "xl/sharedStrings.xml", 4 << 20);
        let e = no_bomb(&bomb, 1 << 20, BOMB_RATIO).unwrap_err();
        assert!(e.contains("part \"xl/sharedStrings.xml\""), "{e}");
        assert!(e.contains("refused as a zip bomb"), "{e}");
        // Under the floor, or not a zip archive: left to calamine.
        assert_eq!(no_bomb(&bomb, 8 << 20, BOMB_RATIO), Ok(()));
        let text = dir.path().join("fake.xlsx");
        std::fs::write(&text, "id\n1\n").unwrap();
        assert_eq!(no_bomb(&text, 0, 1), Ok(()));
    }

    fn dt(v: f64, is_1904: bool) -> Value {
        date_time(&ExcelDateTime::new(v, ExcelDateTimeType::DateTime, is_1904))
    }

    #[test]
    fn dates_in_both_systems_times_and_durations() {
        assert_eq!(dt(45943.0, false), Value::Date("2025-10-13".into()));
        // The same day in the 1904 system is 1462 days fewer.
        assert_eq!(dt(45943.0 - 1462.0, true), Value::Date("2025-10-13".into()));
        assert_eq!(
            dt(45943.5, false),
            Value::Date("2025-10-13 12:00:00".into())
        );
        assert_eq!(
            dt(45943.541, false),
            Value::Date("2025-10-13 12:59:02.400".into())
        );
        assert_eq!(dt(0.75, false), Value::Date("18:00:00".into()));
        let d = ExcelDateTime::new(1.5, ExcelDateTimeType::TimeDelta, false);
        assert_eq!(date_time(&d), Value::Date("36:00:00".into()));
        assert_eq!(iso_duration("PT10H30M05S"), "10:30:05");
        assert_eq!(iso_duration("PT1H2M3.5S"), "01:02:03.500");
        assert_eq!(iso_duration("P1D"), "P1D");
        assert_eq!(iso_date("2024-01-02T10:00:00"), "2024-01-02 10:00:00");
    }

    #[test]
    fn numbers_are_integers_when_whole_and_exact() {
        assert_eq!(number(3.0), Value::Integer(3));
        assert_eq!(number(-7.0), Value::Integer(-7));
        assert_eq!(number(2.5), Value::Real(2.5));
        assert_eq!(number(-0.0), Value::Real(-0.0));
        assert_eq!(number(1e300), Value::Real(1e300));
        assert_eq!(
            number(9_007_199_254_740_992.0),
            Value::Real(9_007_199_254_740_992.0)
        );
    }
}

/// The sheet reader of `xlsx.rs` against calamine's own: random workbooks with every
/// kind of cell, hostile text and layouts calamine reads, each read both ways, row for
/// row and cell for cell.
#[cfg(test)]
mod same_as_calamine {
    use super::*;
    use std::io::Write;

    /// A small deterministic generator (xorshift), so a failing seed can be replayed.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
            of[self.below(of.len() as u64) as usize]
        }
    }

    const TEXTS: &[&str] = &[
        "plain",
        "  padded  ",
        "&amp;&lt;&gt;&quot;&apos;",
        "&#x41;&#66;&#x1F600;",
        "a\r\nb\rc",
        "_x000D_ and _x005F_x000D_",
        "_xD83D__xDCF7_ _xD83D_ lone",
        "_x0000_nul",
        "üñí😀 ジ",
        "<![CDATA[<row r=\"5\"><c>]]>",
        "<!-- a comment <row> -->after",
        "",
        " ",
        "3",
    ];

    fn text_run(g: &mut Gen) -> String {
        let t = g.pick(TEXTS);
        match g.below(4) {
            0 => format!("<t xml:space=\"preserve\">{t}</t>"),
            1 => {
                format!("<r><rPr><b/></rPr><t>{t}</t></r><r><t xml:space=\"preserve\"> x </t></r>")
            }
            2 => format!("<t>{t}</t><rPh sb=\"0\" eb=\"1\"><t>ふ</t></rPh>"),
            _ => format!("<t>{t}</t>"),
        }
    }

    /// One cell's attributes (after `r`) and content.
    fn cell(g: &mut Gen, strings: usize) -> String {
        let style = match g.below(5) {
            0 => String::new(),
            1 => " s=\"99\"".into(),
            _ => format!(" s=\"{}\"", g.below(9)),
        };
        let num = &[
            "1",
            "-7",
            "2.5",
            "1e5",
            "1E-3",
            "0",
            "-0",
            "45943.541",
            "0.75",
            "1.5",
            "12345678901234567890",
            "inf",
            "NaN",
            " 3",
            "+4",
            ".5",
            "5.",
            "abc",
            "",
        ];
        match g.below(12) {
            0 | 1 => format!("{style}><v>{}</v>", g.pick(num)),
            2 => format!("{style} t=\"n\"><v>{}</v>", g.pick(&num[..12])),
            3 => format!(" t=\"s\"{style}><v>{}</v>", g.below(strings as u64)),
            4 => format!(" t=\"inlineStr\"{style}><is>{}</is>", text_run(g)),
            5 => format!(" t=\"inlineStr\"><is>{}</is><v>x</v>", text_run(g)),
            6 => format!(" t=\"str\"><f>A1&amp;B1</f><v>{}</v>", g.pick(&TEXTS[..9])),
            7 => format!(
                " t=\"b\"><v>{}</v>",
                g.pick(&["0", "1", "true", "FALSE", " 1 ", ""])
            ),
            8 => format!(
                " t=\"e\"><v>{}</v>",
                g.pick(&["#N/A", "#DIV/0!", "#REF!", "#NUM!"])
            ),
            9 => format!(
                " t=\"d\"><v>{}</v>",
                g.pick(&["2024-01-02T10:00:00", "2024-01-02"])
            ),
            10 => match g.below(3) {
                0 => format!("{style}><f>SUM(A1:A2)</f><v>{}</v>", g.pick(num)),
                1 => format!("{style}><v>{}</v><f>X</f>", g.pick(num)),
                _ => format!("{style}><f t=\"shared\" si=\"0\"/><v>{}</v>", g.pick(num)),
            },
            _ => format!("{style}>"),
        }
    }

    fn letters(n: u32) -> String {
        super::super::column_letters(n)
    }

    /// The sheet XML of `rows` random rows.
    /// Without `refs`, no row or cell says where it is (some writers write none).
    fn sheet(g: &mut Gen, rows: u32, strings: usize, refs: bool) -> String {
        let mut x = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\"><dimension ref=\"A1:Z9\"/><sheetData>",
        );
        let mut r = 0u32;
        for _ in 0..rows {
            r += 1 + u32::from(g.below(6) == 0);
            if g.below(15) == 0 {
                x.push_str("<!-- <row r=\"1\"> -->\n");
            }
            if !refs || g.below(7) == 0 {
                x.push_str("<row>");
            } else if g.below(30) == 0 {
                x.push_str(&format!("<row r=\"{r}\"/>"));
                continue;
            } else {
                x.push_str(&format!("<row r=\"{r}\" spans=\"1:9\">"));
            }
            let mut c = 0u32;
            for _ in 0..g.below(7) {
                c += 1 + g.below(3) as u32;
                let at = match g.below(8) {
                    _ if !refs => String::new(),
                    0 => String::new(),
                    // Out of order, or a column twice.
                    1 => format!(" r=\"{}{r}\"", letters(c.saturating_sub(2).max(1))),
                    _ => format!(" r=\"{}{r}\"", letters(c)),
                };
                x.push_str(&format!("<c{at}{}</c>", cell(g, strings)));
                if g.below(10) == 0 {
                    x.push_str("\n  ");
                }
            }
            x.push_str("</row>");
        }
        x.push_str("</sheetData><mergeCells count=\"1\"><mergeCell ref=\"A1:B2\"/></mergeCells></worksheet>");
        x
    }

    /// A workbook of one sheet holding `xml`, its shared strings random.
    fn book(path: &Path, g: &mut Gen, xml: &str, is_1904: bool) -> usize {
        let strings: Vec<String> = (0..20)
            .map(|_| format!("<si>{}</si>", text_run(g)))
            .collect();
        let ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
        let rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
        let parts = [
            ("[Content_Types].xml", "<?xml version=\"1.0\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\"><Default Extension=\"xml\" ContentType=\"application/xml\"/></Types>".to_string()),
            ("_rels/.rels", format!("<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rId1\" Type=\"{rel}/officeDocument\" Target=\"xl/workbook.xml\"/></Relationships>")),
            ("xl/workbook.xml", format!("<?xml version=\"1.0\"?><workbook xmlns=\"{ns}\" xmlns:r=\"{rel}\"><workbookPr date1904=\"{}\"/><sheets><sheet name=\"S &amp; 1\" sheetId=\"1\" r:id=\"rId1\"/></sheets></workbook>", if is_1904 { "1" } else { "0" })),
            ("xl/_rels/workbook.xml.rels", format!("<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rId1\" Type=\"{rel}/worksheet\" Target=\"worksheets/sheet1.xml\"/><Relationship Id=\"rId2\" Type=\"{rel}/styles\" Target=\"styles.xml\"/></Relationships>")),
            ("xl/styles.xml", format!("<?xml version=\"1.0\"?><styleSheet xmlns=\"{ns}\"><numFmts count=\"4\"><numFmt numFmtId=\"164\" formatCode=\"yyyy-mm-dd\"/><numFmt numFmtId=\"165\" formatCode=\"[h]:mm:ss\"/><numFmt numFmtId=\"166\" formatCode=\"0.00\"/><numFmt numFmtId=\"167\" formatCode=\"&quot;d&quot; 0\"/></numFmts><cellXfs count=\"9\"><xf numFmtId=\"0\"/><xf numFmtId=\"14\"/><xf numFmtId=\"164\"/><xf numFmtId=\"165\"/><xf numFmtId=\"166\"/><xf numFmtId=\"46\"/><xf numFmtId=\"167\"/><xf numFmtId=\"22\"/><xf/></cellXfs></styleSheet>")),
            ("xl/sharedStrings.xml", format!("<?xml version=\"1.0\"?><sst xmlns=\"{ns}\" count=\"20\" uniqueCount=\"20\">{}</sst>", strings.concat())),
            ("xl/worksheets/sheet1.xml", xml.to_string()),
        ];
        let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        let o = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, text) in parts {
            w.start_file(name, o).unwrap();
            w.write_all(text.as_bytes()).unwrap();
        }
        w.finish().unwrap();
        strings.len()
    }

    /// Every row the sheet gives, through the fast reader (then calamine where it
    /// declines) or calamine alone.
    fn rows_of(path: &Path, fast: bool) -> std::result::Result<Vec<Row>, String> {
        let (tx, rx) = bounded::<Sent>(8);
        let path = path.to_path_buf();
        let reader = std::thread::spawn(move || {
            let mut out = Out {
                tx,
                rows: vec![],
                row: Row::default(),
                bytes_read: Arc::new(AtomicU64::new(0)),
                cancel: Arc::new(AtomicBool::new(false)),
                len: 0,
                last_row: 0,
                reported: 0,
            };
            let read = if fast {
                // The fast reader itself: a book it declines fails the test, so that
                // calamine is never compared with itself.
                match super::super::xlsx::Book::open(&path, "S & 1") {
                    Ok(Some(book)) => match fast_read(book, &mut out) {
                        Ok(true) => Ok(()),
                        Ok(false) => panic!("the fast reader declined the sheet"),
                        Err(m) => Err(m),
                    },
                    Ok(None) => panic!("the fast reader declined the book"),
                    Err(m) => Err(m),
                }
            } else {
                read_calamine(&path, "S & 1", &mut out)
            };
            match read {
                Ok(()) => {
                    out.flush_row();
                    out.send();
                }
                Err(m) => drop(out.tx.send(Err(m))),
            }
        });
        let mut rows = vec![];
        for sent in rx {
            rows.extend(sent?);
        }
        reader.join().unwrap();
        Ok(rows)
    }

    fn same(g: &mut Gen, rows: u32, is_1904: bool, refs: bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.xlsx");
        let xml = sheet(g, rows, 20, refs);
        book(&path, g, &xml, is_1904);
        let (fast, slow) = (rows_of(&path, true), rows_of(&path, false));
        let slow = slow.unwrap_or_else(|e| panic!("calamine refused the book: {e}"));
        assert!(!slow.is_empty(), "the book has no values");
        let fast = fast.unwrap();
        assert_eq!(fast.len(), slow.len());
        for (f, s) in fast.iter().zip(&slow) {
            assert_eq!(f, s);
        }
    }

    #[test]
    fn random_books_read_the_same() {
        for seed in 1..=60u64 {
            let mut g = Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let rows = 1 + g.below(60) as u32;
            same(&mut g, rows, seed % 3 == 0, seed % 5 != 0);
        }
    }

    #[test]
    fn a_sheet_of_many_chunks_reads_the_same() {
        // About 6 MB of XML: cut into chunks at rows with and without `r`, comments
        // and CDATA sections holding `<row` among them.
        for refs in [true, false] {
            let xml = sheet(&mut Gen(0x5EED), 40_000, 20, refs);
            assert!(
                xml.len() > 4 << 20,
                "{} bytes: too few for several chunks",
                xml.len()
            );
            same(&mut Gen(0x5EED), 40_000, false, refs);
        }
    }

    #[test]
    fn what_calamine_refuses_is_refused() {
        for bad in [
            "<row r=\"1\"><c r=\"A1\" t=\"e\"><v>#OOPS!</v></c></row>",
            "<row r=\"1\"><c r=\"A1\" t=\"n\"><v>abc</v></c></row>",
            "<row r=\"1\"><c r=\"A1\" t=\"b\"><v>2</v></c></row>",
            "<row r=\"1\"><c r=\"A1\" t=\"s\"><v>99</v></c></row>",
            "<row r=\"1\"><c r=\"A1\" t=\"zz\"><v>1</v></c></row>",
            "<row r=\"1\"><c r=\"A1\"><x/></c></row>",
            "<row r=\"1\"><c r=\"1A\"><v>1</v></c></row>",
            "<row r=\"1\"><c r=\"A1\"><v>1</v></c></row>",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("b.xlsx");
            let xml = format!("<worksheet><sheetData>{bad}</sheetData></worksheet>");
            book(&path, &mut Gen(7), &xml, false);
            let (fast, slow) = (rows_of(&path, true), rows_of(&path, false));
            assert_eq!(
                fast.is_err(),
                slow.is_err(),
                "{bad}: {fast:?} against {slow:?}"
            );
            if let (Ok(f), Ok(s)) = (&fast, &slow) {
                assert_eq!(f, s);
            }
        }
        // A sheet cut off before `</sheetData>`.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.xlsx");
        book(
            &path,
            &mut Gen(7),
            "<worksheet><sheetData><row r=\"1\"><c r=\"A1\"><v>1</v></c></row>",
            false,
        );
        assert!(rows_of(&path, false).is_err());
        assert!(rows_of(&path, true).is_err());
    }
}
