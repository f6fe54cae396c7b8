//! How results are worded in summaries: counts grouped by thousands, and how a file
//! was made.

pub use liteload_lab::render::count as grouped;

/// How the file was made, for the summary line: the durability profile, and the page
/// writer when it wrote the file (and checked it, with --verify).
pub fn made_how(s: &liteload::Summary) -> String {
    let mut how = s.durability.name().to_string();
    match s.engine {
        Some(liteload::EngineUsed::Direct) => how.push_str(", direct page writer"),
        Some(liteload::EngineUsed::RqliteBoot) => how.push_str(", booted with a file built here"),
        _ => {}
    }
    if s.verified {
        how.push_str(", verified");
    }
    how
}
