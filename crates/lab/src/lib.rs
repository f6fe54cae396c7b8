//! The experiments behind `liteload bench`. Each one reproduces a write-up's measurement
//! on this machine, verifies every step's result before it counts (a step that fails is
//! reported failed, never timed), runs the steps interleaved, and reports medians.

pub mod kv;
pub mod stats;
pub mod svg;
