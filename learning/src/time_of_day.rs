//! Times of day as people say them — "9am", "10:00 AM", "4:30 in the
//! afternoon", "at 2 in the afternoon", "15:30", "noon", "alle 9", "alle 3
//! del pomeriggio", "mezzogiorno" — for a tool's time parameter
//! (`journey_start_time`, `new_alarm_time`: "in 24-hour format, HH:MM").
//!
//! Rules, each read from the words, none guessed:
//!
//! 1. **A clock time** `H:MM` or `H.MM` (Italian) is that time; with "am"
//!    or "pm" after it, or a part of the day ("in the afternoon", "di
//!    sera"), a 12-hour time.
//! 2. **An hour alone** is a time only when something says so: "am"/"pm"
//!    after it ("9am", "2 p.m."), "o'clock", a part of the day after it
//!    ("2 in the afternoon"), or "alle" before it ("alle 9"). "at 9"
//!    alone is left out: it may be a count, a place, an address.
//! 3. **Noon and midnight** by name (EN + IT).
//!
//! A part of the day moves an hour of 1–11 by twelve only towards the
//! afternoon ("afternoon", "evening", "tonight", "pomeriggio", "sera");
//! "morning" and "mattina" keep it. An hour over 23, or minutes over 59,
//! are no time.

use std::sync::OnceLock;

use chrono::NaiveTime;
use regex::Regex;

/// A time of day the text says, with its byte span (so that its numbers
/// are no counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// Byte span in the text.
    pub span: (usize, usize),
    /// The time.
    pub time: NaiveTime,
}

/// Every time of day `text` says, in order (module docs).
pub fn said(text: &str) -> Vec<Said> {
    static RULES: OnceLock<[Regex; 3]> = OnceLock::new();
    const PART: &str = r"(?:\s+(?:in\s+the\s+|of\s+the\s+|at\s+|this\s+|del\s+|della\s+|di\s+)?(morning|afternoon|evening|night|tonight|mattina|mattino|pomeriggio|sera|notte))?";
    let [clock, hour, named] = RULES.get_or_init(|| {
        let r = |s: &str| Regex::new(s).expect("time rule compiles");
        [
            // "5:30pm" has no word boundary before its meridiem.
            r(&format!(r"(?i)\b(\d{{1,2}})[:.](\d{{2}})(?:\s*(a\.?m\.?|p\.?m\.?)(?:\s|$|[,;!?])|\b){PART}")),
            r(&format!(
                r"(?i)(\balle\s+|\bat\s+)?\b(\d{{1,2}})(\s*o'?clock)?(?:\s*(a\.?m\.?|p\.?m\.?)(?:\s|$|[,;!?.])){PART}|(\balle\s+|\bat\s+)?\b(\d{{1,2}})(\s*o'?clock)?{PART}"
            )),
            r(r"(?i)\b(noon|midday|mezzogiorno|midnight|mezzanotte)\b"),
        ]
    });
    let mut out: Vec<Said> = Vec::new();
    for c in clock.captures_iter(text) {
        let m = c.get(0).expect("match");
        // A date's numbers are no time ("2023.10.01" has no 10:01).
        let digit_beyond = |s: &str| s.chars().nth(1).is_some_and(|c| c.is_ascii_digit());
        let after = &text[m.end()..];
        let before: String = text[..m.start()].chars().rev().take(2).collect();
        if (after.starts_with(['.', '-', '/']) && digit_beyond(after))
            || (before.starts_with(['.', '-', '/']) && digit_beyond(&before))
        {
            continue;
        }
        let (h, min) = (c[1].parse().ok(), c[2].parse().ok());
        let meridiem = c.get(3).map(|m| m.as_str());
        let part = c.get(4).map(|m| m.as_str());
        if let Some(time) = time_of(h, min, meridiem, part) {
            out.push(Said { span: (m.start(), m.end()), time });
        }
    }
    for c in hour.captures_iter(text) {
        let m = c.get(0).expect("match");
        if out.iter().any(|s| s.span.0 < m.end() && m.start() < s.span.1) {
            continue;
        }
        // The two alternatives: with am/pm (groups 1–5), or without (6–9).
        let (cue, h, oclock, meridiem, part) = match c.get(2) {
            Some(h) => (c.get(1), h, c.get(3), c.get(4), c.get(5)),
            None => (c.get(6), c.get(7).expect("an hour"), c.get(8), None, c.get(9)),
        };
        let alle = cue.is_some_and(|a| a.as_str().trim().eq_ignore_ascii_case("alle"));
        if meridiem.is_none() && part.is_none() && oclock.is_none() && !alle {
            continue;
        }
        let time = time_of(h.as_str().parse().ok(), Some(0), meridiem.map(|m| m.as_str()), part.map(|p| p.as_str()));
        if let Some(time) = time {
            let start = cue.map_or(h.start(), |c| c.start());
            out.push(Said { span: (start, m.end()), time });
        }
    }
    for m in named.find_iter(text) {
        let noon = matches!(m.as_str().to_lowercase().as_str(), "noon" | "midday" | "mezzogiorno");
        let time = NaiveTime::from_hms_opt(if noon { 12 } else { 0 }, 0, 0).expect("a valid time");
        out.push(Said { span: (m.start(), m.end()), time });
    }
    out.sort_by_key(|s| s.span);
    out
}

fn time_of(hour: Option<u32>, minute: Option<u32>, meridiem: Option<&str>, part: Option<&str>) -> Option<NaiveTime> {
    let (mut h, min) = (hour?, minute?);
    let pm = match meridiem.map(|m| m.to_lowercase().replace('.', "")) {
        Some(m) => Some(m == "pm"),
        None => part.map(|p| {
            matches!(p.to_lowercase().as_str(), "afternoon" | "evening" | "night" | "tonight" | "pomeriggio" | "sera")
                || (p.eq_ignore_ascii_case("notte") && h < 5)
        }),
    };
    match pm {
        Some(_) if !(1..=12).contains(&h) => return None,
        Some(true) if h < 12 => h += 12,
        Some(false) if h == 12 && meridiem.is_some() => h = 0,
        _ => {}
    }
    NaiveTime::from_hms_opt(h, min, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(text: &str) -> Vec<String> {
        said(text).iter().map(|s| s.time.format("%H:%M").to_string()).collect()
    }

    #[test]
    fn times_as_people_say_them() {
        assert_eq!(times("book 9am Business class tickets"), ["09:00"]);
        assert_eq!(times("starting at 10:00 AM until April 27"), ["10:00"]);
        assert_eq!(times("a haircut on March 15th at 2 in the afternoon"), ["14:00"]);
        assert_eq!(times("an alarm at 4:30 in the afternoon with the label"), ["16:30"]);
        assert_eq!(times("a new alarm for 15:30 with the label Cleaning"), ["15:30"]);
        assert_eq!(times("leaving at 13:45 for one adult"), ["13:45"]);
        assert_eq!(times("lunch at noon, back by 7 pm"), ["12:00", "19:00"]);
        assert_eq!(times("sveglia alle 7 e cena alle 8 di sera"), ["07:00", "20:00"]);
        assert_eq!(times("prenota per le 20.30"), ["20:30"]);
        assert_eq!(times("alle 3 del pomeriggio"), ["15:00"]);
        assert_eq!(times("at 12 am"), ["00:00"]);
        assert_eq!(times("at 6 o'clock in the morning"), ["06:00"]);
        assert_eq!(times("tickets for the 5:30pm show"), ["17:30"], "a meridiem written on");
    }

    #[test]
    fn numbers_that_are_no_time_are_left() {
        assert!(times("tickets for 2 people at 9").is_empty());
        assert!(times("on 2023.10.1 for 2").is_empty());
        assert!(times("on 2023.10.01 or 10.04.2023").is_empty());
        assert!(times("set it to 25:00 or 9:75").is_empty());
        assert!(times("3 bedrooms and 2 baths").is_empty());
        assert!(times("turn the volume to 13 pm").is_empty());
    }
}
