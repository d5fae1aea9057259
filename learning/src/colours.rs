//! Colour names, EN + IT: what a colour property takes from a request.
//!
//! A tool that sets a light's colour (`HassLightSet`'s `color`: "Colour
//! name, as the user said it") is given the colour as said — "yellow",
//! "rossa" — and no place or device name may swallow it ("la luce del
//! bagno blu" is the bathroom's light, blue). Colour terms are a small,
//! closed class of general language, listed here with their Italian
//! gendered and plural forms; a schema's own `enum` still bounds a
//! property that has one (rule 3 of [`crate::arguments`] reads those).

use serde_json::Value;

/// Basic colour terms, EN + IT, in [`crate::text::normalize`] form.
const COLOURS: &[&str] = &[
    "red",
    "orange",
    "yellow",
    "green",
    "blue",
    "purple",
    "violet",
    "pink",
    "white",
    "black",
    "teal",
    "turquoise",
    "cyan",
    "magenta",
    "lilac",
    "lavender",
    "amber",
    "gold",
    "brown",
    "grey",
    "gray",
    "indigo",
    "crimson",
    "rosso",
    "rossa",
    "rossi",
    "rosse",
    "arancione",
    "arancio",
    "giallo",
    "gialla",
    "gialli",
    "gialle",
    "verde",
    "verdi",
    "blu",
    "azzurro",
    "azzurra",
    "azzurri",
    "azzurre",
    "viola",
    "rosa",
    "bianco",
    "bianca",
    "bianchi",
    "bianche",
    "nero",
    "nera",
    "turchese",
    "ciano",
    "lilla",
    "ambra",
    "oro",
    "marrone",
    "grigio",
    "grigia",
    "indaco",
];

/// Whether `word` (any case) is a colour's name.
pub fn is_colour(word: &str) -> bool {
    COLOURS.contains(&word.to_lowercase().as_str())
}

/// Whether a property is a colour said in words: a string without an
/// enum, named for colour (`color`, `colour`, `colore`, `light_color`) —
/// not a colour *temperature*, a number.
pub fn colour_property(name: &str, spec: &Value) -> bool {
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
    let colour = |w: &str| matches!(w, "color" | "colour" | "colore");
    // Named so, or described so first ("hue": "colour or white tone, in
    // the speaker's words").
    let described = spec.get("description").and_then(Value::as_str).map(crate::text::normalize);
    let opens = described.as_deref().and_then(|d| d.split_whitespace().next()).is_some_and(colour);
    kind == "string"
        && spec.get("enum").is_none()
        && (crate::tool_words::split_name(name).iter().any(|w| colour(w)) || opens)
}

/// The first colour `request` names, as said.
pub fn said(request: &str) -> Option<String> {
    crate::text::normalize(request).split_whitespace().find(|w| is_colour(w)).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_colour_is_found_as_said_in_either_language() {
        assert_eq!(said("make the kitchen light yellow").as_deref(), Some("yellow"));
        assert_eq!(said("luce dello studio rossa per favore").as_deref(), Some("rossa"));
        assert_eq!(said("turn on the kitchen light"), None);
        assert!(colour_property("color", &serde_json::json!({"type": "string"})));
        assert!(colour_property("light_colour", &serde_json::json!({"type": "string"})));
        assert!(!colour_property("color_temp", &serde_json::json!({"type": "integer"})));
        assert!(!colour_property("area", &serde_json::json!({"type": "string"})));
    }
}
