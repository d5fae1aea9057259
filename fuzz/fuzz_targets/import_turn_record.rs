//! Arbitrary text through the turn-record validator and the turn → events
//! mapping: an error naming a field, or events that encode and decode.
#![no_main]

use engram_events::codec::binary;
use engram_learning::import::{turn_events, turn_record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match turn_record::parse_line(text) {
        Ok(record) => {
            for env in turn_events::turn_events(&record, false) {
                assert_eq!(binary::decode(&binary::encode(&env)).expect("decodes"), env);
            }
        }
        Err(errors) => assert!(!errors.is_empty() && errors.iter().all(|e| !e.field.is_empty())),
    }
});
