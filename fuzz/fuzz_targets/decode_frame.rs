//! Arbitrary bytes through the binary frame decoder and the segment walker:
//! every outcome is an error or an envelope that re-encodes and decodes to
//! itself, never a panic.
#![no_main]

use engram_events::codec::binary;
use engram_events::Seq;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(env) = binary::decode(data) {
        let again = binary::decode(&binary::encode(&env)).expect("re-encoded frame decodes");
        assert_eq!(again, env);
    }
    for frame in binary::frames(data).flatten() {
        let _ = frame.seq();
        let _ = frame.decode();
    }
    let _ = engram_storage::segment::for_each_frame(Seq(1), data, |_, f| {
        let _ = f.decode();
        Ok(())
    });
});
