//! Arbitrary bytes as the body of an actor's snapshot: restoring the
//! pattern store or the diary from them is an error or a state, never a
//! panic or an allocation the input does not pay for (a snapshot's CRC
//! catches damage at rest; this is what is left if a body passes it).
#![no_main]

use engram_learning::memory::Diary;
use engram_learning::projections::PatternOutcomes;
use engram_local_state::projector::Projection;
use engram_local_state::snapshot::{Snapshot, SnapshotReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut store = PatternOutcomes::default();
    let mut r = SnapshotReader::new(data);
    if store.restore(&mut r).is_ok() {
        let _ = r.finish();
        let _ = store.rows();
    }
    let mut diary = Diary::new(chrono::FixedOffset::east_opt(0).unwrap());
    let _ = diary.restore(&mut SnapshotReader::new(data));
});
