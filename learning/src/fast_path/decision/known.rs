//! What the learnt rows say beyond each phrasing: the values said slots
//! took, by parameter (known values), the words phrasings say around
//! values and each action's words (for the gate), each slot's vocabulary
//! and edges, and a parameter's enum in its tool's schema. Apart because
//! these are tables derived on update and looked up by L1, the gate and
//! the model-away guess alike.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{parameter, FastPath, L1Row};
use crate::fast_path::{gate, slots, SlotKind};

impl FastPath {
    /// Every value the actions' said slots took, as said, with the
    /// parameters that took it.
    fn known_values(&self) -> HashMap<String, Vec<(String, Value)>> {
        let mut out: HashMap<String, Vec<(String, Value)>> = HashMap::new();
        let mut keys: Vec<&String> = self.actions.keys().collect();
        keys.sort(); // a deterministic first value per (said, parameter)
        for key in keys {
            for (name, v) in &self.actions[key].vocabulary {
                for (said, value, _) in &v.values {
                    let entry = out.entry(said.clone()).or_default();
                    if !entry.iter().any(|(p, _)| p == parameter(name)) {
                        entry.push((parameter(name).to_owned(), value.clone()));
                    }
                }
            }
        }
        out
    }

    /// [`FastPath::known_values`] and [`FastPath::said_by_parameter`], from
    /// the actions' vocabularies.
    pub(super) fn refresh_known(&mut self) {
        self.known_values = self.known_values();
        let mut by: HashMap<String, Vec<String>> = HashMap::new();
        for (said, params) in &self.known_values {
            for (p, _) in params {
                by.entry(p.clone()).or_default().push(said.clone());
            }
        }
        for v in by.values_mut() {
            v.sort(); // the map's order is not the same from run to run
        }
        self.folded_values = by
            .iter()
            .map(|(p, said)| (p.clone(), said.iter().filter(|s| !s.contains(' ')).map(|s| gate::fold(s)).collect()))
            .collect();
        self.said_by_parameter = by;
    }

    /// The value some action's slot of the same parameter as `name` took
    /// when said as `said`.
    pub(super) fn known_as(&self, name: &str, said: &str) -> Option<Value> {
        let own = parameter(name);
        self.known_values.get(said)?.iter().find(|(p, _)| p == own).map(|(_, v)| v.clone())
    }

    /// The parameter, other than `name`'s, that a value held in `said`
    /// (a run of its words) was learnt as, if any.
    pub(super) fn known_elsewhere(&self, name: &str, said: &str) -> Option<String> {
        let words: Vec<&str> = said.split(' ').collect();
        let own = parameter(name);
        for len in 1..=words.len() {
            for run in words.windows(len) {
                let run = run.join(" ");
                if let Some(params) = self.known_values.get(&run) {
                    if let Some((p, _)) = params.iter().find(|(p, _)| p.as_str() != own) {
                        return Some(p.clone());
                    }
                }
            }
        }
        None
    }

    /// The tool of another action whose phrasing says `said` as its own
    /// wording (its words, or its tool's name's: "shopping" of
    /// `HassShoppingListAddItem`), not as a value, when this `action`'s
    /// never does: "put pork rinds on the grocery list" gives a
    /// list-naming phrasing the new name "grocery", where the household's
    /// "throw X on the grocery list" was taught as the shopping list's. A
    /// new value that another action's wording holds is that action's,
    /// not new.
    pub(super) fn worded_elsewhere(&self, action: &str, said: &str) -> Option<String> {
        let words: Vec<&str> = crate::text::words(said).collect();
        let content = |w: &&str| !crate::text::is_stop_word(w, crate::text::Negations::Keep);
        if words.is_empty() || !words.iter().all(content) {
            return None;
        }
        // A phrasing's wording: its words, and its tool's name's.
        let wording = |r: &L1Row| {
            let said = crate::text::words(&r.canonical).map(str::to_owned);
            said.chain(crate::tool_words::split_name(&r.executor)).collect::<HashSet<String>>()
        };
        let rows = || self.l1.rows.values().map(|(_, r)| r);
        let says_all = |r: &L1Row| {
            // Each word inside the row's text or its tool's name, as
            // letters: most rows fail here, before their words are read.
            let tool = r.executor.to_lowercase();
            if !words.iter().all(|w| r.canonical.contains(w) || tool.contains(w)) {
                return false;
            }
            let own = wording(r);
            // A dropped g is the word said ("shoppin" list).
            let holds = |w: &str| own.contains(w) || (w.ends_with("in") && own.contains(&format!("{w}g")));
            words.iter().all(|w| holds(w))
        };
        if rows().any(|r| r.action == action && says_all(r)) {
            return None;
        }
        rows().find(|r| r.action != action && says_all(r)).map(|r| r.executor.clone())
    }

    /// The words L1's phrasings say around their values.
    pub(super) fn l1_command_words(&self) -> HashSet<String> {
        self.l1
            .rows
            .values()
            .flat_map(|(_, r)| crate::text::words(&r.canonical).map(str::to_owned).collect::<Vec<_>>())
            .filter(|w| {
                !slots::is_mask(w)
                    && SlotKind::from_name(w).is_none()
                    && !crate::text::is_stop_word(w, crate::text::Negations::Keep)
            })
            .collect()
    }

    /// Each L1 action's words ([`gate::ActionWords`]), from its phrasings.
    pub(super) fn l1_action_words(&self) -> HashMap<String, gate::ActionWords> {
        let mut by: HashMap<String, gate::ActionWords> = HashMap::new();
        for (_, r) in self.l1.rows.values() {
            add_phrasing(&mut by, action_phrasing(r));
        }
        by
    }

    /// The values said for slot `name`'s parameter by any action's slot
    /// (its own action's among them), sorted.
    pub(super) fn said(&self, name: &str) -> Vec<String> {
        self.said_by_parameter.get(parameter(name)).cloned().unwrap_or_default()
    }

    /// The slot `name` of `action`'s vocabulary.
    pub(super) fn vocabulary(&self, action: &str, name: &str) -> Option<&slots::Vocabulary> {
        self.actions.get(action)?.vocabulary.get(name)
    }

    /// How the values of slot `name` of `action` begin
    /// ([`slots::Vocabulary::edges`]).
    pub(super) fn edges(&self, action: &str, name: &str) -> slots::Edges {
        self.actions
            .get(action)
            .and_then(|a| a.vocabulary.get(name))
            .map_or(slots::Edges::Unknown, slots::Vocabulary::edges)
    }

    /// The enum of the parameter a slot is (`domain.0` → `domain`'s
    /// items'), from the tool's schema.
    pub(super) fn enum_of(&self, tool: &str, slot: &str) -> Option<Vec<Value>> {
        let mut spec = self.schemas.get(tool)?.get("properties")?;
        let mut parts = slot.split('.').peekable();
        while let Some(part) = parts.next() {
            spec = match part.parse::<usize>() {
                Ok(_) => spec.get("items")?,
                Err(_) => spec.get(part)?,
            };
            if parts.peek().is_some() && spec.get("properties").is_some() {
                spec = spec.get("properties")?;
            }
        }
        spec.get("enum")?.as_array().cloned()
    }
}

/// An L1 row as its action's words read it ([`gate::ActionWords`]): the
/// action, its tool, and the phrasing's words without its slots' masks
/// (a mask is no word of the action).
pub(super) type ActionPhrasing = (String, String, String);

/// [`ActionPhrasing`] of the row `r`.
pub(super) fn action_phrasing(r: &super::L1Row) -> ActionPhrasing {
    let words: Vec<&str> = r.canonical.split(' ').filter(|w| !slots::is_mask(w)).collect();
    (r.action.clone(), r.executor.clone(), words.join(" "))
}

/// Adds a row's phrasing to its action's words in `by`; an action's first
/// also reads its tool's name, as the gate does
/// ([`gate::ActionWords::with_tool`]).
pub(super) fn add_phrasing(by: &mut HashMap<String, gate::ActionWords>, (action, tool, text): ActionPhrasing) {
    let name = || crate::tool_words::split_name(&tool).join(" ");
    by.entry(action).or_insert_with(|| gate::ActionWords::default().with_tool(&name())).add(&text);
}

/// Takes a row's phrasing, added before, away from its action's words in
/// `by`; an action no phrasing is left of goes.
pub(super) fn remove_phrasing(by: &mut HashMap<String, gate::ActionWords>, (action, _, text): ActionPhrasing) {
    if let Some(words) = by.get_mut(&action) {
        words.remove(&text);
        if words.is_empty() {
            by.remove(&action);
        }
    }
}
