//! Following a log owned by another process.
//!
//! One process owns a data dir at a time (the lock), so `engram replay
//! --follow` cannot open a log that `engram run` is writing. Instead, the
//! owner serves followers on a Unix socket in the data dir
//! (`engram.sock`): a follower connects, writes `from <seq>\n`, and reads
//! JSON Lines envelopes from that position on — backlog, then live, through
//! an ordinary [`crate::Subscription`]. When the owner closes
//! the log, each connection first drains what was committed, then ends.
//! A follower that stops reading is dropped after `WRITE_STALL` (1 s); its
//! last line may then be cut, and it reconnects from the seq after its
//! last whole line.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use engram_events::{codec, Seq};

use crate::subscription::Subscription;

/// The socket a data dir's owner serves followers on.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join("engram.sock")
}

/// How often a connection's thread looks at the shutdown flag, and how
/// long the accept loop waits after a failed accept.
const POLL: Duration = Duration::from_millis(100);

/// How long a write to a follower may wait for it to read. A follower that
/// stops reading (its output not read, or suspended) is dropped after it:
/// otherwise its connection's thread blocks in the write for as long as
/// the follower sleeps, and closing the log (which waits for every
/// connection to drain) never returns — `engram run` answered every turn
/// and then never exited. A dropped follower loses nothing: it reconnects
/// `from` the seq after the last whole line it read.
const WRITE_STALL: Duration = Duration::from_secs(1);

/// The owner's side: accepts followers until dropped.
pub struct FollowServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl FollowServer {
    /// Starts serving on `socket_path(dir)`. `subscribe` opens a
    /// subscription for a follower starting at a given position.
    pub fn start<F>(dir: &Path, subscribe: F) -> std::io::Result<Self>
    where
        F: Fn(Seq) -> Option<Subscription> + Send + Sync + 'static,
    {
        let path = socket_path(dir);
        // A socket left by a killed owner: we hold the lock, so it is stale.
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        // Owner-only whatever the umask (the dir is 0700 too).
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let stop = stop.clone();
            let subscribe = Arc::new(subscribe);
            // A blocking accept, woken at shutdown by a connection of our
            // own (see Drop): a polling one made every close of the log
            // wait up to its period (100 ms on every `engram` command).
            std::thread::Builder::new().name("engram-follow".into()).spawn(move || {
                let mut conns = Vec::new();
                loop {
                    let accepted = listener.accept();
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    match accepted {
                        Ok((stream, _)) => {
                            let stop = stop.clone();
                            let subscribe = subscribe.clone();
                            conns.push(std::thread::spawn(move || serve(stream, &*subscribe, &stop)));
                        }
                        Err(e) => {
                            tracing::warn!("follow socket: {e}");
                            std::thread::sleep(POLL);
                        }
                    }
                    conns.retain(|c: &JoinHandle<()>| !c.is_finished());
                }
                for c in conns {
                    let _ = c.join();
                }
            })?
        };
        Ok(FollowServer { path, stop, accept: Some(accept) })
    }
}

impl Drop for FollowServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.accept.take() {
            // Wakes the blocking accept. If the socket is gone (removed by
            // hand) nothing can wake it: the thread is left to the
            // process's exit rather than waited for forever.
            if UnixStream::connect(&self.path).is_ok() {
                let _ = t.join();
            }
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn serve(stream: UnixStream, subscribe: &dyn Fn(Seq) -> Option<Subscription>, stop: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(WRITE_STALL));
    let mut request = String::new();
    let Ok(reader) = stream.try_clone() else { return };
    if BufReader::new(reader).read_line(&mut request).is_err() {
        return;
    }
    let Some(from) = request.trim().strip_prefix("from ").and_then(|n| n.parse().ok()) else {
        let _ = (&stream).write_all(b"error: expected `from <seq>`\n");
        return;
    };
    let Some(mut sub) = subscribe(Seq(from)) else { return };
    let mut out = BufWriter::new(&stream);
    loop {
        let stopping = stop.load(Ordering::Acquire);
        // While stopping, drain what is committed, then end.
        let next = if stopping { sub.try_recv() } else { sub.recv_timeout(POLL) };
        match next {
            Ok(Some(env)) => {
                let line = codec::json::to_line(&env);
                if out.write_all(line.as_bytes()).and_then(|_| out.write_all(b"\n")).is_err() {
                    return; // the follower went away, or stopped reading
                }
            }
            Ok(None) => {
                if out.flush().is_err() || stopping {
                    return;
                }
            }
            Err(e) => {
                let _ = writeln!(out, "error: {e}");
                return;
            }
        }
    }
}
