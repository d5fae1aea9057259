//! The follower: keeps the data dir's copy of the stream current, from an
//! ordered consumer that starts at the copy's head, applying what arrives
//! in chunks (rule 2 of [`super`]).

use std::sync::Arc;
use std::time::Duration;

use engram_events::chrono::DateTime;
use engram_events::codec::binary;
use engram_events::Seq;
use futures_util::StreamExt;

use super::foreign;
use super::remote::{batch_left, Remote};
use super::replica::{Incoming, Replica};
use crate::error::LogError;
use crate::event_log::EventLog;

/// Most events the follower applies in one local append.
const APPLY_CHUNK: usize = 4096;

/// Keeps the copy current: an ordered consumer from the copy's head,
/// recreated (after a pause) whenever it fails.
pub(super) struct Follower;

impl Follower {
    pub(super) fn start(runtime: &tokio::runtime::Runtime, remote: Arc<Remote>, replica: Arc<Replica>) {
        runtime.spawn(follow(remote, replica));
    }
}

async fn follow(remote: Arc<Remote>, replica: Arc<Replica>) {
    let mut pause = Duration::from_millis(100);
    loop {
        let from = replica.local().head().next();
        match remote.ordered(from).await {
            Ok(messages) => {
                let mut chunks = messages.ready_chunks(APPLY_CHUNK);
                while let Some(chunk) = chunks.next().await {
                    let mut incoming = Vec::with_capacity(chunk.len());
                    let mut broken = None;
                    for message in chunk {
                        let message = match message {
                            Ok(m) => m,
                            Err(e) => {
                                broken = Some(e.to_string());
                                break;
                            }
                        };
                        let (seq, published) = match message.info() {
                            Ok(info) => {
                                let nanos = i64::try_from(info.published.unix_timestamp_nanos()).unwrap_or(0);
                                (Seq(info.stream_sequence), DateTime::from_timestamp_nanos(nanos))
                            }
                            Err(e) => {
                                broken = Some(format!("a message without its position: {e}"));
                                break;
                            }
                        };
                        // Rule 6: what no engram wrote is recorded as
                        // skipped, not followed and not a stop.
                        let event = match binary::decode(&message.payload) {
                            Ok(event) => match foreign::misplaced(&event, seq) {
                                None => event,
                                Some(why) => foreign::skipped(seq, published, &message.payload, why),
                            },
                            Err(e) => {
                                foreign::skipped(seq, published, &message.payload, format!("not an engram frame ({e})"))
                            }
                        };
                        incoming.push(Incoming { seq, event, batch_left: batch_left(message.headers.as_ref()) });
                    }
                    if !incoming.is_empty() {
                        let replica2 = replica.clone();
                        let applied = tokio::task::spawn_blocking(move || replica2.apply(incoming)).await;
                        match applied {
                            Ok(Ok(())) => pause = Duration::from_millis(100),
                            Ok(Err(e)) => {
                                replica.fail(&e);
                                return;
                            }
                            // The log is closing: its runtime cancels the
                            // task, which is no failure of the copy.
                            Err(e) if e.is_cancelled() => return,
                            Err(e) => {
                                replica.fail(&LogError::Inconsistent {
                                    seq: replica.local().head().next(),
                                    what: format!("applying the stream's events panicked: {e}"),
                                });
                                return;
                            }
                        }
                    }
                    if let Some(why) = broken {
                        tracing::warn!(%why, "reading the stream failed; following it again");
                        break;
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot follow the stream yet"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}
