//! The soak's workload: a user's mixed requests, drawn (seeded) from
//! templates with varied values, over files in a temp dir it creates.
//!
//! Most requests repeat (the same words, or the same request with other
//! files, days and names: what the fast path learns), some are memory
//! statements and the questions about them, some small talk, and a few are
//! new every time (a number in them no earlier turn had): what memory
//! legitimately keeps.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engram::actors::tools::{FnTool, ToolOutput};

use crate::patterns::Rng;

/// What one turn is, for the report's mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The same words as many turns before ("what time is it").
    Repeat,
    /// A tool request with a file, a folder or a count of days drawn from
    /// a pool (the fast path learns its canonical form).
    Varied,
    /// Something the user tells ("my sister's name is Giulia").
    Statement,
    /// A question about what was told.
    Question,
    /// Small talk, no tool.
    SmallTalk,
    /// A request no turn had before (a number in it is new).
    Novel,
}

/// Requests said word for word again and again (`{dir}` / `{file}`: the
/// first folder and file, always the same).
const REPEATS: &[&str] = &[
    "what time is it",
    "che ore sono",
    "what's the date today",
    "che giorno è oggi",
    "where am I",
    "list the files in {dir}",
    "read the file {file}",
    "count the words in {file}",
    "elenca i file in {dir}",
];

/// Tool requests with a value drawn from a pool.
const VARIED: &[&str] = &[
    "list the files in {dir}",
    "what's in the folder {dir}",
    "elenca i file in {dir}",
    "cosa c'è nella cartella {dir}",
    "read the file {file}",
    "open {file}",
    "leggi il file {file}",
    "count the words in {file}",
    "how many words are in {file}",
    "conta le parole in {file}",
    "what date will it be in {n} days",
    "che data sarà tra {n} giorni",
];

const SMALL_TALK: &[&str] =
    &["how are you today", "come stai oggi", "thank you so much", "grazie mille", "tell me a joke", "good morning"];

const RELATIONS: &[&str] =
    &["sister", "brother", "dentist", "neighbour", "boss", "cousin", "plumber", "landlord", "doctor", "friend"];
const NAMES: &[&str] = &[
    "Giulia", "Marco", "Anna", "Luca", "Sofia", "Paolo", "Elena", "Tom", "Sarah", "James", "Chiara", "Davide", "Irene",
    "Pietro", "Laura", "Nadia", "Omar", "Vera", "Ugo", "Zoe",
];
const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The folders and files the file tools read, in a temp dir.
pub struct Files {
    /// The root the tools may read (`[tools] file_roots`).
    pub root: PathBuf,
    /// Folders under it.
    pub dirs: Vec<String>,
    /// Files in them.
    pub files: Vec<String>,
}

impl Files {
    /// Six folders of four small text files each under `root`.
    pub fn create(root: &Path) -> anyhow::Result<Files> {
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for d in ["docs", "notes", "progetti", "musica", "ricette", "taxes"] {
            let dir = root.join(d);
            std::fs::create_dir_all(&dir)?;
            for (i, f) in ["todo.txt", "idee.md", "report.txt", "list.txt"].iter().enumerate() {
                let path = dir.join(f);
                std::fs::write(&path, format!("{d}/{f}: {}\n", "a line of text ".repeat(i + 1)))?;
                files.push(path.display().to_string());
            }
            dirs.push(dir.display().to_string());
        }
        Ok(Files { root: root.to_owned(), dirs, files })
    }
}

/// A host tool: `word_count {path}`, the words in a file under the root.
pub fn word_count(root: PathBuf) -> Arc<FnTool> {
    Arc::new(
        FnTool::new("word_count", "Count the words in a text file", move |args, _ctx| {
            let path = args.0.get("path").and_then(|v| v.as_str()).unwrap_or_default();
            let path = Path::new(path);
            if !path.starts_with(&root) {
                return Ok(ToolOutput::trusted("that file is outside the folders I may read"));
            }
            let words = std::fs::read_to_string(path).map(|t| t.split_whitespace().count()).unwrap_or(0);
            Ok(ToolOutput::trusted(format!("{words} words")))
        })
        .with_arg("path", "the file"),
    )
}

/// The workload's shape beside its mix: how long sessions are and how many
/// requests are new words. Today's mix (sessions of 2 to 8 turns, a few
/// novel requests) cannot see what a long session keeps, nor what each
/// distinct turn adds; a voice assistant left running all day is one
/// session, and real requests rarely repeat word for word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    /// Turns in every session (`None`: drawn, 2 to 8).
    pub session_turns: Option<usize>,
    /// Percent of turns made distinct: the drawn request with a word and
    /// a number no earlier turn had ("… for the garden, ref 10042").
    pub distinct_pct: u8,
}

/// Words a distinct turn ends with, beside its number.
const DISTINCT_WORDS: &[&str] = &["garden", "office", "kitchen", "ufficio", "cantina", "garage", "studio", "attic"];

/// The user: draws turns.
pub struct User {
    rng: Rng,
    files: Files,
    novel: u64,
    shape: Shape,
}

impl User {
    /// A user drawing with `seed` over `files`, sessions and requests
    /// shaped by `shape`.
    pub fn new(seed: u64, files: Files, shape: Shape) -> User {
        User { rng: Rng::new(seed), files, novel: 0, shape }
    }

    /// Turns in the next session: the shape's, else 2 to 8.
    pub fn session_len(&mut self) -> usize {
        self.shape.session_turns.unwrap_or_else(|| 2 + self.rng.below(7))
    }

    /// The next request and its kind, made distinct by the shape's share.
    pub fn next_turn(&mut self) -> (Kind, String) {
        let (kind, text) = self.draw();
        // No roll without a share: today's mix keeps its seeded sequence
        // (the figures in performance.md were drawn from it).
        if self.shape.distinct_pct == 0 || self.rng.below(100) >= usize::from(self.shape.distinct_pct) {
            return (kind, text);
        }
        self.novel += 1;
        let word = self.pick(DISTINCT_WORDS);
        (kind, format!("{text} for the {word}, ref {}", 10_000 + self.novel))
    }

    /// Whether to give feedback on the turn just answered: `Some(true)`
    /// good (4 %), `Some(false)` bad (2 %).
    pub fn feedback(&mut self) -> Option<bool> {
        let u = self.rng.unit();
        (u < 0.06).then_some(u < 0.04)
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.rng.below(from.len())]
    }

    /// A request of the mix and its kind.
    fn draw(&mut self) -> (Kind, String) {
        let roll = self.rng.below(100);
        let kind = match roll {
            0..35 => Kind::Repeat,
            35..55 => Kind::Varied,
            55..67 => Kind::Statement,
            67..78 => Kind::Question,
            78..95 => Kind::SmallTalk,
            _ => Kind::Novel,
        };
        let text = match kind {
            Kind::Repeat => {
                let t = self.pick(REPEATS);
                t.replace("{dir}", &self.files.dirs[0]).replace("{file}", &self.files.files[0])
            }
            Kind::Varied => {
                let t = self.pick(VARIED);
                let dir = self.files.dirs[self.rng.below(self.files.dirs.len())].clone();
                let file = self.files.files[self.rng.below(self.files.files.len())].clone();
                let n = 1 + self.rng.below(30);
                t.replace("{dir}", &dir).replace("{file}", &file).replace("{n}", &n.to_string())
            }
            Kind::Statement => self.statement(),
            Kind::Question => self.question(),
            Kind::SmallTalk => self.pick(SMALL_TALK).to_owned(),
            Kind::Novel => {
                self.novel += 1;
                let name = self.pick(NAMES);
                format!("remind me to call {name} about invoice {}", 1000 + self.novel)
            }
        };
        (kind, text)
    }

    fn statement(&mut self) -> String {
        match self.rng.below(4) {
            0 => format!("my {}'s name is {}", self.pick(RELATIONS), self.pick(NAMES)),
            1 => format!("I parked the car on level {}", 1 + self.rng.below(9)),
            2 => format!("the boiler pressure is {:.1} bar", 1.0 + self.rng.below(16) as f64 / 10.0),
            _ => format!("{}'s birthday is on {} {}", self.pick(NAMES), 1 + self.rng.below(28), self.pick(MONTHS)),
        }
    }

    fn question(&mut self) -> String {
        match self.rng.below(4) {
            0 => format!("what is my {}'s name", self.pick(RELATIONS)),
            1 => "where did I park the car".to_owned(),
            2 => "what did I say the boiler pressure was".to_owned(),
            _ => format!("when is {}'s birthday", self.pick(NAMES)),
        }
    }
}
