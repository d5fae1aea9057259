//! L0's answers (seed 000): "the answer comes out formatted by a small
//! Italian/English template", in the request's language
//! ([`crate::lang::detect`]). Zero model, zero network.
//!
//! | executor | EN | IT |
//! |---|---|---|
//! | `get_now` | It's 14:05. | Sono le 14:05. (È l'una e 5 / mezzanotte) |
//! | `get_date` | Today is Wednesday 25 November 2026. | Oggi è mercoledì 25 novembre 2026. |
//! | `get_location` | You are in Rome, Italy. | Ti trovi a Rome, Italy. |
//!
//! The clock answers are formatted from the turn's own time (the executor
//! read the same clock); the location from the executor's output. Any
//! other executor — `undo`, a host's `l0_extra` — answers with its output
//! as it is (`None` here).

use chrono::{DateTime, Datelike, FixedOffset, Timelike};

use crate::lang::Lang;

/// The L0 answer of `tool` in `lang`, from its `output` and the turn's
/// time `now`; `None` for an executor without a template.
pub fn l0_answer(tool: &str, output: &str, now: DateTime<FixedOffset>, lang: Lang) -> Option<String> {
    match (tool, lang) {
        ("get_now", Lang::En) => Some(format!("It's {}.", now.format("%H:%M"))),
        ("get_now", Lang::It) => Some(match (now.hour(), now.minute()) {
            (0, 0) => "È mezzanotte.".to_owned(),
            (1 | 13, m) => format!("È l'una e {m}."),
            _ => format!("Sono le {}.", now.format("%H:%M")),
        }),
        ("get_date", Lang::En) => Some(format!("Today is {}.", now.format("%A %-d %B %Y"))),
        ("get_date", Lang::It) => Some(format!(
            "Oggi è {} {} {} {}.",
            crate::calendar::WEEKDAYS[now.weekday().num_days_from_monday() as usize].it,
            now.day(),
            crate::calendar::italian(now.month0()),
            now.year()
        )),
        ("get_location", _) if !output.trim().is_empty() => Some(match lang {
            Lang::En => format!("You are in {}.", output.trim()),
            Lang::It => format!("Ti trovi a {}.", output.trim()),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn templates_answer_in_the_requests_language() {
        let at = |h, m| FixedOffset::east_opt(3600).unwrap().with_ymd_and_hms(2026, 11, 25, h, m, 0).unwrap();
        assert_eq!(l0_answer("get_now", "", at(14, 5), Lang::En).unwrap(), "It's 14:05.");
        assert_eq!(l0_answer("get_now", "", at(14, 5), Lang::It).unwrap(), "Sono le 14:05.");
        assert_eq!(l0_answer("get_now", "", at(13, 7), Lang::It).unwrap(), "È l'una e 7.");
        assert_eq!(l0_answer("get_date", "", at(9, 0), Lang::En).unwrap(), "Today is Wednesday 25 November 2026.");
        assert_eq!(l0_answer("get_date", "", at(9, 0), Lang::It).unwrap(), "Oggi è mercoledì 25 novembre 2026.");
        assert_eq!(l0_answer("get_location", "Rome, Italy", at(9, 0), Lang::It).unwrap(), "Ti trovi a Rome, Italy.");
        assert_eq!(l0_answer("undo", "undid: wrote notes.txt", at(9, 0), Lang::It), None);
    }
}
