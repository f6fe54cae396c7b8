//! `liteload bench`: the write-ups' experiments, run and verified on this machine.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use liteload_lab::generate::{self as genlab, GenerateBenchOptions};
use liteload_lab::kv::{self as kvlab, JournalMode, KvBenchOptions, KvReport, Order};
use liteload_lab::ladder::{self, LadderOptions};
use liteload_lab::pragmas::{self, PragmasOptions};
use liteload_lab::render;
use liteload_lab::report::{Experiment as Report, Machine};
use liteload_lab::stats::Step;
use liteload_lab::svg::{bar_chart, Bar};
use liteload_lab::upsert::{self, UpsertOptions};

use crate::report::grouped;

/// Reproduce a write-up's experiment on this machine: every step verified, runs
/// interleaved, medians reported.
#[derive(Args, Debug)]
#[command(after_help = "\
Every experiment runs its steps interleaved (run 1 of each step, then run 2, ...), checks
each run's result with SQLite (integrity_check, rows read back and compared) and reports
medians; a step whose result is wrong is shown FAILED and never timed. --quick (the
default) takes under a minute per experiment; --full uses the write-ups' sizes.

Examples:
  liteload bench ladder                      the INSERT ladder of write-up 000
  liteload bench pragmas --full --json p.json
  liteload bench all --html report.html      every experiment, one page")]
pub struct BenchArgs {
    #[command(subcommand)]
    pub experiment: Experiment,
}

#[derive(Subcommand, Debug)]
pub enum Experiment {
    /// Write-up 000: a transit TSV loaded one change at a time, from a formatted INSERT per
    /// row in autocommit to liteload import.
    Ladder(LadderArgs),
    /// Write-up 003: PRAGMA configurations under 60% insert / 30% select / 10% delete,
    /// counting only statements that succeeded.
    Pragmas(PragmasArgs),
    /// Write-up 002: a stream of sparse JSON updates kept as current rows, in the
    /// write-up's successive ways and by liteload ingest.
    Upsert(UpsertArgs),
    /// Write-up 001 (kvtest): small blobs from one SQLite file vs one file each.
    Kv(KvBenchArgs),
    /// Write-up 004: synthetic rows through SQLite's insert path and the direct page
    /// writer, against generating the values alone.
    Generate(GenerateArgs),
    /// Every experiment above, in one run, with one report.
    All(AllArgs),
}

/// Size and output options every experiment shares.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Quick sizes: the whole experiment in under a minute (the default).
    #[arg(long, conflicts_with_all = ["full", "tiny"])]
    quick: bool,
    /// The write-ups' sizes (minutes).
    #[arg(long, conflicts_with = "tiny")]
    full: bool,
    /// Smoke-test sizes: checks that every step works here in seconds; the numbers mean
    /// little.
    #[arg(long)]
    tiny: bool,
    /// Timed runs of each step (at least 3 for a median worth quoting).
    #[arg(long, value_name = "N", default_value_t = 3)]
    runs: usize,
    /// Working folder (default: a folder under the system temp dir); removed afterwards
    /// unless --keep.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Keep the working folder afterwards.
    #[arg(long)]
    keep: bool,
    /// Also write every run (one record per run), the steps and the machine as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LadderArgs {
    #[command(flatten)]
    common: Common,
    /// Rows in the generated TSV (quick 250,000; full: the write-up's 864,913).
    #[arg(long, value_name = "N")]
    rows: Option<u64>,
    /// Rows loaded by the autocommit step (its rate is extrapolated to the whole file).
    #[arg(long, value_name = "N")]
    cap: Option<u64>,
    /// Run the ladder on your own TSV instead of the generated one: a header line
    /// naming Route_ID, Branch_Code, Version, Stop, Vehicle_Index, Day, Time (the
    /// write-up's file), then one row a line, Stop an integer.
    #[arg(long, value_name = "FILE", conflicts_with = "rows")]
    input: Option<PathBuf>,
    /// Also write a bar chart of the steps as SVG to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PragmasArgs {
    #[command(flatten)]
    common: Common,
    /// Seconds per run of each configuration (quick 0.25, full 5).
    #[arg(long, value_name = "S")]
    seconds: Option<f64>,
    /// Also run every configuration as the write-up's program does: each statement
    /// formatted with its values and compiled per operation, its SELECT text included
    /// (SQLite rejects it: those failures are shown, never counted as work).
    #[arg(long)]
    as_written: bool,
    /// Also write a bar chart of the configurations as SVG to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct UpsertArgs {
    #[command(flatten)]
    common: Common,
    /// Messages in the stream (quick 20,000, full 1,000,000).
    #[arg(long, value_name = "N")]
    messages: Option<u64>,
    /// Distinct keys (quick 5,000, full 300,000).
    #[arg(long, value_name = "N")]
    keys: Option<u64>,
    /// Messages applied by the transaction-per-message steps (rate extrapolated).
    #[arg(long, value_name = "N")]
    cap: Option<u64>,
    /// Measure ingest's loss window: kill `liteload ingest` (kill -9) this many times at
    /// random moments while a stream is piped in, and count the messages lost (tiny 2,
    /// quick 5, full 10; 0 skips it).
    #[arg(long, value_name = "N")]
    kills: Option<usize>,
    /// Also write a bar chart of the steps as SVG to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct GenerateArgs {
    #[command(flatten)]
    common: Common,
    /// Rows to generate (quick 2,000,000, full 100,000,000).
    #[arg(long, value_name = "N")]
    rows: Option<u64>,
    /// Also write a bar chart of the steps as SVG to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct KvBenchArgs {
    #[command(flatten)]
    common: Common,
    /// Number of blobs (quick 10,000; full: the write-up's 100,000 blobs of 10 KB ± 2 KB,
    /// about 1 GB plus 2.4 GB of files).
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Mean blob size in bytes.
    #[arg(long, value_name = "BYTES")]
    size: Option<u64>,
    /// Blob sizes vary by up to this many bytes either way.
    #[arg(long, value_name = "BYTES")]
    variance: Option<u64>,
    /// Page size of the store (default: SQLite's, 4096).
    #[arg(long, value_name = "BYTES")]
    page_size: Option<u32>,
    /// Integer keys stored as the rowid (INTEGER PRIMARY KEY), as kvtest does: one
    /// B-tree lookup per read. Without it, liteload kv's default store (keys of any
    /// type, found through an index).
    #[arg(long)]
    int: bool,
    /// Run all the database reads of a pass in one transaction, as kvtest does.
    #[arg(long)]
    read_txn: bool,
    /// The store's journal: delete (rollback journal, synchronous=FULL: SQLite's and
    /// kvtest's default), wal (synchronous=NORMAL, liteload kv's default) or off
    /// (journal OFF, synchronous=OFF).
    #[arg(long, value_name = "MODE", default_value = "wal")]
    jmode: JournalMode,
    /// Read order: random, asc or desc.
    #[arg(long, value_name = "ORDER", default_value = "random")]
    order: Order,
    /// Drop the OS page cache before every timed read pass (needs root; otherwise the
    /// report says why the reads ran warm).
    #[arg(long)]
    cold: bool,
    /// Also write a bar chart of the read and write ratios as SVG to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct AllArgs {
    #[command(flatten)]
    common: Common,
    /// Write one self-contained HTML page: every chart and table, the machine, and the
    /// fastest verified setting per durability need.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write each experiment's chart as DIR/<experiment>.svg.
    #[arg(long, value_name = "DIR")]
    svg_dir: Option<PathBuf>,
}

pub fn run(a: BenchArgs) -> Result<()> {
    match a.experiment {
        Experiment::Ladder(x) => {
            let c = x.common.clone();
            single(&c, "ladder", x.svg.as_deref(), |dir, log| {
                Ok(vec![ladder_report(&c, dir, x.rows, x.cap, x.input, log)?])
            })
        }
        Experiment::Pragmas(x) => {
            let c = x.common.clone();
            single(&c, "pragmas", x.svg.as_deref(), |dir, log| {
                pragmas_report(&c, dir, x.seconds, x.as_written, log)
            })
        }
        Experiment::Upsert(x) => {
            let c = x.common.clone();
            single(&c, "upsert", x.svg.as_deref(), |dir, log| {
                Ok(vec![upsert_report(
                    &c, dir, x.messages, x.keys, x.cap, x.kills, log,
                )?])
            })
        }
        Experiment::Generate(x) => {
            let c = x.common.clone();
            single(&c, "generate", x.svg.as_deref(), |dir, log| {
                Ok(vec![generate_report(&c, dir, x.rows, log)?])
            })
        }
        Experiment::Kv(k) => kv(k),
        Experiment::All(a) => all(a),
    }
}

fn log_line(m: &str) {
    eprintln!("… {m}");
}

fn work_dir(c: &Common, name: &str) -> PathBuf {
    c.dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("liteload-bench-{name}")))
}

/// Empties `dir` (it must be ours to empty: missing, empty, or made by an earlier run).
fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        let ours = dir.join(".liteload-bench");
        let empty = std::fs::read_dir(dir)?.next().is_none();
        if !empty && !ours.exists() {
            bail!(
                "{}: the folder is not empty and was not made by liteload bench; name another with --dir",
                dir.display()
            );
        }
        std::fs::remove_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    std::fs::write(dir.join(".liteload-bench"), "")?;
    Ok(())
}

fn check_space(dir: &Path, need: u64) -> Result<()> {
    let probe = dir
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("."));
    if let Some(free) = free_bytes(probe) {
        if free < need {
            bail!(
                "{}: {} MB free, the experiment needs about {} MB",
                dir.display(),
                free / 1_000_000,
                need / 1_000_000
            );
        }
    }
    Ok(())
}

fn lab_err(e: String) -> anyhow::Error {
    anyhow::anyhow!(e)
}

fn ladder_report(
    c: &Common,
    dir: &Path,
    rows: Option<u64>,
    cap: Option<u64>,
    input: Option<PathBuf>,
    log: &mut dyn FnMut(&str),
) -> Result<Report> {
    let mut o = if c.full {
        LadderOptions::full(dir.to_path_buf())
    } else {
        LadderOptions::quick(dir.to_path_buf())
    };
    if c.tiny {
        (o.rows, o.cap) = (20_000, 20);
    }
    o.rows = rows.unwrap_or(o.rows);
    o.cap = cap.unwrap_or(o.cap);
    o.runs = c.runs.max(1);
    if let Some(p) = &input {
        o.rows = std::fs::metadata(p)
            .with_context(|| p.display().to_string())?
            .len()
            / 20;
    }
    o.input = input;
    check_space(dir, o.rows * 200)?;
    ladder::run(&o, log).map_err(lab_err)
}

fn pragmas_report(
    c: &Common,
    dir: &Path,
    seconds: Option<f64>,
    as_written: bool,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Report>> {
    let mut o = if c.full {
        PragmasOptions::full(dir.to_path_buf())
    } else {
        PragmasOptions::quick(dir.to_path_buf())
    };
    if c.tiny {
        o.seconds = 0.05;
    }
    o.seconds = seconds.unwrap_or(o.seconds);
    if !(o.seconds > 0.0 && o.seconds.is_finite()) {
        bail!("--seconds {}: expected a positive number", o.seconds);
    }
    o.runs = c.runs.max(1);
    let mut out = vec![pragmas::run(&o, log).map_err(lab_err)?];
    if as_written {
        o.as_written = true;
        out.push(pragmas::run(&o, log).map_err(lab_err)?);
    }
    Ok(out)
}

fn upsert_report(
    c: &Common,
    dir: &Path,
    messages: Option<u64>,
    keys: Option<u64>,
    cap: Option<u64>,
    kills: Option<usize>,
    log: &mut dyn FnMut(&str),
) -> Result<Report> {
    let mut o = if c.full {
        UpsertOptions::full(dir.to_path_buf())
    } else {
        UpsertOptions::quick(dir.to_path_buf())
    };
    if c.tiny {
        (o.messages, o.keys, o.cap, o.kills, o.send_rate) = (2_000, 500, 20, 2, 5_000);
    }
    if c.full {
        o.kills = 10;
    }
    o.kills = kills.unwrap_or(o.kills);
    o.ingest_exe = if o.kills > 0 {
        Some(std::env::current_exe().context("finding the liteload executable to kill")?)
    } else {
        None
    };
    o.messages = messages.unwrap_or(o.messages);
    o.keys = keys.unwrap_or(o.keys).max(1);
    o.cap = cap.unwrap_or(o.cap);
    o.runs = c.runs.max(1);
    upsert::run(&o, log).map_err(lab_err)
}

fn generate_report(
    c: &Common,
    dir: &Path,
    rows: Option<u64>,
    log: &mut dyn FnMut(&str),
) -> Result<Report> {
    let mut o = if c.full {
        GenerateBenchOptions::full(dir.to_path_buf())
    } else {
        GenerateBenchOptions::quick(dir.to_path_buf())
    };
    if c.tiny {
        o.rows = 20_000;
    }
    o.rows = rows.unwrap_or(o.rows);
    o.runs = c.runs.max(1);
    // Two files may exist at once (one being written, one temp): 21 bytes a row each.
    check_space(dir, o.rows * 42)?;
    genlab::run(&o, log).map_err(lab_err)
}

fn kv_options(c: &Common, dir: &Path) -> KvBenchOptions {
    let mut o = if c.full {
        KvBenchOptions::full(dir.to_path_buf())
    } else {
        KvBenchOptions::quick(dir.to_path_buf())
    };
    if c.tiny {
        o.count = 300;
    }
    o.runs = c.runs.max(1);
    o
}

fn kv_report(o: &KvBenchOptions) -> Result<KvReport> {
    let need = o.count * (o.size + o.variance) * 4;
    check_space(&o.dir, need)?;
    kvlab::run(o, &mut |m| log_line(m)).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Fails (after the report is out) when any step failed verification.
fn fail_if_any_failed(reports: &[Report]) -> Result<()> {
    let failed: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            r.failed()
                .into_iter()
                .map(move |s| format!("{}: {}", r.id, s.name))
        })
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} step(s) failed verification: {}",
            failed.len(),
            failed.join("; ")
        );
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// One experiment (one report, or two for pragmas with --as-written): run, print, write
/// the JSON and SVG asked for.
fn single(
    c: &Common,
    name: &str,
    svg: Option<&Path>,
    f: impl FnOnce(&Path, &mut dyn FnMut(&str)) -> Result<Vec<Report>>,
) -> Result<()> {
    let dir = work_dir(c, name);
    fresh_dir(&dir)?;
    let result = f(&dir, &mut |m| log_line(m));
    if !c.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let reports = result?;
    for r in &reports {
        println!("{}", render::text(r));
    }
    print!(
        "{}",
        render::recommendations_text(&render::recommendations(&reports))
    );
    let machine = Machine::here();
    println!(
        "
{}",
        machine.summary()
    );
    if let Some(p) = &c.json {
        write_file(p, &render::json(&machine, &reports))?;
    }
    if let (Some(p), Some(first)) = (svg, reports.first()) {
        write_file(p, &render::svg(first))?;
    }
    fail_if_any_failed(&reports)
}

fn kv(a: KvBenchArgs) -> Result<()> {
    let dir = work_dir(&a.common, "kv");
    let mut o = kv_options(&a.common, &dir);
    o.count = a.count.unwrap_or(o.count);
    o.size = a.size.unwrap_or(o.size);
    o.variance = a.variance.unwrap_or(o.variance);
    o.page_size = a.page_size;
    o.int_keys = a.int;
    o.read_txn = a.read_txn;
    o.jmode = a.jmode;
    o.order = a.order;
    o.cold = a.cold;
    fresh_dir(&dir)?;
    let result = kv_report(&o);
    if !a.common.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let report = result?;
    print_kv(&report);
    let exps = kvlab::experiments(&report);
    if let Some(p) = &a.common.json {
        let machine = Machine::here();
        let mut v = serde_json::to_value(&report)?;
        let all: serde_json::Value = serde_json::from_str(&render::json(&machine, &exps))?;
        v["machine"] = all["machine"].clone();
        v["runs"] = all["runs"].clone();
        write_file(p, &(serde_json::to_string_pretty(&v)? + "\n"))?;
    }
    if let Some(p) = &a.svg {
        write_file(p, &kv_svg(&report))?;
    }
    fail_if_any_failed(&exps)
}

fn all(a: AllArgs) -> Result<()> {
    let c = &a.common;
    let root = work_dir(c, "all");
    fresh_dir(&root)?;
    let mut reports: Vec<Report> = vec![];
    let mut errors: Vec<String> = vec![];
    let started = std::time::Instant::now();
    type Job<'a> = (&'a str, Box<dyn FnOnce(&Path) -> Result<Vec<Report>> + 'a>);
    let jobs: Vec<Job> = vec![
        (
            "ladder",
            Box::new(|d| {
                Ok(vec![ladder_report(c, d, None, None, None, &mut |m| {
                    log_line(m)
                })?])
            }),
        ),
        (
            "pragmas",
            Box::new(|d| pragmas_report(c, d, None, true, &mut |m| log_line(m))),
        ),
        (
            "upsert",
            Box::new(|d| {
                Ok(vec![upsert_report(
                    c,
                    d,
                    None,
                    None,
                    None,
                    None,
                    &mut |m| log_line(m),
                )?])
            }),
        ),
        (
            "kv",
            Box::new(|d| {
                // kvtest as written: integer keys as rowids, reads in one transaction,
                // its default rollback journal.
                let mut o = kv_options(c, d);
                (o.int_keys, o.read_txn, o.jmode) = (true, true, JournalMode::Delete);
                Ok(kvlab::experiments(&kv_report(&o)?))
            }),
        ),
        (
            "generate",
            Box::new(|d| Ok(vec![generate_report(c, d, None, &mut |m| log_line(m))?])),
        ),
    ];
    for (name, job) in jobs {
        eprintln!("== {name}");
        let dir = root.join(name);
        let r = job(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        match r {
            Ok(rs) => {
                for r in &rs {
                    println!("{}", render::text(r));
                }
                reports.extend(rs);
            }
            Err(e) => {
                eprintln!("{name}: could not run: {e:#}");
                errors.push(format!("{name}: {e:#}"));
            }
        }
    }
    if !c.keep {
        let _ = std::fs::remove_dir_all(&root);
    }
    print!(
        "{}",
        render::recommendations_text(&render::recommendations(&reports))
    );
    let machine = Machine::here();
    println!(
        "
{}
all experiments: {:.0} s",
        machine.summary(),
        started.elapsed().as_secs_f64()
    );
    if let Some(p) = &c.json {
        write_file(p, &render::json(&machine, &reports))?;
    }
    if let Some(p) = &a.html {
        write_file(p, &render::html(&machine, &reports))?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(d) = &a.svg_dir {
        std::fs::create_dir_all(d)?;
        for r in &reports {
            write_file(&d.join(format!("{}.svg", r.id)), &render::svg(r))?;
        }
    }
    if !errors.is_empty() {
        bail!(
            "{} experiment(s) could not run: {}",
            errors.len(),
            errors.join("; ")
        );
    }
    fail_if_any_failed(&reports)
}

fn free_bytes(p: &std::path::Path) -> Option<u64> {
    let out = std::process::Command::new("df")
        .arg("-Pk")
        .arg(p)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let kb: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn row(s: &Step, ratios: &[(&str, Option<f64>)]) {
    let Some(m) = s.median() else {
        println!(
            "  {:<46} FAILED: {}",
            s.name,
            s.failed.as_deref().unwrap_or("no runs")
        );
        return;
    };
    let (lo, hi) = s.min_max();
    let r: Vec<String> = ratios
        .iter()
        .map(|(label, v)| match v {
            Some(v) => format!("{v:>6.2}x {label}"),
            None => String::new(),
        })
        .collect();
    println!(
        "  {:<46} {:>9.4} {:>8.4}-{:<8.4} {:>10} {:>8.1}   {}",
        s.name,
        m,
        lo,
        hi,
        grouped((s.items as f64 / m) as u64),
        s.bytes as f64 / m / 1e6,
        r.join("  ")
    );
}

fn print_kv(r: &KvReport) {
    let o = &r.options;
    println!(
        "kv (write-up 001): {} blobs of {} ± {} bytes, SQLite {}, page size {}; median of {} interleaved runs",
        grouped(o.count),
        grouped(o.size),
        grouped(o.variance),
        r.sqlite_version,
        o.page_size.map_or("4096 (default)".to_string(), |p| p.to_string()),
        o.runs
    );
    println!(
        "store: {}; journal {:?}; {}",
        if o.int_keys {
            "integer keys as the rowid (kvtest's schema)"
        } else {
            "keys of any type through an index (liteload kv's default; --int for kvtest's)"
        },
        o.jmode,
        if o.read_txn {
            "the reads of a pass in one transaction (as kvtest)"
        } else {
            "each read its own transaction (--read-txn for kvtest's one)"
        }
    );
    let cache = match (&r.cold_refused, o.cold) {
        (Some(why), _) => format!("warm cache: {why}"),
        (None, true) => "cold cache (dropped before every pass)".into(),
        (None, false) => "warm cache".into(),
    };
    println!(
        "\nreads, every blob once in {} order, {cache}",
        format!("{:?}", o.order).to_lowercase()
    );
    println!(
        "  {:<46} {:>9} {:>17} {:>10} {:>8}   files time ÷ this time",
        "step", "median s", "min-max", "blobs/s", "MB/s"
    );
    for s in &r.reads {
        let db = s.name.starts_with("db");
        let ratios = if db {
            vec![
                ("(flat)", kvlab::ratio(&r.reads, kvlab::READ_FLAT, &s.name)),
                ("(tree)", kvlab::ratio(&r.reads, kvlab::READ_TREE, &s.name)),
            ]
        } else {
            vec![]
        };
        row(s, &ratios);
    }
    println!("\noverwrites of 10% of the blobs, random order, same sizes");
    println!(
        "  {:<46} {:>9} {:>17} {:>10} {:>8}   files time ÷ this time (same durability)",
        "step", "median s", "min-max", "blobs/s", "MB/s"
    );
    for s in &r.writes {
        let files = if s.name.contains("FULL") {
            kvlab::W_FILES_FSYNC
        } else {
            kvlab::W_FILES
        };
        let ratios = if s.name.starts_with("db") {
            vec![("", kvlab::ratio(&r.writes, files, &s.name))]
        } else {
            vec![]
        };
        row(s, &ratios);
    }
    let sp = &r.space;
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "\nspace after init (allocated, as du counts): payload {:.1} MB; database {:.1} MB; flat folder {:.1} MB; tree {:.1} MB",
        mb(sp.payload_bytes),
        mb(sp.db_bytes),
        mb(sp.flat_dir_bytes),
        mb(sp.tree_dir_bytes)
    );
    println!(
        "the database is {:.1}% smaller than the flat folder and {:.1}% smaller than the tree",
        100.0 * (1.0 - sp.db_bytes as f64 / sp.flat_dir_bytes as f64),
        100.0 * (1.0 - sp.db_bytes as f64 / sp.tree_dir_bytes as f64)
    );
    println!(
        "after the overwrites the database takes {:.1} MB (freed pages stay on its freelist until reused)",
        mb(sp.db_bytes_after_overwrites)
    );
    println!(
        "\nbeside write-up 001's figures (2017, SQLite 3.19/3.20, an Ubuntu desktop and others):"
    );
    for e in kvlab::experiments(r) {
        for n in &e.notes {
            println!("  {n}");
        }
    }
}

fn kv_svg(r: &KvReport) -> String {
    let mut bars = vec![];
    for s in r.reads.iter().filter(|s| s.name.starts_with("db")) {
        for (files, label) in [(kvlab::READ_FLAT, "flat"), (kvlab::READ_TREE, "tree")] {
            if let Some(v) = kvlab::ratio(&r.reads, files, &s.name) {
                bars.push(Bar {
                    label: format!("{} vs {label} files", s.name.trim_start_matches("db: ")),
                    value: v,
                    note: format!("{v:.2}x"),
                });
            }
        }
    }
    for s in r.writes.iter().filter(|s| s.name.starts_with("db")) {
        let files = if s.name.contains("FULL") {
            kvlab::W_FILES_FSYNC
        } else {
            kvlab::W_FILES
        };
        if let Some(v) = kvlab::ratio(&r.writes, files, &s.name) {
            bars.push(Bar {
                label: format!("overwrite: {}", s.name.trim_start_matches("db: ")),
                value: v,
                note: format!("{v:.2}x"),
            });
        }
    }
    bar_chart(
        "Blobs in SQLite vs one file each: file time ÷ database time",
        &format!(
            "{} blobs of {} ± {} bytes, SQLite {}, median of {} runs; above 1 the database is faster",
            r.options.count, r.options.size, r.options.variance, r.sqlite_version, r.options.runs
        ),
        &bars,
        Some((1.0, "equal")),
    )
}
