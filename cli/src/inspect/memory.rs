//! `engram inspect memory`: the memory index of what was said (the
//! passages `memory.passages_indexed` brought, less what
//! `memory.forgotten` retracted) — one line per passage, oldest first, or
//! with `--search` the passages a request's words find (the lexical half
//! of the reply loop's search: no model is loaded here).

use chrono::FixedOffset;
use engram::events::payloads::Speaker;
use engram::learning::memory::{MemoryQuery, PassageIndex};
use engram::Seq;
use serde_json::json;

use super::MemoryOpts;
use crate::output;

/// Folds the passages of `log` and prints them (all, or those `--search`
/// finds, best first).
pub(super) fn print(log: &crate::Log, opts: &MemoryOpts) -> anyhow::Result<()> {
    let mut index = PassageIndex::new(FixedOffset::east_opt(0).expect("UTC"), None);
    for env in log.read_from(Seq::FIRST) {
        let env = match env {
            Ok(env) => env,
            Err(e) if output::around_damage(&e) => continue,
            Err(e) => return Err(e.into()),
        };
        index.observe(&env);
    }
    let rows: Vec<_> = match &opts.search {
        Some(text) => index
            .lexical(&MemoryQuery { text, ..Default::default() }, opts.limit)
            .into_iter()
            .filter_map(|(slot, _)| index.get(slot).cloned())
            .collect(),
        None => index.passages().cloned().collect(),
    };
    if !opts.json {
        println!("{:<17} {:<30} {:<9} {:<6} text", "said (UTC)", "session", "speaker", "vector");
    }
    for p in &rows {
        let session = p.session.as_ref().map_or("", |s| s.as_str());
        let vector = p.vector.as_ref().map(|v| v.provider.as_str());
        if opts.json {
            output::print_json(&json!({
                "at": p.at.to_rfc3339(),
                "session": session,
                "speaker": p.speaker,
                "text": p.text,
                "asked": p.asked,
                "vector": vector,
            }))?;
        } else {
            let speaker = match p.speaker {
                Speaker::User => "user",
                Speaker::Assistant => "assistant",
            };
            // (An answer shows the question it answers: rule 7.)
            let asked = p.asked.as_ref().map_or(String::new(), |q| format!("[asked {q:?}] "));
            output::print_line(&format!(
                "{:<17} {:<30} {:<9} {:<6} {asked}{}",
                p.at.format("%Y-%m-%d %H:%M"),
                session,
                speaker,
                if vector.is_some() { "yes" } else { "no" },
                p.text
            ));
        }
    }
    if !opts.json {
        match &opts.search {
            Some(_) => println!("{} of {} passages", rows.len(), index.len()),
            None => println!("{} passages", index.len()),
        }
    }
    Ok(())
}
