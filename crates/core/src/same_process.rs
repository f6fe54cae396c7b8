//! Whether this process already has a database file open.
//!
//! SQLite coordinates the connections of one process on one file through a table that
//! belongs to one copy of the library; POSIX advisory locks belong to the process, and
//! closing any descriptor on a file drops every lock the process holds on it. So two
//! copies of SQLite in one process (a program's own beside liteload's bundled one, such
//! as Python's `sqlite3` module) neither see each other's locks nor keep them: a load
//! beside an open connection of the other copy can lose that connection's writes or
//! corrupt the file. A front end that shares its process with another SQLite asks here,
//! before it touches a file, whether descriptors it does not own are open on it.

use std::path::Path;

/// The identity of the file at `path` (device and inode), if it exists.
pub fn file_id(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// How many of this process's file descriptors are open on the file `id` (matched by
/// device and inode, so another name for the file counts too). `None` where this
/// process's descriptors cannot be listed (no `/proc/self/fd` or `/dev/fd`).
pub fn descriptors_on(id: (u64, u64)) -> Option<usize> {
    descriptors(id).map(|d| d.len())
}

/// This process's file descriptors open on the file `id`, in increasing order; `None`
/// where they cannot be listed.
pub fn descriptors(id: (u64, u64)) -> Option<Vec<i32>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let dir = ["/proc/self/fd", "/dev/fd"]
            .into_iter()
            .find(|d| Path::new(d).is_dir())?;
        let entries = std::fs::read_dir(dir).ok()?;
        // The listing's own descriptor is among the entries; it is a directory, never
        // the file.
        let mut fds: Vec<i32> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let fd = e.file_name().to_str()?.parse::<i32>().ok()?;
                let m = std::fs::metadata(e.path()).ok()?;
                ((m.dev(), m.ino()) == id).then_some(fd)
            })
            .collect();
        fds.sort_unstable();
        Some(fds)
    }
    #[cfg(not(unix))]
    {
        let _ = id;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_on_a_file_are_counted_by_identity() -> std::io::Result<()> {
        let d = tempfile::tempdir()?;
        let p = d.path().join("x.db");
        std::fs::write(&p, b"x")?;
        let id = file_id(&p).expect("the file exists");
        let before = descriptors_on(id).expect("descriptors can be listed here");
        assert_eq!(before, 0);
        let a = std::fs::File::open(&p)?;
        let link = d.path().join("y.db");
        std::fs::hard_link(&p, &link)?;
        let b = std::fs::File::open(&link)?;
        assert_eq!(descriptors_on(id), Some(2));
        drop((a, b));
        assert_eq!(descriptors_on(id), Some(0));
        assert!(file_id(&d.path().join("none")).is_none());
        Ok(())
    }
}
