//! The gazetteer installed beside the embedding models
//! (`scripts/fetch-models.sh` puts it in `<models dir>/gazetteer/`),
//! read by this loader for the argument rules
//! ([`engram_learning::places`], which read no file themselves) the
//! first time a tool's parameter asks for a place's format — not at start:
//! parsing it costs about 180 ms, which most runs never need.
//!
//! It is optional: without it, a place is passed as the user said it
//! ("Boston", where a tool asks for "Boston, MA"), and the reason is
//! logged once. A damaged file is logged as a warning naming the file and
//! line, never an error — a place's format is no reason to refuse a turn.

use std::path::Path;

use engram_learning::places::{self, Gazetteer, DIR, FILES};

/// Gives the argument rules the gazetteer of `models_dir`, to be read when
/// first needed (later calls, and other dirs, change nothing: a running
/// process keeps the places it started with).
pub fn install_from(models_dir: &Path) {
    let dir = models_dir.join(DIR);
    places::install_loader(move || load(&dir));
}

fn load(dir: &Path) -> Option<Gazetteer> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name));
    let texts = (read(FILES[0]), read(FILES[1]), read(FILES[2]));
    let (Ok(cities), Ok(countries), Ok(states)) = texts else {
        tracing::info!(dir = %dir.display(), "no gazetteer (scripts/fetch-models.sh installs it): places are passed as said");
        return None;
    };
    Gazetteer::parse(&cities, &countries, &states)
        .map_err(|e| tracing::warn!(dir = %dir.display(), "the gazetteer is damaged, places are passed as said: {e}"))
        .ok()
}
