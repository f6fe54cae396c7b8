//! `liteload info`: the versions and the SQLite build in use.

use anyhow::Result;
use clap::Args;

/// Show liteload's version, the bundled SQLite's version and its compile-time options.
#[derive(Args)]
pub struct InfoArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(a: InfoArgs) -> Result<()> {
    let (version, options) = liteload::sqlite_info::build_info()?;
    if a.json {
        let v = serde_json::json!({
            "liteload": env!("CARGO_PKG_VERSION"),
            "sqlite": version,
            "compile_options": options,
        });
        println!("{v}");
    } else {
        println!("liteload {}", env!("CARGO_PKG_VERSION"));
        println!("SQLite {version} (bundled), compiled with:");
        for o in options {
            println!("  {o}");
        }
    }
    Ok(())
}
