//! The deterministic argument extractor (seed 000 §10): the concrete values
//! a request carries — URLs, paths, e-mails, numbers, file extensions,
//! dates and time windows — found by rules, never by a model.
//!
//! The fast path uses it three ways: to re-extract a matched request's
//! arguments (L1), to resolve a pipeline's placeholders (L2, failing closed
//! when a value is missing), and to mask those values out of canonical
//! texts (`download URL and describe it`) so that similarity compares what
//! is asked, not which page.

use std::sync::OnceLock;

use chrono::{DateTime, Datelike, Duration, FixedOffset, NaiveDate};
use regex::Regex;
use serde_json::Value;

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SlotKind {
    /// `https://…`, `www.…`
    Url,
    /// `user@host.tld`
    Email,
    /// `~/…`, `/…`, "home" (→ `~/`)
    Path,
    /// A span of time ("this week", "last 24 hours"), as `{"from","to"}`.
    Window,
    /// A day ("today", "domani"), ISO `YYYY-MM-DD`.
    Date,
    /// A file type ("PDF files" → `*.pdf`).
    Extension,
    /// A number.
    Number,
    /// A proper noun: a run of capitalised words that does not open a
    /// sentence ("Innsbruck", "New York", "Marta"), as written — a place
    /// or a person a tool may take ([`proper_nouns`]).
    ProperName,
}

impl SlotKind {
    /// Every kind, in extraction priority order.
    pub const ALL: [SlotKind; 8] = [
        SlotKind::Url,
        SlotKind::Email,
        SlotKind::Path,
        SlotKind::Window,
        SlotKind::Date,
        SlotKind::Extension,
        SlotKind::Number,
        SlotKind::ProperName,
    ];

    /// The placeholder / mask name (`url`, `path`, …).
    pub fn name(self) -> &'static str {
        match self {
            SlotKind::Url => "url",
            SlotKind::Email => "email",
            SlotKind::Path => "path",
            SlotKind::Window => "window",
            SlotKind::Date => "date",
            SlotKind::Extension => "ext",
            SlotKind::Number => "number",
            // Not a word of either language: "name" is one ("what's my
            // name"), and a mask must never read as a word the user said.
            SlotKind::ProperName => "propername",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<SlotKind> {
        SlotKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// One extracted value and where it was in the (apostrophe-straightened)
/// text.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// What it is.
    pub kind: SlotKind,
    /// Its value as an argument would hold it.
    pub value: Value,
    /// Byte range in [`Extracted::text`].
    pub span: (usize, usize),
}

/// Everything extracted from one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extracted {
    /// The text the spans refer to (typographic apostrophes straightened).
    pub text: String,
    /// The values, in text order.
    pub slots: Vec<Slot>,
}

impl Extracted {
    /// The values of one kind, in text order.
    pub fn of(&self, kind: SlotKind) -> impl Iterator<Item = &Value> {
        self.slots.iter().filter(move |s| s.kind == kind).map(|s| &s.value)
    }

    /// These values without those of `kind`: the text as if the rules had
    /// not seen them (a proper noun a learnt row does not take stays a
    /// word of its canonical text).
    pub fn without(&self, kind: SlotKind) -> Extracted {
        Extracted { text: self.text.clone(), slots: self.slots.iter().filter(|s| s.kind != kind).cloned().collect() }
    }

    /// The text with every value replaced by its kind's name in capitals
    /// (`download URL and describe it`).
    pub fn masked(&self) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut at = 0;
        for s in &self.slots {
            out.push_str(&self.text[at..s.span.0]);
            out.push(' ');
            out.push_str(&s.kind.name().to_uppercase());
            out.push(' ');
            at = s.span.1;
        }
        out.push_str(&self.text[at..]);
        out
    }
}

const EXTENSIONS: &str = "pdf|docx?|txt|md|markdown|jpe?g|png|gif|webp|heic|mp3|mp4|mov|wav|csv|xlsx?|pptx?|json|ya?ml|toml|py|rs|js|ts|html?|zip|tar|gz|epub|odt";

struct Rules {
    url: Regex,
    email: Regex,
    path: Regex,
    home: Regex,
    window_n: Regex,
    window_named: Regex,
    date: Regex,
    ext: Regex,
    number: Regex,
    /// A run of letters: the words a number may be said in.
    word: Regex,
    token: Regex,
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        let r = |s: &str| Regex::new(s).expect("extractor rule compiles");
        Rules {
            url: r(r#"(?i)\b(?:https?://|www\.)[^\s<>"'`]+"#),
            email: r(r"(?i)\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b"),
            path: r(r#"(?:^|[\s(\["'])(~/[^\s,;"'()\[\]]*|~|/[^\s,;"'()\[\]/][^\s,;"'()\[\]]*)"#),
            home: r(r"(?i)\b(?:(?:the |my )?home (?:folder|directory|dir)|cartella home|(?:in|into|nella|sulla) home)\b"),
            window_n: r(
                r"(?i)\b(?:(?:in |over |during )?the )?(?:last|past|previous|(?:negli |nelle )?ultim[ei])\s+(\d{1,4})\s+(hours?|days?|weeks?|ore|giorni|settimane)\b",
            ),
            window_named: r(
                r"(?i)\b(this week|last week|this month|last month|questa settimana|(?:la )?settimana scorsa|questo mese|(?:il )?mese scorso)\b",
            ),
            date: r(
                r"(?i)\b(?:(?:the )?day after tomorrow|(?:the )?day before yesterday|dopodomani|l'altro ieri|l'altroieri|altroieri|today(?:'s)?|tonight|yesterday(?:'s)?|tomorrow(?:'s)?|oggi|stasera|ieri|domani)\b",
            ),
            ext: r(&format!(
                r"(?i)(?:\*?\.({e})\b|\b({e})s?\s+(?:files?|documents?|documenti|immagini|images|photos|foto)\b|\b(?:files?|documenti|documento)\s+({e})\b)",
                e = EXTENSIONS
            )),
            number: r(r"\b\d+(?:[.,]\d+)?\b"),
            word: r(r"\p{L}+"),
            token: r(r"\S+"),
        }
    })
}

/// The number written in digits at `m` of `text` and where it ends —
/// after "e mezzo" / "and a half" when they follow it ("22 e mezzo" is
/// 22.5, [`super::numbers::half_after`]).
fn digits(text: &str, m: regex::Match<'_>) -> Option<(Value, usize)> {
    let v = m.as_str().replace(',', ".");
    let after: Vec<&str> = text[m.end()..].split_whitespace().take(3).collect();
    let bare = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
    let lower: Vec<String> = after.iter().map(|w| bare(w).to_lowercase()).collect();
    match (super::numbers::half_after(&lower), v.parse::<i64>()) {
        (0, Ok(n)) => Some((Value::from(n), m.end())),
        (0, Err(_)) => v.parse::<f64>().ok().map(|n| (Value::from(n), m.end())),
        (half, parsed) => {
            let n = parsed.map(|n| n as f64).or_else(|_| v.parse::<f64>()).ok()?;
            let last = bare(after[half - 1]);
            let end = m.end() + text[m.end()..].find(&last).map_or(0, |at| at + last.len());
            Some((Value::from(n + 0.5), end))
        }
    }
}

/// Extracts every value from `text`, with `now` (the user's local time)
/// anchoring relative dates and windows.
pub fn extract(text: &str, now: DateTime<FixedOffset>) -> Extracted {
    let text = durations_in_minutes(text);
    let text: String = text.chars().map(|c| if matches!(c, '\u{2019}' | '\u{2018}') { '\'' } else { c }).collect();
    let r = rules();
    let mut slots: Vec<Slot> = Vec::new();
    let free = |slots: &[Slot], s: usize, e: usize| slots.iter().all(|x| e <= x.span.0 || s >= x.span.1);
    let add = |slots: &mut Vec<Slot>, kind: SlotKind, value: Value, s: usize, e: usize| {
        if free(slots, s, e) {
            slots.push(Slot { kind, value, span: (s, e) });
        }
    };
    for m in r.url.find_iter(&text) {
        let v = m.as_str().trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}']);
        add(&mut slots, SlotKind::Url, Value::from(v), m.start(), m.start() + v.len());
    }
    for m in r.email.find_iter(&text) {
        add(&mut slots, SlotKind::Email, Value::from(m.as_str()), m.start(), m.end());
    }
    for c in r.path.captures_iter(&text) {
        let m = c.get(1).expect("group 1");
        let v = m.as_str().trim_end_matches(['.', ',', ';', ':', '!', '?']);
        let value = if v == "~" { "~/" } else { v };
        add(&mut slots, SlotKind::Path, Value::from(value), m.start(), m.start() + v.len());
    }
    for m in r.home.find_iter(&text) {
        add(&mut slots, SlotKind::Path, Value::from("~/"), m.start(), m.end());
    }
    let today = now.date_naive();
    for c in r.window_n.captures_iter(&text) {
        let m = c.get(0).expect("match");
        let n: i64 = c[1].parse().unwrap_or(0);
        let unit = c[2].to_lowercase();
        let span = if unit.starts_with("hour") || unit == "ore" {
            Duration::hours(n)
        } else if unit.starts_with("week") || unit == "settimane" {
            Duration::weeks(n)
        } else {
            Duration::days(n)
        };
        add(&mut slots, SlotKind::Window, window(now - span, now), m.start(), m.end());
    }
    for m in r.window_named.find_iter(&text) {
        add(&mut slots, SlotKind::Window, named_window(&m.as_str().to_lowercase(), today), m.start(), m.end());
    }
    for m in r.date.find_iter(&text) {
        let w = m.as_str().to_lowercase();
        let offset = if w.contains("after") || w == "dopodomani" {
            2
        } else if w.contains("before") || w.contains("altro") {
            -2
        } else if w.starts_with("yesterday") || w == "ieri" {
            -1
        } else if w.starts_with("tomorrow") || w == "domani" {
            1
        } else {
            0
        };
        let day = today + Duration::days(offset);
        add(&mut slots, SlotKind::Date, Value::from(day.format("%Y-%m-%d").to_string()), m.start(), m.end());
    }
    for c in r.ext.captures_iter(&text) {
        let m = c.get(0).expect("match");
        let e = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)).expect("one group").as_str().to_lowercase();
        let e = match e.as_str() {
            "jpeg" => "jpg".to_owned(),
            "markdown" => "md".to_owned(),
            _ => e,
        };
        add(&mut slots, SlotKind::Extension, Value::from(format!("*.{e}")), m.start(), m.end());
    }
    for m in r.number.find_iter(&text) {
        if let Some((value, end)) = digits(&text, m) {
            add(&mut slots, SlotKind::Number, value, m.start(), end);
        }
    }
    // Numbers said in words ("five minutes", "ventidue gradi").
    let words: Vec<regex::Match<'_>> = r.word.find_iter(&text).collect();
    let lower: Vec<String> = words.iter().map(|m| m.as_str().to_lowercase()).collect();
    let all: Vec<&str> = lower.iter().map(String::as_str).collect();
    let mut i = 0;
    while i < words.len() {
        match super::numbers::parse_at(&all, i) {
            Some((n, used)) => {
                let value = if n.fract() == 0.0 { Value::from(n as i64) } else { Value::from(n) };
                add(&mut slots, SlotKind::Number, value, words[i].start(), words[i + used - 1].end());
                i += used;
            }
            None => i += 1,
        }
    }
    // Last: a capitalised run is a name only where nothing above claimed it.
    for (s, e) in proper_nouns(&text) {
        add(&mut slots, SlotKind::ProperName, Value::from(&text[s..e]), s, e);
    }
    slots.sort_by_key(|s| s.span.0);
    Extracted { text, slots }
}

/// The byte spans of `text`'s proper nouns: runs of words that open with a
/// capital letter where a sentence does not open ("is it snowing in
/// Innsbruck", "what's the weather in New York, please", "Piove a
/// Bologna?"). A run ends at punctuation; "I" and its contractions are
/// not names, a possessive "'s" is not part of one; a particle between
/// two capitalised words is ("Guillermo del Toro"). Capitalisation is the
/// only signal: a request in lower case names none (the offline planner's
/// argument filler has its own fallback for that, `arguments`).
pub fn proper_nouns(text: &str) -> Vec<(usize, usize)> {
    /// Lower-case words inside a name, between two capitalised ones
    /// ("Guillermo del Toro", "Leonardo da Vinci", "Thurop van Orman").
    const PARTICLES: &[&str] = &["de", "del", "della", "der", "den", "van", "von", "da", "di", "du", "dos", "le", "la"];
    let mut out = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    // A particle after a run: the run goes on if a capitalised word
    // follows it.
    let mut particle = false;
    let mut opens = true;
    for m in rules().token.find_iter(text) {
        let (at, raw) = (m.start(), m.as_str());
        let lead = raw.len() - raw.trim_start_matches(|c: char| !c.is_alphanumeric()).len();
        let core = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let core = core.strip_suffix("'s").unwrap_or(core);
        let pronoun = core == "I" || core.starts_with("I'");
        let capital = core.chars().next().is_some_and(char::is_uppercase) && !opens && !pronoun;
        let was_particle = std::mem::take(&mut particle);
        if capital {
            let (s, e) = (at + lead, at + lead + core.len());
            run = Some(run.map_or((s, e), |(s0, _)| (s0, e)));
        } else if run.is_some() && !was_particle && raw == core && PARTICLES.contains(&core) {
            particle = true;
        } else if let Some(r) = run.take() {
            out.push(r);
        }
        // A run ends at punctuation too ("Rome, please"), and a sentence
        // opens after . ! ? — but not after initials ("C.J. Rush",
        // "Sterling K. Brown").
        let initials = raw.len() >= 2
            && raw.split_terminator('.').all(|p| p.len() == 1 && p.chars().all(|c| c.is_ascii_uppercase()));
        if raw.ends_with([',', '.', '!', '?', ';', ':', ')', '"']) && !initials {
            out.extend(run.take());
        }
        opens = raw.ends_with(['.', '!', '?']) && !initials;
    }
    out.extend(run);
    out
}

fn window(from: DateTime<FixedOffset>, to: DateTime<FixedOffset>) -> Value {
    serde_json::json!({
        "from": from.to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
        "to": to.to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
    })
}

/// "this week", "il mese scorso", …: the days of the week or month named,
/// from `today`.
fn named_window(name: &str, today: NaiveDate) -> Value {
    let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
    let first = today.with_day(1).expect("day 1");
    let (from, to) = if name.contains("week") || name.contains("settimana") {
        if name.contains("last") || name.contains("scorsa") {
            (monday - Duration::days(7), monday - Duration::days(1))
        } else {
            (monday, monday + Duration::days(6))
        }
    } else if name.contains("last") || name.contains("scorso") {
        let prev_last = first - Duration::days(1);
        (prev_last.with_day(1).expect("day 1"), prev_last)
    } else {
        let next_first = if first.month() == 12 {
            NaiveDate::from_ymd_opt(first.year() + 1, 1, 1)
        } else {
            NaiveDate::from_ymd_opt(first.year(), first.month() + 1, 1)
        }
        .expect("valid month");
        (first, next_first - Duration::days(1))
    };
    day_window(from, to)
}

fn day_window(from: NaiveDate, to: NaiveDate) -> Value {
    serde_json::json!({ "from": from.format("%Y-%m-%d").to_string(), "to": to.format("%Y-%m-%d").to_string() })
}

/// `text` with the durations people say without a figure ("half an
/// hour", "un quarto d'ora", "an hour and a half") as minutes ("30
/// minutes"): a number in its unit for the fast path's slots and the
/// argument rules, and no name or place of its own; and "and a half"
/// said after a unit before it ("ventuno gradi e mezzo": "ventuno e mezzo
/// gradi"), where the numbers read it. [`extract`] reads the text so; a
/// caller that reads the words itself too (the argument rules' word
/// order) rewrites the request once first.
pub fn durations_in_minutes(text: &str) -> std::borrow::Cow<'_, str> {
    static SAID: std::sync::OnceLock<Vec<(regex::Regex, &'static str)>> = std::sync::OnceLock::new();
    let said = SAID.get_or_init(|| {
        [
            (r"(?i)\b(?:an|one) hour and a half\b|\bun['’]ora e mezz[ao]\b", "90 minutes"),
            (r"(?i)\bthree quarters of an hour\b|\btre quarti d['’]ora\b", "45 minutes"),
            (r"(?i)\b(?:a |one )?half(?: an|-an|-)? ?hour\b|\bmezz['’]?ora\b|\bmezza ora\b", "30 minutes"),
            (r"(?i)\b(?:a |one )?quarter(?: of an|-)? ?hour\b|\bun quarto d['’]ora\b", "15 minutes"),
        ]
        .into_iter()
        .map(|(rule, minutes)| (regex::Regex::new(rule).expect("duration rule compiles"), minutes))
        .collect()
    });
    // "and a half" said after a unit is said before it: "ventuno gradi e
    // mezzo" is "ventuno e mezzo gradi", 21.5 ([`super::numbers::half_after`]).
    static UNIT_HALF: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let unit_half = UNIT_HALF.get_or_init(|| {
        regex::Regex::new(
            r"(?i)\b(minutes?|minut[oi]|seconds?|second[oi]|hours?|or[ae]|degrees|gradi|percent|per cento) (and a half|e mezz[oa])\b",
        )
        .expect("unit-half rule compiles")
    });
    let mut text = std::borrow::Cow::Borrowed(text);
    for (rule, minutes) in said {
        if rule.is_match(&text) {
            text = std::borrow::Cow::Owned(rule.replace_all(&text, *minutes).into_owned());
        }
    }
    if unit_half.is_match(&text) {
        text = std::borrow::Cow::Owned(unit_half.replace_all(&text, "$2 $1").into_owned());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<FixedOffset> {
        // Monday 23 November 2026, 10:30 in Rome.
        DateTime::parse_from_rfc3339("2026-11-23T10:30:00+01:00").unwrap()
    }

    fn kinds(text: &str) -> Vec<(SlotKind, Value)> {
        extract(text, now()).slots.into_iter().map(|s| (s.kind, s.value)).collect()
    }

    #[test]
    fn urls_emails_paths() {
        assert_eq!(
            kinds("download https://example.org/a?b=1, and describe it."),
            vec![(SlotKind::Url, "https://example.org/a?b=1".into())]
        );
        assert_eq!(kinds("mail it to anna.rossi@example.it"), vec![(SlotKind::Email, "anna.rossi@example.it".into())]);
        assert_eq!(kinds("read ~/notes/todo.md please"), vec![(SlotKind::Path, "~/notes/todo.md".into())]);
        assert_eq!(kinds("list /var/log"), vec![(SlotKind::Path, "/var/log".into())]);
        assert_eq!(kinds("list the files in my home folder"), vec![(SlotKind::Path, "~/".into())]);
        assert_eq!(kinds("elenca i file nella home"), vec![(SlotKind::Path, "~/".into())]);
        // Not paths: a slash inside a word, a URL's path.
        assert_eq!(kinds("and/or"), vec![]);
        assert_eq!(kinds("see www.example.org/x").len(), 1);
    }

    /// A duration said without a figure is a number of minutes, so a
    /// phrasing learnt with "20 minutes" serves "half an hour".
    #[test]
    fn durations_said_in_words_are_minutes() {
        for (text, minutes) in [
            ("uh set a timer for half an hour", 30),
            ("metti un timer di un quarto d'ora", 15),
            ("timer di mezz’ora", 30),
            ("an hour and a half on the oven timer", 90),
        ] {
            let e = extract(text, now());
            assert_eq!(e.of(SlotKind::Number).cloned().collect::<Vec<_>>(), [Value::from(minutes)], "{text}");
            assert!(e.masked().contains("NUMBER  minutes"), "{text}: {}", e.masked());
        }
    }

    /// "And a half" after a unit is half of the number before it:
    /// "cinque minuti e mezzo" was 5 minutes served.
    #[test]
    fn a_half_after_its_unit_is_the_numbers() {
        for (text, number) in [
            ("timer di cinque minuti e mezzo", 5.5),
            ("metti ventuno gradi e mezzo in sala", 21.5),
            ("make it nineteen degrees and a half", 19.5),
            ("un'ora e mezza di timer", 90.0),
        ] {
            let e = extract(text, now());
            let got: Vec<f64> = e.of(SlotKind::Number).filter_map(Value::as_f64).collect();
            assert_eq!(got, [number], "{text}");
        }
    }

    #[test]
    fn dates_en_and_it_to_iso() {
        for (text, day) in [
            ("what's on today", "2026-11-23"),
            ("today’s appointments", "2026-11-23"),
            ("what did I do yesterday", "2026-11-22"),
            ("remind me tomorrow", "2026-11-24"),
            ("the day after tomorrow", "2026-11-25"),
            ("the day before yesterday", "2026-11-21"),
            ("appuntamenti di oggi", "2026-11-23"),
            ("cosa ho fatto ieri", "2026-11-22"),
            ("ricordamelo domani", "2026-11-24"),
            ("dopodomani", "2026-11-25"),
            ("l'altro ieri", "2026-11-21"),
        ] {
            assert_eq!(kinds(text), vec![(SlotKind::Date, day.into())], "{text}");
        }
    }

    #[test]
    fn windows() {
        let w = |from: &str, to: &str| serde_json::json!({"from": from, "to": to});
        assert_eq!(kinds("photos from this week"), vec![(SlotKind::Window, w("2026-11-23", "2026-11-29"))]);
        assert_eq!(kinds("foto della settimana scorsa"), vec![(SlotKind::Window, w("2026-11-16", "2026-11-22"))]);
        assert_eq!(kinds("mails this month"), vec![(SlotKind::Window, w("2026-11-01", "2026-11-30"))]);
        assert_eq!(
            kinds("errors in the last 24 hours"),
            vec![(SlotKind::Window, w("2026-11-22T10:30:00+01:00", "2026-11-23T10:30:00+01:00"))]
        );
        assert_eq!(
            kinds("file modificati negli ultimi 7 giorni"),
            vec![(SlotKind::Window, w("2026-11-16T10:30:00+01:00", "2026-11-23T10:30:00+01:00"))]
        );
        assert_eq!(kinds("nelle ultime 24 ore").len(), 1);
        assert_eq!(kinds("last 7 days")[0].0, SlotKind::Window);
    }

    #[test]
    fn extensions_and_numbers() {
        assert_eq!(kinds("find the PDF files"), vec![(SlotKind::Extension, "*.pdf".into())]);
        assert_eq!(kinds("trova i file pdf"), vec![(SlotKind::Extension, "*.pdf".into())]);
        assert_eq!(kinds("show *.JPEG"), vec![(SlotKind::Extension, "*.jpg".into())]);
        assert_eq!(kinds("jpg photos"), vec![(SlotKind::Extension, "*.jpg".into())]);
        assert_eq!(kinds("set the volume to 40"), vec![(SlotKind::Number, 40.into())]);
        assert_eq!(kinds("2,5 km"), vec![(SlotKind::Number, 2.5.into())]);
        // Said in words, as a voice transcript spells them.
        assert_eq!(kinds("set a timer for five minutes"), vec![(SlotKind::Number, 5.into())]);
        assert_eq!(kinds("metti il termostato a ventidue gradi"), vec![(SlotKind::Number, 22.into())]);
        assert_eq!(kinds("twenty-two point five degrees"), vec![(SlotKind::Number, 22.5.into())]);
        assert_eq!(kinds("the one in the kitchen"), vec![]);
        // And a half, in words or after digits: 22.5, never 22.
        assert_eq!(kinds("metti il riscaldamento a ventidue e mezzo in studio"), vec![(SlotKind::Number, 22.5.into())]);
        assert_eq!(kinds("heating to 21 and a half please"), vec![(SlotKind::Number, 21.5.into())]);
        assert_eq!(kinds("a 19 e mezzo, grazie"), vec![(SlotKind::Number, 19.5.into())]);
        // A number inside a window or a URL is not a separate number.
        assert_eq!(kinds("last 7 days").len(), 1);
        assert_eq!(kinds("https://a.org/7").len(), 1);
    }

    #[test]
    fn proper_nouns_are_capitalised_runs_that_do_not_open_a_sentence() {
        let names = |text: &str| extract(text, now()).of(SlotKind::ProperName).cloned().collect::<Vec<_>>();
        assert_eq!(names("is it snowing in Innsbruck?"), ["Innsbruck"]);
        assert_eq!(names("what's the weather in New York, please"), ["New York"]);
        assert_eq!(names("Piove a Bologna stasera?"), ["Bologna"]);
        assert_eq!(names("send Marta's notes to Luca"), ["Marta", "Luca"]);
        assert_eq!(names("a film directed by Guillermo del Toro"), ["Guillermo del Toro"]);
        assert_eq!(names("songs by Ed Sheeran de la radio"), ["Ed Sheeran"], "no name after the particle");
        assert_eq!(
            names("a film with C.J. Rush and Sterling K. Brown"),
            ["C.J. Rush", "Sterling K. Brown"],
            "initials"
        );
        // Openings, "I" and its contractions, lower case: no names.
        assert!(names("Turn on the lights. Then I'll read").is_empty());
        assert!(names("weather in new york").is_empty());
        // Another rule's value is not a name too.
        assert_eq!(kinds("read ~/Notes/Todo.md"), vec![(SlotKind::Path, "~/Notes/Todo.md".into())]);
        let e = extract("what's the weather in New York", now());
        assert_eq!(e.masked(), "what's the weather in  PROPERNAME ");
        assert_eq!(e.without(SlotKind::ProperName).masked(), "what's the weather in New York");
    }

    #[test]
    fn masking() {
        let e = extract("Download https://example.org/a and describe it", now());
        assert_eq!(e.masked(), "Download  URL  and describe it");
        let e = extract("show tomorrow's appointments in ~/cal", now());
        assert_eq!(e.masked(), "show  DATE  appointments in  PATH ");
        assert_eq!(extract("nothing here", now()).masked(), "nothing here");
    }
}
