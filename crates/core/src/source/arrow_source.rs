//! [`ArrowSource`]: Parquet files, Arrow IPC files and streams, and record batches from
//! the program, as rows (see [`super::columnar`] for the types).
//!
//! Several inputs of one schema are one source, so they load into one table (by either
//! engine). Each input is read in *units* — a Parquet row group, a record batch of an
//! IPC file (both read on `threads` threads, each opening the file itself), or a record
//! batch of a stream (read in order by one thread and converted on `threads`). Unit `j`
//! goes to lane `j % threads`; the lanes are drained in unit order, so rows come out in
//! file order. Each lane's channel holds up to one unit's batches (so that the other
//! lanes keep working while one unit is written), which bounds memory by a unit per
//! thread whatever the size of the file; a Parquet row group is decoded a batch at a
//! time, never whole.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use super::columnar::{self, BadRow, Columns};
use super::input::BatchReader;
use super::{BadRecord, Fill, Format, Input, Mismatches, ReadOptions, Sample, Source};
use crate::batch::Batch;
use crate::error::{Error, Position, Result};
use crate::types::ColumnType;

/// Parquet or Arrow IPC inputs of one schema, or the program's record batches.
pub struct ArrowSource {
    inputs: Vec<Input>,
    next_input: usize,
    opts: ReadOptions,
    bytes_read: Arc<AtomicU64>,
    /// The plan, from the first input (the others must match it).
    columns: Option<Columns>,
    first_name: String,
    records: bool,
    current: Option<Running>,
    /// The first input, opened by `sample`.
    pending: Option<(Opened, Columns)>,
    mismatches: Mismatches,
}

/// One input, open, before its lanes start.
struct Opened {
    name: Arc<str>,
    /// Which of the input's columns, in table order.
    roots: Vec<usize>,
    units: Units,
}

enum Units {
    Parquet {
        data: PqData,
        meta: ArrowReaderMetadata,
    },
    IpcFile {
        data: IpcData,
        count: usize,
        size: u64,
    },
    Stream(BatchReader),
}

/// Where a Parquet file's bytes are. A file is opened by each lane on its own: clones of
/// one handle share the offset that each read seeks, so two threads would race.
enum PqData {
    File(File, PathBuf),
    Bytes(bytes::Bytes),
}

impl PqData {
    /// The same data for another thread.
    fn reopen(&self) -> std::io::Result<PqData> {
        Ok(match self {
            PqData::File(_, p) => PqData::File(File::open(p)?, p.clone()),
            PqData::Bytes(b) => PqData::Bytes(b.clone()),
        })
    }
}

/// Where an IPC file's bytes are.
#[derive(Clone)]
enum IpcData {
    File(PathBuf),
    Bytes(bytes::Bytes),
}

trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}

/// What a lane hands on, in unit order.
enum Part {
    Rows(Batch),
    Bad(BadRow),
    /// The unit is done: its rows, and the input bytes it stands for (progress).
    End {
        rows: u64,
        bytes: u64,
    },
    /// A stream has no unit this number.
    Finished,
    Failed(Error),
}

/// An input being read.
struct Running {
    name: Arc<str>,
    lanes: Vec<(Receiver<Part>, Sender<Batch>)>,
    next_unit: usize,
    units: Option<usize>,
    rows_before: u64,
}

/// What every lane of one input needs.
struct Lane {
    name: Arc<str>,
    columns: Columns,
    /// The input's columns that are the table's, in table order.
    roots: Vec<usize>,
    take: Vec<usize>,
    batch_rows: usize,
    /// A batch is handed on at this many bytes of text and blobs (the pipeline's bound),
    /// whatever its row count.
    max_bytes: usize,
    records: bool,
    out: Sender<Part>,
    back: Receiver<Batch>,
}

impl ArrowSource {
    /// A source over `inputs` (each Parquet or Arrow, by `opts.format` or, for the
    /// program's batches, by itself), read with `opts`.
    pub fn new(inputs: Vec<Input>, opts: ReadOptions, bytes_read: Arc<AtomicU64>) -> Self {
        let first_name = inputs.first().map(Input::display_name).unwrap_or_default();
        ArrowSource {
            inputs,
            next_input: 0,
            opts,
            bytes_read,
            columns: None,
            first_name,
            records: false,
            current: None,
            pending: None,
            mismatches: Mismatches::default(),
        }
    }

    /// Opens input `i` and checks its columns against the plan (making the plan from
    /// the first input).
    fn open(&mut self, i: usize) -> Result<(Opened, Columns)> {
        let input = &self.inputs[i];
        let name: Arc<str> = input.display_name().into();
        let (schema, units) = open_units(input, self.opts.format, &name, &self.bytes_read)?;
        let roots = select(&schema, self.opts.select.as_deref(), &name)?;
        let fields: Vec<_> = roots.iter().map(|&r| schema.fields()[r].clone()).collect();
        let (temporal, decimals) = (self.opts.temporal, self.opts.decimals);
        let columns = match &self.opts.flatten {
            Some(sep) => Columns::flattened(fields, sep, temporal, decimals),
            None => Columns::new(fields, temporal, decimals),
        };
        let columns = columns.map_err(|(c, why)| {
            let f = &schema.fields()[roots[c]];
            Error::input(at(&name, 0), Some((c, f.name().clone())), why)
        })?;
        if let Some(first) = &self.columns {
            same_columns(first, &columns, &self.first_name, &name)?;
        }
        Ok((Opened { name, roots, units }, columns))
    }

    /// Starts the lanes of the next input; `false` when there is none.
    fn start_next(&mut self, batch_rows: usize, max_bytes: usize) -> Result<bool> {
        if self.next_input == self.inputs.len() {
            return Ok(false);
        }
        let i = self.next_input;
        self.next_input += 1;
        // `sample` opened the first input (a stream can be read only once).
        let (opened, columns) = match self.pending.take() {
            Some(first) if i == 0 => first,
            _ => self.open(i)?,
        };
        if self.columns.is_none() {
            self.columns = Some(columns.clone());
        }
        self.current = Some(start(
            opened,
            columns,
            self.opts.parse_threads.max(1),
            (batch_rows, max_bytes),
            self.records,
        ));
        Ok(true)
    }
}

fn at(name: &Arc<str>, record: u64) -> Position {
    Position {
        path: name.clone(),
        line: 0,
        column: 0,
        record,
        byte: 0,
    }
}

/// The columns `select` names (all when `None`), as indexes into `schema`: a name
/// matches exactly, or else ignoring ASCII case when only one column does.
pub(crate) fn select(
    schema: &SchemaRef,
    select: Option<&[String]>,
    name: &Arc<str>,
) -> Result<Vec<usize>> {
    let fields = schema.fields();
    let Some(wanted) = select else {
        return Ok((0..fields.len()).collect());
    };
    let mut roots = Vec::with_capacity(wanted.len());
    for w in wanted {
        let exact: Vec<usize> = (0..fields.len())
            .filter(|&i| fields[i].name() == w)
            .collect();
        let found = match exact[..] {
            [i] => Some(i),
            [] => {
                let folded: Vec<usize> = (0..fields.len())
                    .filter(|&i| fields[i].name().eq_ignore_ascii_case(w))
                    .collect();
                match folded[..] {
                    [i] => Some(i),
                    _ => None,
                }
            }
            _ => {
                return Err(Error::usage(format!(
                    "{name}: more than one column is named {w:?}; select by another name"
                )))
            }
        };
        match found {
            Some(i) if roots.contains(&i) => {
                return Err(Error::usage(format!(
                    "{name}: column {w:?} is selected twice"
                )))
            }
            Some(i) => roots.push(i),
            None => {
                let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
                return Err(Error::usage(format!(
                    "{name}: no column {w:?} to select (columns: {})",
                    names.join(", ")
                )));
            }
        }
    }
    Ok(roots)
}

/// An error unless `b` (of input `b_name`) has the columns of `a` (of `a_name`): the
/// same names and Arrow types, in the same order.
fn same_columns(a: &Columns, b: &Columns, a_name: &str, b_name: &Arc<str>) -> Result<()> {
    let (fa, fb) = (a.fields(), b.fields());
    for (i, (x, y)) in fa.iter().zip(fb).enumerate() {
        if x.name() != y.name() || x.data_type() != y.data_type() {
            return Err(Error::input(
                at(b_name, 0),
                Some((i, y.name().clone())),
                format!(
                    "the inputs differ: column {} is {:?} {} in {a_name}, but {:?} {} here; load them into separate tables",
                    i + 1,
                    x.name(),
                    x.data_type(),
                    y.name(),
                    y.data_type()
                ),
            ));
        }
    }
    if fa.len() != fb.len() {
        return Err(Error::input(
            at(b_name, 0),
            None,
            format!(
                "the inputs differ: {a_name} has {} columns, this one {}; load them into separate tables",
                fa.len(),
                fb.len()
            ),
        ));
    }
    Ok(())
}

/// Opens `input` as units of `format`; returns its whole schema too.
fn open_units(
    input: &Input,
    format: Format,
    name: &Arc<str>,
    bytes_read: &Arc<AtomicU64>,
) -> Result<(SchemaRef, Units)> {
    if let Some(reader) = input.batches()? {
        return Ok((reader.schema(), Units::Stream(reader)));
    }
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        Error::input(at(name, 0), None, format!("{what}: {e}"))
    };
    match (format, input) {
        (Format::Parquet, _) if input.is_gzip() => Err(Error::usage(format!(
            "{name}: a gzip-compressed Parquet file cannot be read in place; decompress it (Parquet compresses its own pages)"
        ))),
        (Format::Parquet, Input::Path(p)) => {
            let file = File::open(p).map_err(|e| Error::io(Some(p.clone()), e))?;
            let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
                .map_err(|e| bad("not a readable Parquet file", &e))?;
            let meta = as_views(meta);
            let data = PqData::File(file, p.clone());
            Ok((meta.schema().clone(), Units::Parquet { data, meta }))
        }
        (Format::Parquet, Input::Bytes { bytes, .. }) => {
            let data = bytes::Bytes::from_owner(bytes.clone());
            let meta = ArrowReaderMetadata::load(&data, ArrowReaderOptions::new())
                .map_err(|e| bad("not a readable Parquet file", &e))?;
            let meta = as_views(meta);
            let data = PqData::Bytes(data);
            Ok((meta.schema().clone(), Units::Parquet { data, meta }))
        }
        (Format::Parquet, _) => Err(Error::usage(format!(
            "{name}: a Parquet file is read from its end first, so it must be a file or bytes in memory, not a stream"
        ))),
        (_, Input::Path(p)) if !input.is_gzip() => {
            let mut file = File::open(p).map_err(|e| Error::io(Some(p.clone()), e))?;
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            if is_ipc_file(&mut file).map_err(|e| Error::io(Some(p.clone()), e))? {
                let reader = arrow_ipc::reader::FileReader::try_new(BufReader::new(file), None)
                    .map_err(|e| bad("not a readable Arrow IPC file", &e))?;
                let units = Units::IpcFile {
                    data: IpcData::File(p.clone()),
                    count: reader.num_batches(),
                    size,
                };
                Ok((reader.schema(), units))
            } else {
                stream(Box::new(BufReader::new(file)), &bad)
            }
        }
        (_, Input::Bytes { bytes, .. }) => {
            let data = bytes::Bytes::from_owner(bytes.clone());
            if data.starts_with(IPC_MAGIC) {
                let reader =
                    arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(data.clone()), None)
                        .map_err(|e| bad("not a readable Arrow IPC file", &e))?;
                let units = Units::IpcFile {
                    count: reader.num_batches(),
                    size: data.len() as u64,
                    data: IpcData::Bytes(data),
                };
                Ok((reader.schema(), units))
            } else {
                stream(Box::new(std::io::Cursor::new(data)), &bad)
            }
        }
        _ => {
            // stdin, a reader, a gzip file: read in order, as a stream.
            let mut reader = super::input::open(input, super::Encoding::Utf8, bytes_read.clone(), None)?;
            let head = std::io::BufRead::fill_buf(&mut reader).map_err(|e| Error::io(None, e))?;
            if head.starts_with(IPC_MAGIC) {
                return Err(Error::usage(format!(
                    "{name}: an Arrow IPC file (not a stream) is read from its end first, so it must be a file or bytes in memory"
                )));
            }
            stream(reader, &bad)
        }
    }
}

/// Record batches read in order on the calling thread, or why one cannot be read.
pub(crate) type InOrder = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// The schema and record batches of `input` (Parquet or Arrow IPC, by `format`), in
/// file order, one at a time on the calling thread (for a reader that needs each row
/// whole, not for loading, which reads on every core). Bytes read are counted in
/// `bytes_read` as row groups and record batches are read.
pub(crate) fn in_order(
    input: &Input,
    format: Format,
    name: &Arc<str>,
    bytes_read: &Arc<AtomicU64>,
    batch_rows: usize,
) -> Result<(SchemaRef, InOrder)> {
    let (schema, units) = open_units(input, format, name, bytes_read)?;
    let at0 = {
        let name = name.clone();
        move |what: String| Error::input(at(&name, 0), None, what)
    };
    let counted = bytes_read.clone();
    let batches: InOrder = match units {
        Units::Parquet { data, meta } => {
            let groups = meta.metadata().num_row_groups();
            Box::new((0..groups).flat_map(move |g| {
                let bytes = meta.metadata().row_group(g).compressed_size().max(0) as u64;
                counted.fetch_add(bytes, Ordering::Relaxed);
                let fail = at0.clone();
                let unreadable = move |e: &dyn std::fmt::Display| {
                    fail(format!(
                        "row group {g} cannot be read (a corrupt or truncated file?): {e}"
                    ))
                };
                match parquet_reader(&data, &meta, g, ProjectionMask::all(), batch_rows) {
                    Ok(r) => Box::new(r.map(move |b| b.map_err(|e| unreadable(&e)))) as InOrder,
                    Err(e) => Box::new(std::iter::once(Err(unreadable(&e)))),
                }
            }))
        }
        Units::IpcFile { data, count, size } => {
            let source: Box<dyn ReadSeek> = match &data {
                IpcData::File(p) => Box::new(BufReader::new(
                    File::open(p).map_err(|e| Error::io(Some(p.clone()), e))?,
                )),
                IpcData::Bytes(b) => Box::new(std::io::Cursor::new(b.clone())),
            };
            let reader = arrow_ipc::reader::FileReader::try_new(source, None)
                .map_err(|e| at0(format!("not a readable Arrow IPC file: {e}")))?;
            let per = size / count.max(1) as u64;
            Box::new(reader.enumerate().map(move |(u, b)| {
                counted.fetch_add(per, Ordering::Relaxed);
                b.map_err(|e| {
                    at0(format!(
                        "record batch {u} cannot be read (a corrupt or truncated file?): {e}"
                    ))
                })
            }))
        }
        Units::Stream(reader) => Box::new(
            reader.map(move |b| b.map_err(|e| at0(format!("a record batch cannot be read: {e}")))),
        ),
    };
    Ok((schema, batches))
}

/// `meta` reading top-level strings and binaries as views (Utf8View, BinaryView): a
/// dictionary-encoded column's values then point into its dictionary page instead of
/// being copied out for every row. The values are the same; when the reader cannot do
/// it, `meta` as it was.
fn as_views(meta: ArrowReaderMetadata) -> ArrowReaderMetadata {
    use arrow_schema::{DataType, Field, Schema};
    let schema = meta.schema();
    let mut changed = false;
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let view = match f.data_type() {
                DataType::Utf8 => Some(DataType::Utf8View),
                DataType::Binary => Some(DataType::BinaryView),
                _ => None,
            };
            match view {
                Some(v) => {
                    changed = true;
                    f.as_ref().clone().with_data_type(v)
                }
                None => f.as_ref().clone(),
            }
        })
        .collect();
    if !changed {
        return meta;
    }
    let hint = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    ArrowReaderMetadata::try_new(
        meta.metadata().clone(),
        ArrowReaderOptions::new().with_schema(hint),
    )
    .unwrap_or(meta)
}

const IPC_MAGIC: &[u8] = b"ARROW1";

fn is_ipc_file(file: &mut File) -> std::io::Result<bool> {
    let mut head = [0u8; 6];
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..])? {
            0 => break,
            n => got += n,
        }
    }
    file.rewind()?;
    Ok(got == head.len() && head == IPC_MAGIC)
}

fn stream(
    reader: Box<dyn Read + Send>,
    bad: &dyn Fn(&str, &dyn std::fmt::Display) -> Error,
) -> Result<(SchemaRef, Units)> {
    let r = arrow_ipc::reader::StreamReader::try_new(reader, None)
        .map_err(|e| bad("not a readable Arrow IPC stream", &e))?;
    Ok((r.schema(), Units::Stream(Box::new(r))))
}

/// Starts the lanes that read `opened`.
fn start(
    opened: Opened,
    columns: Columns,
    threads: usize,
    (batch_rows, max_bytes): (usize, usize),
    records: bool,
) -> Running {
    let Opened { name, roots, units } = opened;
    let unit_count = match &units {
        Units::Parquet { meta, .. } => Some(meta.metadata().num_row_groups()),
        Units::IpcFile { count, .. } => Some(*count),
        Units::Stream(_) => None,
    };
    let threads = threads.clamp(1, unit_count.unwrap_or(threads).max(1));
    // Files are read with a projection of the selected columns in file order; the
    // program's batches come whole. `take` picks the table's columns out of either.
    let mut sorted = roots.clone();
    sorted.sort_unstable();
    let take: Vec<usize> = match &units {
        Units::Stream(_) => roots.clone(),
        _ => roots
            .iter()
            .map(|r| sorted.binary_search(r).expect("a selected column"))
            .collect(),
    };
    // A lane holds up to a whole unit (a row group of a file) of batches: the lanes are
    // drained one unit at a time, so with less the other lanes would stand still while
    // one unit is written. That bounds memory by a unit per thread, not by the file.
    let depth = match &units {
        Units::Parquet { meta, .. } => {
            let most = (0..meta.metadata().num_row_groups())
                .map(|g| meta.metadata().row_group(g).num_rows().max(0) as usize)
                .max()
                .unwrap_or(0);
            most.div_ceil(batch_rows.max(1)) + 2
        }
        _ => 16,
    };
    let mut lanes = vec![];
    let mut lane_ctx = vec![];
    for _ in 0..threads {
        let (out, rx) = bounded::<Part>(depth);
        let (back_tx, back) = unbounded::<Batch>();
        lanes.push((rx, back_tx));
        lane_ctx.push(Lane {
            name: name.clone(),
            columns: columns.clone(),
            roots: roots.clone(),
            take: take.clone(),
            batch_rows: batch_rows.max(1),
            max_bytes,
            records,
            out,
            back,
        });
    }
    match units {
        Units::Parquet { data, meta } => {
            let mask = ProjectionMask::roots(meta.parquet_schema(), sorted.iter().copied());
            for (w, lane) in lane_ctx.into_iter().enumerate() {
                let data = match data.reopen() {
                    Ok(d) => d,
                    Err(e) => {
                        lane.fail(Error::io(None, e).in_file(std::path::Path::new(&*lane.name)));
                        continue;
                    }
                };
                let (meta, mask) = (meta.clone(), mask.clone());
                let units: Vec<usize> = (w..unit_count.unwrap_or(0)).step_by(threads).collect();
                std::thread::spawn(move || parquet_lane(lane, data, meta, mask, units));
            }
        }
        Units::IpcFile { data, count, size } => {
            for (w, lane) in lane_ctx.into_iter().enumerate() {
                let data = data.clone();
                let units: Vec<usize> = (w..count).step_by(threads).collect();
                let projection = sorted.clone();
                let per_unit = size / count.max(1) as u64;
                std::thread::spawn(move || ipc_lane(lane, data, projection, units, per_unit));
            }
        }
        Units::Stream(reader) => {
            let mut inputs = vec![];
            for lane in lane_ctx {
                let (tx, rx) = bounded::<Option<std::result::Result<RecordBatch, ArrowError>>>(1);
                inputs.push(tx);
                std::thread::spawn(move || fed_lane(lane, rx));
            }
            std::thread::spawn(move || {
                let mut i = 0;
                for item in reader {
                    if inputs[i % inputs.len()].send(Some(item)).is_err() {
                        return;
                    }
                    i += 1;
                }
                let _ = inputs[i % inputs.len()].send(None);
            });
        }
    }
    Running {
        name,
        lanes,
        next_unit: 0,
        units: unit_count,
        rows_before: 0,
    }
}

impl Lane {
    /// Converts `rb` (unit rows `done + 1 ..`) and hands its rows on; `false` when the
    /// reader of the lanes has gone (stop quietly).
    fn rows(
        &self,
        rb: &RecordBatch,
        done: u64,
        record: &mut liteload_btree::RecordBuilder,
    ) -> bool {
        let arrays = match self.columns.arrays(columnar::project(rb, &self.take)) {
            Ok(a) => a,
            Err(e) => {
                return self.fail(Error::input(
                    at(&self.name, done + 1),
                    None,
                    format!("a record batch does not have the schema's structs: {e}"),
                ))
            }
        };
        for (i, (a, f)) in arrays.iter().zip(self.columns.fields()).enumerate() {
            if a.data_type() != f.data_type() {
                return self.fail(Error::input(
                    at(&self.name, done + 1),
                    Some((i, f.name().clone())),
                    format!(
                        "a record batch has type {} here, where the schema says {}",
                        a.data_type(),
                        f.data_type()
                    ),
                ));
            }
        }
        let readers = match self.columns.readers(&arrays) {
            Ok(r) => r,
            Err((i, e)) => {
                let f = &self.columns.fields()[i];
                return self.fail(Error::input(
                    at(&self.name, done + 1),
                    Some((i, f.name().clone())),
                    format!("converting its values: {e}"),
                ));
            }
        };
        let n = rb.num_rows();
        let mut at_row = 0;
        let mut bad = vec![];
        while at_row < n {
            let mut batch = self.back.try_recv().unwrap_or_default();
            batch.clear(arrays.len());
            while at_row < n
                && batch.rows() < self.batch_rows
                && batch.text_bytes() < self.max_bytes
            {
                // A few rows at a time, so that a batch of large values stops near the limit.
                let step = (self.batch_rows - batch.rows()).min(n - at_row).min(64);
                let range = at_row..at_row + step;
                columnar::append_rows(
                    &readers,
                    range,
                    done + 1,
                    self.records,
                    &mut batch,
                    record,
                    &mut bad,
                );
                at_row += step;
            }
            for b in bad.drain(..) {
                if self.out.send(Part::Bad(b)).is_err() {
                    return false;
                }
            }
            if !batch.is_empty() && self.out.send(Part::Rows(batch)).is_err() {
                return false;
            }
        }
        true
    }

    fn fail(&self, e: Error) -> bool {
        let _ = self.out.send(Part::Failed(e));
        false
    }

    fn end(&self, rows: u64, bytes: u64) -> bool {
        self.out.send(Part::End { rows, bytes }).is_ok()
    }
}

fn parquet_reader(
    data: &PqData,
    meta: &ArrowReaderMetadata,
    group: usize,
    mask: ProjectionMask,
    batch_rows: usize,
) -> std::result::Result<ParquetRecordBatchReader, parquet::errors::ParquetError> {
    fn build<T: parquet::file::reader::ChunkReader + 'static>(
        data: T,
        meta: &ArrowReaderMetadata,
        group: usize,
        mask: ProjectionMask,
        batch_rows: usize,
    ) -> std::result::Result<ParquetRecordBatchReader, parquet::errors::ParquetError> {
        ParquetRecordBatchReaderBuilder::new_with_metadata(data, meta.clone())
            .with_row_groups(vec![group])
            .with_projection(mask)
            .with_batch_size(batch_rows)
            .build()
    }
    match data {
        PqData::File(f, _) => build(f.try_clone()?, meta, group, mask, batch_rows),
        PqData::Bytes(b) => build(b.clone(), meta, group, mask, batch_rows),
    }
}

fn parquet_lane(
    lane: Lane,
    data: PqData,
    meta: ArrowReaderMetadata,
    mask: ProjectionMask,
    groups: Vec<usize>,
) {
    let mut record = liteload_btree::RecordBuilder::new();
    // Decoded in larger batches than are handed on: fewer, longer runs of each decoder.
    let batch_rows = lane.batch_rows.max(65_536);
    for g in groups {
        let mut done = 0u64;
        let reader = match parquet_reader(&data, &meta, g, mask.clone(), batch_rows) {
            Ok(r) => r,
            Err(e) => {
                lane.fail(decode_error(&lane, &data, &meta, g, &e));
                return;
            }
        };
        for rb in reader {
            let rb = match rb {
                Ok(rb) => rb,
                Err(e) => {
                    lane.fail(decode_error(&lane, &data, &meta, g, &e));
                    return;
                }
            };
            if !lane.rows(&rb, done, &mut record) {
                return;
            }
            done += rb.num_rows() as u64;
        }
        let bytes = meta.metadata().row_group(g).compressed_size().max(0) as u64;
        if !lane.end(done, bytes) {
            return;
        }
    }
}

/// The error for row group `group`, which failed to decode with `e`: it names the
/// column that fails when decoded alone (found by decoding each selected column alone;
/// only after a failure, so the cost does not matter).
fn decode_error(
    lane: &Lane,
    data: &PqData,
    meta: &ArrowReaderMetadata,
    group: usize,
    e: &dyn std::fmt::Display,
) -> Error {
    let culprit = lane.columns.fields().iter().enumerate().find_map(|(i, f)| {
        let mask = ProjectionMask::roots(meta.parquet_schema(), [lane.roots[i]]);
        let fails = match parquet_reader(data, meta, group, mask, 8192) {
            Ok(r) => r.into_iter().any(|b| b.is_err()),
            Err(_) => true,
        };
        fails.then(|| (i, f.name().clone()))
    });
    Error::input(
        at(&lane.name, 0),
        culprit,
        format!("row group {group} cannot be read (a corrupt or truncated file?): {e}"),
    )
}

fn ipc_lane(lane: Lane, data: IpcData, projection: Vec<usize>, units: Vec<usize>, per_unit: u64) {
    let bad = |e: &dyn std::fmt::Display| {
        Error::input(
            at(&lane.name, 0),
            None,
            format!("not a readable Arrow IPC file: {e}"),
        )
    };
    let source: Box<dyn ReadSeek> = match &data {
        IpcData::File(p) => match File::open(p) {
            Ok(f) => Box::new(BufReader::new(f)),
            Err(e) => {
                lane.fail(Error::io(Some(p.clone()), e));
                return;
            }
        },
        IpcData::Bytes(b) => Box::new(std::io::Cursor::new(b.clone())),
    };
    let mut reader = match arrow_ipc::reader::FileReader::try_new(source, Some(projection)) {
        Ok(r) => r,
        Err(e) => {
            lane.fail(bad(&e));
            return;
        }
    };
    let mut record = liteload_btree::RecordBuilder::new();
    for u in units {
        let rb = reader
            .set_index(u)
            .and_then(|()| reader.next().transpose())
            .map_err(|e| {
                Error::input(
                    at(&lane.name, 0),
                    None,
                    format!("record batch {u} cannot be read (a corrupt or truncated file?): {e}"),
                )
            });
        let rb = match rb {
            Ok(Some(rb)) => rb,
            Ok(None) => {
                lane.fail(bad(&format!("record batch {u} is missing")));
                return;
            }
            Err(e) => {
                lane.fail(e);
                return;
            }
        };
        if !lane.rows(&rb, 0, &mut record) || !lane.end(rb.num_rows() as u64, per_unit) {
            return;
        }
    }
}

fn fed_lane(lane: Lane, input: Receiver<Option<std::result::Result<RecordBatch, ArrowError>>>) {
    let mut record = liteload_btree::RecordBuilder::new();
    while let Ok(item) = input.recv() {
        match item {
            None => {
                let _ = lane.out.send(Part::Finished);
                return;
            }
            Some(Err(e)) => {
                // A reader of liteload's own (a database's copy) fails with its error.
                lane.fail(match e {
                    ArrowError::ExternalError(inner) if inner.is::<Error>() => {
                        *inner.downcast::<Error>().expect("checked to be one")
                    }
                    e => Error::input(
                        at(&lane.name, 0),
                        None,
                        format!("reading a record batch: {e}"),
                    ),
                });
                return;
            }
            Some(Ok(rb)) => {
                if !lane.rows(&rb, 0, &mut record) || !lane.end(rb.num_rows() as u64, 0) {
                    return;
                }
            }
        }
    }
}

impl Source for ArrowSource {
    fn sample(&mut self) -> Result<Sample> {
        if self.inputs.is_empty() {
            return Err(Error::usage("no input"));
        }
        let (opened, columns) = self.open(0)?;
        let raw: Vec<String> = columns.fields().iter().map(|f| f.name().clone()).collect();
        let (names, notes) = crate::schema::clean_names(&raw);
        let types = columns.types();
        self.columns = Some(columns.clone());
        self.pending = Some((opened, columns));
        Ok(Sample {
            columns: names,
            guesses: vec![],
            notes,
            types: Some(types),
            locale: vec![],
        })
    }

    fn set_types(&mut self, _types: Vec<ColumnType>) {
        // The types come from the schema; a column of another declared type (an
        // existing table's) gets SQLite's affinity on the way in.
    }

    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        loop {
            let Some(run) = &mut self.current else {
                if !self.start_next(max_rows, max_text)? {
                    return Ok(Fill::Done);
                }
                continue;
            };
            if run.units == Some(run.next_unit) {
                self.current = None;
                continue;
            }
            let (lane, back) = &run.lanes[run.next_unit % run.lanes.len()];
            let part = lane.recv().map_err(|_| {
                Error::internal(format!("{}: a reading thread stopped early", run.name))
            })?;
            match part {
                Part::Rows(mut got) => {
                    got.shift_origins(0, run.rows_before);
                    std::mem::swap(batch, &mut got);
                    let _ = back.send(got);
                    return Ok(Fill::Full);
                }
                Part::Bad(b) => {
                    let field = self
                        .columns
                        .as_ref()
                        .map(|c| (b.column, c.fields()[b.column].name().clone()));
                    bad(BadRecord {
                        error: Error::input(
                            at(&run.name, run.rows_before + b.row),
                            field,
                            b.message,
                        ),
                        fields: b.fields,
                    })?;
                }
                Part::End { rows, bytes } => {
                    run.rows_before += rows;
                    run.next_unit += 1;
                    self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
                }
                Part::Finished => run.units = Some(run.next_unit),
                Part::Failed(e) => {
                    self.current = None;
                    self.next_input = self.inputs.len();
                    return Err(e);
                }
            }
        }
    }

    fn width(&self) -> usize {
        self.columns.as_ref().map_or(0, |c| c.fields().len())
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }

    fn make_records(&mut self) -> bool {
        if self.current.is_some() {
            return false;
        }
        self.records = true;
        true
    }
}
