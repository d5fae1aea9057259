//! One concept per word across English and Italian, for the replay gate's
//! content-word rule.
//!
//! The multilingual embedder puts "turn on the kitchen light" and "accendi
//! la luce della cucina" at 0.88, so L1 finds a request learnt in one
//! language when it is asked in the other; the gate then compares the two
//! sides' content words, and "kitchen" is not "cucina". Each Italian word
//! below is folded to the English word of the same meaning (and a few
//! English synonyms to one word), so the gate compares concepts, not
//! spellings.
//!
//! Rules for an entry:
//! 1. **One meaning each way.** A word goes in only if, in an assistant's
//!    requests, it means that concept and nothing a replay could confuse
//!    ("tempo" is weather in "che tempo fa" but time in "quanto tempo":
//!    it is left out, and the gate stays strict there).
//! 2. **Nouns and modifiers, and verbs the gate reads as content.** Action
//!    verbs are the gate's action classes and polarity axes (rules 2 and 3
//!    of `gate.rs`), already bilingual; a verb that is neither ("count")
//!    is a content word and is folded here.
//! 3. **A missing word costs recall, never safety.** An Italian word not
//!    here stays itself and differs from its English twin: the turn goes to
//!    the planner. A wrong entry could let two different requests through,
//!    so the table grows only with words whose translation is unambiguous.

/// `(word, concept)`, sorted by word (binary search): Italian words and a
/// few English synonyms (photos, pictures → photo). Words are in
/// `text::normalize` form; the concept is an English word in the same form.
#[rustfmt::skip]
const CONCEPTS: &[(&str, &str)] = &[
    ("allarme", "alarm"),
    ("amica", "friend"),
    ("amico", "friend"),
    ("anno", "year"),
    ("appuntamenti", "appointment"),
    ("appuntamento", "appointment"),
    ("articolo", "article"),
    ("bagno", "bathroom"),
    ("batteria", "battery"),
    ("calendario", "calendar"),
    ("camera", "bedroom"),
    ("cancello", "gate"),
    ("canzone", "song"),
    ("canzoni", "song"),
    ("cartella", "folder"),
    ("cartelle", "folder"),
    ("casa", "home"),
    ("città", "city"),
    ("conta", "count"),
    ("contami", "count"),
    ("contare", "count"),
    ("contatti", "contact"),
    ("contatto", "contact"),
    ("contenuto", "content"),
    ("cucina", "kitchen"),
    ("data", "date"),
    ("dimensione", "size"),
    ("dimensioni", "size"),
    ("directory", "folder"),
    ("docs", "document"),
    ("documenti", "document"),
    ("documento", "document"),
    ("documents", "document"),
    ("domani", "tomorrow"),
    ("emails", "email"),
    ("eventi", "event"),
    ("evento", "event"),
    ("files", "file"),
    ("film", "movie"),
    ("finestra", "window"),
    ("finestre", "window"),
    ("firenze", "florence"),
    ("foto", "photo"),
    ("fratello", "brother"),
    ("genova", "genoa"),
    ("giardino", "garden"),
    ("giorno", "day"),
    ("gradi", "degree"),
    ("grado", "degree"),
    ("grande", "big"),
    ("grandezza", "size"),
    ("ieri", "yesterday"),
    ("image", "photo"),
    ("images", "photo"),
    ("immagine", "photo"),
    ("immagini", "photo"),
    ("indirizzo", "address"),
    ("latte", "milk"),
    ("laurea", "graduation"),
    ("lights", "light"),
    ("lista", "list"),
    ("londra", "london"),
    ("luce", "light"),
    ("luci", "light"),
    ("madre", "mother"),
    ("mail", "email"),
    ("mails", "email"),
    ("mamma", "mum"),
    ("marito", "husband"),
    ("matrimonio", "wedding"),
    ("mattina", "morning"),
    ("mese", "month"),
    ("messaggi", "message"),
    ("messaggio", "message"),
    ("meteo", "weather"),
    ("milano", "milan"),
    ("moglie", "wife"),
    ("mom", "mum"),
    ("musica", "music"),
    ("napoli", "naples"),
    ("notizie", "news"),
    ("notte", "night"),
    ("padre", "father"),
    ("pane", "bread"),
    ("papà", "dad"),
    ("parigi", "paris"),
    ("parola", "word"),
    ("parole", "word"),
    ("persiane", "shutter"),
    ("photos", "photo"),
    ("picture", "photo"),
    ("pictures", "photo"),
    ("porta", "door"),
    ("posizione", "location"),
    ("posta", "email"),
    ("prezzo", "price"),
    ("promemoria", "reminder"),
    ("riassunto", "summary"),
    ("riscaldamento", "heating"),
    ("riunione", "meeting"),
    ("riunioni", "meeting"),
    ("roma", "rome"),
    ("salotto", "living"),
    ("sera", "evening"),
    ("settimana", "week"),
    ("sito", "site"),
    ("soggiorno", "living"),
    ("sorella", "sister"),
    ("spesa", "shopping"),
    ("studio", "study"),
    ("sveglia", "alarm"),
    ("tapparella", "shutter"),
    ("tapparelle", "shutter"),
    ("televisione", "tv"),
    ("televisore", "tv"),
    ("temperatura", "temperature"),
    ("tende", "curtain"),
    ("testo", "text"),
    ("torino", "turin"),
    ("ufficio", "office"),
    ("venezia", "venice"),
    ("ventilatore", "fan"),
    ("ventilatori", "fan"),
];

/// Phrases read as one concept before words are compared (`text::normalize`
/// form): idioms whose words alone mean something else ("che tempo fa" is
/// the weather, not "what time does"), and compounds one language writes as
/// one word, and what a voice transcript writes for another phrase ("switch
/// of the lights" is "switch off").
const PHRASES: &[(&str, &str)] = &[
    ("camera da letto", "bedroom"),
    ("che ora è", "time"),
    ("che ore sono", "time"),
    ("che tempo fa", "weather"),
    ("chiudere a chiave", "lock"),
    ("chiudi a chiave", "lock"),
    ("fammi sentire", "play"),
    ("lista della spesa", "shopping list"),
    ("living room", "living"),
    ("power down", "power off"),
    ("power up", "power on"),
    ("previsioni del tempo", "weather"),
    ("switch of", "switch off"),
    ("switchoff", "switch off"),
    ("switchon", "switch on"),
    ("tira giu", "lower"),
    ("tira giù", "lower"),
    ("tira su", "raise"),
    ("turn of", "turn off"),
    ("turnoff", "turn off"),
    ("turnon", "turn on"),
    ("weather forecast", "weather"),
];

/// `normalized` with every phrase of the table, as whole words, replaced
/// by its concept.
pub fn phrases(normalized: &str) -> String {
    let mut padded = format!(" {normalized} ");
    for (phrase, concept) in PHRASES {
        let (from, to) = (format!(" {phrase} "), format!(" {concept} "));
        while let Some(i) = padded.find(&from) {
            padded.replace_range(i..i + from.len(), &to);
        }
    }
    padded.trim().to_owned()
}

/// The phrase of the table whose words open `words[at..]`: how many words
/// it spans, and its concept ("che tempo fa …" → 3, "weather").
pub fn phrase_at(words: &[String], at: usize) -> Option<(usize, &'static str)> {
    PHRASES.iter().find_map(|(phrase, concept)| {
        let n = phrase.split(' ').count();
        let said = words.get(at..at + n)?;
        phrase.split(' ').eq(said.iter().map(String::as_str)).then_some((n, *concept))
    })
}

/// The concept `word` stands for: its English twin for an Italian word in
/// the table, else the word itself.
pub fn concept(word: &str) -> &str {
    match CONCEPTS.binary_search_by(|(w, _)| (*w).cmp(word)) {
        Ok(i) => CONCEPTS[i].1,
        Err(_) => word,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::normalize;

    #[test]
    fn the_table_is_sorted_normalised_and_maps_to_itself_stably() {
        assert!(CONCEPTS.windows(2).all(|w| w[0].0 < w[1].0), "sorted, no duplicates: binary search needs it");
        for (word, c) in CONCEPTS {
            assert_eq!(normalize(word), *word, "{word:?} is not in normalised form");
            assert_eq!(normalize(c), *c, "{c:?} is not in normalised form");
            // A concept is a fixed point: folding twice changes nothing
            // (and an entry mapping a word to itself would be dead).
            assert_eq!(concept(c), *c, "{word:?} -> {c:?} -> {:?}", concept(c));
            assert_ne!(word, c, "{word:?} maps to itself: leave it out");
        }
        assert_eq!(concept("cucina"), "kitchen");
        assert_eq!(concept("kitchen"), "kitchen");
        assert_eq!(concept("tempo"), "tempo", "ambiguous (weather / time): left out on purpose");
        for (phrase, _) in PHRASES {
            assert_eq!(normalize(phrase), *phrase, "{phrase:?} is not in normalised form");
        }
    }

    #[test]
    fn phrases_are_replaced_as_whole_words() {
        assert_eq!(phrases("che tempo fa a roma"), "weather a roma");
        let said: Vec<String> = "allora che tempo fa a roma".split(' ').map(str::to_owned).collect();
        assert_eq!((phrase_at(&said, 1), phrase_at(&said, 0)), (Some((3, "weather")), None));
        assert_eq!(phrases("aggiungi il latte alla lista della spesa"), "aggiungi il latte alla shopping list");
        assert_eq!(phrases("quanto tempo fa"), "quanto tempo fa");
        assert_eq!(phrases("switch of the porch lights"), "switch off the porch lights");
        assert!(!crate::fast_path::gate::poles_of_text("turn of the lights in the garage").is_empty());
        assert_eq!(phrases("anche tempo fatto"), "anche tempo fatto");
        assert_eq!(phrases("chiudi a chiave il portoncino"), "lock il portoncino");
        assert_eq!(phrases("power up the printer"), "power on the printer");
        // A voice transcript glues the verb to its particle.
        assert_eq!(phrases("turnon coffee machine"), "turn on coffee machine");
        assert_eq!(phrases("switchoff the fan"), "switch off the fan");
    }
}
