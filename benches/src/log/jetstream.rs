//! The JetStream side of `engram bench log --backend jetstream`: the same
//! workloads as the sled log and SQLite, in the same run, on a NATS
//! JetStream stream — a `nats-server` the bench starts on loopback with its
//! store in the scratch dir, or the server `--nats-url` names (each
//! measurement then gets a stream of its own, deleted afterwards).
//!
//! What the figures mean: an append is acknowledged once the server has
//! stored it (`docs/distributed.md`); nats-server 2.9 writes it to its file
//! before acknowledging but `fsync`s once a minute, so the durable figures
//! are not the same promise as sled's and SQLite's (`fsync` before each
//! acknowledgement) — the report says so beside them.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use engram::events::{Envelope, Seq};
use engram::storage::jetstream::server::NatsServer;
use engram::storage::{EventLog, JetStreamConfig, JetStreamLog, LogConfig};

use super::engram_side::engram_append;
use super::workload::{split, workload};

/// The server the JetStream figures are measured on.
pub struct BenchServer {
    url: String,
    /// Started by the bench (killed when dropped), or `None`: given.
    local: Option<NatsServer>,
    next: usize,
}

impl BenchServer {
    /// The server at `url`, or a `nats-server` started with its store under
    /// `scratch`.
    pub fn new(url: Option<&str>, scratch: &Path) -> anyhow::Result<Self> {
        Ok(match url {
            Some(url) => BenchServer { url: url.to_owned(), local: None, next: 0 },
            None => {
                let server = NatsServer::start(&scratch.join("nats")).context("starting nats-server for the bench")?;
                BenchServer { url: server.url(), local: Some(server), next: 0 }
            }
        })
    }

    /// What was measured against, for the report.
    pub fn describe(&self) -> String {
        let version = std::process::Command::new("nats-server")
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        match &self.local {
            Some(_) => format!("{version} on loopback, started by the bench, file storage, 1 replica"),
            None => format!("the server at {}", self.url),
        }
    }

    /// A configuration for a stream no measurement has used.
    fn fresh_stream(&mut self) -> JetStreamConfig {
        self.next += 1;
        let stream = format!("engram_bench_{}_{}", std::process::id(), self.next);
        JetStreamConfig { url: self.url.clone(), stream, ..JetStreamConfig::default() }
    }

    /// Deletes a measurement's stream (a server the bench started goes
    /// with its store anyway).
    fn delete(&self, config: &JetStreamConfig) -> anyhow::Result<()> {
        if self.local.is_some() {
            return Ok(());
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async {
            let client = async_nats::connect(config.url.as_str()).await?;
            let js = async_nats::jetstream::new(client);
            js.delete_stream(&config.stream).await?;
            // Its packs, if it had any.
            let _ = js.delete_stream(format!("PACKS_{}", config.stream)).await;
            anyhow::Ok(())
        })
    }
}

/// Appends `work` (one appender per element) through a JetStream log on a
/// fresh stream, with a fresh data dir under `dir`; events per second.
pub fn append_once(
    server: &mut BenchServer,
    dir: &Path,
    work: Vec<Vec<Vec<Envelope>>>,
) -> anyhow::Result<(f64, JetStreamConfig, std::path::PathBuf)> {
    let config = server.fresh_stream();
    let data = dir.join(&config.stream);
    let events: usize = work.iter().flatten().map(Vec::len).sum();
    let log = JetStreamLog::open(&data, LogConfig::default(), config.clone())?;
    let d = engram_append(&log, work)?;
    anyhow::ensure!(log.head() == Seq(events as u64), "JetStream appended {} of {events}", log.head().0);
    // Untimed: the packs of what was appended, as a device that has run a
    // while leaves them for the next one.
    log.flush()?;
    Ok((events as f64 / d.as_secs_f64().max(1e-9), config, data))
}

/// One durable-append run: `events` single-event appends over `appenders`.
pub fn durable_once(
    server: &mut BenchServer,
    dir: &Path,
    events: usize,
    appenders: usize,
    payload_bytes: usize,
) -> anyhow::Result<f64> {
    let (eps, config, data) = append_once(server, dir, split(workload(events, payload_bytes), appenders, 1))?;
    let _ = std::fs::remove_dir_all(&data);
    server.delete(&config)?;
    Ok(eps)
}

/// The server's bound on a single appender: `events` of the workload's
/// frames published one at a time by the client alone, each with the
/// headers an append carries (its id for the duplicate window, the
/// sequence it expects) and each waiting for its acknowledgement, on a
/// fresh stream. Events per second: one round trip each, and nothing of
/// engram's (no copy, no follower, no thread hop) — what the durable c1
/// figure is read against.
pub fn round_trip_once(server: &mut BenchServer, events: usize, payload_bytes: usize) -> anyhow::Result<f64> {
    use async_nats::jetstream::{message::PublishMessage, stream};
    let config = server.fresh_stream();
    let frames: Vec<(String, Vec<u8>)> = workload(events, payload_bytes)
        .iter()
        .map(|e| (e.id.to_string(), engram::events::codec::binary::encode(e)))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let elapsed = rt.block_on(async {
        let js = async_nats::jetstream::new(async_nats::connect(config.url.as_str()).await?);
        let subject = format!("{}.bare", config.stream);
        js.create_stream(stream::Config {
            name: config.stream.clone(),
            subjects: vec![subject.clone()],
            ..Default::default()
        })
        .await?;
        let start = Instant::now();
        for (k, (id, frame)) in frames.into_iter().enumerate() {
            let message = PublishMessage::build().payload(frame.into()).message_id(id).expected_last_sequence(k as u64);
            js.send_publish(subject.clone(), message).await?.await?;
        }
        let elapsed = start.elapsed();
        js.delete_stream(&config.stream).await?;
        anyhow::Ok(elapsed)
    })?;
    Ok(events as f64 / elapsed.as_secs_f64().max(1e-9))
}

/// One batched run (one appender, `batch` events per append), then the
/// replay figures on the stream it wrote: a new data dir fetching all of
/// it (what a new device does at its first open) from packs and the
/// stream, another with packs off, and a replay of the first copy once
/// reopened. Events per second, in that order.
pub fn batched_and_replay_once(
    server: &mut BenchServer,
    dir: &Path,
    events: usize,
    batch: usize,
    payload_bytes: usize,
) -> anyhow::Result<[f64; 4]> {
    let (append, config, data) = append_once(server, dir, split(workload(events, payload_bytes), 1, batch))?;
    let _ = std::fs::remove_dir_all(&data);
    let fetch = |device: &Path, config: JetStreamConfig| -> anyhow::Result<(f64, u64)> {
        let start = Instant::now();
        let log = JetStreamLog::open(device, LogConfig::default(), config)?;
        log.wait_for(Seq(events as u64), Duration::from_secs(120))?;
        Ok((events as f64 / start.elapsed().as_secs_f64().max(1e-9), log.fetched_from_packs()))
    };
    let messages = dir.join(format!("{}-messages", config.stream));
    let (fetch_messages, none) = fetch(&messages, JetStreamConfig { packs: false, ..config.clone() })?;
    anyhow::ensure!(none == 0, "a fetch with packs off took {none} events from packs");
    let _ = std::fs::remove_dir_all(&messages);
    let device = dir.join(format!("{}-device", config.stream));
    let (fetch, packed) = fetch(&device, config.clone())?;
    let full = (events as u64).saturating_sub(1) / engram::storage::jetstream::PACK_EVENTS;
    anyhow::ensure!(
        packed == full * engram::storage::jetstream::PACK_EVENTS,
        "the new device took {packed} events from packs, not the {full} complete packs' before the stream's end"
    );
    let log = JetStreamLog::open(&device, LogConfig::default(), config.clone())?;
    let start = Instant::now();
    let mut n = 0;
    for env in log.read_from(Seq::FIRST) {
        env?;
        n += 1;
    }
    let replay = n as f64 / start.elapsed().as_secs_f64().max(1e-9);
    anyhow::ensure!(n == events, "the copy replayed {n} of {events}");
    drop(log);
    let _ = std::fs::remove_dir_all(&device);
    server.delete(&config)?;
    Ok([append, fetch, fetch_messages, replay])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound is measured on a stream of its own, every publish
    /// acknowledged in order (an `expected_last_sequence` out of step
    /// fails the run), and the stream is gone afterwards.
    #[test]
    fn the_round_trip_publishes_every_frame_in_order_and_leaves_no_stream() {
        let scratch = tempfile::tempdir().unwrap();
        let mut server = BenchServer::new(None, scratch.path()).unwrap();
        let eps = round_trip_once(&mut server, 64, 200).unwrap();
        assert!(eps.is_finite() && eps > 0.0, "{eps}");
        let stream = format!("engram_bench_{}_{}", std::process::id(), server.next);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let found = rt.block_on(async {
            let js = async_nats::jetstream::new(async_nats::connect(server.url.as_str()).await.unwrap());
            js.get_stream(&stream).await.is_ok()
        });
        assert!(!found, "{stream} was left on the server");
    }
}
