//! The SQLite peer of the log bench: a WAL-mode table storing the same
//! frames the sled log stores, appended through the same appender threads
//! (a connection each, optionally serialised by an in-process mutex) and
//! read back the same three ways — the baseline every engram figure is
//! compared with.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension};

use engram::events::codec::binary;
use engram::events::Envelope;

use super::timing::timed_appenders;

/// SQLite's `synchronous` setting (the database is always in WAL mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqliteSync {
    /// `synchronous=FULL`: every commit fsyncs the WAL (durable).
    Full,
    /// `synchronous=NORMAL`: commits do not fsync; checkpoints do.
    Normal,
}

impl SqliteSync {
    fn pragma(self) -> &'static str {
        match self {
            SqliteSync::Full => "FULL",
            SqliteSync::Normal => "NORMAL",
        }
    }
}

/// The SQLite peer: table `log(seq INTEGER PRIMARY KEY, id BLOB UNIQUE,
/// frame BLOB)` in WAL mode, storing the same frames engram stores (the
/// binary codec's), idempotent by id like engram's log.
#[derive(Clone, Debug)]
pub struct SqlitePeer {
    /// The database file.
    pub(super) path: PathBuf,
    /// The `synchronous` of its connections.
    pub(super) sync: SqliteSync,
}

impl SqlitePeer {
    /// Creates (or opens) the database at `path`.
    pub fn create(path: &Path, sync: SqliteSync) -> anyhow::Result<Self> {
        let peer = SqlitePeer { path: path.to_owned(), sync };
        let conn = peer.connect()?;
        conn.execute_batch("CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, id BLOB UNIQUE, frame BLOB)")?;
        Ok(peer)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new connection: WAL, the peer's `synchronous`, a 60 s busy timeout.
    pub fn connect(&self) -> anyhow::Result<Connection> {
        let conn = Connection::open(&self.path).with_context(|| format!("opening {}", self.path.display()))?;
        conn.busy_timeout(Duration::from_secs(60))?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        anyhow::ensure!(mode.eq_ignore_ascii_case("wal"), "SQLite refused WAL mode (got {mode})");
        conn.execute_batch(&format!("PRAGMA synchronous={}", self.sync.pragma()))?;
        Ok(conn)
    }

    /// Appends one batch in one transaction (`BEGIN IMMEDIATE; INSERT …;
    /// COMMIT`), encoding each envelope with the binary codec.
    pub fn append(conn: &mut Connection, batch: &[Envelope], buf: &mut Vec<u8>) -> anyhow::Result<()> {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached("INSERT OR IGNORE INTO log (id, frame) VALUES (?1, ?2)")?;
            for env in batch {
                buf.clear();
                binary::encode_into(env, buf);
                stmt.execute((&env.id.0 .0.to_be_bytes()[..], &buf[..]))?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Like [`engram_append`](super::engram_append): one thread and connection per element of
    /// `work`, each appending its batches in order, a transaction per batch;
    /// returns the wall time from the moment all are ready until the last
    /// commit. With `serialize`, each transaction runs under one in-process
    /// mutex, so appenders queue on it instead of polling SQLite's lock in
    /// the busy handler (which sleeps between attempts).
    pub fn append_concurrently(&self, work: Vec<Vec<Vec<Envelope>>>, serialize: bool) -> anyhow::Result<Duration> {
        let lock = Mutex::new(());
        timed_appenders(
            work,
            || Ok((self.connect()?, Vec::with_capacity(512))),
            |(conn, buf), batches| {
                for batch in &batches {
                    let _turn = if serialize { Some(lock.lock().unwrap_or_else(|e| e.into_inner())) } else { None };
                    SqlitePeer::append(conn, batch, buf)?;
                }
                Ok(())
            },
        )
    }

    /// Reads every frame in `seq` order and decodes each into an
    /// [`Envelope`] (the same decode engram's replay does); returns how many.
    pub fn replay(conn: &Connection) -> anyhow::Result<usize> {
        let mut stmt = conn.prepare_cached("SELECT frame FROM log ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut n = 0usize;
        while let Some(row) = rows.next()? {
            let env = binary::decode(row.get_ref(0)?.as_blob()?)?;
            std::hint::black_box(env);
            n += 1;
        }
        Ok(n)
    }

    /// Reads every frame in `seq` order and checks its length and CRC
    /// ([`binary::split_frame`]) without deserialising it: SQLite's share of
    /// replay, the same work as [`engram_frames`](super::engram_frames); returns how many.
    pub fn frames(conn: &Connection) -> anyhow::Result<usize> {
        let mut stmt = conn.prepare_cached("SELECT frame FROM log ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut n = 0usize;
        while let Some(row) = rows.next()? {
            let (frame, rest) = binary::split_frame(row.get_ref(0)?.as_blob()?)?;
            anyhow::ensure!(rest.is_empty(), "{} trailing bytes after a frame", rest.len());
            std::hint::black_box(frame);
            n += 1;
        }
        Ok(n)
    }

    /// Like [`engram_replay_view`](super::engram_replay_view): every frame read in `seq` order,
    /// CRC-checked and its archives validated in place
    /// ([`binary::RawFrame::view`]), nothing deserialised; returns how many.
    pub fn replay_view(conn: &Connection) -> anyhow::Result<usize> {
        let mut stmt = conn.prepare_cached("SELECT frame FROM log ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut n = 0usize;
        while let Some(row) = rows.next()? {
            let (frame, rest) = binary::split_frame(row.get_ref(0)?.as_blob()?)?;
            anyhow::ensure!(rest.is_empty(), "{} trailing bytes after a frame", rest.len());
            std::hint::black_box(frame.view()?.seq());
            n += 1;
        }
        Ok(n)
    }

    /// Rows in the table.
    pub fn count(conn: &Connection) -> anyhow::Result<usize> {
        let n: Option<i64> = conn.query_row("SELECT count(*) FROM log", [], |r| r.get(0)).optional()?;
        Ok(n.unwrap_or(0) as usize)
    }
}
