//! The offline planner: what plans a turn when no LLM is configured.
//!
//! Weaker than a model, never fake: it splits a request on conjunctions
//! ("… and …", "… then …", "… e poi …") and, for each part, picks the tool
//! whose description (and example phrasings) is nearest in embedding space,
//! if any is near enough; arguments are filled from the tool's JSON schema
//! ([`crate::arguments`]: the fast path's slot extractor for paths, dates,
//! URLs, …, enum values the request names, numbers, quoted strings, proper
//! nouns for places and names). A request no tool matches gets an empty plan, and the reply says
//! so plainly.
//!
//! Beside the embedding, a part's own signals decide (numbered, as
//! [`OfflinePlanner::plan`] applies them):
//!
//! 1. **Nothing to do.** A statement about the user ("abito a Torino", "my
//!    sister is called Marta": [`crate::mood::tells_about_self`], by
//!    grammar) asks for no tool — the model puts it beside "where do I
//!    live", a question for `recall`. Small talk ("how are you today",
//!    "grazie mille") and questions of general knowledge ("what's the
//!    capital of France") are compared with [`SMALL_TALK`] and
//!    [`GENERAL_KNOWLEDGE`] phrasings
//!    as if they were a tool; when those win, no tool is called — "today"
//!    alone is no request for the date.
//!    A question about what the assistant remembers ("do you remember what
//!    city I live in", "ti ricordi …": [`crate::mood::asks_memory`]) goes
//!    to [`RECALL`], however near a location or a date tool it is (1b).
//! 2. **What the request carries.** A path favours the tools that take one
//!    ([`PATH_BONUS`]), and more the one whose `path` parameter is the same
//!    kind — a directory or a file, as the file system says when the path
//!    exists (`~/.bashrc` is a file, `/var/log` a directory), else by its
//!    form (`notes.txt` has an extension, `~/projects/` ends with a slash).
//!    When some tool takes a path of the kind the request names, only such
//!    a tool is planned, however the rest of the request is worded: the
//!    path is the request's object, and "what does /etc/hosts say?" is as
//!    plain as "read /etc/hosts".
//! 3. **I can't do that.** A part that names an effectful action (delete,
//!    rename, send, move, play, …; `gate::effectful_actions`) is given only
//!    to a tool whose name or description names it too; with none, the part
//!    is not planned, rather than read the file it asked to delete ("set",
//!    the most general, is done by a tool that changes something and
//!    takes a value; "make" before a definite object or "it", "make the
//!    light yellow", sets rather than creates, and "write" on a list adds
//!    — the gate's reading). The
//!    actions are read from the request's own words, not from the names
//!    and quotes it carries ("a trip to New York" creates nothing new).
//! 4. **A tool that can run stands in for one that cannot.** A tool that
//!    cannot do anything as configured ([`OfflinePlanner::with_unconfigured`]:
//!    the built-in `list_dir` without `[tools] file_roots`) still competes
//!    with its own phrasings, but when it wins, the planner calls instead the
//!    tool that can run and does the same thing — whose texts are within
//!    [`SAME_ABILITY`] of the winner's description (an MCP filesystem
//!    server's `list_directory` for `list_dir`) and that names no effectful
//!    action the winner does not (rule 3's; not `create_directory`) — the
//!    one of those nearest the request. With none, the winner is planned
//!    and its call says what to configure ("where am I" without `[tools]
//!    location`).
//! 5. **A split that plans nothing is undone.** When no part of a request
//!    split on conjunctions matches a tool, the whole request is compared:
//!    the split is a guess, and each part of a long request may say too
//!    little.
//! 6. **One call, the whole request's values.** The same tool planned for
//!    two parts in a row is one call when one's arguments are among the
//!    other's ("the weather in London, including the temperature and the
//!    wind"), or when they fill different parameters ("a payment of $250
//!    to Margaret and mark it as private": one call with all four); with
//!    values of its own each for one parameter, "the kitchen light and
//!    the bedroom light" stay two. When one part of a split request is
//!    planned, its arguments come from the whole request: the
//!    parts no tool matched carry its values ("what's the weather in Tel
//!    Aviv, and could you give it in Fahrenheit").
//! 7. **The values a tool needs are evidence.** A part that gives every
//!    argument a tool requires ([`crate::arguments`], one at least) is
//!    nearer to it by [`ARGUMENT_EVIDENCE`], against the bar, against
//!    small talk and against the other tools: a request that carries the
//!    user's values for a tool is about it more than its wording alone
//!    says ("find Imax movies in San Rafael" gives `FindMovies` its
//!    place and names no movie for `GetTimesForMovie`). Among tools that
//!    require nothing, one that takes a value the request says ranks so
//!    too ("manda il robot a pulire in disimpegno": the tool that cleans
//!    a zone, not the one that docks, which would drop the room) — in the
//!    ranking only, not against the bar; but a value not text (a number,
//!    a flag) for a property no other tool has is evidence against the
//!    bar too ("dim the lights … down to five percent": a `brightness`,
//!    which only the lights' tool takes).
//! 8. **The words say it too.** Beside the cosine, the words a request
//!    shares with a tool's name, description and parameters count, the
//!    rarer among the tools the more ([`crate::tool_words`]); a request
//!    naming one pole (off, close, pause) never goes to a tool named for
//!    the other, and a question leans to a tool that tells. A tool whose
//!    action is a command enum naming both poles (`lighting_control
//!    {command: on | off}`) has both; one whose name's "-ing" noun tells
//!    (`climate_reading`) tells. A tool whose
//!    words reach [`LEXICAL_BAR`], two of the request's words or a pole
//!    shared, is planned even below the cosine's bar (one word is a
//!    coincidence: "write me a poem" is not `write_file`); so is one
//!    whose own text holds [`NAMED_WORDS`] of the request's words, however
//!    common among the tools, at a cosine of [`NAMED_COSINE`] at least —
//!    with one tool, every word is common ("I need to remove the task with
//!    the content 'ravi' from my todo list" and `todo`, "Manages a todo
//!    list by allowing the user to add, delete, or mark tasks as
//!    completed"). A tool so named is planned even when small talk is
//!    nearer ("shut the blinds in the formal dining room" and "Closes
//!    covers: blinds, shutters, …").
//! 9. **A question about a state asks.** A yes/no question about a state
//!    ("are the den lights on", "c'è la luce accesa") goes to a tool that
//!    tells, never to one that changes what is asked about; a tool that
//!    tells and whose description names the state's axis ("Tells whether
//!    devices are on or off") shares the question's pole.
//! 10. **A tool that sets, given something to set.** A tool that sets
//!     something (`HassLightSet`, `HassFanSetSpeed`) is not planned for a
//!     request that gives it no value but where and which device: "lights
//!     on in the mudroom" sets no brightness nor colour.
//! 11. **What the model taught counts beside the descriptions.** The
//!     requests the model answered well with a tool
//!     ([`crate::taught_phrasings`], given to [`OfflinePlanner::plan_taught`])
//!     are phrasings of it: a tool's cosine is its best to its own texts
//!     or to those examples, an example counting when it reaches the bar
//!     by [`TAUGHT_MARGIN`] — one request is one wording, weaker evidence
//!     than a description written to say what the tool does. "kill the
//!     lights in the sunroom", taught as `HassTurnOff`, makes "kill the
//!     lights in the den" no `HassLightSet`, whatever "lights" leans to.
//!     An example of the other pole, or one naming a thing of the tool's
//!     name the request does not say, counts for nothing
//!     (`example_fit`): "alzami le tapparelle" is no taught "abbassa le
//!     tapparelle", "switch the kettle on" no taught "put the lights on".
//! 12. **A new one is no running one.** A request for a new thing of the
//!     kind a tool's name names — an indefinite article before it ("set a
//!     timer for 3 minutes", "metti un timer di 8 minuti") — never goes to
//!     a tool whose description has it act on one that exists ("Adds time
//!     to a running timer").
//! 13. **Two values, one call: nothing.** A plan of one call whose text
//!     value the request names beside another, joined by a conjunction
//!     ("turn on the kitchen and the office lights", "spegni la luce in
//!     cucina e in bagno"), would drop one of them: the planner plans
//!     nothing, and the model (or the user) says which
//!     ([`crate::arguments::one_of_two`]).
//! 14. **A part without a verb is no call of another tool.** A part after
//!     the first that names no action and no pole of its own ("… in the
//!     dining room and the workshop", "… in ingresso e in soggiorno", "…
//!     alla lista casa e anche alla spesa") is a second value of the call
//!     before it, or that call's verb left unsaid: planned as a call of
//!     another tool, it is a guess (a `device-on` for "the workshop"), and
//!     the planner plans nothing (`parts::verbless`).
//! 15. **The one tool that does it.** A part that names an effectful
//!     action (rule 3's, not the general "set") that one tool alone does,
//!     giving every value that tool requires and a word of its text, is
//!     planned to it whatever its cosine and small talk's: the action
//!     names it ("can you create todo for 'go for shopping at 9 pm'"
//!     among tools of which one creates; BFCL's dev split, right calls
//!     271 → 273, abstentions unchanged).
//! 16. **The kind of value the model gave it.** Among the candidates
//!     within [`TAUGHT_ARGUMENTS`] of the best, a tool for which every
//!     text value the part gives is of a parameter the model passed values
//!     for with it gains that much, in the ranking only: "switch the kettle
//!     on" gives a device's name; the model turned devices on by name with
//!     `device-on {target}` and the lights only by room, whatever the
//!     lights' description ("… or one light by its name") leans to. Home
//!     C's dev split, model away 85 → 89/106; homes A and B unchanged.
//! 17. **Words as rare as among the tools left.** Once rules 3, 8, 10 and
//!     12 have ruled tools out, the candidates are ranked by their words'
//!     rarity among the candidates ([`crate::tool_words::Vocabulary::rarity_among`]):
//!     "timer for the eggs seven minutes" asks a new timer, so the three
//!     tools for a running one are out, and "timer" then tells starting one
//!     from a heating boost "for a number of minutes", where among all
//!     four timer tools it had weighed less than "minutes". The bars (rule
//!     8's lexical bar, the cosine's) read the score among all tools, so
//!     the rule only reorders. Home C's dev split, nothing taught 81 → 82;
//!     homes A and B, BFCL dev unchanged.
//! 18. **A kind of device named is no other kind's tool.** When a part
//!     names a kind of device some tool takes as a value of a kind enum
//!     ([`crate::spoken::kinds_named`]: "ventilatore" → `fan`; not one said
//!     as where, "the temperature in the garage", nor a verb an article
//!     follows, "porta il riscaldamento"), a tool whose name is named for
//!     a kind (`turnOffLights`: `light`, a kind `isApplianceRunning` takes)
//!     is a candidate only for its own kind, or one its own enum takes. A
//!     word of the name that is its verb or pole names no kind
//!     (`HassLock`'s "lock"). Before, "spegni il ventilatore in salone"
//!     was `turnOffLights {roomName}`: the lights' description is nearer
//!     "spegni … in salone" than the appliances'. Found by requests of my
//!     own on home E's dev split (the fixture's rows had no such case);
//!     homes A–D and F's dev splits and BFCL unchanged.
//!
//! Every tool is compared by the same texts: its name (words split at `_`
//! and `-`), its description and each sentence of the description (an MCP server's paragraph says
//! what the tool does in its first sentence and adds caveats after), and
//! a built-in's example phrasings.
//!
//! The rules' code, by file: the fixed phrasings of rule 1 in
//! `phrasings.rs`, rule 2's paths in `paths.rs`, rules 3, 10 and 12 (what
//! a part asks done, and whether a tool does it) in `action_fit.rs`, the
//! split on conjunctions and rule 6's merge in `parts.rs`; the plan with
//! the model away (its near miss, the values it passed) in `away.rs`; a
//! property its vendor words as no rule of [`crate::spoken`] reads, read
//! by the nearest known wording, in `property_roles.rs`; the ranking that
//! weighs them all here.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::embedder::EmbeddingModel;
use crate::fast_path::gate::effectful_actions;
use chrono::{DateTime, FixedOffset};
use engram_events::payloads::{PlanStep, ToolArgs};

use crate::embedder::{EmbedError, Embedder};
use crate::taught_phrasings::TaughtPhrasings;

mod action_fit;
mod away;
mod example_fit;
mod parts;
mod paths;
mod phrasings;
pub mod property_roles;

pub use parts::split_conjunctions;
pub use phrasings::{builtin_examples, GENERAL_KNOWLEDGE, SMALL_TALK};

/// The model id plans made here carry (`plan.created.model`,
/// `turn.completed.model`): the pattern store scores it like any model.
pub const OFFLINE_MODEL: &str = "offline:tool-similarity";

/// The built-in memory tool's name: what a question about what the
/// assistant remembers is for (rule 1b).
pub const RECALL: &str = "recall";

/// What a path in the request adds to a tool that takes one (rule 2); as
/// much again when the parameter is the path's kind (file or directory).
pub const PATH_BONUS: f32 = 0.1;

/// The cosine of a runnable tool's texts to the description of a tool
/// that cannot run above which the first does what the second would
/// (rule 4): `list_directory`'s "Get a detailed listing of all files and
/// directories in a specified path" for `list_dir`'s "list the files and
/// folders in a directory".
pub const SAME_ABILITY: f32 = 0.6;

/// What a tool's cosine gains, against the bar and against small talk,
/// when the request gives every argument it requires (rule 7).
pub const ARGUMENT_EVIDENCE: f32 = 0.1;

/// What one unit of a tool's lexical score (rule 8,
/// [`crate::tool_words`]) adds to its cosine when tools are ranked.
pub const LEXICAL_SCALE: f32 = 0.05;

/// The lexical score at which a tool is planned whatever its cosine (rule
/// 8): a rare word of its name and the request's pole, or several words of
/// its text.
pub const LEXICAL_BAR: f32 = 6.0;

/// How many of a request's words a tool's own text must hold for the
/// request to name it below the cosine's bar (rule 8), however common the
/// words are among the tools: with one or two tools every word is common,
/// and rarity says nothing.
pub const NAMED_WORDS: usize = 3;

/// The cosine a tool named by [`NAMED_WORDS`] must still reach (rule 8):
/// words in common with a tool that the model puts far apart are a
/// coincidence of vocabulary.
pub const NAMED_COSINE: f32 = 0.2;

/// How far above the bar an example the model taught must come to count
/// (rule 11): `threshold + TAUGHT_MARGIN` (0.45 for the default model).
/// Tuned on the home fixture's dev split (`docs/fast-path.md`): from
/// 0.4 to 0.45 above nothing, dev's model-away figure is flat (the best);
/// with no margin at all, one more request that no tool fits is planned.
pub const TAUGHT_MARGIN: f32 = 0.1;

/// What rule 16 adds to a tool's score in the ranking (not against the
/// bar). Set on home C's dev split: at 0.1 (rule 7's evidence) it moved
/// two requests of four whose lights' tool led by 0.106.
pub const TAUGHT_ARGUMENTS: f32 = 0.15;

/// Whether `part` gives a value for each of the arguments `tool`
/// requires, and it requires one at least (rule 7) — or, requiring
/// nothing, a value not text (a number, a flag) for a property of its own
/// ("dim the lights … down to five percent": a brightness, which no
/// other tool takes).
fn gives_its_values(tool: &ToolProfile, part: &str, now: DateTime<FixedOffset>) -> bool {
    let requires = requires_any(&tool.schema);
    // Filling is the costly part: not for a tool with nothing to give.
    if !requires && tool.own.is_empty() {
        return false;
    }
    let filled = crate::arguments::fill(&tool.schema, part, now);
    if requires {
        return filled.missing.is_empty();
    }
    filled.args.0.iter().any(|(k, v)| tool.own.contains(k) && !v.is_string())
}

/// The names of `schema`'s properties.
fn properties_of(schema: &serde_json::Value) -> impl Iterator<Item = &str> {
    schema.get("properties").and_then(|p| p.as_object()).into_iter().flat_map(|p| p.keys().map(String::as_str))
}

/// Whether `schema` requires one argument at least.
fn requires_any(schema: &serde_json::Value) -> bool {
    schema.get("required").and_then(|r| r.as_array()).is_some_and(|r| !r.is_empty())
}

/// The best of the `scored` candidates for `part`, rule 7 in the ranking:
/// among the tools within [`ARGUMENT_EVIDENCE`] of the best, one whose
/// required values the request gives gains it ("find Imax movies in San
/// Rafael" searches movies by place; it names no movie to get the
/// showtimes of). Only those near the top are filled: filling is the
/// costly part. Also says whether the best was given its values: it is
/// always among those filled (a tool below the top by more than the
/// evidence cannot pass the top's score).
fn best_given_values<'a>(
    scored: Vec<(&'a ToolProfile, f32)>,
    part: &str,
    now: DateTime<FixedOffset>,
) -> Option<(&'a ToolProfile, bool)> {
    let top = scored.iter().map(|(_, s)| *s).fold(f32::MIN, f32::max);
    let given = |t: &ToolProfile, s: f32| s + ARGUMENT_EVIDENCE >= top && gives_its_values(t, part, now);
    // Among tools that require nothing, one that takes what the request
    // says beats one that would drop it ("manda il robot a pulire in
    // disimpegno": the tool that cleans a zone, not the one that docks) —
    // in the ranking only: optional values are no evidence against the
    // bar.
    let takes = |t: &ToolProfile, s: f32| s + ARGUMENT_EVIDENCE >= top && takes_what_is_said(&t.schema, part, now);
    scored
        .into_iter()
        .map(|(t, s)| {
            let g = given(t, s);
            (t, g, if g || takes(t, s) { s + ARGUMENT_EVIDENCE } else { s })
        })
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(t, g, _)| (t, g))
}

/// Whether a tool that requires nothing takes a value `part` gives.
fn takes_what_is_said(schema: &serde_json::Value, part: &str, now: DateTime<FixedOffset>) -> bool {
    !requires_any(schema) && !crate::arguments::fill(schema, part, now).args.0.is_empty()
}

/// What a tool's `path` parameter names, by its description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    /// A file: read it.
    File,
    /// A directory: list it.
    Dir,
}

/// What the file system says a path is (`None`: nothing there), asked by
/// the planner when a request names a path (rule 2). The host's side
/// ([`OfflinePlanner::with_paths`]): the planner itself reads no disk, and
/// without a lookup it goes by the path's form alone.
pub type PathLookup = Arc<dyn Fn(&str) -> Option<PathKind> + Send + Sync>;

struct ToolProfile {
    name: String,
    /// Its description (the words a value of its is not).
    description: String,
    /// Its parameters' JSON schema (the arguments are filled from it).
    schema: serde_json::Value,
    vectors: Vec<Vec<f32>>,
    /// `Some` when it takes a `path`: of which kind, if its description says.
    path: Option<Option<PathKind>>,
    /// The effectful actions its name and description name (rule 3).
    actions: std::collections::BTreeSet<&'static str>,
    /// Whether it changes something: an effectful action, or a pole in its
    /// name (`HassStartTimer`, `HassTurnOn`) — what "set" asks of a tool
    /// (rule 3).
    changes: bool,
    /// Its name's words (`HassStartTimer`: hass, start, timer).
    name_words: Vec<String>,
    /// Whether its description has it act on one that exists already ("a
    /// running timer", "a paused timer": rule 12).
    on_existing: bool,
    /// Whether it can do anything as configured (rule 4).
    runnable: bool,
    /// Its name's and description's words as the word-order rules read
    /// them (rule 18).
    context: crate::spoken::Context,
    /// The kinds of device it takes as values of a kind enum, stemmed
    /// (rule 18).
    kinds: Vec<String>,
    /// Its properties no other tool has (`brightness` of a lights tool):
    /// a typed value for one is evidence for it (rule 7).
    own: BTreeSet<String>,
}

/// Tools by embedding similarity.
pub struct OfflinePlanner {
    embedder: Arc<dyn Embedder>,
    tools: Vec<ToolProfile>,
    /// The tools as words (rule 8), in the order of `tools`.
    vocabulary: crate::tool_words::Vocabulary,
    small_talk: Vec<Vec<f32>>,
    threshold: f32,
    /// What a named path is on disk, when the host says (rule 2).
    paths: Option<PathLookup>,
    /// Every kind of device a tool takes (their `kinds`), stemmed (rule
    /// 18).
    kinds: BTreeSet<String>,
}

/// A tool as the planner sees it: name, description, JSON-schema params.
pub type ToolDescription = (String, String, serde_json::Value);

impl OfflinePlanner {
    /// Embeds every tool's description and example phrasings once.
    pub fn new(embedder: Arc<dyn Embedder>, tools: &[ToolDescription]) -> Result<OfflinePlanner, EmbedError> {
        let mut profiles = Vec::with_capacity(tools.len());
        let roles = property_roles::KnownRoles::new(embedder.as_ref())?;
        for (name, description, parameters) in tools {
            // Its properties as the spoken rules read them, however its
            // vendor words them (`property_roles`).
            let parameters = &roles.read(embedder.as_ref(), parameters)?;
            let mut texts: Vec<String> = vec![description.clone(), name.replace(['_', '-'], " ")];
            let said = sentences(description);
            if said.len() > 1 {
                texts.extend(said.into_iter().map(str::to_owned));
            }
            texts.extend(builtin_examples(name).iter().map(|s| s.to_string()));
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = embedder.embed_batch(&refs)?;
            let properties = parameters.get("properties").and_then(|p| p.as_object());
            // The path's kind, as its description says; without one, as the
            // tool's first sentence says ("Get a detailed listing of all
            // files and directories in a specified path": a directory).
            let first = sentences(description).first().copied().unwrap_or(description.as_str());
            let path = properties.and_then(|p| p.get("path")).map(|p| {
                let d = p.get("description").and_then(|d| d.as_str()).unwrap_or(first).to_lowercase();
                if d.contains("director") || d.contains("folder") {
                    Some(PathKind::Dir)
                } else if d.contains("file") {
                    Some(PathKind::File)
                } else {
                    None
                }
            });
            // Its name's words (`HassLightSet`: light, set) and its
            // description's, third persons folded ("Sets", "Sends"): the
            // actions it does.
            let name_words = crate::tool_words::split_name(name);
            let words: Vec<String> = name_words
                .iter()
                .cloned()
                .chain(crate::text::normalize(description).split_whitespace().map(crate::tool_words::stem))
                .collect();
            let actions = effectful_actions(&format!("{} {description} {}", name.replace('_', " "), words.join(" ")));
            let lower = crate::text::normalize(description);
            let on_existing = lower.split_whitespace().any(|w| action_fit::EXISTING.contains(&w));
            let changes =
                !actions.is_empty() || name_words.iter().any(|w| !crate::fast_path::gate::poles_of(w).is_empty());
            profiles.push(ToolProfile {
                changes,
                name_words,
                on_existing,
                description: description.clone(),
                name: name.clone(),
                schema: parameters.clone(),
                vectors,
                path,
                actions,
                runnable: true,
                context: crate::spoken::Context::of(name, description),
                kinds: crate::spoken::kind_members(parameters),
                own: BTreeSet::new(),
            });
        }
        let held = |p: &str| profiles.iter().filter(|t| properties_of(&t.schema).any(|q| q == p)).count();
        let own: Vec<BTreeSet<String>> = profiles
            .iter()
            .map(|t| properties_of(&t.schema).filter(|p| held(p) == 1).map(str::to_owned).collect())
            .collect();
        for (t, own) in profiles.iter_mut().zip(own) {
            t.own = own;
        }
        let nothing: Vec<&str> = SMALL_TALK.iter().chain(GENERAL_KNOWLEDGE).copied().collect();
        let small_talk = embedder.embed_batch(&nothing)?;
        // The cosine a part of a request must reach to a tool's phrasing to
        // be planned as a call of it: per model (unrelated requests, "tell
        // me a joke", stay below), see `Calibration::offline_planner`.
        let threshold = EmbeddingModel::calibration_for_id(embedder.model_id()).offline_planner;
        let vocabulary = crate::tool_words::Vocabulary::new(tools.iter().map(|(n, d, p)| (n.as_str(), d.as_str(), p)));
        let kinds = profiles.iter().flat_map(|t| t.kinds.iter().cloned()).collect();
        Ok(OfflinePlanner { embedder, tools: profiles, vocabulary, small_talk, threshold, paths: None, kinds })
    }

    /// The same planner knowing that the tools named in `names` cannot do
    /// anything as configured (a built-in file tool without `[tools]
    /// file_roots`): one of them that wins a request hands it to a tool
    /// that can run and does the same (rule 4), so a source that can run —
    /// an MCP server's tool — serves it, and a request only they answer
    /// still gets their "configure this" reply rather than none.
    pub fn with_unconfigured<S: AsRef<str>>(mut self, names: &[S]) -> Self {
        for t in &mut self.tools {
            t.runnable = !names.iter().any(|n| n.as_ref() == t.name);
        }
        self
    }

    /// The same planner asking `lookup` what a path a request names is
    /// (a file to read, a directory to list) before going by its form:
    /// "~/.config" is a directory by form and may be a file on disk.
    pub fn with_paths(mut self, lookup: PathLookup) -> Self {
        self.paths = Some(lookup);
        self
    }

    /// With another similarity threshold.
    pub fn with_threshold(mut self, threshold: f32) -> Self {
        self.threshold = threshold;
        self
    }

    /// Every tool with its best cosine to `text` (its description, one of
    /// its sentences, its name or an example phrasing), best first: the tool router's ranking without
    /// a model, and what `search_tools` finds.
    pub fn rank(&self, text: &str) -> Result<Vec<(String, f32)>, EmbedError> {
        let v = self.embedder.embed_batch(&[text])?.pop().unwrap_or_default();
        let mut ranked: Vec<(String, f32)> =
            self.tools.iter().map(|t| (t.name.clone(), nearest(&v, &t.vectors))).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(ranked)
    }

    /// The plan for `request` said at `now`: one step per part that matches
    /// a tool, in order (empty when nothing matches), by the rules of the
    /// module doc.
    pub fn plan(&self, request: &str, now: DateTime<FixedOffset>) -> Result<Vec<PlanStep>, EmbedError> {
        self.plan_taught(request, now, &TaughtPhrasings::default())
    }

    /// [`OfflinePlanner::plan`], with the requests the model answered well
    /// as example phrasings of their tools (rule 11).
    pub fn plan_taught(
        &self,
        request: &str,
        now: DateTime<FixedOffset>,
        taught: &TaughtPhrasings,
    ) -> Result<Vec<PlanStep>, EmbedError> {
        let parts = split_conjunctions(request);
        // Rule 1: the user telling about themselves asks for nothing ("my
        // brother is called Paolo and he lives in Genoa"), unless a part
        // opens with an action ("… and list them").
        let commands = parts.iter().any(|p| p.split_whitespace().next().is_some_and(crate::fast_path::gate::is_action));
        if crate::mood::tells_about_self(request) && !commands {
            return Ok(Vec::new());
        }
        // Compared with the tools without the places and names they carry:
        // those are arguments, not what is asked.
        let asked: Vec<String> =
            parts.iter().map(|p| crate::arguments::without_proper_nouns(parts::past_openers(p))).collect();
        let refs: Vec<&str> = asked.iter().map(String::as_str).collect();
        let vectors = self.embedder.embed_batch(&refs)?;
        let mut steps = Vec::new();
        let mut from: Vec<&str> = Vec::new();
        for (part, v) in parts.iter().zip(&vectors) {
            if let Some(step) = self.step_for(part, v, now, taught) {
                steps.push(step);
                from.push(part);
            }
        }
        // Rule 5: a request whose parts plan nothing is tried whole — the
        // split is a guess, and a long request's parts may each say too
        // little ("find me a museum in Rome that is free and suitable for
        // children").
        if steps.is_empty() && parts.len() > 1 {
            let whole = crate::arguments::without_proper_nouns(request);
            let v = self.embedder.embed_batch(&[whole.as_str()])?.pop().unwrap_or_default();
            if let Some(step) = self.step_for(request, &v, now, taught) {
                steps.push(step);
                from.push(request);
            }
        }
        // Rule 14: a part without a verb, planned as another tool's call.
        let guessed = (1..steps.len()).any(|k| steps[k].tool != steps[k - 1].tool && parts::verbless(from[k]));
        if guessed {
            return Ok(Vec::new());
        }
        // Rule 6: a call repeated with no value of its own is one call.
        parts::merge_repeats(&mut steps, &mut from);
        // Rule 6: one call takes its arguments from the whole request — the
        // parts no tool matched carry its values ("the weather in Tel Aviv,
        // and could you give it in Fahrenheit").
        if let ([step], true) = (steps.as_mut_slice(), parts.len() > 1) {
            if let Some(tool) = self.tools.iter().find(|t| t.name == step.tool && from[0] != request) {
                step.args = args_taught(tool, request, now, taught);
            }
        }
        // Rule 13: one call cannot say two values of one property — nor
        // two things, or none, in the words it takes as its text only
        // because the model did ("latte e uova": `property_roles`, rule 5).
        if let [step] = steps.as_slice() {
            let tool = self.tools.iter().find(|t| t.name == step.tool);
            let guessed = tool.is_some_and(|t| property_roles::is_no_call(&t.schema, &t.name, &step.args, taught));
            if crate::arguments::one_of_two(&step.args, request) || guessed {
                return Ok(Vec::new());
            }
        }
        Ok(steps)
    }

    /// The step for one part of a request (its vector `v`), if a tool
    /// matches it by the rules of the module doc.
    fn step_for(
        &self,
        part: &str,
        v: &[f32],
        now: DateTime<FixedOffset>,
        taught: &TaughtPhrasings,
    ) -> Option<PlanStep> {
        // Rule 1b: a question about what the assistant remembers is for
        // memory, whatever else it names ("… what city I live in").
        if crate::mood::asks_memory(part) && self.tools.iter().any(|t| t.name == RECALL && t.runnable) {
            return Some(PlanStep { tool: RECALL.to_owned(), args: ToolArgs::default() });
        }
        let path = self.path_named(part, now);
        let wanted = action_fit::wanted(part);
        // Rule 2: a path of a kind some tool takes goes to such a tool.
        let exact = path.filter(|k| self.tools.iter().any(|t| t.path == Some(Some(*k))));
        // Rule 8: the words it shares with each tool; `None` for a tool of
        // the other pole.
        let said = crate::tool_words::RequestWords::new(part);
        let lexical: Vec<Option<f32>> = (0..self.tools.len()).map(|i| self.vocabulary.score(i, &said)).collect();
        let index = |t: &ToolProfile| self.tools.iter().position(|x| std::ptr::eq(x, t)).unwrap_or(0);
        let lex = |t: &ToolProfile| lexical.get(index(t)).copied().flatten();
        let asked = example_fit::Asked::of(part);
        let score = |t: &ToolProfile| {
            // Rule 11: an example the model taught counts past its bar —
            // one of the request's poles and thing (`example_fit`).
            let values = |mask: &str| taught_values(t, mask, taught);
            let fits = |example: &str| example_fit::fits(&t.name_words, example, &asked, &values);
            let learnt = taught.nearest_where(&t.name, v, fits).filter(|c| *c >= self.threshold + TAUGHT_MARGIN);
            let mut score =
                nearest(v, &t.vectors).max(learnt.unwrap_or(f32::MIN)) + LEXICAL_SCALE * lex(t).unwrap_or(0.0);
            // Rule 2: a path favours the tools taking one of its kind.
            if let (Some(kind), Some(takes)) = (path, t.path) {
                score += PATH_BONUS + if takes == Some(kind) { PATH_BONUS } else { 0.0 };
            }
            score
        };
        // Rule 9: a question about a state goes to a tool that tells.
        let telling = said.asks_state() && (0..self.tools.len()).any(|i| self.vocabulary.tells(i));
        let said = &said;
        let asked_set = wanted.contains("set");
        let new_things = action_fit::asked_new(part);
        // Rule 18: the kinds of device the part names that a tool takes.
        let kinds = &self.kinds_named(part);
        let candidates = || {
            self.tools
                .iter()
                .filter(move |t| exact.is_none_or(|k| t.path == Some(Some(k))))
                .filter(move |t| !telling || self.vocabulary.tells(index(t)))
                // Rule 8: never a tool of the other pole.
                .filter(|t| lex(t).is_some())
                // Rule 3: an effectful action only to a tool that does it.
                .filter(|t| action_fit::does(t, &wanted))
                // Rule 12: a new one asked, never a tool for one running.
                .filter(|t| !(t.on_existing && t.name_words.iter().any(|n| new_things.contains(n))))
                // Rule 10: a tool that sets something, for a request that
                // says no value of what it sets — last: it fills the
                // tool's arguments, the others only compare.
                .filter(move |t| !action_fit::sets_nothing(t, part, asked_set, now))
                // Rule 18: never a tool named for another kind of device
                // than the one named.
                .filter(move |t| !self.for_another_kind(t, kinds))
        };
        // Rule 17: the candidates ranked by words as rare as among them.
        let rarity = self.vocabulary.rarity_among(said, &candidates().map(index).collect::<Vec<_>>());
        let among = |t: &ToolProfile| self.vocabulary.score_among(index(t), said, &rarity).unwrap_or(0.0);
        let ranked = |t: &ToolProfile| score(t) + LEXICAL_SCALE * (among(t) - lex(t).unwrap_or(0.0));
        let scored = self.taught_ranking(candidates().map(|t| (t, ranked(t))).collect(), part, now, taught);
        let Some((tool, given)) = best_given_values(scored, part, now) else {
            tracing::debug!(part = %part, ?wanted, "offline planner: no tool does that");
            return None;
        };
        let cosine = score(tool) - LEXICAL_SCALE * lex(tool).unwrap_or(0.0);
        let at = self.tools.iter().position(|x| std::ptr::eq(x, tool)).unwrap_or(0);
        let shared = self.vocabulary.shared(at, said);
        let worded = lex(tool).unwrap_or(0.0) - self.vocabulary.mood(at, said) >= LEXICAL_BAR && shared >= 2;
        // Rule 1: small talk nearer than any tool asks for none.
        let chat = nearest(v, &self.small_talk);
        tracing::debug!(part = %part, tool = %tool.name, cosine, chat, lexical = lex(tool), shared, "offline planner");
        let names_its_path = path.is_some() && tool.path == Some(path);
        // Rule 7: a request that gives every value a tool requires is
        // nearer to it than its wording says — beside the bar and beside
        // small talk.
        let evidence = if given { ARGUMENT_EVIDENCE } else { 0.0 };
        // Rule 8: three words of the tool's own text name it, rare or not.
        let named = shared >= NAMED_WORDS && cosine >= NAMED_COSINE;
        // Rule 15: the one tool that does the effectful action the part
        // names, given every value it requires and a word of its text, is
        // named by the action ("create todo for …", one tool creating);
        // asked last, as it runs the candidates' filters again.
        let sole = || given && shared > 0 && !wanted.is_empty() && !wanted.contains("set") && candidates().count() == 1;
        let below = cosine + evidence < self.threshold && !names_its_path && !worded && !named;
        let chatty = chat > cosine + evidence && !worded && !named;
        if (below || chatty) && !sole() {
            return None;
        }
        let tool = stand_in(tool, candidates(), score);
        Some(PlanStep { tool: tool.name.clone(), args: args_taught(tool, part, now, taught) })
    }
}

/// Rule 4: a tool that can run and does the same stands in for `tool`,
/// which cannot — the best of `candidates` by `score` doing nothing
/// effectful `tool` would not.
fn stand_in<'a>(
    tool: &'a ToolProfile,
    candidates: impl Iterator<Item = &'a ToolProfile>,
    score: impl Fn(&ToolProfile) -> f32,
) -> &'a ToolProfile {
    if tool.runnable {
        return tool;
    }
    candidates
        .filter(|t| t.runnable && t.actions.is_subset(&tool.actions))
        .filter(|t| nearest(&tool.vectors[0], &t.vectors) >= SAME_ABILITY)
        .max_by(|a, b| score(a).total_cmp(&score(b)))
        .unwrap_or(tool)
}

impl OfflinePlanner {
    /// Rule 18: the kinds of device `part` names that some tool takes as a
    /// value of a kind enum, stemmed.
    fn kinds_named(&self, part: &str) -> BTreeSet<String> {
        let named = self.tools.iter().flat_map(|t| crate::spoken::kinds_named(&t.schema, part, &t.context));
        named.map(|k| crate::tool_words::stem(&k)).collect()
    }

    /// Rule 18: whether `tool` is named for a kind of device other than
    /// the `kinds` named (none of them its own, nor one its enums take).
    fn for_another_kind(&self, tool: &ToolProfile, kinds: &BTreeSet<String>) -> bool {
        let mut own =
            tool.context.name.intersection(&self.kinds).filter(|w| !crate::fast_path::gate::is_verb(w)).peekable();
        let takes = || tool.kinds.iter().any(|k| kinds.contains(k));
        !kinds.is_empty() && own.peek().is_some() && !own.any(|k| kinds.contains(k)) && !takes()
    }

    /// Rule 16 on `scored` candidates: among the nearest, a tool the
    /// request gives the values the model passed it — its rooms, its
    /// devices by name — is nearer by [`TAUGHT_ARGUMENTS`].
    fn taught_ranking<'a>(
        &self,
        scored: Vec<(&'a ToolProfile, f32)>,
        part: &str,
        now: DateTime<FixedOffset>,
        taught: &TaughtPhrasings,
    ) -> Vec<(&'a ToolProfile, f32)> {
        let top = scored.iter().map(|(_, s)| *s).fold(f32::MIN, f32::max);
        let gain = |t: &ToolProfile, s: f32| match s + TAUGHT_ARGUMENTS >= top && self.as_taught(t, part, now, taught) {
            true => TAUGHT_ARGUMENTS,
            false => 0.0,
        };
        scored.into_iter().map(|(t, s)| (t, s + gain(t, s))).collect()
    }

    /// Rule 16: whether the text values `part` gives `tool` are all of
    /// parameters the model passed values for with this tool. "Switch the
    /// kettle on" gives either tool a device's name: the lights' tool was
    /// only ever given rooms, the devices' tool names.
    fn as_taught(&self, tool: &ToolProfile, part: &str, now: DateTime<FixedOffset>, taught: &TaughtPhrasings) -> bool {
        if !taught.has_values(&tool.name) {
            return false;
        }
        let args = args_taught(tool, part, now, taught);
        let mut texts = args.0.iter().filter(|(_, v)| v.is_string()).map(|(k, _)| k).peekable();
        texts.peek().is_some() && texts.all(|k| !taught.values(&tool.name, k).is_empty())
    }

    /// The arguments the request gives `tool` (by its schema), whatever
    /// tool the planner would choose: with the model away, a tool the
    /// model taught for requests like this one is completed with them
    /// (`fast_path::model_away`). `None` for a tool it does not know.
    pub fn arguments(&self, tool: &str, request: &str, now: DateTime<FixedOffset>) -> Option<ToolArgs> {
        self.arguments_taught(tool, request, now, &TaughtPhrasings::default())
    }

    /// [`OfflinePlanner::arguments`], a property the model passed the
    /// user's words for read as the tool's text (`property_roles`, rule 5).
    pub fn arguments_taught(
        &self,
        tool: &str,
        request: &str,
        now: DateTime<FixedOffset>,
        taught: &TaughtPhrasings,
    ) -> Option<ToolArgs> {
        self.tools.iter().find(|t| t.name == tool).map(|t| args_taught(t, request, now, taught))
    }

    /// Rule 10 for a call planned elsewhere — a near miss taken with the
    /// model away (`fast_path::model_away`): whether `step`'s tool sets
    /// something and `step` gives it nothing to set ("make the bedroom
    /// light brighter" near a taught "make the X light Y" is
    /// `HassLightSet` with a room and no colour). `false` for a tool it
    /// does not know.
    pub fn call_sets_nothing(&self, step: &PlanStep) -> bool {
        self.tools
            .iter()
            .find(|t| t.name == step.tool)
            .is_some_and(|t| t.actions.contains("set") && action_fit::gives_nothing_to_set(t, &step.args))
    }
}

/// The values the model passed for the parameter of `tool` a phrasing's
/// slot is masked as (`mask`: "covertypeslot"), as said and as passed,
/// and its enum's, when that parameter is a kind (its values an enum):
/// rule 11's test that a request fills the slot. `None` for any other
/// parameter.
fn taught_values(tool: &ToolProfile, mask: &str, taught: &TaughtPhrasings) -> Option<Vec<String>> {
    use crate::fast_path::slots;
    use serde_json::Value;
    let props = tool.schema.get("properties").and_then(Value::as_object)?;
    let kind = |spec: &Value| spec.get("enum").is_some() || spec.get("items").is_some_and(|i| i.get("enum").is_some());
    let (param, spec) =
        props.iter().find(|(p, spec)| kind(spec) && slots::unmasked(&slots::mask(p)) == slots::unmasked(mask))?;
    let taken = taught.values(&tool.name, param).iter();
    let members = crate::tool_words::enum_members(spec).map(str::to_owned);
    Some(
        taken
            .flat_map(|(said, v)| [Some(said.clone()), v.as_str().map(str::to_owned)])
            .flatten()
            .chain(members)
            .collect(),
    )
}

/// The sentences of a tool's description ("Read a file. Only works within
/// allowed directories." is two): split after `.`, `!` or `?` followed by
/// white space, and at line breaks; those of fewer than two words dropped.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        let end = i + c.len_utf8();
        let ends = c == '\n' || (matches!(c, '.' | '!' | '?') && text[end..].starts_with(char::is_whitespace));
        if ends {
            out.push(text[start..end].trim());
            start = end;
        }
    }
    out.push(text[start..].trim());
    out.retain(|s| s.split_whitespace().count() >= 2);
    out
}

/// The best cosine of `v` to any of `vectors` (a tool's phrasings, or the
/// small-talk ones).
fn nearest(v: &[f32], vectors: &[Vec<f32>]) -> f32 {
    vectors.iter().map(|tv| dot(v, tv)).fold(f32::MIN, f32::max)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Arguments for `tool` from `part`, by its schema ([`crate::arguments`]):
/// slots by name or format, enum values named, numbers, quoted strings,
/// proper nouns for places and names. A required argument left unfilled is
/// left out: the reply loop asks for it rather than call the tool.
fn args_for(tool: &ToolProfile, part: &str, now: DateTime<FixedOffset>) -> ToolArgs {
    crate::arguments::fill_for(&tool.name, &tool.description, &tool.schema, part, now).args
}

/// [`args_for`], the properties the model passed the user's words for read
/// as the tool's text (`property_roles`, rule 5).
fn args_taught(tool: &ToolProfile, part: &str, now: DateTime<FixedOffset>, taught: &TaughtPhrasings) -> ToolArgs {
    let schema = property_roles::taught_text(&tool.schema, &tool.name, taught);
    let mut args = crate::arguments::fill_for(&tool.name, &tool.description, &schema, part, now).args;
    for k in property_roles::taught_texts(&tool.schema, &tool.name, taught) {
        if args
            .0
            .get(k)
            .and_then(|v| v.as_str())
            .is_some_and(|s| !property_roles::taught_value_fits(s, &tool.name, k, taught))
        {
            args.0.remove(k);
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::parts::merge_repeats;
    use super::paths::path_form;
    use super::*;

    #[test]
    fn a_path_names_a_file_by_its_extension() {
        assert!(path_form("~/notes/todo.txt") == PathKind::File);
        assert!(path_form("report.md") == PathKind::File);
        for dir in ["~/projects", "~/notes/", "/", "~/.config", "docs.d/"] {
            assert!(path_form(dir) == PathKind::Dir, "{dir}");
        }
    }

    #[test]
    fn a_description_splits_into_sentences_at_stops_followed_by_space() {
        let d = "Search for files. Use a pattern like '*.ext' to match files in the current directory. Only works \
                 within allowed directories.";
        assert_eq!(
            sentences(d),
            [
                "Search for files.",
                "Use a pattern like '*.ext' to match files in the current directory.",
                "Only works within allowed directories."
            ]
        );
        assert_eq!(
            sentences("list the files and folders in a directory"),
            ["list the files and folders in a directory"]
        );
        assert_eq!(sentences("Echoes the text.\n\nOk. Second paragraph"), ["Echoes the text.", "Second paragraph"]);
    }

    #[test]
    fn a_call_repeated_with_no_value_of_its_own_is_one_call() {
        let step = |tool: &str, args: serde_json::Value| PlanStep {
            tool: tool.into(),
            args: ToolArgs(args.as_object().unwrap().clone()),
        };
        let mut steps = vec![
            step("weather", serde_json::json!({"city": "London"})),
            step("weather", serde_json::json!({})),
            step("light", serde_json::json!({"room": "kitchen"})),
            step("light", serde_json::json!({"room": "bedroom"})),
            step("weather", serde_json::json!({})),
        ];
        let mut from = vec!["a", "b", "c", "d", "e"];
        merge_repeats(&mut steps, &mut from);
        let tools: Vec<&str> = steps.iter().map(|s| s.tool.as_str()).collect();
        assert_eq!(tools, ["weather", "light", "light", "weather"]);
        assert_eq!(steps[0].args.0.get("city"), Some(&serde_json::json!("London")));
        assert_eq!(from, ["a", "c", "d", "e"]);
        // Values of other parameters each: one call with both ("a payment
        // of $250 to Margaret and mark it as private").
        let mut steps = vec![
            step("pay", serde_json::json!({"amount": 250, "receiver": "Margaret"})),
            step("pay", serde_json::json!({"private": true})),
            step("pay", serde_json::json!({"receiver": "Ann"})),
        ];
        let mut from = vec!["a", "b", "c"];
        merge_repeats(&mut steps, &mut from);
        assert_eq!(steps.len(), 2, "Ann's is a payment of its own");
        assert_eq!(steps[0].args.0.get("private"), Some(&serde_json::json!(true)));
        assert_eq!(steps[0].args.0.get("amount"), Some(&serde_json::json!(250)));
        assert_eq!(from, ["a", "c"]);
    }

    #[test]
    fn splits_on_english_and_italian_conjunctions() {
        assert_eq!(split_conjunctions("what time is it and where am I"), vec!["what time is it", "where am I"]);
        assert_eq!(split_conjunctions("read notes.txt, then list ~/docs"), vec!["read notes.txt", "list ~/docs"]);
        assert_eq!(split_conjunctions("che ore sono e poi dove sono"), vec!["che ore sono", "dove sono"]);
        assert_eq!(split_conjunctions("  hello  "), vec!["hello"]);
        assert!(split_conjunctions("   ").is_empty());
        assert_eq!(split_conjunctions("read a.txt and , and list b"), vec!["read a.txt", "list b"]);
        // A one-word part joins its neighbour: it asks nothing alone.
        assert_eq!(split_conjunctions("open and read the file a.md"), vec!["open read the file a.md"]);
        assert_eq!(split_conjunctions("read a.txt and undo"), vec!["read a.txt undo"]);
    }
}
