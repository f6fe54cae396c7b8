//! The `liteload` command; everything is in the crate's library (`liteload_cli::run`).

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(liteload_cli::run(std::env::args_os()))
}
