//! Write-up 001's experiment (kvtest): small blobs read from one SQLite file vs from
//! one file each, overwrites with equal durability on both sides, and the space used.
//!
//! Steps, all on the same random, incompressible blobs (sizes SIZE ± VARIANCE):
//! 1. init: the store (`liteload::kv`, integer keys) and the same blobs as files, flat
//!    (`flat/000123`) and as write-up 001's tree (`tree/00/01/23`);
//! 2. reads of every blob in one random order, by SQL, by the blob API, by the blob API
//!    with mmap, and from the files (open, read, close); one untimed pass first (warm
//!    cache), then the timed runs, interleaved;
//! 3. overwrites of 10% of the blobs in random order with new bytes of the same size:
//!    synchronous=OFF against files without fsync, synchronous=FULL against an fsync per
//!    file, each in one transaction and in one transaction per blob;
//! 4. space, as allocated blocks (`du`): the database against the two folders.
//!
//! Every timed pass is verified: the number of blobs and bytes, and an order-free digest
//! of (key, contents) equal to the expected one; a pass that does not match fails the step.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use liteload::generate::rng::Rng;
use liteload::kv::{tree_path, Key, KvOptions, KvStore};
use serde::Serialize;

use crate::durability::{Commits, Settings};
use crate::stats::Step;

/// The experiment's size.
#[derive(Clone, Debug, Serialize)]
pub struct KvBenchOptions {
    pub count: u64,
    pub size: u64,
    pub variance: u64,
    pub runs: usize,
    /// Where the store and folders go (emptied first).
    pub dir: PathBuf,
    pub seed: u64,
    /// Page size of the store (SQLite's default when `None`).
    pub page_size: Option<u32>,
    /// Integer keys stored as the rowid (`INTEGER PRIMARY KEY`), as kvtest does; else
    /// liteload kv's default store (a key column of any type, looked up by its index).
    pub int_keys: bool,
    /// All reads of a pass in one transaction, as kvtest does; else one per read.
    pub read_txn: bool,
    pub jmode: JournalMode,
    pub order: Order,
    /// Drop the page cache before every timed read pass.
    pub cold: bool,
}

/// The store's journal, as kvtest's `--jmode` sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum JournalMode {
    /// Rollback journal, synchronous=FULL: SQLite's defaults, and kvtest's.
    Delete,
    /// WAL with synchronous=NORMAL (the write-up's write chart); liteload kv's default.
    Wal,
    /// No journal, synchronous=OFF (the write-up's last chart).
    Off,
}

/// The order blobs are read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    Random,
    Asc,
    Desc,
}

impl std::str::FromStr for JournalMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "delete" => Ok(JournalMode::Delete),
            "wal" => Ok(JournalMode::Wal),
            "off" => Ok(JournalMode::Off),
            _ => Err(format!("{s:?}: expected delete, wal or off")),
        }
    }
}

impl std::str::FromStr for Order {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "random" => Ok(Order::Random),
            "asc" => Ok(Order::Asc),
            "desc" => Ok(Order::Desc),
            _ => Err(format!("{s:?}: expected random, asc or desc")),
        }
    }
}

impl JournalMode {
    /// The PRAGMAs that set it on an open store.
    fn pragmas(self) -> &'static str {
        match self {
            JournalMode::Delete => "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;",
            JournalMode::Wal => "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            JournalMode::Off => "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;",
        }
    }
}

/// Drops the OS page cache (clean pages only, after a `sync`), so that the next pass
/// reads from the disk. Needs root; the error says why not otherwise.
pub fn drop_page_cache() -> Result<(), String> {
    let _ = std::process::Command::new("sync").status();
    fs::write("/proc/sys/vm/drop_caches", "1").map_err(|e| {
        format!("cannot drop the page cache (/proc/sys/vm/drop_caches: {e}); it takes root")
    })
}

impl KvBenchOptions {
    /// A quick run: 10,000 blobs of 10 KB ± 2 KB (about 100 MB).
    pub fn quick(dir: PathBuf) -> Self {
        KvBenchOptions {
            count: 10_000,
            size: 10_000,
            variance: 2_000,
            runs: 3,
            dir,
            seed: 1,
            page_size: None,
            int_keys: false,
            read_txn: false,
            jmode: JournalMode::Wal,
            order: Order::Random,
            cold: false,
        }
    }

    /// Write-up 001's size: 100,000 blobs of 10 KB ± 2 KB (about 1 GB).
    pub fn full(dir: PathBuf) -> Self {
        KvBenchOptions {
            count: 100_000,
            ..Self::quick(dir)
        }
    }
}

/// Allocated bytes on disk, as `du` counts them, right after init (as the write-up
/// measures), and the database's again after the overwrites (freed pages stay in the
/// file, on its freelist, until reused or vacuumed).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Space {
    pub payload_bytes: u64,
    pub db_bytes: u64,
    pub flat_dir_bytes: u64,
    pub tree_dir_bytes: u64,
    pub db_bytes_after_overwrites: u64,
}

/// What the experiment measured.
#[derive(Clone, Debug, Serialize)]
pub struct KvReport {
    pub options: KvBenchOptions,
    pub sqlite_version: String,
    pub reads: Vec<Step>,
    pub writes: Vec<Step>,
    pub space: Space,
    /// Why the reads ran warm although a cold cache was asked for.
    pub cold_refused: Option<String>,
}

pub const READ_SQL: &str = "db: SELECT v FROM kv WHERE k=?";
pub const READ_BLOB: &str = "db: blob API";
pub const READ_MMAP: &str = "db: blob API + mmap";
pub const READ_FLAT: &str = "files: flat folder";
pub const READ_TREE: &str = "files: tree of folders";

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The digest of one blob under one key; passes add them (wrapping), so order is free.
fn digest(key: u64, b: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325 ^ key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.len() as u64;
    // Every 64th byte and the last ones: enough to tell blobs apart, cheap enough not to
    // weigh on what is measured.
    for &x in b.iter().step_by(64).chain(b.iter().rev().take(8)) {
        h = (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn fill(rng: &mut Rng, buf: &mut Vec<u8>, len: usize) {
    buf.clear();
    while buf.len() < len {
        buf.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    buf.truncate(len);
}

fn blob_len(rng: &mut Rng, o: &KvBenchOptions) -> usize {
    (o.size - o.variance.min(o.size) + rng.below(2 * o.variance + 1)) as usize
}

fn shuffled(n: u64, rng: &mut Rng) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
    v
}

/// Allocated bytes of a file or a whole folder.
fn du(p: &Path) -> Res<u64> {
    let m = fs::symlink_metadata(p)?;
    let mut total = m.blocks() * 512;
    if m.is_dir() {
        for e in fs::read_dir(p)? {
            total += du(&e?.path())?;
        }
    }
    Ok(total)
}

struct Pass {
    items: u64,
    bytes: u64,
    digest: u64,
}

/// Runs the experiment. `log` hears what it is doing.
pub fn run(o: &KvBenchOptions, log: &mut dyn FnMut(&str)) -> Res<KvReport> {
    if o.count == 0 || o.size == 0 || o.runs == 0 {
        return Err("count, size and runs must be above 0".into());
    }
    if o.dir.exists() {
        fs::remove_dir_all(&o.dir)?;
    }
    let (db, flat, tree) = (o.dir.join("kv.db"), o.dir.join("flat"), o.dir.join("tree"));
    fs::create_dir_all(&flat)?;
    fs::create_dir_all(&tree)?;

    log(&format!(
        "init: {} blobs of {} ± {} bytes",
        o.count, o.size, o.variance
    ));
    let mut store = KvStore::open(&db, {
        let mut built = KvOptions::default();
        built.page_size = o.page_size;
        built.int_keys = o.int_keys;
        built
    })?;
    store.connection().execute_batch(o.jmode.pragmas())?;
    let mut expected = 0u64;
    let mut payload = 0u64;
    let mut rng = Rng::for_chunk(o.seed, 0);
    let mut buf = Vec::new();
    store.batch(|st| {
        for k in 0..o.count {
            let len = blob_len(&mut rng, o);
            fill(&mut rng, &mut buf, len);
            st.put(&Key::Int(k as i64), &buf)?;
            expected = expected.wrapping_add(digest(k, &buf));
            payload += len as u64;
            let io = |e| liteload::Error::io(None, e);
            fs::write(flat.join(format!("{k:06}")), &buf).map_err(io)?;
            let t = tree.join(tree_path(k as i64));
            if let Some(parent) = t.parent() {
                fs::create_dir_all(parent).map_err(io)?;
            }
            fs::write(t, &buf).map_err(io)?;
        }
        Ok(())
    })?;
    // Checkpoints happen here, outside any timed part (a no-op without WAL).
    store
        .connection()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    let mut space = Space {
        payload_bytes: payload,
        db_bytes: du(&db)?,
        flat_dir_bytes: du(&flat)?,
        tree_dir_bytes: du(&tree)?,
        db_bytes_after_overwrites: 0,
    };
    let mmap = KvStore::open(&db, {
        let mut built = KvOptions::default();
        built.mmap_size = 1 << 40;
        built
    })?;
    mmap.connection().execute_batch(o.jmode.pragmas())?;

    let order = match o.order {
        Order::Random => shuffled(o.count, &mut Rng::for_chunk(o.seed, 1)),
        Order::Asc => (0..o.count).collect(),
        Order::Desc => (0..o.count).rev().collect(),
    };
    let read_pass = |name: &str, buf: &mut Vec<u8>| -> Res<Pass> {
        let mut p = Pass {
            items: 0,
            bytes: 0,
            digest: 0,
        };
        let db_store = if name == READ_MMAP { &mmap } else { &store };
        let in_txn = o.read_txn && name.starts_with("db");
        if in_txn {
            db_store.connection().execute_batch("BEGIN")?;
        }
        let mut values = db_store.values();
        for &k in &order {
            buf.clear();
            match name {
                READ_SQL => {
                    // As kvtest's SQL path: the value is used where SQLite holds it, not
                    // copied out first.
                    let (n, d) = store
                        .read_with(&Key::Int(k as i64), |v| (v.len(), digest(k, v)))?
                        .ok_or("a key is missing")?;
                    p.items += 1;
                    p.bytes += n as u64;
                    p.digest = p.digest.wrapping_add(d);
                    continue;
                }
                READ_BLOB | READ_MMAP => {
                    if !values.read_into(&Key::Int(k as i64), buf)? {
                        return Err("a key is missing".into());
                    }
                }
                READ_FLAT => {
                    File::open(flat.join(format!("{k:06}")))?.read_to_end(buf)?;
                }
                _ => {
                    File::open(tree.join(tree_path(k as i64)))?.read_to_end(buf)?;
                }
            }
            p.items += 1;
            p.bytes += buf.len() as u64;
            p.digest = p.digest.wrapping_add(digest(k, buf));
        }
        drop(values);
        if in_txn {
            db_store.connection().execute_batch("COMMIT")?;
        }
        Ok(p)
    };
    let names = [READ_SQL, READ_BLOB, READ_MMAP, READ_FLAT, READ_TREE];
    let mut reads: Vec<Step> = names.iter().map(|n| Step::new(n)).collect();
    let mut cold_refused = None;
    let cold = if o.cold {
        match drop_page_cache() {
            Ok(()) => true,
            Err(e) => {
                log(&format!("{e}: the reads run warm"));
                cold_refused = Some(e);
                false
            }
        }
    } else {
        false
    };
    if !cold {
        log("reads: one warm-up pass each");
        for n in names {
            read_pass(n, &mut buf)?;
        }
    }
    for r in 0..o.runs {
        log(&format!("reads: run {} of {}", r + 1, o.runs));
        for i in 0..names.len() {
            let j = (i + r) % names.len();
            if cold {
                drop_page_cache()?;
            }
            let t0 = Instant::now();
            let p = read_pass(names[j], &mut buf);
            let secs = t0.elapsed().as_secs_f64();
            let step = &mut reads[j];
            match p {
                Ok(p) if p.items == o.count && p.bytes == payload && p.digest == expected => {
                    step.seconds.push(secs);
                    step.items = p.items;
                    step.bytes = p.bytes;
                }
                Ok(p) => {
                    step.failed = Some(format!(
                        "read {} blobs, {} bytes, digest {:x}; expected {}, {}, {:x}",
                        p.items, p.bytes, p.digest, o.count, payload, expected
                    ))
                }
                Err(e) => step.failed = Some(e.to_string()),
            }
        }
    }
    drop(mmap);

    let writes = overwrite(o, &mut store, &flat, log)?;
    store
        .connection()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    drop(store);
    space.db_bytes_after_overwrites = du(&db)?;
    Ok(KvReport {
        options: o.clone(),
        sqlite_version: rusqlite::version().to_string(),
        reads,
        writes,
        space,
        cold_refused,
    })
}

pub const W_DB_OFF_ONE: &str = "db: synchronous=OFF, one transaction";
pub const W_DB_OFF_EACH: &str = "db: synchronous=OFF, a transaction per blob";
pub const W_FILES: &str = "files: write, no fsync";
pub const W_DB_FULL_ONE: &str = "db: synchronous=FULL, one transaction";
pub const W_DB_FULL_EACH: &str = "db: synchronous=FULL, a transaction per blob";
pub const W_FILES_FSYNC: &str = "files: write + fsync each";

fn overwrite(
    o: &KvBenchOptions,
    store: &mut KvStore,
    flat: &Path,
    log: &mut dyn FnMut(&str),
) -> Res<Vec<Step>> {
    let n = (o.count / 10).max(1);
    let keys: Vec<u64> = shuffled(o.count, &mut Rng::for_chunk(o.seed, 2))
        .into_iter()
        .take(n as usize)
        .collect();
    let names = [
        W_DB_OFF_ONE,
        W_DB_OFF_EACH,
        W_FILES,
        W_DB_FULL_ONE,
        W_DB_FULL_EACH,
        W_FILES_FSYNC,
    ];
    // The database steps' settings: the store's journal, the step's synchronous, and a
    // commit per pass or per blob. The files steps are not SQLite's: no labels.
    let settings = |name: &str| -> Option<Settings> {
        let sync = if name.contains("FULL") { "FULL" } else { "OFF" };
        let commits = if name.contains("per blob") {
            Commits::EachOperation
        } else {
            Commits::WholeRun
        };
        name.starts_with("db").then(|| {
            Settings::from_pragmas(
                &format!("{} PRAGMA synchronous={sync};", o.jmode.pragmas()),
                commits,
            )
        })
    };
    let mut steps: Vec<Step> = names
        .iter()
        .map(|n| {
            let mut s = Step::new(n);
            s.set_settings(settings(n));
            s
        })
        .collect();
    let mut buf = Vec::new();
    for r in 0..o.runs {
        log(&format!(
            "overwrites of {n} blobs: run {} of {}",
            r + 1,
            o.runs
        ));
        for i in 0..names.len() {
            let j = (i + r) % names.len();
            let name = names[j];
            // New contents for this pass, sized as the blob they replace (read untimed).
            let mut rng = Rng::for_chunk(o.seed, 100 + (r * names.len() + j) as u64);
            let mut new: Vec<(u64, Vec<u8>)> = Vec::with_capacity(keys.len());
            for &k in &keys {
                let len = fs::metadata(flat.join(format!("{k:06}")))?.len() as usize;
                fill(&mut rng, &mut buf, len);
                new.push((k, buf.clone()));
            }
            let want = new
                .iter()
                .fold(0u64, |a, (k, b)| a.wrapping_add(digest(*k, b)));
            let sync = if name.contains("FULL") { "FULL" } else { "OFF" };
            store
                .connection()
                .execute_batch(&format!("PRAGMA synchronous={sync}"))?;
            let t0 = Instant::now();
            let done: Res<()> = (|| {
                match name {
                    W_DB_OFF_ONE | W_DB_FULL_ONE => store.batch(|st| {
                        for (k, b) in &new {
                            st.put(&Key::Int(*k as i64), b)?;
                        }
                        Ok(())
                    })?,
                    W_DB_OFF_EACH | W_DB_FULL_EACH => {
                        for (k, b) in &new {
                            store.put(&Key::Int(*k as i64), b)?;
                        }
                    }
                    _ => {
                        for (k, b) in &new {
                            let mut f = File::create(flat.join(format!("{k:06}")))?;
                            f.write_all(b)?;
                            if name == W_FILES_FSYNC {
                                f.sync_all()?;
                            }
                        }
                    }
                }
                Ok(())
            })();
            let secs = t0.elapsed().as_secs_f64();
            // The labels describe what ran.
            let done = done.and_then(|()| match settings(name) {
                Some(st) => st.confirm(store.connection()).map_err(Into::into),
                None => Ok(()),
            });
            // As the write-up: the timer stops after the commit, before a checkpoint.
            if !name.starts_with("files") {
                store
                    .connection()
                    .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
            }
            // Verify what was written, untimed.
            let got = done.and_then(|()| {
                let mut g = 0u64;
                for (k, _) in &new {
                    let b = if name.starts_with("files") {
                        fs::read(flat.join(format!("{k:06}")))?
                    } else {
                        store.get(&Key::Int(*k as i64))?.ok_or("a key is missing")?
                    };
                    g = g.wrapping_add(digest(*k, &b));
                }
                Ok(g)
            });
            let step = &mut steps[j];
            match got {
                Ok(g) if g == want => {
                    step.seconds.push(secs);
                    step.items = n;
                    step.bytes = new.iter().map(|(_, b)| b.len() as u64).sum();
                }
                Ok(_) => {
                    step.failed = Some("what was read back differs from what was written".into())
                }
                Err(e) => step.failed = Some(e.to_string()),
            }
        }
    }
    store.connection().execute_batch(o.jmode.pragmas())?;
    Ok(steps)
}

/// The report as two experiments for the combined report: reads (the flat folder first,
/// so speed-ups are over files) and overwrites.
pub fn experiments(r: &KvReport) -> Vec<crate::report::Experiment> {
    let o = &r.options;
    let mut reads = r.reads.clone();
    reads.sort_by_key(|s| !s.name.starts_with("files"));
    let setup = format!(
        "{} blobs of {} ± {} bytes, page size {}, {} keys, journal {:?}",
        o.count,
        o.size,
        o.variance,
        o.page_size.unwrap_or(4096),
        if o.int_keys {
            "integer (rowid, as kvtest)"
        } else {
            "any-type (liteload kv's default)"
        },
        o.jmode
    );
    let by = "write-up 001: Ubuntu desktop and other systems, SQLite 3.19/3.20, 2017 (ratios only)";
    let order = match o.order {
        Order::Random => "random order",
        Order::Asc => "ascending order",
        Order::Desc => "descending order",
    };
    let cache = match (&r.cold_refused, o.cold) {
        (None, true) => "cold cache (page cache dropped before each pass)".to_string(),
        (Some(why), _) => format!("warm cache ({why})"),
        (None, false) => "warm cache".to_string(),
    };
    let x =
        |a: &str, b: &str| ratio(&r.reads, a, b).map_or("failed".into(), |v| format!("{v:.2}x"));
    let w =
        |a: &str, b: &str| ratio(&r.writes, a, b).map_or("failed".into(), |v| format!("{v:.1}x"));
    let rate_of = |steps: &[Step], n: &str| {
        steps
            .iter()
            .find(|s| s.name == n)
            .and_then(|s| s.median_rate())
    };
    let writes_vs_reads = match (
        rate_of(&r.reads, READ_BLOB),
        rate_of(&r.writes, W_DB_OFF_ONE),
    ) {
        (Some(rd), Some(wr)) => format!("{:.1}x", rd / wr),
        _ => "failed".into(),
    };
    let space_less = 100.0 * (1.0 - r.space.db_bytes as f64 / r.space.flat_dir_bytes.max(1) as f64);
    let figures = vec![
        format!(
            "Reads, database over files (flat folder): blob API {} (write-up: about 1.35x, '35% faster'), SQL {} (write-up: faster than files, by less than the blob API), blob API + mmap {} (write-up: up to 2x on Mac and Android, 10x on Windows).",
            x(READ_FLAT, READ_BLOB),
            x(READ_FLAT, READ_SQL),
            x(READ_FLAT, READ_MMAP)
        ),
        format!(
            "Space after init (allocated blocks): database {:.1} MB, flat folder {:.1} MB, tree {:.1} MB, payload {:.1} MB: the database takes {space_less:.0}% less than the folder (write-up: 1,024,512,000 bytes against 1,228,800,000 for the folder, which is about 20% larger).",
            r.space.db_bytes as f64 / 1e6,
            r.space.flat_dir_bytes as f64 / 1e6,
            r.space.tree_dir_bytes as f64 / 1e6,
            r.space.payload_bytes as f64 / 1e6
        ),
        format!(
            "Reads against writes: blob-API reads are {writes_vs_reads} the rate of overwrites in one transaction (write-up: writes 5 to 15 times slower than reads)."
        ),
    ];
    let mut read_notes = figures.clone();
    if o.read_txn {
        read_notes.push("Database reads of a pass run in one transaction, as kvtest's do.".into());
    } else {
        read_notes.push(
            "Each database read is its own transaction (kvtest reads in one: see --read-txn)."
                .into(),
        );
    }
    vec![
        crate::report::Experiment {
            id: "kv-reads".into(),
            title: "Small blobs: reads from one database vs one file each".into(),
            writeup: "001: 35% faster than the filesystem (kvtest)".into(),
            unit: "blobs".into(),
            setup: format!("{setup}; every blob once in {order}, {cache}"),
            published_by: by.into(),
            runs: o.runs,
            steps: reads,
            notes: read_notes,
        },
        crate::report::Experiment {
            id: "kv-writes".into(),
            title: "Small blobs: overwrites at equal durability".into(),
            writeup: "001: 35% faster than the filesystem (kvtest)".into(),
            unit: "blobs".into(),
            setup: format!("{setup}; 10% of the blobs overwritten in random order; checkpoints after the timer stops"),
            published_by: by.into(),
            runs: o.runs,
            steps: {
                // Files first (the baseline), then the database at the same durability.
                let order = [
                    W_FILES,
                    W_DB_OFF_ONE,
                    W_DB_OFF_EACH,
                    W_FILES_FSYNC,
                    W_DB_FULL_ONE,
                    W_DB_FULL_EACH,
                ];
                let mut w = r.writes.clone();
                w.sort_by_key(|s| order.iter().position(|n| *n == s.name));
                w
            },
            notes: vec![format!(
                "An fsync per file against the database at synchronous=FULL in one transaction: the database is {} faster (write-up: fsync per file is 'about 10 times or more' slower than SQLite).",
                w(W_FILES_FSYNC, W_DB_FULL_ONE)
            )],
        },
    ]
}

/// `a / b` of two steps' medians, when both have one.
pub fn ratio(steps: &[Step], a: &str, b: &str) -> Option<f64> {
    let m = |n: &str| steps.iter().find(|s| s.name == n).and_then(|s| s.median());
    Some(m(a)? / m(b)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_run_verifies_every_step() -> Res<()> {
        let d = tempfile::tempdir()?;
        let o = KvBenchOptions {
            count: 300,
            size: 5000,
            variance: 1000,
            runs: 2,
            dir: d.path().join("kv"),
            seed: 3,
            ..KvBenchOptions::quick(d.path().join("kv"))
        };
        let r = run(&o, &mut |_| {})?;
        for s in r.reads.iter().chain(&r.writes) {
            assert!(s.failed.is_none(), "{}: {:?}", s.name, s.failed);
            assert_eq!(s.seconds.len(), 2, "{}", s.name);
        }
        // Every database write carries the labels of what ran; WAL + FULL survives
        // power loss, WAL + OFF only a program crash.
        let label = |n: &str| r.writes.iter().find(|s| s.name == n).and_then(|s| s.labels);
        let full = label(W_DB_FULL_EACH).ok_or("no labels")?;
        assert_eq!(full.survives, crate::durability::Survives::PowerLoss);
        assert_eq!(
            full.crash_cost,
            crate::durability::CrashCost::NothingCommitted
        );
        let off = label(W_DB_OFF_ONE).ok_or("no labels")?;
        assert_eq!(off.survives, crate::durability::Survives::ProgramCrash);
        assert!(label(W_FILES).is_none());
        assert_eq!(r.reads[0].items, 300);
        assert_eq!(r.writes[0].items, 30);
        assert!(r.space.payload_bytes >= 300 * 4000 && r.space.db_bytes > r.space.payload_bytes);
        assert!(ratio(&r.reads, READ_FLAT, READ_BLOB).is_some());
        Ok(())
    }

    #[test]
    fn the_digest_tells_blobs_and_keys_apart() -> Res<()> {
        // The digest sees a changed byte in the sampled positions.
        let a = vec![7u8; 1000];
        let mut b = a.clone();
        b[64] = 8;
        assert_ne!(digest(1, &a), digest(1, &b));
        assert_ne!(digest(1, &a), digest(2, &a));
        Ok(())
    }
}
