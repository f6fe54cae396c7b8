//! `liteload bench`: the write-ups' experiments, run and verified on this machine.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use liteload_lab::kv::{self as kvlab, KvBenchOptions, KvReport};
use liteload_lab::stats::Step;
use liteload_lab::svg::{bar_chart, Bar};

use super::import::grouped;

/// Reproduce a write-up's experiment on this machine: every step verified, runs
/// interleaved, medians reported.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub experiment: Experiment,
}

#[derive(Subcommand, Debug)]
pub enum Experiment {
    /// Write-up 001 (kvtest): small blobs from one SQLite file vs one file each.
    Kv(KvBenchArgs),
}

#[derive(Args, Debug)]
pub struct KvBenchArgs {
    /// The write-up's size: 100,000 blobs of 10 KB ± 2 KB (about 1 GB, plus 2.4 GB of
    /// files). The default is a quick 10,000.
    #[arg(long)]
    full: bool,
    /// Number of blobs (overrides the default or --full).
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
    /// Timed runs of each step.
    #[arg(long, value_name = "N", default_value_t = 3)]
    runs: usize,
    /// Working folder (emptied first; default: a folder under the system temp dir).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Also write the full report (every run) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write a bar chart of the read ratios as SVG to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Keep the working folder afterwards.
    #[arg(long)]
    keep: bool,
}

pub fn run(a: BenchArgs) -> Result<()> {
    match a.experiment {
        Experiment::Kv(k) => kv(k),
    }
}

fn kv(a: KvBenchArgs) -> Result<()> {
    let dir = a
        .dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("liteload-bench-kv"));
    let mut o = if a.full {
        KvBenchOptions::full(dir.clone())
    } else {
        KvBenchOptions::quick(dir.clone())
    };
    o.count = a.count.unwrap_or(o.count);
    o.size = a.size.unwrap_or(o.size);
    o.variance = a.variance.unwrap_or(o.variance);
    o.runs = a.runs.max(1);
    o.page_size = a.page_size;
    let need = o.count * (o.size + o.variance) * 4;
    if let Some(free) = free_bytes(dir.parent().unwrap_or(&dir)) {
        if free < need {
            bail!(
                "{}: {} MB free, the experiment needs about {} MB",
                dir.display(),
                free / 1_000_000,
                need / 1_000_000
            );
        }
    }
    let report = kvlab::run(&o, &mut |m| eprintln!("… {m}")).map_err(|e| anyhow::anyhow!("{e}"))?;
    print_kv(&report);
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_string_pretty(&report)? + "\n")?;
    }
    if let Some(p) = &a.svg {
        std::fs::write(p, kv_svg(&report))?;
    }
    if !a.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let failed: Vec<&Step> = report
        .reads
        .iter()
        .chain(&report.writes)
        .filter(|s| s.failed.is_some())
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} step(s) failed verification: {}",
            failed.len(),
            failed
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
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
        "kv (write-up 001): {} blobs of {} ± {} bytes, SQLite {}, page size {}; median of {} interleaved runs, warm cache",
        grouped(o.count),
        grouped(o.size),
        grouped(o.variance),
        r.sqlite_version,
        o.page_size.map_or("4096 (default)".to_string(), |p| p.to_string()),
        o.runs
    );
    println!("\nreads, every blob once in random order");
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
    println!("\nwrite-up 001 (2017, SQLite 3.19/3.20, an Ubuntu desktop and others): blob-API reads about 35% faster");
    println!("than files (1.35x), up to 10x on some systems with mmap; the database about 20% smaller than the folder.");
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
