//! The docs/ pages keep up with `--help`: every long flag of every command (and of
//! `kv`'s and `bench`'s subcommands) appears in that command's page.

use assert_cmd::Command;

/// The long flags an option list of `--help` shows (`--help`/`--version` aside).
fn flags(help: &str) -> Vec<String> {
    let mut out = vec![];
    for line in help.lines() {
        let t = line.trim_start();
        // Option lines start with `-x, --flag` or `--flag`; wrapped help text does not.
        if !t.starts_with('-') || line.len() - t.len() > 6 {
            continue;
        }
        for word in t.split([' ', ',', '=', '[', '<']) {
            if let Some(name) = word.strip_prefix("--") {
                let name =
                    name.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '-'));
                if !name.is_empty() && !matches!(name, "help" | "version") {
                    out.push(format!("--{name}"));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn help(args: &[&str]) -> String {
    let out = Command::cargo_bin("liteload")
        .expect("the liteload binary")
        .args(args)
        .arg("--help")
        .output()
        .expect("liteload runs");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

#[test]
fn every_flag_of_every_command_is_in_its_docs_page() {
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs");
    let mut missing = vec![];
    let pages: [(&str, &[&[&str]]); 6] = [
        ("import.md", &[&["import"]]),
        ("generate.md", &[&["generate"]]),
        ("ingest.md", &[&["ingest"]]),
        ("sniff.md", &[&["sniff"]]),
        (
            "kv.md",
            &[
                &["kv", "put"],
                &["kv", "get"],
                &["kv", "rm"],
                &["kv", "ls"],
                &["kv", "import-dir"],
                &["kv", "export-dir"],
            ],
        ),
        (
            "bench.md",
            &[
                &["bench", "ladder"],
                &["bench", "pragmas"],
                &["bench", "upsert"],
                &["bench", "kv"],
                &["bench", "generate"],
                &["bench", "all"],
            ],
        ),
    ];
    for (page, commands) in pages {
        let text = std::fs::read_to_string(format!("{docs}/{page}")).expect("the page");
        for cmd in commands {
            let h = help(cmd);
            assert!(h.contains("Usage:"), "{cmd:?}: {h}");
            for f in flags(&h) {
                if !text.contains(&f) {
                    missing.push(format!("{page}: {} {f}", cmd.join(" ")));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags missing from docs/:\n{}",
        missing.join("\n")
    );
}

#[test]
fn completions_and_the_man_page_come_from_the_flag_definitions() {
    let run = |args: &[&str]| {
        let out = Command::cargo_bin("liteload")
            .expect("the liteload binary")
            .args(args)
            .output()
            .expect("liteload runs");
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = run(&["completions", shell]);
        for word in ["liteload", "import", "ingest", "decimal-comma", "connect"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    let man = run(&["man"]);
    assert!(man.contains(".TH liteload 1"), "{man}");
    for section in [
        "LITELOAD IMPORT",
        "LITELOAD INGEST",
        "LITELOAD SNIFF",
        "decimal\\-comma",
    ] {
        assert!(man.contains(section), "the man page lacks {section}");
    }
}
