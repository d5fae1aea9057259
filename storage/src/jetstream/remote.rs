//! The connection to the server and the stream: creating it, the checks of
//! rules 1 and 2 at open, and reading it in order.

use std::time::Duration;

use async_nats::jetstream::consumer::pull::{self, Ordered, OrderedConfig};
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy};
use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::stream::{Config as StreamConfig, DiscardPolicy, RetentionPolicy, State, StorageType};
use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::{self, Context};
use async_nats::{ConnectOptions, Event, ServerAddr};
use engram_events::codec::binary;
use engram_events::Seq;
use futures_util::StreamExt;

use super::foreign;
use super::replica::Replica;
use super::{JetStreamConfig, BATCH_LEFT_HEADER};
use crate::error::LogError;
use crate::event_log::EventLog;

/// How the client authenticates, read from the environment variable the
/// configuration names (`[storage] credentials_env`), never from a file the
/// data dir or the log keeps.
#[derive(Clone)]
pub enum Credentials {
    /// A server token.
    Token(String),
    /// `user:password`.
    UserPassword {
        /// The user.
        user: String,
        /// The password.
        password: String,
    },
    /// The contents of a `.creds` file (a user JWT and its NKey seed).
    Creds(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret, even in a debug log.
        f.write_str(match self {
            Credentials::Token(_) => "Token(…)",
            Credentials::UserPassword { .. } => "UserPassword(…)",
            Credentials::Creds(_) => "Creds(…)",
        })
    }
}

impl Credentials {
    /// Reads the variable `var`: a `.creds` file's contents (it holds a
    /// `BEGIN NATS USER JWT` block), `user:password`, or else a token.
    pub fn from_env(var: &str) -> Result<Credentials, CredentialsUnset> {
        let value = std::env::var(var).map_err(|_| CredentialsUnset { var: var.to_owned() })?;
        Ok(Credentials::parse(value))
    }

    /// What a credentials value is, by its shape.
    pub fn parse(value: String) -> Credentials {
        if value.contains("BEGIN NATS USER JWT") {
            Credentials::Creds(value)
        } else if let Some((user, password)) = value.split_once(':') {
            Credentials::UserPassword { user: user.to_owned(), password: password.to_owned() }
        } else {
            Credentials::Token(value)
        }
    }
}

/// The variable meant to hold the credentials is not set.
#[derive(Debug, thiserror::Error)]
#[error("the environment variable {var} is not set (it is to hold the NATS credentials)")]
pub struct CredentialsUnset {
    /// The variable.
    pub var: String,
}

/// The client, its JetStream context and the configuration.
pub(super) struct Remote {
    pub(super) config: JetStreamConfig,
    pub(super) js: Context,
    /// `<stream>.events`.
    pub(super) subject: String,
}

impl Remote {
    /// Connects, or fails with the URL and why.
    pub(super) async fn connect(config: JetStreamConfig) -> Result<Remote, LogError> {
        let url = config.url.clone();
        let failed = |what: String| LogError::Remote { url: url.clone(), what };
        let mut options = ConnectOptions::new()
            .name("engram")
            .connection_timeout(config.connect_timeout)
            .request_timeout(Some(config.request_timeout))
            .event_callback(|event| async move {
                match event {
                    Event::Disconnected => tracing::warn!("disconnected from the NATS server; reconnecting"),
                    Event::Connected => tracing::info!("connected to the NATS server"),
                    other => tracing::debug!(event = %other, "NATS client event"),
                }
            });
        options = match config.credentials.clone() {
            None => options,
            Some(Credentials::Token(token)) => options.token(token),
            Some(Credentials::UserPassword { user, password }) => options.user_and_password(user, password),
            Some(Credentials::Creds(creds)) => {
                options.credentials(&creds).map_err(|e| failed(format!("the credentials do not parse: {e}")))?
            }
        };
        let servers = config
            .url
            .split(',')
            .map(|u| u.trim().parse::<ServerAddr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed(format!("not a server address: {e}")))?;
        let client = match tokio::time::timeout(config.connect_timeout, options.connect(servers)).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(failed(format!("cannot connect: {e}"))),
            Err(_) => return Err(failed(format!("no answer within {:?}", config.connect_timeout))),
        };
        let js = jetstream::ContextBuilder::new().timeout(config.request_timeout).build(client);
        let subject = config.subject();
        Ok(Remote { config, js, subject })
    }

    /// A failure of the server or of the connection.
    pub(super) fn error(&self, what: impl std::fmt::Display) -> LogError {
        LogError::Remote { url: self.config.url.clone(), what: what.to_string() }
    }

    /// Something wrong with the stream itself.
    pub(super) fn stream_error(&self, what: impl std::fmt::Display) -> LogError {
        LogError::Stream { stream: self.config.stream.clone(), what: what.to_string() }
    }

    /// The configuration of a stream this log creates: file storage,
    /// no limits, deletes and purges denied (rule 1).
    fn stream_config(&self) -> StreamConfig {
        StreamConfig {
            name: self.config.stream.clone(),
            description: Some("engram event log: one message per event, seq = stream sequence".to_owned()),
            subjects: vec![self.subject.clone()],
            storage: StorageType::File,
            retention: RetentionPolicy::Limits,
            discard: DiscardPolicy::Old,
            num_replicas: self.config.replicas.max(1),
            deny_delete: true,
            deny_purge: true,
            allow_direct: true,
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        }
    }

    /// Creates the stream if it is missing, checks rule 1 on it and rule 2
    /// against the local copy; returns the stream's last position.
    pub(super) async fn attach(&self, replica: &Replica) -> Result<Seq, LogError> {
        let name = &self.config.stream;
        let info = match self.js.get_stream(name).await {
            Ok(mut stream) => stream.info().await.map_err(|e| self.error(e))?.clone(),
            Err(e) if matches!(e.kind(), GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND) =>
            {
                tracing::info!(stream = %name, replicas = self.config.replicas, "creating the JetStream stream");
                let mut stream = self.js.create_stream(self.stream_config()).await.map_err(|e| self.error(e))?;
                stream.info().await.map_err(|e| self.error(e))?.clone()
            }
            Err(e) => return Err(self.error(format!("cannot look the stream {name} up: {e}"))),
        };
        let config = &info.config;
        if config.subjects != [self.subject.clone()] {
            return Err(self.stream_error(format!(
                "takes the subjects {:?}; engram needs a stream of its own with the one subject {} (its positions are the stream's sequence)",
                config.subjects, self.subject
            )));
        }
        if !config.deny_delete || !config.deny_purge {
            // Rule 1 holds only while nobody can delete; close that door.
            let mut closed = config.clone();
            closed.deny_delete = true;
            closed.deny_purge = true;
            self.js
                .update_stream(closed)
                .await
                .map_err(|e| self.error(format!("denying deletes on the stream: {e}")))?;
        }
        check_gap_free(&info.state).map_err(|what| self.stream_error(what))?;
        let last = Seq(info.state.last_sequence);
        self.check_prefix(replica, last).await?;
        Ok(last)
    }

    /// The stream's last position, now.
    pub(super) async fn last_seq(&self) -> Result<Seq, LogError> {
        let mut stream = self.js.get_stream(&self.config.stream).await.map_err(|e| self.error(e))?;
        let info = stream.info().await.map_err(|e| self.error(e))?;
        Ok(Seq(info.state.last_sequence))
    }

    /// Rule 2 at open: the copy's last event is the stream's at that
    /// position.
    async fn check_prefix(&self, replica: &Replica, last: Seq) -> Result<(), LogError> {
        let local = replica.local();
        let head = local.head();
        if head == Seq(0) {
            return Ok(());
        }
        if head > last {
            return Err(self.stream_error(format!(
                "has {last} events, but the data dir {} already holds {head}: the server lost acknowledged events, \
                 or the data dir belongs to another log (a sled log moves to JetStream by `engram export` into \
                 `engram import` of a fresh data dir)",
                local.dir().display()
            )));
        }
        let ours = local.read_from(head).next().transpose()?;
        let payload = self.raw_message(head).await?;
        // A message no engram wrote is matched by its bytes (rule 6).
        if let Some(same) = ours.as_ref().and_then(|o| foreign::stands_for(o, &payload)) {
            return match same {
                true => Ok(()),
                false => Err(self.stream_error(format!(
                    "holds other bytes at seq {head} than the data dir {} skipped there: the data dir belongs to \
                     another log",
                    local.dir().display()
                ))),
            };
        }
        let theirs = binary::decode(&payload).map_err(|source| LogError::Corrupt { seq: head, source })?.id;
        let ours = ours.map(|e| e.id);
        if ours != Some(theirs) {
            return Err(self.stream_error(format!(
                "holds event {theirs} at seq {head}, where the data dir {} holds {}: the data dir belongs to another log",
                local.dir().display(),
                ours.map_or_else(|| "nothing".to_owned(), |id| id.to_string())
            )));
        }
        Ok(())
    }

    /// The bytes of the stream's message at `seq`.
    pub(super) async fn raw_message(&self, seq: Seq) -> Result<Vec<u8>, LogError> {
        let stream = self.js.get_stream_no_info(&self.config.stream).await.map_err(|e| self.error(e))?;
        let message = stream.get_raw_message(seq.0).await.map_err(|e| self.error(format!("reading seq {seq}: {e}")))?;
        Ok(message.payload.to_vec())
    }

    /// The stream's events from `from` on, in order, as they arrive: an
    /// ordered consumer, which the client recreates across reconnects and
    /// server restarts where the last one stopped.
    pub(super) async fn ordered(&self, from: Seq) -> Result<Ordered, LogError> {
        let stream = self.js.get_stream_no_info(&self.config.stream).await.map_err(|e| self.error(e))?;
        let consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: self.subject.clone(),
                deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: from.0.max(1) },
                ..Default::default()
            })
            .await
            .map_err(|e| self.error(format!("creating a consumer from seq {from}: {e}")))?;
        consumer.messages().await.map_err(|e| self.error(format!("reading from seq {from}: {e}")))
    }

    /// The stream's events from `from` on, for a bulk fetch (a new device,
    /// one that was away): an ephemeral pull consumer without
    /// acknowledgements, asked for [`FETCH_BATCH`] messages a request and
    /// asked again when half have arrived, so the server always has a
    /// request to fill. Unlike [`Remote::ordered`] nothing here notices a
    /// message lost on the way: the caller checks each position (the
    /// follower's `fetch`) and starts again from its copy's head. Returns
    /// the consumer's name, for [`Remote::drop_consumer`].
    pub(super) async fn fetch(&self, from: Seq) -> Result<(pull::Stream, String), LogError> {
        let stream = self.js.get_stream_no_info(&self.config.stream).await.map_err(|e| self.error(e))?;
        let consumer = stream
            .create_consumer(pull::Config {
                filter_subject: self.subject.clone(),
                deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: from.0.max(1) },
                ack_policy: AckPolicy::None,
                // A fetcher that dies leaves nothing behind for long.
                inactive_threshold: Duration::from_secs(10),
                num_replicas: 1,
                memory_storage: true,
                ..Default::default()
            })
            .await
            .map_err(|e| self.error(format!("creating a fetch consumer from seq {from}: {e}")))?;
        let name = consumer.cached_info().name.clone();
        let messages = consumer
            .stream()
            .max_messages_per_batch(FETCH_BATCH)
            .max_bytes_per_batch(FETCH_BYTES)
            .expires(Duration::from_secs(5))
            .heartbeat(Duration::from_secs(1))
            .messages()
            .await
            .map_err(|e| self.error(format!("fetching from seq {from}: {e}")))?;
        Ok((messages, name))
    }

    /// Deletes a fetch's consumer, so that the server stops filling its
    /// requests (best effort: the server drops it anyway once idle).
    pub(super) async fn drop_consumer(&self, name: &str) {
        let deleted = match self.js.get_stream_no_info(&self.config.stream).await {
            Ok(stream) => stream.delete_consumer(name).await.map(|_| ()).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = deleted {
            tracing::debug!(consumer = name, error = %e, "deleting a fetch consumer");
        }
    }

    /// Every event of the local copy against the stream's message at the
    /// same position, frame for frame; the first difference, if any.
    pub(super) async fn compare(&self, replica: &Replica) -> Result<Option<(Seq, String)>, LogError> {
        let local = replica.local();
        let head = local.head();
        let last = self.last_seq().await?;
        if head == Seq(0) {
            return Ok((last > Seq(0)).then(|| (Seq(1), format!("the stream has {last} events, the data dir none"))));
        }
        let mut theirs = self.ordered(Seq(1)).await?;
        for ours in local.read_from(Seq(1)) {
            let ours = ours?;
            let seq = ours.seq;
            let message = match tokio::time::timeout(self.config.request_timeout, theirs.next()).await {
                Ok(Some(Ok(m))) => m,
                Ok(Some(Err(e))) => return Err(self.error(format!("reading seq {seq}: {e}"))),
                Ok(None) | Err(_) => return Ok(Some((seq, "the stream ends before it".to_owned()))),
            };
            let same = match foreign::stands_for(&ours, &message.payload) {
                Some(same) => same,
                None => binary::encode(&ours) == message.payload.as_ref(),
            };
            if !same {
                return Ok(Some((seq, "the data dir's event differs from the stream's".to_owned())));
            }
        }
        Ok((last > head).then(|| (head.next(), format!("the stream goes on to seq {last}"))))
    }
}

/// Messages one pull request of a bulk fetch asks for. Far above the
/// ordered consumer's 500, so that the request round trips vanish beside
/// the messages; below the client's subscription capacity (65 536
/// messages), which at most one and a half batches fill, so that the
/// client never drops a message for being slow.
pub(super) const FETCH_BATCH: usize = 16_384;

/// Bytes one pull request of a bulk fetch asks for at most: with large
/// events the bytes, not [`FETCH_BATCH`], bound what the client holds
/// unread (one and a half requests' worth).
pub(super) const FETCH_BYTES: usize = 8 << 20;

/// The `Engram-Batch-Left` of a message (0 when absent: a batch of one).
pub(super) fn batch_left(headers: Option<&async_nats::HeaderMap>) -> u64 {
    headers.and_then(|h| h.get(BATCH_LEFT_HEADER)).and_then(|v| v.as_str().parse().ok()).unwrap_or(0)
}

/// Rule 1: positions 1..=last, every one present.
fn check_gap_free(state: &State) -> Result<(), String> {
    let deleted = state.deleted_count.unwrap_or(0);
    let gap_free = if state.messages == 0 {
        state.last_sequence == 0
    } else {
        state.first_sequence == 1 && state.messages == state.last_sequence && deleted == 0
    };
    if gap_free {
        Ok(())
    } else {
        Err(format!(
            "has gaps: {} messages between seq {} and {} ({deleted} deleted); engram needs a gap-free stream, \
             its positions are the stream's sequence (create a new stream, or `engram export` this one's events \
             and `engram import` them into a new one)",
            state.messages, state.first_sequence, state.last_sequence
        ))
    }
}
