//! `liteload kv`: a blob store in one SQLite file, from the shell.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use liteload::kv::{Key, KvOptions, KvStore};
use liteload::{Durability, Progress};

use super::UsageError;
use crate::progress::Bar;
use crate::report::grouped;

/// A key-value store of blobs in one SQLite file: faster to read than many small files,
/// and smaller on disk.
#[derive(Args, Debug)]
pub struct KvArgs {
    #[command(subcommand)]
    pub command: KvCommand,
}

#[derive(Subcommand, Debug)]
pub enum KvCommand {
    /// Store FILE (or stdin) under KEY, replacing any value there.
    Put {
        db: PathBuf,
        key: String,
        /// The value's file; `-` or nothing reads stdin.
        file: Option<PathBuf>,
        #[command(flatten)]
        k: KeyArgs,
        #[command(flatten)]
        s: StoreArgs,
    },
    /// Write KEY's value to stdout (or -o FILE). A missing key exits 1.
    Get {
        db: PathBuf,
        key: String,
        /// Write to this file instead of stdout.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        k: KeyArgs,
        #[command(flatten)]
        s: StoreArgs,
    },
    /// Remove keys. A missing key exits 1 (after removing the others).
    Rm {
        db: PathBuf,
        #[arg(required = true)]
        keys: Vec<String>,
        #[command(flatten)]
        k: KeyArgs,
        #[command(flatten)]
        s: StoreArgs,
    },
    /// List keys, one a line, in order.
    Ls {
        db: PathBuf,
        /// Only text keys that start with this.
        #[arg(long)]
        prefix: Option<String>,
        #[command(flatten)]
        s: StoreArgs,
    },
    /// Store every file under DIR, keyed by its path relative to DIR (`/`-separated).
    /// A link, or a name that is not UTF-8 (a key is text), is reported and skipped, and
    /// the run ends with exit 1 after storing the rest.
    ImportDir {
        db: PathBuf,
        dir: PathBuf,
        /// Commit after this many files (0: one transaction for all). A crash keeps
        /// every commit that completed.
        #[arg(long, value_name = "N", default_value_t = 0)]
        commit_every: u64,
        #[command(flatten)]
        s: StoreArgs,
        /// No progress bar, no summary.
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// Write every value to a file under DIR named by its key. Never writes outside DIR;
    /// a key that cannot be a file name there is reported and skipped (exit 1).
    ExportDir {
        db: PathBuf,
        dir: PathBuf,
        /// Lay integer keys out as write-up 001 does, at most 100 entries a folder:
        /// key 12345 -> 01/23/45.
        #[arg(long)]
        tree: bool,
        /// Overwrite files that exist.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        s: StoreArgs,
        /// No progress bar, no summary.
        #[arg(long, short = 'q')]
        quiet: bool,
    },
}

#[derive(Args, Debug)]
pub struct KeyArgs {
    /// The key is an integer (by default keys are text).
    #[arg(long)]
    int: bool,
}

#[derive(Args, Debug)]
pub struct StoreArgs {
    /// balanced (default), durable or unsafe.
    #[arg(long, value_name = "PROFILE", default_value = "balanced")]
    durability: Durability,
    /// Bytes SQLite may read through mmap (0: none).
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    mmap_size: u64,
    /// A new store keys by integer only, each key being the rowid (INTEGER PRIMARY
    /// KEY, as write-up 001's kvtest): a read is one B-tree lookup instead of two, and
    /// text keys are refused. An existing store keeps the schema it was made with.
    #[arg(long)]
    int_keys: bool,
}

impl StoreArgs {
    fn open(&self, db: &Path) -> Result<KvStore> {
        Ok(KvStore::open(db, {
            let mut built = KvOptions::default();
            built.durability = self.durability;
            built.mmap_size = self.mmap_size;
            built.int_keys = self.int_keys;
            built
        })?)
    }
}

fn key(s: &str, k: &KeyArgs) -> Result<Key> {
    if k.int {
        let i: i64 = s
            .parse()
            .map_err(|_| UsageError(format!("--int: {s:?} is not an integer")))?;
        Ok(Key::Int(i))
    } else {
        Ok(Key::Text(s.to_string()))
    }
}

/// A key the command could not act on; exit code 1 (like a bad record).
#[derive(Debug)]
pub struct Missing(pub String);

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Missing {}

pub fn run(a: KvArgs) -> Result<()> {
    match a.command {
        KvCommand::Put {
            db,
            key: k,
            file,
            k: ka,
            s,
        } => {
            let store = s.open(&db)?;
            let key = key(&k, &ka)?;
            match file.filter(|f| f.as_os_str() != "-") {
                Some(path) => {
                    let f =
                        File::open(&path).with_context(|| format!("opening {}", path.display()))?;
                    let len = f.metadata()?.len();
                    store.put_reader(&key, f, len)?;
                }
                None => {
                    // stdin has no length up front: spool it to a temp file, then stream.
                    let mut spool = tempfile::tempfile().context("making a temp file for stdin")?;
                    let len = io::copy(&mut io::stdin().lock(), &mut spool)?;
                    use std::io::Seek;
                    spool.rewind()?;
                    store.put_reader(&key, spool, len)?;
                }
            }
            Ok(())
        }
        KvCommand::Get {
            db,
            key: k,
            output,
            k: ka,
            s,
        } => {
            if let Some(o) = &output {
                // Writing the value over the store being read would destroy it.
                liteload::source::input::refuse_overwriting(o, &[], Some(&db))?;
            }
            let store = s.open(&db)?;
            let key = key(&k, &ka)?;
            let Some(mut r) = store.open_reader(&key)? else {
                return Err(Missing(format!("{}: no key {k:?}", db.display())).into());
            };
            match output {
                Some(p) => {
                    let mut f =
                        File::create(&p).with_context(|| format!("creating {}", p.display()))?;
                    io::copy(&mut r, &mut f)?;
                }
                None => {
                    io::copy(&mut r, &mut io::stdout().lock())?;
                }
            }
            Ok(())
        }
        KvCommand::Rm { db, keys, k: ka, s } => {
            let mut store = s.open(&db)?;
            let keys: Vec<Key> = keys.iter().map(|k| key(k, &ka)).collect::<Result<_>>()?;
            let missing: Vec<String> = store.batch(|st| {
                let mut missing = vec![];
                for k in &keys {
                    if !st.delete(k)? {
                        missing.push(k.to_string());
                    }
                }
                Ok(missing)
            })?;
            if !missing.is_empty() {
                return Err(
                    Missing(format!("{}: no key {}", db.display(), missing.join(", "))).into(),
                );
            }
            Ok(())
        }
        KvCommand::Ls { db, prefix, s } => {
            let store = s.open(&db)?;
            let mut out = io::BufWriter::new(io::stdout().lock());
            for k in store.keys(prefix.as_deref())? {
                writeln!(out, "{k}")?;
            }
            out.flush()?;
            Ok(())
        }
        KvCommand::ImportDir {
            db,
            dir,
            commit_every,
            s,
            quiet,
        } => import_dir(&db, &dir, commit_every, &s, quiet),
        KvCommand::ExportDir {
            db,
            dir,
            tree,
            force,
            s,
            quiet,
        } => export_dir(&db, &dir, tree, force, &s, quiet),
    }
}

/// Every regular file under `dir`, with its `/`-separated relative path. Links and
/// names that are not UTF-8 are reported and skipped.
fn walk(dir: &Path, skipped: &mut Vec<String>) -> Result<Vec<(String, PathBuf, u64)>> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d)
            .with_context(|| format!("reading {}", d.display()))?
            .collect::<io::Result<_>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            let t = e.file_type()?;
            let rel = p.strip_prefix(dir).unwrap_or(&p);
            let Some(rel_s) = rel.to_str() else {
                skipped.push(format!("{}: the name is not UTF-8", p.display()));
                continue;
            };
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file() {
                let len = e.metadata()?.len();
                out.push((rel_s.replace(std::path::MAIN_SEPARATOR, "/"), p, len));
            } else {
                skipped.push(format!("{}: not a regular file (a link?)", p.display()));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn import_dir(db: &Path, dir: &Path, commit_every: u64, s: &StoreArgs, quiet: bool) -> Result<()> {
    let start = std::time::Instant::now();
    let mut skipped = vec![];
    let files = walk(dir, &mut skipped)?;
    let total: u64 = files.iter().map(|f| f.2).sum();
    let mut store = s.open(db)?;
    let progress = Arc::new(Progress::default());
    progress
        .bytes_total
        .store(total, std::sync::atomic::Ordering::Relaxed);
    let bar = Bar::start(progress.clone(), quiet);
    // One thread reads files ahead (the disk works while SQLite writes); this one writes.
    let (tx, rx) = crossbeam_channel::bounded::<(String, io::Result<Vec<u8>>)>(64);
    let reader = std::thread::spawn({
        let files = files.clone();
        move || {
            for (k, p, _) in files {
                if tx.send((k, std::fs::read(&p))).is_err() {
                    return;
                }
            }
        }
    });
    let window = if commit_every == 0 {
        u64::MAX
    } else {
        commit_every
    };
    let mut n = 0u64;
    let mut rx = rx.into_iter().peekable();
    let result = (|| -> Result<()> {
        while rx.peek().is_some() {
            store.batch(|st| {
                let mut in_window = 0;
                while in_window < window {
                    let Some((k, data)) = rx.next() else { break };
                    let data = data.map_err(|e| liteload::Error::io(Some(dir.join(&k)), e))?;
                    st.put(&Key::Text(k), &data)?;
                    progress
                        .bytes_read
                        .fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    progress
                        .rows
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    in_window += 1;
                    n += 1;
                }
                Ok(())
            })?;
        }
        Ok(())
    })();
    drop(rx);
    let _ = reader.join();
    drop(bar);
    result?;
    if !quiet {
        println!(
            "Stored {} files ({} bytes) from {} in {:.2} s",
            grouped(n),
            grouped(total),
            dir.display(),
            start.elapsed().as_secs_f64()
        );
    }
    // Quiet or not: a file left out is data the user asked to store.
    if !skipped.is_empty() {
        for m in &skipped {
            eprintln!("error: skipped {m}");
        }
        return Err(Missing(format!(
            "{} file(s) under {} were not stored",
            skipped.len(),
            dir.display()
        ))
        .into());
    }
    Ok(())
}

fn export_dir(
    db: &Path,
    dir: &Path,
    tree: bool,
    force: bool,
    s: &StoreArgs,
    quiet: bool,
) -> Result<()> {
    let start = std::time::Instant::now();
    let store = s.open(db)?;
    let out = store.export_dir(dir, tree, force)?;
    if !quiet {
        println!(
            "Wrote {} files to {} in {:.2} s",
            grouped(out.written),
            dir.display(),
            start.elapsed().as_secs_f64()
        );
    }
    if !out.refused.is_empty() {
        for (key, why) in &out.refused {
            eprintln!("error: key {key:?}: {why}");
        }
        return Err(Missing(format!(
            "{} key(s) could not be file names under {}",
            out.refused.len(),
            dir.display()
        ))
        .into());
    }
    Ok(())
}
