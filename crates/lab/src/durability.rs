//! What a step's settings promise about crashes, computed from the settings themselves.
//!
//! Two questions, answered separately because they are independent:
//! - **what a commit survives** ([`Survives`]): follows from where the file lives, the
//!   journal mode and `synchronous` (and from atomic-new, which builds a side file and
//!   moves it into place whole);
//! - **what a crash costs** ([`CrashCost`]): follows from how much work one commit holds
//!   (an operation, a batch, the whole run).
//!
//! A one-transaction load with `synchronous=FULL` commits once: that commit is as safe as
//! any autocommit one, and a crash costs the run, which the user can run again. Mixing the
//! two questions into one label is what once made the lab recommend autocommit, 1,000
//! times slower, to a user who only needed commits that survive power loss.
//!
//! The rules follow SQLite's documentation of `journal_mode` and `synchronous`:
//! - `journal_mode=OFF` or `MEMORY`: a crash in the middle of a write transaction can
//!   leave the file corrupt, so no commit can be counted on;
//! - WAL: `FULL`/`EXTRA` make each commit durable; `NORMAL` survives a program crash but a
//!   power loss may roll back the last commits (never corrupts); `OFF` survives a program
//!   crash, and a power loss may corrupt;
//! - rollback journals (DELETE, TRUNCATE, PERSIST): `EXTRA` is durable; `FULL` survives a
//!   program crash and never corrupts, but a commit closely followed by a power loss may be
//!   undone (the journal's removal is not synced to the directory; the documentation of
//!   `EXTRA` says so); `NORMAL` and `OFF` survive a program crash, and a power loss may
//!   corrupt.
//!
//! The locking mode is recorded but changes neither answer.

use serde::Serialize;

/// Where the database lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Storage {
    File,
    /// `:memory:`: nothing reaches the disk.
    Memory,
}

/// `PRAGMA journal_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Journal {
    Delete,
    Truncate,
    Persist,
    Wal,
    Memory,
    Off,
}

/// `PRAGMA synchronous`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Synchronous {
    Off,
    Normal,
    Full,
    Extra,
}

/// How much work one commit holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Commits {
    /// Every operation (row, message, blob) is its own transaction.
    EachOperation,
    /// A commit per batch, window or N operations.
    Batches,
    /// One commit at the end of the run.
    WholeRun,
}

/// The settings a step ran with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Settings {
    pub storage: Storage,
    pub journal: Journal,
    pub synchronous: Synchronous,
    /// `PRAGMA locking_mode=EXCLUSIVE`.
    pub exclusive: bool,
    /// Built as a side file, synced, and renamed into place: the name only ever shows a
    /// complete file.
    pub atomic_new: bool,
    pub commits: Commits,
}

/// What a commit that returned survives, safest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Survives {
    /// A power loss or OS crash right after the commit keeps it.
    PowerLoss,
    /// A program crash keeps it; a power loss may not.
    ProgramCrash,
    /// Nothing: not on disk, or a crash may corrupt the file.
    Nothing,
}

/// What a crash at a random moment costs, cheapest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashCost {
    /// Every operation that returned was committed: only the one in flight is lost.
    NothingCommitted,
    /// The operations since the last commit.
    SinceLastCommit,
    /// The whole run (it can be run again; or the file may be corrupt, see [`Survives`]).
    WholeRun,
}

/// The two answers for one step's settings, plus whether a power loss can corrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Labels {
    pub survives: Survives,
    pub crash_cost: CrashCost,
    /// A power loss (not a program crash) may leave the file corrupt.
    pub power_loss_may_corrupt: bool,
}

impl Survives {
    pub fn describe(self) -> &'static str {
        match self {
            Survives::PowerLoss => "power loss",
            Survives::ProgramCrash => "a program crash only",
            Survives::Nothing => "nothing, may corrupt",
        }
    }
}

impl CrashCost {
    pub fn describe(self) -> &'static str {
        match self {
            CrashCost::NothingCommitted => {
                "only the operation in flight (nothing committed is lost)"
            }
            CrashCost::SinceLastCommit => "the work since the last commit",
            CrashCost::WholeRun => "the whole run",
        }
    }
}

impl Labels {
    /// One line for tables: `commit survives: …; a crash costs: …`.
    pub fn describe(&self) -> String {
        let corrupt = if self.power_loss_may_corrupt && self.survives == Survives::ProgramCrash {
            " (power loss may corrupt)"
        } else {
            ""
        };
        format!(
            "survives {}{corrupt}; a crash costs {}",
            self.survives.describe(),
            self.crash_cost.describe()
        )
    }
}

impl Settings {
    /// A file with SQLite's defaults (rollback journal DELETE, synchronous FULL).
    pub const fn default_file(commits: Commits) -> Settings {
        Settings {
            storage: Storage::File,
            journal: Journal::Delete,
            synchronous: Synchronous::Full,
            exclusive: false,
            atomic_new: false,
            commits,
        }
    }

    pub const fn with(self, journal: Journal, synchronous: Synchronous) -> Settings {
        Settings {
            journal,
            synchronous,
            ..self
        }
    }

    /// The same settings on `:memory:`, whose journal SQLite keeps in memory (or
    /// nowhere, with `journal_mode=OFF`).
    pub const fn in_memory(self) -> Settings {
        Settings {
            storage: Storage::Memory,
            journal: match self.journal {
                Journal::Off => Journal::Off,
                _ => Journal::Memory,
            },
            ..self
        }
    }

    /// SQLite's defaults changed by `pragmas` (`PRAGMA journal_mode=…;`, `synchronous`,
    /// `locking_mode`; other PRAGMAs change neither label and are skipped).
    pub fn from_pragmas(pragmas: &str, commits: Commits) -> Settings {
        let mut s = Settings::default_file(commits);
        for p in pragmas.split(';') {
            let p = p.trim().to_ascii_lowercase().replace(' ', "");
            let Some((name, value)) = p.strip_prefix("pragma").and_then(|p| p.split_once('='))
            else {
                continue;
            };
            match (name, value) {
                ("journal_mode", "delete") => s.journal = Journal::Delete,
                ("journal_mode", "truncate") => s.journal = Journal::Truncate,
                ("journal_mode", "persist") => s.journal = Journal::Persist,
                ("journal_mode", "wal") => s.journal = Journal::Wal,
                ("journal_mode", "memory") => s.journal = Journal::Memory,
                ("journal_mode", "off") => s.journal = Journal::Off,
                ("synchronous", "off" | "0") => s.synchronous = Synchronous::Off,
                ("synchronous", "normal" | "1") => s.synchronous = Synchronous::Normal,
                ("synchronous", "full" | "2") => s.synchronous = Synchronous::Full,
                ("synchronous", "extra" | "3") => s.synchronous = Synchronous::Extra,
                ("locking_mode", v) => s.exclusive = v == "exclusive",
                _ => {}
            }
        }
        s
    }

    /// liteload's durability profiles, as `liteload::Durability::pragmas` sets them. A
    /// load commits once.
    pub fn of_profile(d: liteload::Durability) -> Settings {
        use liteload::Durability as D;
        let base = Settings::default_file(Commits::WholeRun);
        match d {
            D::AtomicNew => Settings {
                exclusive: true,
                atomic_new: true,
                ..base.with(Journal::Memory, Synchronous::Off)
            },
            D::Balanced => base.with(Journal::Wal, Synchronous::Normal),
            D::Durable => base.with(Journal::Wal, Synchronous::Full),
            D::Unsafe => Settings {
                exclusive: true,
                ..base.with(Journal::Off, Synchronous::Off)
            },
        }
    }

    /// The labels these settings earn (see the module notes for the rules).
    pub fn labels(&self) -> Labels {
        use Journal as J;
        use Synchronous as S;
        let (survives, power_loss_may_corrupt) = if self.storage == Storage::Memory {
            (Survives::Nothing, false)
        } else if self.atomic_new {
            // Whatever the side file's settings, the name shows the old file or the new
            // one, complete and synced.
            (Survives::PowerLoss, false)
        } else {
            match (self.journal, self.synchronous) {
                (J::Off | J::Memory, _) => (Survives::Nothing, true),
                (J::Wal, S::Full | S::Extra) => (Survives::PowerLoss, false),
                (J::Wal, S::Normal) => (Survives::ProgramCrash, false),
                (J::Wal, S::Off) => (Survives::ProgramCrash, true),
                (_, S::Extra) => (Survives::PowerLoss, false),
                (_, S::Full) => (Survives::ProgramCrash, false),
                (_, S::Normal | S::Off) => (Survives::ProgramCrash, true),
            }
        };
        let crash_cost = if survives == Survives::Nothing || self.atomic_new {
            CrashCost::WholeRun
        } else {
            match self.commits {
                Commits::EachOperation => CrashCost::NothingCommitted,
                Commits::Batches => CrashCost::SinceLastCommit,
                Commits::WholeRun => CrashCost::WholeRun,
            }
        };
        Labels {
            survives,
            crash_cost,
            power_loss_may_corrupt,
        }
    }

    /// Reads the settings a connection really has, with `commits` as the step commits.
    pub fn of_connection(
        conn: &rusqlite::Connection,
        commits: Commits,
    ) -> Result<Settings, String> {
        let text = |p: &str| -> Result<String, String> {
            conn.query_row(&format!("PRAGMA {p}"), [], |r| r.get::<_, String>(0))
                .map_err(|e| format!("PRAGMA {p}: {e}"))
        };
        let journal = match text("journal_mode")?.to_ascii_lowercase().as_str() {
            "delete" => Journal::Delete,
            "truncate" => Journal::Truncate,
            "persist" => Journal::Persist,
            "wal" => Journal::Wal,
            "memory" => Journal::Memory,
            "off" => Journal::Off,
            other => return Err(format!("unknown journal mode {other}")),
        };
        let synchronous = match conn
            .query_row("PRAGMA synchronous", [], |r| r.get::<_, i64>(0))
            .map_err(|e| format!("PRAGMA synchronous: {e}"))?
        {
            0 => Synchronous::Off,
            1 => Synchronous::Normal,
            2 => Synchronous::Full,
            _ => Synchronous::Extra,
        };
        let exclusive = text("locking_mode")?.eq_ignore_ascii_case("exclusive");
        let memory = conn.path().is_none_or(|p| p.is_empty());
        Ok(Settings {
            storage: if memory {
                Storage::Memory
            } else {
                Storage::File
            },
            journal,
            synchronous,
            exclusive,
            atomic_new: false,
            commits,
        })
    }

    /// Fails unless `conn` runs with these settings: a step's labels must describe what
    /// ran, not what was meant to run.
    pub fn confirm(&self, conn: &rusqlite::Connection) -> Result<(), String> {
        let got = Settings::of_connection(conn, self.commits)?;
        let want = Settings {
            atomic_new: false,
            ..*self
        };
        if got == want {
            Ok(())
        } else {
            Err(format!(
                "the step declares {want:?} but its connection runs {got:?}"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CrashCost as C;
    use Journal as J;
    use Survives as V;
    use Synchronous as S;

    #[test]
    fn every_journal_and_sync_earns_its_documented_labels() {
        // (journal, synchronous, survives, power loss may corrupt)
        let table = [
            (J::Delete, S::Extra, V::PowerLoss, false),
            (J::Delete, S::Full, V::ProgramCrash, false),
            (J::Delete, S::Normal, V::ProgramCrash, true),
            (J::Delete, S::Off, V::ProgramCrash, true),
            (J::Truncate, S::Full, V::ProgramCrash, false),
            (J::Persist, S::Extra, V::PowerLoss, false),
            (J::Wal, S::Extra, V::PowerLoss, false),
            (J::Wal, S::Full, V::PowerLoss, false),
            (J::Wal, S::Normal, V::ProgramCrash, false),
            (J::Wal, S::Off, V::ProgramCrash, true),
            (J::Memory, S::Full, V::Nothing, true),
            (J::Memory, S::Off, V::Nothing, true),
            (J::Off, S::Full, V::Nothing, true),
            (J::Off, S::Off, V::Nothing, true),
        ];
        for (journal, sync, survives, corrupt) in table {
            for (commits, cost) in [
                (Commits::EachOperation, C::NothingCommitted),
                (Commits::Batches, C::SinceLastCommit),
                (Commits::WholeRun, C::WholeRun),
            ] {
                let l = Settings::default_file(commits).with(journal, sync).labels();
                assert_eq!(l.survives, survives, "{journal:?} {sync:?}");
                assert_eq!(l.power_loss_may_corrupt, corrupt, "{journal:?} {sync:?}");
                let want = if survives == V::Nothing {
                    C::WholeRun
                } else {
                    cost
                };
                assert_eq!(l.crash_cost, want, "{journal:?} {sync:?} {commits:?}");
            }
        }
    }

    #[test]
    fn pragmas_are_read_as_sqlite_reads_them() {
        let s = Settings::from_pragmas(
            "PRAGMA synchronous=OFF; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint=0; PRAGMA locking_mode=EXCLUSIVE;",
            Commits::Batches,
        );
        assert_eq!(
            (s.journal, s.synchronous, s.exclusive),
            (J::Wal, S::Off, true)
        );
        assert_eq!(
            Settings::from_pragmas("", Commits::WholeRun),
            Settings::default_file(Commits::WholeRun)
        );
        // And the connection agrees once they have run.
        let d = tempfile::tempdir().unwrap();
        for p in [
            "PRAGMA journal_mode=TRUNCATE; PRAGMA synchronous=NORMAL;",
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;",
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=EXTRA;",
        ] {
            let c = rusqlite::Connection::open(d.path().join(format!("{}.db", p.len()))).unwrap();
            c.execute_batch(p).unwrap();
            Settings::from_pragmas(p, Commits::Batches)
                .confirm(&c)
                .unwrap();
        }
    }

    #[test]
    fn memory_and_atomic_new_and_profiles() {
        let m = Settings::default_file(Commits::EachOperation)
            .in_memory()
            .labels();
        assert_eq!((m.survives, m.crash_cost), (V::Nothing, C::WholeRun));
        let a = Settings::of_profile(liteload::Durability::AtomicNew).labels();
        assert_eq!((a.survives, a.crash_cost), (V::PowerLoss, C::WholeRun));
        assert!(!a.power_loss_may_corrupt);
        let d = Settings::of_profile(liteload::Durability::Durable).labels();
        assert_eq!(d.survives, V::PowerLoss);
        let b = Settings::of_profile(liteload::Durability::Balanced).labels();
        assert_eq!(b.survives, V::ProgramCrash);
        let u = Settings::of_profile(liteload::Durability::Unsafe).labels();
        assert_eq!(u.survives, V::Nothing);
    }

    #[test]
    fn a_connection_reports_what_it_runs() {
        let d = tempfile::tempdir().unwrap();
        let c = rusqlite::Connection::open(d.path().join("x.db")).unwrap();
        let s = Settings::default_file(Commits::Batches);
        s.confirm(&c).unwrap();
        c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
            .unwrap();
        assert!(s.confirm(&c).is_err());
        s.with(J::Wal, S::Normal).confirm(&c).unwrap();
        let m = rusqlite::Connection::open_in_memory().unwrap();
        let got = Settings::of_connection(&m, Commits::WholeRun).unwrap();
        assert_eq!(got.storage, Storage::Memory);
        assert_eq!(got.labels().survives, V::Nothing);
    }
}
