//! Arbitrary text as `engram.toml`: never a panic, and no error repeats
//! the value of a key that looks like a secret.
#![no_main]

use engram_actors::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = std::path::Path::new("engram.toml");
    if let Err(e) = Config::from_toml(text, path) {
        let shown = e.to_string();
        // A planted secret after `api_key = "` never comes back.
        if let Some(rest) = text.split("api_key = \"").nth(1) {
            let secret: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            if secret.len() >= 12 {
                assert!(!shown.contains(&secret), "{shown}");
            }
        }
    }
});
