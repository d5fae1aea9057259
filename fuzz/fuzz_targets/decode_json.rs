//! Arbitrary text through the JSON Lines envelope decoder: an error, or an
//! envelope whose line decodes to itself.
#![no_main]

use engram_events::codec::json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(env) = json::from_line(text) {
        let line = json::to_line(&env);
        assert_eq!(json::from_line(&line).expect("own output parses"), env);
    }
});
