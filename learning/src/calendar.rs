//! The months' and weekdays' names in English and Italian, spelt once:
//! what every rule that reads a date in a request (`arguments`' absolute
//! dates and weekdays, memory's named days) and every answer that writes
//! one in Italian (L0's date, a quoted memory's day) uses.

/// One month's names, lower case.
#[derive(Clone, Copy, Debug)]
pub struct Month {
    /// English, in full ("september").
    pub en: &'static str,
    /// English abbreviations people write ("sep", "sept").
    pub short: &'static [&'static str],
    /// Italian ("settembre").
    pub it: &'static str,
}

impl Month {
    /// Every name of the month: English, its abbreviations, Italian.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.en).chain(self.short.iter().copied()).chain(std::iter::once(self.it))
    }
}

/// The months, January first.
pub const MONTHS: [Month; 12] = [
    Month { en: "january", short: &["jan"], it: "gennaio" },
    Month { en: "february", short: &["feb"], it: "febbraio" },
    Month { en: "march", short: &["mar"], it: "marzo" },
    Month { en: "april", short: &["apr"], it: "aprile" },
    Month { en: "may", short: &[], it: "maggio" },
    Month { en: "june", short: &["jun"], it: "giugno" },
    Month { en: "july", short: &["jul"], it: "luglio" },
    Month { en: "august", short: &["aug"], it: "agosto" },
    Month { en: "september", short: &["sep", "sept"], it: "settembre" },
    Month { en: "october", short: &["oct"], it: "ottobre" },
    Month { en: "november", short: &["nov"], it: "novembre" },
    Month { en: "december", short: &["dec"], it: "dicembre" },
];

/// The month a lower-case `word` names (0 for January), if it names one.
pub fn month_of(word: &str) -> Option<usize> {
    MONTHS.iter().position(|m| m.names().any(|n| n == word))
}

/// The Italian name of month `month0` (0 for January; `chrono`'s
/// `month0`), as an Italian answer dates with it.
pub fn italian(month0: u32) -> &'static str {
    MONTHS[month0 as usize % 12].it
}

/// Every month name as a regex alternation, longest first (so "september"
/// is tried before "sep").
pub fn alternation() -> String {
    let mut names: Vec<&str> = MONTHS.iter().flat_map(Month::names).collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    names.join("|")
}

/// One weekday's names, lower case.
#[derive(Clone, Copy, Debug)]
pub struct Weekday {
    /// English ("monday").
    pub en: &'static str,
    /// Italian, as written ("lunedì").
    pub it: &'static str,
    /// Italian typed without its accent ("lunedi"), where it has one.
    pub it_plain: Option<&'static str>,
}

impl Weekday {
    /// Every name of the weekday: English, Italian, Italian unaccented.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        [self.en, self.it].into_iter().chain(self.it_plain)
    }
}

/// The weekdays, Monday first (`chrono`'s `num_days_from_monday`).
pub const WEEKDAYS: [Weekday; 7] = [
    Weekday { en: "monday", it: "lunedì", it_plain: Some("lunedi") },
    Weekday { en: "tuesday", it: "martedì", it_plain: Some("martedi") },
    Weekday { en: "wednesday", it: "mercoledì", it_plain: Some("mercoledi") },
    Weekday { en: "thursday", it: "giovedì", it_plain: Some("giovedi") },
    Weekday { en: "friday", it: "venerdì", it_plain: Some("venerdi") },
    Weekday { en: "saturday", it: "sabato", it_plain: None },
    Weekday { en: "sunday", it: "domenica", it_plain: None },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_finds_its_month_and_only_it() {
        assert_eq!(month_of("sept"), Some(8));
        assert_eq!(month_of("maggio"), Some(4));
        assert_eq!(month_of("may"), Some(4));
        assert_eq!(month_of("mayo"), None);
        assert_eq!(italian(11), "dicembre");
        let names: Vec<&str> = MONTHS.iter().flat_map(Month::names).collect();
        for n in &names {
            assert_eq!(names.iter().filter(|m| *m == n).count(), 1, "{n} names two months");
        }
        let re = regex::Regex::new(&format!("^(?:{})$", alternation())).unwrap();
        assert!(names.iter().all(|n| re.is_match(n)));
    }
}
