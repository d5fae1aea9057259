//! The gazetteer installed beside the embedding models
//! (`scripts/fetch-models.sh` puts it in `<models dir>/gazetteer/`),
//! read once per process and handed to the argument rules
//! ([`engram_learning::places`]), which read no file themselves.
//!
//! It is optional: without it, a place is passed as the user said it
//! ("Boston", where a tool asks for "Boston, MA"), and the reason is
//! logged once. A damaged file is logged as a warning naming the file and
//! line, never an error — a place's format is no reason to refuse a turn.

use std::path::Path;
use std::sync::Once;

use engram_learning::places::{self, Gazetteer, DIR, FILES};

static TRIED: Once = Once::new();

/// Installs the gazetteer of `models_dir`, the first time any caller asks
/// (later calls, and other dirs, change nothing: a running process keeps
/// the places it started with).
pub fn install_from(models_dir: &Path) {
    TRIED.call_once(|| {
        let dir = models_dir.join(DIR);
        let read = |name: &str| std::fs::read_to_string(dir.join(name));
        let texts = (read(FILES[0]), read(FILES[1]), read(FILES[2]));
        let (Ok(cities), Ok(countries), Ok(states)) = texts else {
            tracing::info!(dir = %dir.display(), "no gazetteer (scripts/fetch-models.sh installs it): places are passed as said");
            return;
        };
        match Gazetteer::parse(&cities, &countries, &states) {
            Ok(g) => places::install(g),
            Err(e) => tracing::warn!(dir = %dir.display(), "the gazetteer is damaged, places are passed as said: {e}"),
        }
    });
}
