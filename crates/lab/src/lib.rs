//! The experiments behind `liteload bench`. Each one reproduces a write-up's measurement
//! on this machine, verifies every step's result before it counts (a step that fails is
//! reported failed, never timed), runs the steps interleaved, and reports medians.
//!
//! | module     | write-up | what it measures                                          |
//! |------------|----------|-----------------------------------------------------------|
//! | `ladder`   | 000      | bulk insert of a TSV, one change at a time                |
//! | `kv`       | 001      | small blobs in one database vs one file each              |
//! | `upsert`   | 002      | current state from a stream of sparse JSON updates        |
//! | `pragmas`  | 003      | PRAGMA configurations under a mixed workload              |
//! | `generate` | 004      | synthetic rows: SQLite's insert path vs the page writer   |

#![forbid(unsafe_code)]

pub mod durability;
pub mod generate;
pub mod kv;
pub mod ladder;
pub mod pragmas;
pub mod render;
pub mod report;
pub mod stats;
pub mod svg;
pub mod upsert;
