//! Places by name: a city the user names, written the way a tool's
//! parameter asks for it.
//!
//! Tool schemas in the wild ask for places in a format the user does not
//! speak: "in the format of 'City, State', such as 'Berkeley, CA'", "'City,
//! Country' if the city does not locate in the United States", "such as
//! 'New York, NY' or 'London, UK'". A user says "weather in Boston"; the
//! tool wants `"Boston, MA"`. A model knows where Boston is; the offline
//! planner knows it from a gazetteer — GeoNames' cities (5,000 people or
//! more; 1,000 in the US), installed beside the embedding model by
//! `scripts/fetch-models.sh` and read by the edge ([`install_loader`]), so
//! this crate reads no file.
//!
//! The rules, each a reason to leave a value as the user said it:
//!
//! 1. **Only a parameter that asks.** A string without an enum whose
//!    description names the format ("City, State", "city and state",
//!    "City, Country") or gives an example of it ("'Austin, TX'"); the
//!    region is written as the description's examples write it: a US city
//!    by its state's postal code, another by its country's ISO code when
//!    the examples outside the US write codes ("'Paris, FR'", "'London,
//!    UK'"; GB is written UK, as people write it), else by its name.
//! 2. **Only a whole city.** The value as a whole is a city's name or one
//!    of a big city's other names ("Milano", "New York"); a venue or a
//!    phrase holding a city's name ("Regal Crow Canyon", "Once Upon a Time
//!    in Hollywood") is left alone.
//! 3. **The region the user gives wins.** A state or a country said with
//!    the city ("Sydney, Australia", "San Leandro california", "Lafayette
//!    in Louisiana") chooses among the cities of that name, and is only
//!    rewritten where the form asks for a code ("Sydney, AU", "San
//!    Leandro, CA"); a country named is kept in the user's words ("London,
//!    UK" stays, where the form writes names); a city the gazetteer
//!    does not have in that region is left as said. Without one, the most
//!    populous city of the name is meant — the one people mean ("Paris",
//!    "Portland") — but where the form writes US places only (the state
//!    form, no country in it or its examples), the US city of the name,
//!    unless the other is `US_ONLY_RATIO` times bigger ("San Rafael, CA",
//!    not Argentina's; "Paris, France" still).
//! 4. **The city as said.** The city keeps the user's words ("New York",
//!    not GeoNames' "New York City"), capitalised when the request was in
//!    lower case.

use std::collections::HashMap;
use std::sync::OnceLock;

use engram_events::payloads::ToolArgs;
use serde_json::Value;

/// The files of a gazetteer, in [`DIR`] of the models dir.
pub const FILES: [&str; 3] = ["cities.tsv", "countries.tsv", "us_states.tsv"];

/// The gazetteer's dir inside the models dir.
pub const DIR: &str = "gazetteer";

/// A city of the gazetteer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct City {
    /// GeoNames' name ("New York City").
    pub name: String,
    /// ISO 3166 country code ("US").
    pub country: String,
    /// First-level region: a US state's postal code ("NY"); GeoNames'
    /// admin1 code elsewhere.
    pub region: String,
    /// People living there: among cities of one name, the most populous is
    /// the one meant.
    pub population: u32,
}

/// A region said beside a city.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Region {
    /// A US state, by postal code.
    State(String),
    /// A country, by ISO code.
    Country(String),
}

/// Cities, countries and US states by name (module docs).
#[derive(Debug, Default)]
pub struct Gazetteer {
    cities: Vec<City>,
    /// Folded name (and big cities' other names) → cities, most populous
    /// first.
    by_name: HashMap<String, Vec<u32>>,
    /// ISO code → name.
    countries: HashMap<String, String>,
    /// Folded name → ISO code.
    country_named: HashMap<String, String>,
    /// Folded state name → postal code.
    state_named: HashMap<String, String>,
}

/// A line of a gazetteer file that is not what `scripts/gazetteer/build.py`
/// writes.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {what}")]
pub struct GazetteerError {
    /// Which of [`FILES`].
    pub file: &'static str,
    /// 1-based.
    pub line: usize,
    /// What is wrong with it.
    pub what: String,
}

impl Gazetteer {
    /// Reads the three files' texts, as `scripts/gazetteer/build.py`
    /// writes them: `cities.tsv` (name, country, region, population, other
    /// names `|`-separated), `countries.tsv` (code, name), `us_states.tsv`
    /// (code, name).
    pub fn parse(cities: &str, countries: &str, us_states: &str) -> Result<Gazetteer, GazetteerError> {
        let mut g = Gazetteer::default();
        for (file, text) in [(FILES[1], countries), (FILES[2], us_states)] {
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
                let (code, name) = line.split_once('\t').ok_or_else(|| GazetteerError {
                    file,
                    line: i + 1,
                    what: "expected a code, a tab and a name".into(),
                })?;
                if file == FILES[1] {
                    g.countries.insert(code.to_string(), name.to_string());
                    g.country_named.insert(fold(name), code.to_string());
                } else {
                    g.state_named.insert(fold(name), code.to_string());
                }
            }
        }
        for (name, code) in [("usa", "US"), ("united states of america", "US"), ("uk", "GB"), ("england", "GB")] {
            g.country_named.insert(name.to_string(), code.to_string());
        }
        for (i, line) in cities.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
            let bad = |what: &str| GazetteerError { file: FILES[0], line: i + 1, what: what.to_string() };
            let f: Vec<&str> = line.split('\t').collect();
            let [name, country, region, population, others] = f[..] else {
                return Err(bad("expected five tab-separated fields"));
            };
            let population = population.parse().map_err(|_| bad("the population is no number"))?;
            let at = u32::try_from(g.cities.len()).map_err(|_| bad("too many cities"))?;
            g.cities.push(City { name: name.into(), country: country.into(), region: region.into(), population });
            let mut keys = vec![fold(name)];
            keys.extend(others.split('|').filter(|o| !o.is_empty()).map(fold));
            keys.sort_unstable();
            keys.dedup();
            for k in keys {
                g.by_name.entry(k).or_default().push(at);
            }
        }
        let cities = &g.cities;
        for ids in g.by_name.values_mut() {
            ids.sort_by_key(|&c| std::cmp::Reverse(cities[c as usize].population));
        }
        Ok(g)
    }

    /// The city `name` names, in `region` when one is said: the most
    /// populous of that name there (rule 3).
    fn city(&self, name: &str, region: Option<&Region>, us_only: bool) -> Option<&City> {
        let ids = self.by_name.get(&fold(name))?;
        let mut cities = ids.iter().map(|&c| &self.cities[c as usize]);
        match region {
            // A form that writes US places only means the US city of the
            // name, unless the name is another country's much bigger city
            // (rule 3).
            None if us_only => {
                let top = cities.next()?;
                let us = std::iter::once(top).chain(cities).find(|c| c.country == "US");
                Some(match us {
                    Some(u) if top.population <= u.population.saturating_mul(US_ONLY_RATIO) => u,
                    _ => top,
                })
            }
            None => cities.next(),
            Some(Region::State(s)) => cities.find(|c| c.country == "US" && &c.region == s),
            Some(Region::Country(k)) => cities.find(|c| &c.country == k),
        }
    }

    /// The region `words` name: a US state by name or postal code (in
    /// capitals), a country by name or ISO code (in capitals).
    fn region(&self, words: &str) -> Option<Region> {
        let words = words.trim().trim_end_matches(['.', '?', '!', ',']);
        let folded = fold(words);
        if let Some(code) = self.state_named.get(&folded) {
            return Some(Region::State(code.clone()));
        }
        if let Some(code) = self.country_named.get(&folded) {
            return Some(Region::Country(code.clone()));
        }
        let code = words.len() == 2 && words.chars().all(|c| c.is_ascii_uppercase());
        if code && self.state_named.values().any(|c| c == words) {
            return Some(Region::State(words.to_string()));
        }
        if code && self.countries.contains_key(words) {
            return Some(Region::Country(words.to_string()));
        }
        None
    }
}

/// How a parameter asks for a place's region to be written (rule 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceFormat {
    /// "City, ST" in the US, "City, Country" elsewhere.
    CountryName,
    /// "City, ST" in the US, "City, CC" elsewhere ("London, UK").
    CountryCode,
}

impl PlaceFormat {
    /// The format a string parameter described as `description` asks for,
    /// if it asks for one.
    pub fn of(description: &str) -> Option<PlaceFormat> {
        let lower = description.to_lowercase();
        let named = ["city, state", "city and state", "city, country", "city,state"].iter().any(|f| lower.contains(f));
        let examples = examples(description);
        let state_example = examples.iter().any(|r| US_STATE_CODES.contains(r));
        let city_example = lower.contains("city") && !examples.is_empty();
        if !(named || state_example || city_example) {
            return None;
        }
        // The examples outside the US say how a country is written
        // ("'Paris, FR'" beside "'City, Country'"); without one, by name.
        let codes = examples.iter().any(|r| r.len() == 2 && !US_STATE_CODES.contains(r));
        let names = examples.iter().any(|r| r.len() > 2);
        Some(if codes && !names { PlaceFormat::CountryCode } else { PlaceFormat::CountryName })
    }

    /// The city `said` (in `region` when one was said) as this format
    /// writes it, if the gazetteer knows it (rules 2–4); `us_only`: the
    /// description asks for US places only ([`us_only`]).
    fn write(self, g: &Gazetteer, said: &str, region: Option<(&str, Region)>, us_only: bool) -> Option<String> {
        let city = g.city(said, region.as_ref().map(|r| &r.1), us_only)?;
        let as_said =
            if said.chars().any(char::is_uppercase) { said.to_string() } else { crate::fast_path::slots::title(said) };
        let region = match (city.country.as_str(), self, region) {
            ("US", _, _) => city.region.clone(),
            ("GB", PlaceFormat::CountryCode, _) => "UK".to_string(),
            (code, PlaceFormat::CountryCode, _) => code.to_string(),
            // A country the user named, in the words they chose ("UK").
            (_, PlaceFormat::CountryName, Some((words, _))) => words.to_string(),
            (code, PlaceFormat::CountryName, None) => {
                g.countries.get(code).cloned().unwrap_or_else(|| code.to_string())
            }
        };
        Some(format!("{as_said}, {region}"))
    }
}

/// How much bigger than the US city of its name another country's city
/// must be to be meant where a form writes US places only: "Paris" (86
/// times Paris, Texas) is the French one, "San Rafael" or "Santa Rosa"
/// (two to ten times the Californian one) the American.
const US_ONLY_RATIO: u32 = 20;

/// Whether `description` asks for US places only: the state form ("City,
/// State", "city and state", an example written "'Austin, TX'"), no
/// country named, no example outside the US — the tool's places are
/// American, and so is the city a user names by a name others share.
fn us_only(description: &str) -> bool {
    let lower = description.to_lowercase();
    let examples = examples(description);
    let state = ["city, state", "city and state", "city,state"].iter().any(|f| lower.contains(f))
        || examples.iter().any(|r| US_STATE_CODES.contains(r));
    state && !lower.contains("country") && examples.iter().all(|r| US_STATE_CODES.contains(r))
}

/// The US states' postal codes, to tell an example's state from a
/// country code without the gazetteer ("Austin, TX" vs "London, UK").
const US_STATE_CODES: &[&str] = &[
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY", "LA",
    "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK", "OR",
    "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY",
];

/// The regions of the description's quoted examples of a place: the part
/// after the comma of `'Capitalised Words, Region'` ("CA", "UK",
/// "France").
fn examples(description: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for quoted in description.split(['\'', '"']).skip(1).step_by(2) {
        let Some((city, region)) = quoted.split_once(", ") else { continue };
        let capitalised =
            |s: &str| !s.is_empty() && s.split(' ').all(|w| w.chars().next().is_some_and(char::is_uppercase));
        if capitalised(city) && capitalised(region) && region.split(' ').count() <= 3 && city != "City" {
            out.push(region);
        }
    }
    out
}

/// A name as it is looked up: lower case, accents off ("Lạng Sơn" and
/// "lang son" are one key), dashes as spaces.
fn fold(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    s.trim()
        .to_lowercase()
        .nfd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .map(|c| if c == '-' { ' ' } else { c })
        .collect()
}

/// How the edge reads the gazetteer, when a place's format is first
/// asked for.
type Loader = Box<dyn Fn() -> Option<Gazetteer> + Send + Sync>;

static LOADER: OnceLock<Loader> = OnceLock::new();
static LOADED: OnceLock<Option<Gazetteer>> = OnceLock::new();

/// Gives the argument rules their gazetteer, as `load` reads it — called
/// the first time a parameter asks for a place's format, not before:
/// parsing it takes about 180 ms and some MB, which a process whose tools
/// ask for no place format never spends. The first loader given stays
/// (the models dir does not change under a running process).
pub fn install_loader(load: impl Fn() -> Option<Gazetteer> + Send + Sync + 'static) {
    let _ = LOADER.set(Box::new(load));
}

/// The gazetteer, loaded now if this is the first ask; `None` when the
/// edge gave no loader yet, or its loader found none.
pub fn installed() -> Option<&'static Gazetteer> {
    let load = LOADER.get()?;
    LOADED.get_or_init(load).as_ref()
}

/// Rewrites, in `args`, each place value whose parameter in `schema` asks
/// for a format (module docs), reading the region said after it in
/// `request`. Without an installed gazetteer, nothing changes; the
/// gazetteer is loaded only once a parameter asks for a format.
pub fn in_asked_format(schema: &Value, args: &mut ToolArgs, request: &str) {
    write_places(&installed, schema, args, request);
}

/// [`in_asked_format`] with the gazetteer `gazetteer` gives, asked for
/// only when a parameter asks for a format.
fn write_places<'g>(gazetteer: &dyn Fn() -> Option<&'g Gazetteer>, schema: &Value, args: &mut ToolArgs, request: &str) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    for (name, value) in args.0.iter_mut() {
        let Some(spec) = properties.get(name) else { continue };
        if spec.get("type").and_then(Value::as_str) != Some("string") || spec.get("enum").is_some() {
            continue;
        }
        let description = spec.get("description").and_then(Value::as_str).unwrap_or("");
        let Some(format) = PlaceFormat::of(description) else { continue };
        let us = us_only(description);
        let Some(said) = value.as_str() else { continue };
        let Some(g) = gazetteer() else { return };
        let written = match said.split_once(',') {
            Some((city, words)) => {
                let words = words.trim();
                g.region(words).and_then(|r| format.write(g, city.trim(), Some((words, r)), us))
            }
            None => format.write(g, said, region_after(g, request, said), us),
        };
        if let Some(w) = written {
            *value = Value::String(w);
        }
    }
}

/// The region said right after `city` in `request`, past a comma or "in"
/// ("San Leandro california", "Lafayette in Louisiana", "Austin TX").
fn region_after<'r>(g: &Gazetteer, request: &'r str, city: &str) -> Option<(&'r str, Region)> {
    let lower = request.to_lowercase();
    let at = lower.find(&city.to_lowercase())? + city.len();
    let rest = request.get(at..)?.trim_start_matches([',', ' ']);
    let rest = rest.strip_prefix("in ").unwrap_or(rest);
    // The longest run of up to four words that names a region.
    let ends: Vec<usize> = rest.match_indices(' ').map(|(i, _)| i).chain([rest.len()]).take(4).collect();
    ends.iter().rev().find_map(|&end| {
        let words = rest[..end].trim_end_matches(['.', '?', '!', ',']);
        g.region(words).map(|r| (words, r))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn gazetteer() -> Gazetteer {
        let cities = "Boston\tGB\tENG\t45339\t\n\
                      Boston\tUS\tMA\t653833\t\n\
                      Lafayette\tUS\tIN\t70373\t\n\
                      Lafayette\tUS\tLA\t126185\t\n\
                      Milan\tIT\t09\t1371498\tMilano|Mailand\n\
                      New York City\tUS\tNY\t8804190\tNew York|Big Apple\n\
                      London\tGB\tENG\t8961989\t\n\
                      London\tCA\t08\t346765\t\n\
                      Sydney\tAU\t02\t4627345\t\n\
                      San Rafael\tAR\t12\t118009\t\n\
                      San Rafael\tUS\tCA\t58704\t\n\
                      Paris\tFR\t11\t2138551\t\n\
                      Paris\tUS\tTX\t24782\t\n";
        Gazetteer::parse(
            cities,
            "AR\tArgentina\nAU\tAustralia\nFR\tFrance\nGB\tUnited Kingdom\nIT\tItaly\nUS\tUnited States\n",
            "CA\tCalifornia\nIN\tIndiana\nLA\tLouisiana\nMA\tMassachusetts\nNY\tNew York\n",
        )
        .unwrap()
    }

    fn written(description: &str, value: &str, request: &str) -> String {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string", "description": description}}});
        let mut args = ToolArgs::default();
        args.0.insert("city".into(), json!(value));
        let g = gazetteer();
        write_places(&|| Some(&g), &schema, &mut args, request);
        args.0["city"].as_str().unwrap().to_string()
    }

    const STATE: &str = "The city, in the format of 'City, State', such as 'Berkeley, CA' or 'New York, NY'.";
    const COUNTRY: &str = "In the format of 'City, State' or 'City, Country' if the city does not locate in the US";
    const CODES: &str = "The name of the city, such as 'New York, NY' or 'London, UK'.";

    /// A form that writes US places only means the US city of a shared
    /// name, unless the other is a far bigger city; a form that writes
    /// countries too means the most populous.
    #[test]
    fn a_form_of_us_places_means_the_us_city_of_a_shared_name() {
        assert_eq!(written(STATE, "San Rafael", "imax movies in San Rafael"), "San Rafael, CA");
        assert_eq!(written(COUNTRY, "San Rafael", "imax movies in San Rafael"), "San Rafael, Argentina");
        assert_eq!(written(STATE, "Paris", "a restaurant in Paris"), "Paris, France");
        assert_eq!(written(STATE, "San Rafael", "San Rafael, Argentina"), "San Rafael, Argentina", "as said");
    }

    #[test]
    fn a_city_takes_the_region_the_parameter_asks_for() {
        assert_eq!(written(STATE, "Boston", "weather today in Boston"), "Boston, MA");
        assert_eq!(written(STATE, "New York", "events in New York"), "New York, NY");
        assert_eq!(written(COUNTRY, "Milano", "cose da fare a Milano"), "Milano, Italy");
        assert_eq!(written(CODES, "London", "weather in London"), "London, UK");
        assert_eq!(written(STATE, "new york", "weather in new york"), "New York, NY");
    }

    #[test]
    fn the_region_the_user_says_chooses_and_is_rewritten() {
        assert_eq!(written(STATE, "Lafayette", "a stylist in Lafayette"), "Lafayette, LA");
        assert_eq!(written(STATE, "Lafayette", "a stylist in Lafayette in Indiana"), "Lafayette, IN");
        assert_eq!(written(CODES, "Sydney, Australia", "weather for Sydney, Australia"), "Sydney, AU");
        assert_eq!(written(COUNTRY, "London, UK", "I'm at London, UK"), "London, UK");
        assert_eq!(written(COUNTRY, "London", "I'm at London"), "London, United Kingdom");
        assert_eq!(written(STATE, "Boston, MA", "Boston, MA"), "Boston, MA");
        // A region the gazetteer has no such city in: as said.
        assert_eq!(written(STATE, "Sydney, Italy", "Sydney, Italy"), "Sydney, Italy");
        assert_eq!(written(STATE, "Milan", "Milan, Indiana"), "Milan");
    }

    #[test]
    fn what_is_no_city_or_asks_no_format_is_left_alone() {
        assert_eq!(written(STATE, "Regal Crow Canyon", "at Regal Crow Canyon"), "Regal Crow Canyon");
        assert_eq!(written(STATE, "Once Upon a Time In Boston", "x"), "Once Upon a Time In Boston");
        assert_eq!(written("The city to search in.", "Boston", "in Boston"), "Boston");
    }

    #[test]
    fn the_format_is_read_from_the_description() {
        assert_eq!(PlaceFormat::of(STATE), Some(PlaceFormat::CountryName));
        assert_eq!(PlaceFormat::of(CODES), Some(PlaceFormat::CountryCode));
        let both = "in the format of 'City, State' or 'City, Country'; for example, 'New York, NY' or 'Paris, FR'";
        assert_eq!(PlaceFormat::of(both), Some(PlaceFormat::CountryCode));
        assert_eq!(PlaceFormat::of("The city, e.g. 'Paris, France'"), Some(PlaceFormat::CountryName));
        assert_eq!(PlaceFormat::of("The name of the city."), None);
        assert_eq!(PlaceFormat::of("The date, 'Monday, March 3'"), None);
    }

    #[test]
    fn a_broken_line_is_named() {
        let e = Gazetteer::parse("Boston\tUS\tMA\tmany\t\n", "", "").unwrap_err();
        assert_eq!(e.to_string(), "cities.tsv:1: the population is no number");
    }
}
