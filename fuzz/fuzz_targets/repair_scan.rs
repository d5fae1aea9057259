//! Arbitrary bytes as one of a damaged log's files, through `engram
//! repair`'s raw scan: never a panic, and every frame it reports decodes,
//! at its offset, to an envelope with the seq it reported.
#![no_main]

use engram_events::codec::binary;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for (seq, offset) in engram_storage::segment::find_frames(data) {
        let (frame, _) = binary::split_frame(&data[offset..]).expect("a reported frame splits");
        let env = frame.decode().expect("a reported frame decodes");
        assert_eq!(env.seq, seq);
    }
});
