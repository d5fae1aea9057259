//! Rule 1 of the argument filler: a slot of the property's name or
//! format — the extractor's slots, days said in full (ISO, written out,
//! numeric) and times of day, written as the description asks. Separate
//! because reading and writing days is a concern of its own, beside the
//! rules that place the other values.

use chrono::{DateTime, FixedOffset};
use serde_json::Value;

use super::{description_of, overlaps, Said, Taken};
use crate::fast_path::extract::SlotKind;
use crate::tool_words::split_name;

/// Rule 1's absolute dates: `2023-04-08`, "May 15, 2023", "the 4th of
/// March 2023", "15 maggio" — as ISO days, with their spans; a date
/// without a year is in the year of the next date said with one, else in
/// `now`'s.
pub(super) fn absolute_dates(text: &str, now: DateTime<FixedOffset>) -> Vec<((usize, usize), String)> {
    use chrono::Datelike;
    static RULES: std::sync::OnceLock<[regex::Regex; 5]> = std::sync::OnceLock::new();
    let [iso, month_first, day_first, numeric, year_alone] = RULES.get_or_init(|| {
        let r = |s: &str| regex::Regex::new(s).expect("date rule compiles");
        let month = crate::calendar::alternation();
        [
            r(r"\b(\d{4})([-./])(\d{1,2})[-./](\d{1,2})\b"),
            r(&format!(r"(?i)\b({month})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?")),
            r(&format!(r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({month})\b\.?(?:,?\s+(\d{{4}})\b)?")),
            r(r"\b(\d{1,2})([/.-])(\d{1,2})[/.-](\d{4})\b"),
            r(r"\b(19\d{2}|20\d{2})\b"),
        ]
    });
    // The rules capture a name of the calendar's, in any case.
    let month = |m: &str| crate::calendar::month_of(&m.to_lowercase()).map(|i| i as u32 + 1);
    type Found = ((usize, usize), Option<i32>, u32, u32);
    let mut found: Vec<Found> = Vec::new();
    let mut push = |span: (usize, usize), y: Option<i32>, m: Option<u32>, d: Option<u32>| {
        if let (Some(m), Some(d)) = (m, d) {
            if !found.iter().any(|o| overlaps(o.0, span)) {
                found.push((span, y, m, d));
            }
        }
    };
    for c in iso.captures_iter(text) {
        let m = c.get(0).expect("match");
        push((m.start(), m.end()), c[1].parse().ok(), c[3].parse().ok(), c[4].parse().ok());
    }
    // `05/15/2023` month first, as in the US; day first when the first
    // number cannot be a month (`15/05/2023`) or the separator is a dot
    // or a dash (`15.05.2023`, as Italians write).
    for c in numeric.captures_iter(text) {
        let m = c.get(0).expect("match");
        let (a, b): (Option<u32>, Option<u32>) = (c[1].parse().ok(), c[3].parse().ok());
        let day_first = &c[2] != "/" || a.is_some_and(|a| a > 12);
        let (mo, d) = if day_first { (b, a) } else { (a, b) };
        push((m.start(), m.end()), c[4].parse().ok(), mo, d);
    }
    for c in month_first.captures_iter(text) {
        let m = c.get(0).expect("match");
        push((m.start(), m.end()), c.get(3).and_then(|y| y.as_str().parse().ok()), month(&c[1]), c[2].parse().ok());
    }
    for c in day_first.captures_iter(text) {
        let m = c.get(0).expect("match");
        push((m.start(), m.end()), c.get(3).and_then(|y| y.as_str().parse().ok()), month(&c[2]), c[1].parse().ok());
    }
    found.sort_by_key(|d| d.0);
    // A year said alone, outside every date ("on March 11th? this year
    // 2023").
    let alone = year_alone
        .find_iter(text)
        .find(|y| !found.iter().any(|f| overlaps(f.0, (y.start(), y.end()))))
        .and_then(|y| y.as_str().parse().ok());
    // A date without its year shares the next one's, as a range says it
    // once ("from April 15th to April 22nd 2023"), else an earlier one's
    // ("from April 18th 2023 until April 24th"), else the year said alone;
    // else it is in now's.
    (0..found.len())
        .filter_map(|i| {
            let (span, year, m, d) = found[i];
            let year = year
                .or_else(|| found[i + 1..].iter().find_map(|f| f.1))
                .or_else(|| found[..i].iter().rev().find_map(|f| f.1))
                .or(alone)
                .unwrap_or(now.year());
            let day = chrono::NaiveDate::from_ymd_opt(year, m, d)?;
            Some((span, day.format("%Y-%m-%d").to_string()))
        })
        .collect()
}

/// The day `dates` holds that the request says is today ("today is
/// Monday April 25th 2023", "today's date is 2023.10.1", "oggi è il 3
/// maggio"), taken out of `dates`: it dates what is said relative to it
/// ("the upcoming Saturday").
pub(super) fn stated_today(text: &str, dates: &mut Vec<((usize, usize), String)>) -> Option<((usize, usize), String)> {
    static TODAY: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let today = TODAY.get_or_init(|| {
        regex::Regex::new(
            r"(?i)\b(?:today(?:'s date)?\s+is|current(?:ly)? it'?s|oggi\s+è)\s+(?:il\s+)?(?:\w+day,?\s+|\w+dì,?\s+)?$",
        )
        .expect("today rule compiles")
    });
    let at = dates.iter().position(|(span, _)| today.is_match(&text[..span.0]))?;
    Some(dates.remove(at))
}

/// Weekdays said as the next one of their name ("the upcoming Wednesday",
/// "next Friday", "this Saturday", "venerdì prossimo"), as ISO days
/// counted from `today` (the first after it), with their spans.
pub(super) fn weekday_dates(text: &str, today: chrono::NaiveDate) -> Vec<((usize, usize), String)> {
    use crate::calendar::WEEKDAYS;
    use chrono::Datelike;
    static RULES: std::sync::OnceLock<[regex::Regex; 2]> = std::sync::OnceLock::new();
    let [before, after] = RULES.get_or_init(|| {
        let days = WEEKDAYS.iter().map(|d| d.en).chain(WEEKDAYS.iter().map(|d| d.it)).collect::<Vec<_>>().join("|");
        let r = |s: String| regex::Regex::new(&s).expect("weekday rule compiles");
        [
            r(format!(r"(?i)\b(?:upcoming|next|this|coming|prossimo|prossima|questo|questa)\s+({days})\b")),
            r(format!(r"(?i)\b({days})\s+(?:prossimo|prossima)\b")),
        ]
    });
    let mut out: Vec<((usize, usize), String)> = Vec::new();
    for rule in [before, after] {
        // (In the order said, whichever rule reads them.)
        for c in rule.captures_iter(text) {
            let m = c.get(0).expect("match");
            let name = c[1].to_lowercase();
            let Some(i) = WEEKDAYS.iter().position(|d| d.en == name || d.it == name) else {
                continue;
            };
            let ahead = (i as i64 - i64::from(today.weekday().num_days_from_monday())).rem_euclid(7);
            let day = today + chrono::Duration::days(if ahead == 0 { 7 } else { ahead });
            out.push(((m.start(), m.end()), day.format("%Y-%m-%d").to_string()));
        }
    }
    out.sort_by_key(|d| d.0);
    out
}

/// Whether a string property holds a day: `date` among its name's words,
/// or a description that asks for a day's format.
pub(super) fn date_like(name: &str, spec: &Value) -> bool {
    let description = description_of(spec);
    split_name(name).iter().any(|w| w == "date")
        || description.contains("YYYY-MM-DD")
        || date_format(description).is_some()
}

/// Whether a string property holds a time of day: `time` among its
/// name's words (not a `timeout`, `timezone` or `timestamp`, which split
/// as one word), or a description that asks for `HH:MM`; never one with
/// an enum.
pub(super) fn time_like(name: &str, spec: &Value) -> bool {
    let description = description_of(spec);
    spec.get("type").and_then(Value::as_str) == Some("string")
        && spec.get("enum").is_none()
        && (split_name(name).iter().any(|w| w == "time") || description.contains("HH:MM"))
}

/// Whether a string property holds a moment — a day or a time of day
/// ([`date_like`], [`time_like`]): no place, name or other value.
pub(super) fn moment_like(name: &str, spec: &Value) -> bool {
    date_like(name, spec) || time_like(name, spec)
}

/// The first time of day no property took ([`crate::time_of_day`]), as
/// the description asks: `HH:MM:SS` when it says so, else `HH:MM` (24
/// hours — what "HH:MM" means, and what tools mostly ask).
pub(super) fn take_time(spec: &Value, said: &Said<'_>, taken: &mut Taken) -> Option<Value> {
    let i = (0..said.times.len()).find(|i| !taken.times.contains(i))?;
    taken.times.push(i);
    Some(Value::String(said.times[i].time.format(time_format(spec)).to_string()))
}

/// The time format a description asks for: `HH:MM:SS` when it says so and
/// offers no `HH:MM` beside it ("such as 'HH:MM:SS', 'HH:MM'" takes the
/// shorter), else `HH:MM`; any case ("HH:mm:ss").
fn time_format(spec: &Value) -> &'static str {
    let upper = description_of(spec).to_uppercase();
    let seconds = upper.matches("HH:MM:SS").count();
    if seconds > 0 && upper.matches("HH:MM").count() == seconds {
        "%H:%M:%S"
    } else {
        "%H:%M"
    }
}

/// A window of time the schema asks for as two moments, each a day and a
/// time, named as its start and its end (`start_available_date` and
/// `end_available_date`, "in the format 'YYYY-MM-DD HH:mm:ss'"): their
/// names.
fn day_window(properties: &serde_json::Map<String, Value>) -> Option<(&String, &String)> {
    let moment = |(name, spec): &(&String, &Value)| {
        spec.get("type").and_then(Value::as_str) == Some("string")
            && date_like(name, spec)
            && description_of(spec).to_uppercase().contains("HH:MM")
    };
    let moments: Vec<(&String, &Value)> = properties.iter().filter(moment).collect();
    // Its ends named as such: a departure and a return are two events,
    // each said with its own time or none.
    let named = |name: &str, ends: &[&str]| split_name(name).iter().any(|w| ends.contains(&w.as_str()));
    let end = moments.iter().find(|(name, _)| named(name, &["end", "until", "to"]))?.0;
    let start = moments.iter().find(|(name, _)| named(name, &["start", "begin", "from"]))?.0;
    (moments.len() == 2).then_some((start, end))
}

/// Rule 1 for a [`day_window`] of the schema: its start's and end's names
/// with what the request says of them, read as a span of time — "on March
/// 22nd" is the whole day (its first and last second), "between 10:30 and
/// 7 p.m." starts and ends at those times, "at 11:00" starts then and says
/// no end (`None`). Empty when there is no window or no day is said (the
/// rules read each moment alone).
pub(super) fn fill_window(
    properties: &serde_json::Map<String, Value>,
    said: &Said<'_>,
    taken: &mut Taken,
) -> Vec<(String, Option<Value>)> {
    let Some((start, end)) = day_window(properties) else { return Vec::new() };
    match window_values((&properties[start], &properties[end]), said, taken) {
        Some((from, to)) => vec![(start.clone(), Some(from)), (end.clone(), to)],
        None => Vec::new(),
    }
}

/// [`fill_window`]'s values, from the start's and the end's specs.
fn window_values((start, end): (&Value, &Value), said: &Said<'_>, taken: &mut Taken) -> Option<(Value, Option<Value>)> {
    let first = take_date("start", start, &said.dates, &said.ex, taken)?;
    let first = first.as_str()?.to_owned();
    let last = (0..said.dates.len()).find(|i| !taken.dates.contains(i)).map(|i| {
        taken.dates.push(i);
        said.dates[i].1.clone()
    });
    let joint = |spec: &Value| if description_of(spec).to_uppercase().contains("DDTHH") { 'T' } else { ' ' };
    let at = |spec: &Value, day: &str, time: String| Value::String(format!("{day}{}{time}", joint(spec)));
    let times: Vec<usize> = (0..said.times.len()).filter(|i| !taken.times.contains(i)).take(2).collect();
    taken.times.extend(&times);
    let time = |spec: &Value, i: usize| said.times[i].time.format(time_format(spec)).to_string();
    let edge = |spec: &Value, h: u32, m: u32, s: u32| {
        let t = chrono::NaiveTime::from_hms_opt(h, m, s).expect("a valid time");
        t.format(time_format(spec)).to_string()
    };
    let last_day = last.as_deref().unwrap_or(&first);
    Some(match times[..] {
        [a, b] => (at(start, &first, time(start, a)), Some(at(end, last_day, time(end, b)))),
        [a] => (at(start, &first, time(start, a)), last.as_deref().map(|d| at(end, d, edge(end, 23, 59, 59)))),
        _ => (at(start, &first, edge(start, 0, 0, 0)), Some(at(end, last_day, edge(end, 23, 59, 59)))),
    })
}

/// Whether a property's name says it ends a span (`end_date`,
/// `return_date`, `checkout`).
fn ends_a_span(name: &str) -> bool {
    split_name(name).iter().any(|w| matches!(w.as_str(), "end" | "return" | "until" | "checkout" | "out"))
}

/// `day` (as [`take_date`] wrote it) with the first time of day no
/// property took, when the description asks for both ("in the format
/// 'YYYY-MM-DD HH:MM:SS'", "'dd/mm/yyyy HH:MM'"): "on the 12th of March
/// 2023 at 3 in the afternoon" is one departure, not a day here and a
/// time in the next property that takes one. Joined by a `T` when the
/// format has one ("YYYY-MM-DDTHH:MM:SS"), else a space; the day alone
/// when no time was said.
pub(super) fn with_time_of_day(day: Value, spec: &Value, said: &Said<'_>, taken: &mut Taken) -> Value {
    let upper = description_of(spec).to_uppercase();
    let (Some(d), true) = (day.as_str(), upper.contains("HH:MM")) else { return day };
    let Some(Value::String(time)) = take_time(spec, said, taken) else { return day };
    let joint = if upper.contains("DDTHH") { 'T' } else { ' ' };
    Value::String(format!("{d}{joint}{time}"))
}

/// The first absolute date no property took — the last, for the end of a
/// span ("from April 3rd to April 5th": `end_date` the 5th, whichever
/// property is asked first) — else the first relative one.
pub(super) fn take_date(
    name: &str,
    spec: &Value,
    dates: &[((usize, usize), String)],
    ex: &crate::fast_path::Extracted,
    taken: &mut Taken,
) -> Option<Value> {
    let end = ends_a_span(name);
    let mut free = (0..dates.len()).filter(|i| !taken.dates.contains(i));
    let day = match if end { free.next_back() } else { free.next() } {
        Some(i) => {
            taken.dates.push(i);
            Value::String(dates[i].1.clone())
        }
        None => take_slot(ex, SlotKind::Date, &mut taken.slots)?,
    };
    let description = description_of(spec);
    Some(match (day.as_str().map(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")), date_format(description)) {
        (Some(Ok(d)), Some(format)) => Value::String(d.format(format).to_string()),
        _ => day,
    })
}

/// Rule 1's default day: a day the tool takes for today when none is
/// given is left to it when today is what was said ("playing today",
/// "Default is the current date") — the call says what the user said.
/// Required properties keep theirs.
pub(super) fn leave_today_to_the_tool(
    properties: &serde_json::Map<String, Value>,
    required: &[&str],
    args: &mut engram_events::payloads::ToolArgs,
    today: chrono::NaiveDate,
) {
    args.0.retain(|name, v| {
        let Some(spec) = properties.get(name) else { return true };
        let said_today = v.as_str().is_some_and(|d| is_day(d, spec, today));
        !(said_today && today_by_default(spec) && !required.contains(&name.as_str()))
    });
}

/// Whether `value` (as [`take_date`] wrote it for `spec`) is `day`.
fn is_day(value: &str, spec: &Value, day: chrono::NaiveDate) -> bool {
    let format = date_format(description_of(spec)).unwrap_or("%Y-%m-%d");
    value == day.format(format).to_string()
}

/// Whether a day property's description says the tool takes today when
/// none is given ("Default is the current date", "If not specified, the
/// current date is assumed", "defaults to today").
fn today_by_default(spec: &Value) -> bool {
    let d = description_of(spec).to_lowercase();
    let unsaid = ["default", "not specified", "not provided", "omitted", "if not given"].iter().any(|w| d.contains(w));
    unsaid && ["current date", "today", "current day"].iter().any(|w| d.contains(w))
}

/// The day format a description asks for other than ISO's: `MM/DD/YYYY`
/// (as US tools do), `DD/MM/YYYY`, `DD-MM-YYYY`, any case.
fn date_format(description: &str) -> Option<&'static str> {
    let upper = description.to_uppercase();
    [("MM/DD/YYYY", "%m/%d/%Y"), ("DD/MM/YYYY", "%d/%m/%Y"), ("DD-MM-YYYY", "%d-%m-%Y")]
        .into_iter()
        .find(|(said, _)| upper.contains(said))
        .map(|(_, format)| format)
}

/// Rule 1: the slot kind a property names, by its name or its format.
pub(super) fn slot_for(name: &str, spec: &Value) -> Option<SlotKind> {
    SlotKind::from_name(name).or_else(|| match spec.get("format").and_then(Value::as_str) {
        Some("date") => Some(SlotKind::Date),
        Some("email") => Some(SlotKind::Email),
        Some("uri" | "url") => Some(SlotKind::Url),
        _ => None,
    })
}

/// The first slot of `kind` no property took yet.
pub(super) fn take_slot(ex: &crate::fast_path::Extracted, kind: SlotKind, used: &mut Vec<usize>) -> Option<Value> {
    let (i, slot) = ex.slots.iter().enumerate().find(|(i, s)| s.kind == kind && !used.contains(i))?;
    used.push(i);
    Some(slot.value.clone())
}
