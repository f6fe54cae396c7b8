//! A key-value store exported as files: keys that would reach outside the folder
//! (`../x`, `/etc/y`) are refused and listed; everything lands inside it.
//!
//! `cargo run -p liteload --example kv_export`

use liteload::kv::{Key, KvOptions, KvStore};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = KvStore::open(&dir.path().join("blobs.db"), KvOptions::default())?;
    for (k, v) in [
        ("docs/readme.txt", "hello"),
        ("../x", "escape up"),
        ("/etc/y", "escape to the root"),
        ("a/../../z", "escape through a folder"),
        ("img/logo.svg", "<svg/>"),
    ] {
        store.put(&Key::Text(k.into()), v.as_bytes())?;
    }
    let out_dir = dir.path().join("out");
    let out = store.export_dir(&out_dir, false, false)?;
    assert_eq!(out.written, 2);
    let refused: Vec<String> = out.refused.iter().map(|(k, _)| k.to_string()).collect();
    assert_eq!(refused, ["../x", "/etc/y", "a/../../z"]);
    assert_eq!(
        std::fs::read_to_string(out_dir.join("docs/readme.txt"))?,
        "hello"
    );
    assert!(!dir.path().join("x").exists() && !dir.path().join("z").exists());
    for (key, why) in &out.refused {
        println!("refused {key}: {why}");
    }
    println!(
        "wrote {} files, all inside {}",
        out.written,
        out_dir.display()
    );
    Ok(())
}
