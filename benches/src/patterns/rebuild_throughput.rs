//! The rebuild's throughput: the event stream folded into a fresh
//! [`PatternOutcomes`] from memory, appended to a fresh log, and rebuilt
//! from that log the way `engram rebuild` does — each [`REBUILD_RUNS`]
//! times, both folds checked to agree — making the [`RebuildFigure`].

use std::time::{Duration, Instant};

use engram::events::Envelope;
use engram::learning::projections::PatternOutcomes;
use engram::local_state::projector::{digest, Projection, Projector};
use engram::storage::{EventLog, SledLog};

use super::report::RebuildFigure;
use super::stream::event_stream;
use crate::round2;

/// Runs per rebuild figure; the report gives the median.
pub const REBUILD_RUNS: usize = 3;

/// Folds `events` (decoded, in order) into a fresh [`PatternOutcomes`].
pub fn fold(events: &[Envelope]) -> PatternOutcomes {
    let mut p = PatternOutcomes::default();
    for env in events {
        p.apply(env);
    }
    p
}

/// Appends `events` to `log` in batches of 2,048, as `engram import` does,
/// and waits until they are written.
pub fn append_all(log: &SledLog, events: Vec<Envelope>) -> anyhow::Result<()> {
    let n = events.len() as u64;
    let start = log.head().0;
    crate::log::engram_append(log, crate::log::split(events, 1, 2_048))?;
    log.flush()?;
    anyhow::ensure!(log.head().0 == start + n, "the log holds {} of {n} events", log.head().0 - start);
    Ok(())
}

/// Rebuilds `pattern_outcomes` from `log` the way `engram rebuild` does
/// (in memory, nothing persisted): returns the records decoded and folded,
/// the time it took, and the projector holding the result.
pub fn rebuild(log: &SledLog) -> anyhow::Result<(u64, Duration, Projector)> {
    let start = Instant::now();
    let mut projector = Projector::in_memory(vec![Box::new(PatternOutcomes::default())]);
    let read = projector.catch_up(log, |_, _| {})?;
    Ok((read, start.elapsed(), projector))
}

/// The digest of the rows of the `pattern_outcomes` a [`rebuild`] made.
pub fn rebuilt_digest(projector: &Projector) -> anyhow::Result<[u8; 32]> {
    let p = projector
        .get::<PatternOutcomes>("pattern_outcomes")
        .ok_or_else(|| anyhow::anyhow!("the projector holds no pattern_outcomes"))?;
    Ok(digest(&p.rows()))
}

/// Generates the stream, folds it in memory, appends it to a fresh log in
/// a temporary directory and rebuilds from there ([`REBUILD_RUNS`] runs
/// each), checking both folds agree.
pub fn measure_rebuild(min_events: usize, seed: u64, progress: impl Fn(&str)) -> anyhow::Result<RebuildFigure> {
    progress("rebuild: generating the event stream");
    let start = Instant::now();
    let (events, stream) = event_stream(min_events, seed);
    let generate_ms = round2(start.elapsed().as_secs_f64() * 1e3);
    let n = events.len() as u64;

    progress("rebuild: folding from memory");
    let mut fold_runs = Vec::with_capacity(REBUILD_RUNS);
    let mut folded = None;
    for _ in 0..REBUILD_RUNS {
        let start = Instant::now();
        let p = fold(&events);
        fold_runs.push(eps(n, start.elapsed()));
        folded = Some(p);
    }
    let folded = folded.expect("at least one run");
    let want = digest(&folded.rows());

    progress("rebuild: appending to a fresh log");
    let dir = tempfile::Builder::new().prefix("engram-bench-patterns-").tempdir()?;
    let log = crate::log::engram_open(&dir.path().join("log"), crate::log::engram_relaxed_config())?;
    append_all(&log, events)?;

    progress("rebuild: from the log");
    let mut runs = Vec::with_capacity(REBUILD_RUNS);
    let mut decoded = 0;
    for _ in 0..REBUILD_RUNS {
        let (read, took, projector) = rebuild(&log)?;
        anyhow::ensure!(
            rebuilt_digest(&projector)? == want,
            "the rebuilt pattern_outcomes differ from the in-memory fold"
        );
        decoded = read;
        runs.push(eps(n, took));
    }
    drop(log);
    Ok(RebuildFigure {
        events: n,
        decoded,
        events_per_sec: crate::percentile(&runs, 50.0).unwrap_or(f64::NAN).round(),
        runs: runs.into_iter().map(f64::round).collect(),
        fold_events_per_sec: crate::percentile(&fold_runs, 50.0).unwrap_or(f64::NAN).round(),
        fold_runs: fold_runs.into_iter().map(f64::round).collect(),
        fingerprints: folded.fingerprint_count(),
        outcomes: folded.outcome_count(),
        rows: folded.row_count(),
        generate_ms,
        stream,
    })
}

/// `n` events in `d`, per second.
fn eps(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_records_patterns_and_rebuilds_identically() {
        let (events, stats) = event_stream(3_000, 5);
        assert!(events.len() >= 3_000);
        assert!(stats.kinds["pattern.recorded"] > 0 && stats.kinds["session.ended"] == stats.sessions);
        assert!(stats.kinds["eval.completed"] > 0 && stats.kinds["route.decided"] == stats.turns);
        let p = fold(&events);
        assert!(p.outcome_count() > 0 && p.fingerprint_count() > 0);
        let dir = tempfile::tempdir().unwrap();
        let log = crate::log::engram_open(&dir.path().join("log"), crate::log::engram_relaxed_config()).unwrap();
        let n = events.len() as u64;
        append_all(&log, events).unwrap();
        let (read, _, projector) = rebuild(&log).unwrap();
        assert!(read > 0 && read < n);
        assert_eq!(rebuilt_digest(&projector).unwrap(), digest(&p.rows()));
    }
}
