//! Structural features of a turn (seed 001 §4), computed mechanically from
//! what the turn said and did — no LLM, no embedding. The fingerprint the
//! pattern store keys on when a host does not supply features itself.

use engram_events::payloads::{PlanStep, StructuralFeatures};

/// Intent tags and the words that signal them, matched on word
/// boundaries: seed 001's coding set (architecture, commit, debug, doc,
/// refactor, test) and a personal assistant's (time, calendar, weather,
/// files, web, messages, home, media, memory, chit-chat), English and
/// Italian. They split a K-NN cluster by what a request is about before
/// any tool has run.
const INTENT_WORDS: &[(&str, &[&str])] = &[
    ("architecture", &["architecture", "design", "architettura"]),
    (
        "calendar",
        &["calendar", "meeting", "appointment", "agenda", "schedule", "calendario", "riunione", "appuntamento"],
    ),
    ("chitchat", &["hello", "hi", "hey", "thanks", "thank", "ciao", "grazie", "buongiorno", "buonasera"]),
    ("commit", &["commit", "push"]),
    ("debug", &["debug", "bug", "error", "crash", "fix", "errore"]),
    ("doc", &["doc", "docs", "document", "describe", "summarize", "summarise", "riassumi", "descrivi"]),
    ("files", &["file", "files", "folder", "directory", "size", "bytes", "words", "cartella", "parole"]),
    ("home", &["light", "lights", "lamp", "thermostat", "heating", "garage", "luce", "luci", "riscaldamento"]),
    ("media", &["music", "song", "playlist", "video", "movie", "podcast", "volume", "musica", "canzone", "film"]),
    ("memory", &["remember", "remind", "note", "notes", "ricorda", "ricordami", "nota", "appunti"]),
    ("messages", &["email", "mail", "message", "messages", "sms", "inbox", "messaggio", "messaggi", "posta"]),
    ("refactor", &["refactor", "rename", "cleanup"]),
    ("test", &["test", "tests", "testing"]),
    ("time", &["time", "clock", "hour", "date", "today", "tomorrow", "ore", "ora", "orario", "oggi", "domani"]),
    ("weather", &["weather", "forecast", "rain", "raining", "umbrella", "temperature", "meteo", "pioggia", "piove"]),
    ("web", &["web", "url", "http", "https", "website", "page", "download", "link", "sito", "pagina", "scarica"]),
];

/// The features of a turn: intent tags and file extensions from its text and
/// arguments, tool names from its steps; `has_history` says whether earlier
/// turns of the session called tools.
pub fn for_turn(text: &str, steps: &[PlanStep], has_history: bool) -> StructuralFeatures {
    for_turn_with(text, steps, has_history, &std::collections::BTreeMap::new())
}

/// [`INTENT_WORDS`] by word: the tags (their indexes) each word signals.
/// A word looked up once, not compared with every signal of every tag
/// (an import computes this for every turn it converts).
fn intent_index() -> &'static std::collections::HashMap<&'static str, Vec<usize>> {
    static INDEX: std::sync::OnceLock<std::collections::HashMap<&'static str, Vec<usize>>> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index: std::collections::HashMap<&'static str, Vec<usize>> = std::collections::HashMap::new();
        for (i, (_, signals)) in INTENT_WORDS.iter().enumerate() {
            for word in *signals {
                index.entry(word).or_default().push(i);
            }
        }
        index
    })
}

/// [`for_turn`] with more intent tags (`[pattern] intent_tags`: tag → the
/// words that signal it), beside the built-in ones.
pub fn for_turn_with(
    text: &str,
    steps: &[PlanStep],
    has_history: bool,
    extra_tags: &std::collections::BTreeMap<String, Vec<String>>,
) -> StructuralFeatures {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let mut hit = [false; INTENT_WORDS.len()];
    for tag in words.iter().filter_map(|w| intent_index().get(w)).flatten() {
        hit[*tag] = true;
    }
    let builtin = INTENT_WORDS.iter().zip(hit).filter(|(_, hit)| *hit).map(|((tag, _), _)| (*tag).to_owned());
    let extra = extra_tags
        .iter()
        .filter(|(_, signals)| words.iter().any(|w| signals.iter().any(|s| s.to_lowercase() == *w)))
        .map(|(tag, _)| tag.clone());
    let intent_tags = builtin.chain(extra).collect();
    let mut file_extensions = Vec::new();
    let mut scan = |s: &str| {
        for token in s.split(|c: char| c.is_whitespace() || c == ',' || c == '"') {
            if let Some(ext) = extension_of(token) {
                file_extensions.push(ext);
            }
        }
    };
    scan(&lower);
    for step in steps {
        for value in step.args.0.values() {
            if let Some(s) = value.as_str() {
                scan(&s.to_lowercase());
            }
        }
    }
    let tokens = text.split_whitespace().count() as f64 * 1.3;
    StructuralFeatures {
        intent_tags,
        file_extensions,
        tool_names: steps.iter().map(|s| s.tool.clone()).collect(),
        has_tool_calls_in_history: has_history,
        estimated_input_tokens_bucket: (tokens.max(1.0).log10() as u8).saturating_sub(2).min(3),
        ..StructuralFeatures::default()
    }
    .normalized()
}

/// The top-level dirs the steps' path arguments touch (seed 001
/// `file_path_buckets`): `~/docs/a.txt` → `~/docs`, `/etc/hosts` → `/etc`,
/// `~/a.txt` → `~`. A step's result reference (`$0`) is no path.
pub fn path_buckets(steps: &[PlanStep]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for value in steps.iter().flat_map(|s| s.args.0.values()) {
        let Some(path) = value.as_str() else { continue };
        let (root, rest) = match path {
            p if p.starts_with("~/") => ("~", &p[2..]),
            p if p.starts_with('/') => ("", &p[1..]),
            _ => continue,
        };
        let bucket = match rest.split_once('/') {
            Some((dir, _)) if !dir.is_empty() => format!("{root}/{dir}"),
            _ if root.is_empty() => continue,
            _ => root.to_owned(),
        };
        out.push(bucket);
    }
    out.sort();
    out.dedup();
    out
}

/// `report.pdf` → `.pdf`; URLs' hosts (`example.org`) are not files.
fn extension_of(token: &str) -> Option<String> {
    if token.contains("://") && token.matches('/').count() < 3 {
        return None;
    }
    let name = token.rsplit('/').next()?;
    let name = name.trim_end_matches(['.', '?', '!', ')', ';', ':']);
    let (stem, ext) = name.rsplit_once('.')?;
    let valid = !stem.is_empty()
        && (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic());
    valid.then(|| format!(".{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_tags_join_the_built_in_ones() {
        let extra = std::collections::BTreeMap::from([("travel".to_owned(), vec!["Flight".to_owned(), "volo".into()])]);
        let f = for_turn_with("book the flight and tell me the weather", &[], false, &extra);
        assert_eq!(f.intent_tags, ["travel", "weather"]);
        assert_eq!(for_turn("book the flight", &[], false).intent_tags, Vec::<String>::new());
    }

    #[test]
    fn path_buckets_are_the_top_level_dirs_touched() {
        let step = |path: &str| PlanStep {
            tool: "read_file".into(),
            args: engram_events::payloads::ToolArgs::from_json(&format!(r#"{{"path":"{path}","n":"$0"}}"#)).unwrap(),
        };
        let steps =
            [step("~/docs/a.txt"), step("/etc/hosts"), step("~/b.txt"), step("~/docs/c/d.md"), step("notes.txt")];
        assert_eq!(path_buckets(&steps), ["/etc", "~", "~/docs"]);
        assert!(path_buckets(&[]).is_empty());
    }
    use engram_events::payloads::ToolArgs;

    #[test]
    fn features_from_text_and_steps() {
        let steps = vec![PlanStep { tool: "read_file".into(), args: ToolArgs::default() }];
        let f = for_turn("Fix the crash in src/main.rs and update README.md", &steps, true);
        assert_eq!(f.intent_tags, vec!["debug"]);
        assert_eq!(f.file_extensions, vec![".md", ".rs"]);
        assert_eq!(f.tool_names, vec!["read_file"]);
        assert!(f.has_tool_calls_in_history);
        assert_eq!(f.estimated_input_tokens_bucket, 0);
        let f = for_turn("open https://example.org and tell me v1.2", &[], false);
        assert!(f.file_extensions.is_empty(), "{:?}", f.file_extensions);
    }
}
