//! The engram side of the log bench: the sled log's configurations (durable
//! and relaxed), opening it, appending through the shared appender threads,
//! and the three ways of reading it back (decoded, frames only, zero-copy
//! view) whose figures stand beside SQLite's.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use engram::events::codec::binary;
use engram::events::{Envelope, Seq};
use engram::storage::{Durability, EventLog, LogConfig, SledLog};

use super::timing::timed_appenders;
use super::RELAXED_FLUSH_MS;

/// The engram log configuration of the durable runs.
pub fn engram_durable_config() -> LogConfig {
    LogConfig { durability: Durability::Durable, ..LogConfig::default() }
}

/// The engram log configuration of the relaxed runs.
pub fn engram_relaxed_config() -> LogConfig {
    LogConfig { durability: Durability::Relaxed { flush_every_ms: RELAXED_FLUSH_MS }, ..LogConfig::default() }
}

/// Opens an engram log in `dir`.
pub fn engram_open(dir: &Path, config: LogConfig) -> anyhow::Result<SledLog> {
    SledLog::open(dir, config).with_context(|| format!("opening the engram log in {}", dir.display()))
}

/// Runs one appender thread per element of `work`, each appending its
/// batches in order and waiting for every acknowledgement; returns the wall
/// time from the moment all appenders are ready until the last ack.
pub fn engram_append(log: &dyn EventLog, work: Vec<Vec<Vec<Envelope>>>) -> anyhow::Result<Duration> {
    timed_appenders(
        work,
        || Ok(()),
        |_, batches| {
            for batch in batches {
                log.append(batch)?;
            }
            Ok(())
        },
    )
}

/// Reads every event from the start, decoding each into an [`Envelope`];
/// returns how many.
pub fn engram_replay(log: &SledLog) -> anyhow::Result<usize> {
    let mut n = 0usize;
    for env in log.read_from(Seq(1)) {
        std::hint::black_box(env?);
        n += 1;
    }
    Ok(n)
}

/// Iterates the segments and splits them into frames, checking each
/// frame's length and CRC, without deserialising: the storage share of
/// replay; returns how many frames.
pub fn engram_frames(log: &SledLog) -> anyhow::Result<usize> {
    let mut n = 0usize;
    for seg in log.segments() {
        let (_, v) = seg?;
        for frame in binary::frames(&v) {
            std::hint::black_box(frame?);
            n += 1;
        }
    }
    Ok(n)
}

/// The zero-copy replay ([`SledLog::for_each_view`]): every frame
/// CRC-checked and its archives validated in place, nothing deserialised;
/// returns how many.
pub fn engram_replay_view(log: &SledLog) -> anyhow::Result<usize> {
    let n = log.for_each_view(Seq(1), |view| {
        std::hint::black_box(view.seq());
        Ok(())
    })?;
    Ok(n as usize)
}
