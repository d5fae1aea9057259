//! Rule 4: a new request fills a phrasing's said slots — by aligning the
//! phrasing's words with the request's ([`fill`]), or by the values each
//! slot has taken wherever they stand ([`fill_known`]). Apart from the
//! learning of slots because it runs per request, on every phrasing the
//! router examines, and is the one dynamic programme of the slots.

use std::collections::BTreeMap;

use super::{
    find_span, is_compound_joint, is_determiner, is_edge_grammar, is_mask, mask, render, same_word, tokens, Token,
};
use crate::fast_path::SlotKind;

/// The longest run of words one said slot may take.
pub const MAX_FILL: usize = 12;

/// A new request's words for each said slot of a phrasing, and the request
/// with those words masked (what the replay gate compares with the
/// phrasing).
#[derive(Clone, Debug, PartialEq)]
pub struct Fill {
    /// Slot name → the words that fill it (rendered).
    pub values: BTreeMap<String, String>,
    /// The request with each fill masked.
    pub masked: String,
    /// The alignment's cost: 0 when the request is the phrasing with other
    /// values.
    pub cost: f64,
    /// The slots whose neighbouring words in the phrasing are the
    /// request's around the fill: only these may take a value never seen
    /// (rule 5) — a new value is read from a taught frame, a known one
    /// from anywhere.
    pub framed: std::collections::BTreeSet<String>,
}

/// What a word costs when one side has it and the other does not (rule 4).
fn gap(word: &str) -> f64 {
    match is_edge_grammar(word) {
        true => 0.3,
        false => 1.0,
    }
}

/// The alignment table of rule 4: `cost[i][j]` is the best alignment of
/// the template's first `i` tokens with the request's first `j`; `how`
/// how each cell was reached (0 match, 1 a template word unmatched, 2 a
/// request word unmatched, 3 + k a slot taking k words).
type Alignment = (Vec<Vec<f64>>, Vec<Vec<usize>>);

fn align(t: &[Token], r: &[Token]) -> Alignment {
    let (n, m) = (t.len(), r.len());
    // A word the template names outside its slots is rarely part of a
    // value: taken by a slot, it costs what leaving it unmatched would.
    let template_words: Vec<&str> = t.iter().filter(|x| !is_mask(&x.text)).map(|x| x.text.as_str()).collect();
    let take = |w: &str| match template_words.iter().any(|t| same_word(t, w)) {
        true => gap(w) + 0.3,
        false => 0.01,
    };
    const INF: f64 = f64::INFINITY;
    let mut cost = vec![vec![INF; m + 1]; n + 1];
    // How each cell was reached: 0 match, 1 skip t, 2 skip r, 3 + k slot of k words.
    let mut how = vec![vec![0usize; m + 1]; n + 1];
    cost[0][0] = 0.0;
    for i in 0..=n {
        for j in 0..=m {
            let c = cost[i][j];
            if c == INF {
                continue;
            }
            if j < m && c + gap(&r[j].text) < cost[i][j + 1] {
                cost[i][j + 1] = c + gap(&r[j].text);
                how[i][j + 1] = 2;
            }
            if i == n {
                continue;
            }
            if is_mask(&t[i].text) {
                let mut nc = c;
                for k in 1..=MAX_FILL.min(m - j) {
                    // A slot never takes another value's mask ("number").
                    if SlotKind::from_name(&r[j + k - 1].text).is_some() || is_mask(&r[j + k - 1].text) {
                        break;
                    }
                    nc += take(&r[j + k - 1].text);
                    if nc < cost[i + 1][j + k] {
                        cost[i + 1][j + k] = nc;
                        how[i + 1][j + k] = 3 + k;
                    }
                }
                continue;
            }
            if c + gap(&t[i].text) < cost[i + 1][j] {
                cost[i + 1][j] = c + gap(&t[i].text);
                how[i + 1][j] = 1;
            }
            if j < m && same_word(&t[i].text, &r[j].text) && c < cost[i + 1][j + 1] {
                cost[i + 1][j + 1] = c;
                how[i + 1][j + 1] = 0;
            }
            // One word for another in its place (the gate compares them):
            // a request's own verb is not taken into the value beside it.
            let swap = c + gap(&t[i].text);
            if j < m && !is_mask(&r[j].text) && swap < cost[i + 1][j + 1] {
                cost[i + 1][j + 1] = swap;
                how[i + 1][j + 1] = 3;
            }
        }
    }
    (cost, how)
}

/// How a slot's values begin, as its uses showed (rule 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edges {
    /// Said after an article or a preposition the model left out: a fill's
    /// leading ones are not the value ("the kitchen" → "kitchen").
    Trim,
    /// Values that begin with one ("the school bus is coming"): kept.
    Keep,
    /// Never seen either way: a fill that begins with one is ambiguous and
    /// fails (the planner decides).
    Unknown,
}

/// Politeness at the end of a request, EN + IT: never the end of a value.
fn is_courtesy(word: &str) -> bool {
    matches!(word, "please" | "thanks" | "thank" | "you" | "grazie" | "favore" | "cortesia" | "now" | "ora" | "adesso")
}

/// Fills the said slots of `template` (a phrasing's canonical text, its
/// slots masked; `names` its slots' names,
/// [`slot_names`](super::slot_names)) from `request` (a canonical text),
/// by rule 4; `edges` tells how each slot's values begin. `None` when a
/// slot cannot be filled.
pub fn fill(template: &str, request: &str, names: &[String], edges: &dyn Fn(&str) -> Edges) -> Option<Fill> {
    let t = tokens(template);
    let r = tokens(request);
    let (n, m) = (t.len(), r.len());
    if !t.iter().any(|x| is_mask(&x.text)) {
        return None;
    }
    let (cost, how) = align(&t, &r);
    const INF: f64 = f64::INFINITY;
    if cost[n][m] == INF {
        return None;
    }
    // Walk back: which request words each slot took.
    let mut spans: Vec<(String, usize, usize, usize)> = Vec::new();
    let mut matched = vec![false; n];
    let (mut i, mut j) = (n, m);
    while i > 0 || j > 0 {
        match how[i][j] {
            0 => {
                matched[i - 1] = true;
                i -= 1;
                j -= 1;
            }
            1 => i -= 1,
            2 => j -= 1,
            3 => {
                i -= 1;
                j -= 1;
            }
            k => {
                let k = k - 3;
                spans.push((t[i - 1].text.clone(), i - 1, j - k, j));
                i -= 1;
                j -= k;
            }
        }
    }
    spans.reverse();
    // A slot is framed when the phrasing's words beside it (another
    // slot, or the text's edge, aside) were matched.
    let beside = |at: usize| at >= n || is_mask(&t[at].text) || matched[at];
    let mut framed = std::collections::BTreeSet::new();
    let mut values = BTreeMap::new();
    let mut masked: Vec<Token> = Vec::with_capacity(r.len());
    let mut at = 0;
    for (mask_word, ti, mut s, mut e) in spans {
        let name = names.iter().find(|n| mask(n) == mask_word).cloned().unwrap_or_else(|| mask_word.clone());
        if (ti == 0 || beside(ti - 1)) && beside(ti + 1) {
            framed.insert(name.clone());
        }
        // Rule 4: articles and prepositions before a value are not part of
        // it when its slot's uses said so; politeness, prepositions and a
        // closing *now* ("right now", `text::says_now_at_end`) at its end
        // never are.
        // A preposition between a fill and the words after it may be the
        // value's own ("lucio dalla in mansarda": the singer, not "lucio"
        // from somewhere): ambiguous, the planner decides. A pole is
        // never a value's ("turn the lights on in the pantry"): the gate
        // reads it.
        let followed = e < r.len();
        loop {
            let now = crate::text::says_now_at_end(&r[s..e].iter().map(|t| t.text.as_str()).collect::<Vec<_>>());
            if now > 0 && now < e - s {
                e -= now;
                continue;
            }
            if e > s && (is_determiner(&r[e - 1].text) || is_courtesy(&r[e - 1].text)) {
                if followed && is_determiner(&r[e - 1].text) && !crate::fast_path::gate::is_pole(&r[e - 1].text) {
                    return None;
                }
                e -= 1;
                continue;
            }
            break;
        }
        if s < e && is_determiner(&r[s].text) {
            match edges(&name) {
                Edges::Trim => {
                    while s < e && is_determiner(&r[s].text) {
                        s += 1;
                    }
                }
                Edges::Keep => {}
                Edges::Unknown => return None,
            }
        }
        if s == e {
            return None;
        }
        masked.extend(r[at..s].iter().cloned());
        masked.push(Token { text: mask_word.clone(), glued: r[s].glued });
        at = e;
        values.insert(name, render(&unglue(&r[s..e])));
    }
    masked.extend(r[at..].iter().cloned());
    Some(Fill { values, masked: render(&masked), cost: cost[n][m], framed })
}

/// Fills the said slots of `template` from `request` by the values each
/// has taken (`known(name)`: its vocabulary, as said): where every slot's
/// known value is in the request, wherever it is ("switch on the lights in
/// the kitchen" for "turn on the roomslot lights" that took "kitchen").
/// `None` when a slot has none of its values in the request.
pub fn fill_known(
    template: &str,
    request: &str,
    names: &[String],
    known: &dyn Fn(&str) -> Vec<String>,
) -> Option<Fill> {
    if names.is_empty() || !tokens(template).iter().any(|t| is_mask(&t.text)) {
        return None;
    }
    known_in(request, names, known, false)
}

/// [`fill_known`]'s values for the slots whose known values the request
/// holds, the others left unfilled: what a request worded unlike any
/// phrasing still says of the action's values (the offline planner's
/// guess with the model away, `model_away`).
pub fn fill_known_partly(request: &str, names: &[String], known: &dyn Fn(&str) -> Vec<String>) -> Fill {
    known_in(request, names, known, true).unwrap_or_else(|| Fill {
        values: BTreeMap::new(),
        masked: request.to_owned(),
        cost: 0.0,
        framed: Default::default(),
    })
}

/// Each slot's longest known value found in `request`, masked; a slot
/// with none found fails the fill unless `partly`.
fn known_in(request: &str, names: &[String], known: &dyn Fn(&str) -> Vec<String>, partly: bool) -> Option<Fill> {
    let mut r = tokens(request);
    let mut values = BTreeMap::new();
    for name in names {
        let mut said: Vec<Vec<String>> = known(name)
            .iter()
            .map(|v| tokens(v).into_iter().map(|t| t.text).collect::<Vec<_>>())
            .filter(|w: &Vec<String>| !w.is_empty())
            .collect();
        said.sort_by_key(|w| std::cmp::Reverse(w.len()));
        // A known value that begins a compound is not what was said.
        let texts: Vec<&str> = r.iter().map(|t| t.text.as_str()).collect();
        let found = said
            .iter()
            .find_map(|w| find_span(&r, w).map(|at| (at, w.len())))
            .filter(|&(at, len)| !is_compound_joint(&texts, at + len));
        let (at, len) = match (found, partly) {
            (Some(f), _) => f,
            (None, true) => continue,
            (None, false) => return None,
        };
        values.insert(name.clone(), render(&unglue(&r[at..at + len])));
        let glued = r[at].glued;
        r.splice(at..at + len, [Token { text: mask(name), glued }]);
    }
    Some(Fill { values, masked: render(&r), cost: 0.0, framed: Default::default() })
}

/// The tokens of a fill, its first one not glued to what came before.
fn unglue(tokens: &[Token]) -> Vec<Token> {
    let mut out = tokens.to_vec();
    if let Some(first) = out.first_mut() {
        first.glued = false;
    }
    out
}
