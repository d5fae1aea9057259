//! A request in parts: split on conjunctions before each part is planned,
//! and the calls of parts that repeat one merged after (rule 6). Separate:
//! text on either side of the planning, with no embedding and no tool.

use engram_events::payloads::PlanStep;

/// Words a spoken request may open with before its first word proper:
/// interjections and greetings, which say nothing of what it asks.
pub(super) const OPENERS: &[&str] =
    &["uh", "um", "ehm", "eh", "oh", "ah", "allora", "hey", "hi", "ok", "okay", "so", "dai", "ciao"];

/// `part` past the interjections it opens with ([`OPENERS`]), when words
/// are left: what is compared with the tools and with small talk — "hey
/// shut the office blinds" was nearer "hello there" than any tool.
pub(super) fn past_openers(part: &str) -> &str {
    let mut rest = part.trim_start();
    while let Some((first, tail)) = rest.split_once(' ') {
        let word = first.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        if !OPENERS.contains(&word.as_str()) || tail.trim().is_empty() {
            break;
        }
        rest = tail.trim_start();
    }
    rest
}

/// The parts of a request joined by conjunctions (EN + IT), trimmed, empty
/// ones dropped. "and" inside a part that names no second action is split
/// too: a part that matches no tool is simply not planned.
pub fn split_conjunctions(request: &str) -> Vec<String> {
    const JOINERS: &[&str] = &[
        " and then ",
        ", then ",
        " then ",
        " after that ",
        " and also ",
        " and ",
        " e poi ",
        " poi ",
        " e anche ",
        " e ",
        "; ",
    ];
    let mut parts = vec![request.trim().to_owned()];
    for j in JOINERS {
        parts = parts
            .into_iter()
            .flat_map(|p| {
                let lower = p.to_lowercase();
                // Split on the lower-cased text's positions (ASCII joiners keep
                // byte offsets aligned for the original).
                if lower.len() != p.len() {
                    return vec![p];
                }
                let mut out = Vec::new();
                let mut at = 0;
                for (i, _) in lower.match_indices(j) {
                    // "nineteen and a half", "ventiquattro e mezzo": one
                    // number, not two parts.
                    let after: Vec<&str> = lower[i..].split_whitespace().take(3).collect();
                    if crate::fast_path::numbers::half_after(&after) > 0 {
                        continue;
                    }
                    out.push(p[at..i].to_owned());
                    at = i + j.len();
                }
                out.push(p[at..].to_owned());
                out
            })
            .collect();
    }
    let parts: Vec<String> = parts
        .into_iter()
        .map(|p| p.trim().trim_matches(|c: char| c == ',' || c == '.').trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    // A part of one word asks nothing alone ("open and read the file"): it
    // joins the part after it (the one before, when it is the last).
    let mut out: Vec<String> = Vec::with_capacity(parts.len());
    let mut pending: Option<String> = None;
    for p in parts {
        let p = match pending.take() {
            Some(word) => format!("{word} {p}"),
            None => p,
        };
        if p.split_whitespace().count() < 2 {
            pending = Some(p);
        } else {
            out.push(p);
        }
    }
    if let Some(word) = pending {
        match out.last_mut() {
            Some(last) => {
                last.push(' ');
                last.push_str(&word);
            }
            None => out.push(word),
        }
    }
    out
}

/// Rule 14: whether `part` is a phrase without a verb of its own ("the
/// workshop", "in soggiorno", "anche alla spesa"): it opens with an
/// article or a preposition ([`crate::spoken::opens_without_verb`]) and
/// names no action and no pole. What it asks is the verb of the part
/// before it; "where am I" has its own.
pub(super) fn verbless(part: &str) -> bool {
    let normalized = crate::text::normalize(part);
    let verb = crate::text::words(&normalized)
        .any(|w| crate::fast_path::gate::is_action(w) || crate::fast_path::gate::is_pole(w));
    !verb && crate::spoken::opens_without_verb(part)
}

/// Rule 6: the same tool planned twice in a row, one call's arguments
/// among the other's, is one call — the one with more ("the weather in
/// London, including the temperature and the wind"); so are two that fill
/// different parameters, as one call with both's ("a payment to Margaret
/// and mark it as private"); with values of their own each for one
/// parameter ("the kitchen light and the bedroom light") both stay.
/// `from` (each step's part) follows `steps`.
pub(super) fn merge_repeats(steps: &mut Vec<PlanStep>, from: &mut Vec<&str>) {
    let within = |x: &PlanStep, y: &PlanStep| x.args.0.iter().all(|(n, v)| y.args.0.get(n) == Some(v));
    let apart = |x: &PlanStep, y: &PlanStep| x.args.0.keys().all(|n| !y.args.0.contains_key(n));
    let mut k = 1;
    while k < steps.len() {
        let (a, b) = (&steps[k - 1], &steps[k]);
        if a.tool == b.tool && (within(a, b) || within(b, a)) {
            let drop = if within(a, b) { k - 1 } else { k };
            steps.remove(drop);
            from.remove(drop);
        } else if a.tool == b.tool && apart(a, b) {
            let b = steps.remove(k);
            from.remove(k);
            steps[k - 1].args.0.extend(b.args.0);
        } else {
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    /// A request is compared past its interjections, unless nothing else
    /// is said.
    #[test]
    fn a_part_is_compared_past_its_openers() {
        assert_eq!(super::past_openers("hey shut the office blinds"), "shut the office blinds");
        assert_eq!(super::past_openers("uh ok, timer cinque minuti"), "timer cinque minuti");
        assert_eq!(super::past_openers("ciao"), "ciao");
    }

    /// "And a half" is part of a number: split there, "make it nineteen"
    /// was planned as a timer and "a half degrees …" as nothing.
    #[test]
    fn a_half_is_no_second_part() {
        let parts = super::split_conjunctions("make it nineteen and a half degrees in the sitting room");
        assert_eq!(parts, ["make it nineteen and a half degrees in the sitting room"]);
        assert_eq!(super::split_conjunctions("voglio ventiquattro e mezzo in cameretta").len(), 1);
        assert_eq!(super::split_conjunctions("turn on the light and open the blinds").len(), 2);
    }
}
