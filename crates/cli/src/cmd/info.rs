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
    let i = liteload::sqlite_info::info()?;
    if a.json {
        let v = serde_json::json!({
            "liteload": env!("CARGO_PKG_VERSION"),
            "sqlite": i.version,
            "compile_options": i.compile_options,
            "missing_options": i.missing,
        });
        println!("{v}");
    } else {
        println!("liteload {}", env!("CARGO_PKG_VERSION"));
        println!("SQLite {} (bundled), compiled with:", i.version);
        for o in &i.compile_options {
            println!("  {o}");
        }
        if !i.missing.is_empty() {
            println!(
                "built without: {} (see .cargo/config.toml)",
                i.missing.join(", ")
            );
        }
    }
    Ok(())
}
