//! Writing a store's values out as files under one folder, and never outside it: a key
//! becomes a path only if every part of it is a plain name (no `..`, no root, no empty
//! or `.` part), and no folder on the way may be a link.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

use super::{tree_path, Key, KvStore};
use crate::error::{Error, Hint, Result};

/// The longest file name (one path part) Linux file systems take, in bytes.
const NAME_MAX: usize = 255;
/// The longest path Linux takes, in bytes (with its NUL, 4096).
const PATH_MAX: usize = 4095;

/// What [`KvStore::export_dir`] did.
#[derive(Debug, Default)]
pub struct Export {
    /// Files written.
    pub written: u64,
    /// Keys that no file was written for, each with why (a key that is no safe file
    /// name, a link or a file on its way, the store's own file).
    pub refused: Vec<(Key, String)>,
}

/// The path under an export folder for `key`, or why there is none. Only plain relative
/// parts are allowed: no `..`, no root or drive, no empty or `.` part, no NUL or `\`, no
/// part longer than a file name may be. With `tree`, a non-negative integer key is
/// spread over folders ([`tree_path`]).
pub fn safe_relative(key: &Key, tree: bool) -> std::result::Result<PathBuf, String> {
    let s = match key {
        Key::Int(i) if tree && *i >= 0 => return Ok(tree_path(*i)),
        Key::Int(i) => return Ok(PathBuf::from(i.to_string())),
        Key::Text(s) => s.as_str(),
    };
    if s.is_empty() {
        return Err("the key is empty".into());
    }
    if s.contains('\0') {
        return Err("the key has a NUL byte".into());
    }
    if s.contains('\\') {
        return Err("the key has a backslash".into());
    }
    let mut out = PathBuf::new();
    for c in Path::new(s).components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => return Err("the key has a `..` part".into()),
            Component::RootDir | Component::Prefix(_) => {
                return Err("the key is an absolute path".into())
            }
            Component::CurDir => return Err("the key has a `.` part".into()),
        }
    }
    // Path::components drops inner `.` parts (`a/./b` is `a/b`): look at the text.
    for part in s.split('/') {
        if part.is_empty() {
            return Err("the key has an empty part (`//` or a leading or trailing `/`)".into());
        }
        if part == "." {
            return Err("the key has a `.` part".into());
        }
        if part.len() > NAME_MAX {
            return Err(format!(
                "a part of the key is {} bytes, longer than a file name may be ({NAME_MAX})",
                part.len()
            ));
        }
    }
    Ok(out)
}

impl KvStore {
    /// Writes every value to a file under `dir` (created if needed) named by its key
    /// (see [`safe_relative`]); nothing is written outside `dir`, through a link, or over
    /// the store itself. A key that cannot be a file there is listed in
    /// [`Export::refused`] and the others are still written. A file that exists already is
    /// an error unless `overwrite`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use liteload::kv::{Key, KvOptions, KvStore};
    /// let d = tempfile::tempdir()?;
    /// let store = KvStore::open(&d.path().join("kv.db"), KvOptions::default())?;
    /// store.put(&Key::Text("a/b.txt".into()), b"hi")?;
    /// store.put(&Key::Text("../escape".into()), b"no")?;
    /// let out = store.export_dir(&d.path().join("out"), false, false)?;
    /// assert_eq!(out.written, 1);
    /// assert_eq!(out.refused.len(), 1);
    /// assert_eq!(std::fs::read(d.path().join("out/a/b.txt"))?, b"hi");
    /// assert!(!d.path().join("escape").exists());
    /// # Ok(()) }
    /// ```
    pub fn export_dir(&self, dir: &Path, tree: bool, overwrite: bool) -> Result<Export> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e| Error::io(Some(p), e)
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let root = dir.canonicalize().map_err(io(dir))?;
        let mut out = Export::default();
        for key in self.keys(None)? {
            let rel = match safe_relative(&key, tree) {
                Ok(r) => r,
                Err(why) => {
                    out.refused.push((key, why));
                    continue;
                }
            };
            let target = root.join(&rel);
            if target.as_os_str().len() > PATH_MAX {
                let why = format!("the path is longer than a path may be ({PATH_MAX} bytes)");
                out.refused.push((key, why));
                continue;
            }
            if let Some(why) = make_parents(&root, &rel)? {
                out.refused.push((key, why));
                continue;
            }
            if crate::source::input::same_file(&target, &self.path) {
                let why = format!("{} is the store itself", target.display());
                out.refused.push((key, why));
                continue;
            }
            match std::fs::symlink_metadata(&target) {
                Ok(m) if m.file_type().is_symlink() || m.is_dir() => {
                    let why = format!("{} is a link or a folder", target.display());
                    out.refused.push((key, why));
                    continue;
                }
                Ok(_) if !overwrite => {
                    return Err(Error::usage(format!(
                        "{} exists ({} files written so far)",
                        target.display(),
                        out.written
                    ))
                    .with_hint(Hint::Overwrite))
                }
                _ => {}
            }
            let Some(mut r) = self.open_reader(&key)? else {
                continue; // deleted since the keys were listed
            };
            let mut f = File::create(&target).map_err(io(&target))?;
            std::io::copy(&mut r, &mut f).map_err(io(&target))?;
            out.written += 1;
        }
        Ok(out)
    }
}

/// Creates the folders of `rel` under `root` one by one, refusing any that is a link
/// (it could point out) or a file. Returns why, when refused.
fn make_parents(root: &Path, rel: &Path) -> Result<Option<String>> {
    let mut at = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for c in &parts[..parts.len().saturating_sub(1)] {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Ok(Some(format!("{} is a link", at.display())))
            }
            Ok(m) if !m.is_dir() => return Ok(Some(format!("{} is a file", at.display()))),
            Ok(_) => {}
            Err(_) => std::fs::create_dir(&at).map_err(|e| Error::io(Some(at.clone()), e))?,
        }
    }
    Ok(None)
}
