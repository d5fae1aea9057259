//! The dry run's output, kept for the append pass.
//!
//! Import converts every record before it appends anything (the dry run of
//! [`super::run`]), so that a bug in the conversion costs nothing. The
//! conversion — parsing, deriving ids, the reactors — is most of an
//! import's own work, and the append pass used to do it all again
//! (measured, 40 000 turn records: 0.9 s of a 3.4 s import). So the dry run
//! writes its envelopes here, as the log's own binary frames, and the
//! append pass reads them back instead of converting again.
//!
//! The file is anonymous (unlinked at creation: the OS removes it when the
//! import ends, however it ends) and lives in the data dir, so an import's
//! memory does not grow with its file and its scratch space is on the
//! disk the log is on. Reading back costs a frame decode an event.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use engram_events::codec::binary;
use engram_events::Envelope;

use super::{Group, ImportError};

/// Frames written by the dry run, and how they group.
pub(crate) struct Spool {
    dir: PathBuf,
    file: BufWriter<File>,
    /// Each group's kind and number of events, in file order.
    groups: Vec<(Group, usize)>,
    buf: Vec<u8>,
}

impl Spool {
    /// An empty spool in `dir`.
    pub(super) fn create(dir: &Path) -> Result<Self, ImportError> {
        let file = tempfile::tempfile_in(dir).map_err(|source| error(dir, source))?;
        Ok(Spool {
            dir: dir.to_owned(),
            file: BufWriter::with_capacity(1 << 20, file),
            groups: Vec::new(),
            buf: Vec::new(),
        })
    }

    /// Writes one group of events.
    pub(super) fn push(&mut self, events: &[Envelope], group: Group) -> Result<(), ImportError> {
        self.buf.clear();
        for env in events {
            binary::encode_into(env, &mut self.buf);
        }
        self.file.write_all(&self.buf).map_err(|e| error(&self.dir, e))?;
        self.groups.push((group, events.len()));
        Ok(())
    }

    /// Hands every group back, in the order it was pushed.
    pub(super) fn replay(
        self,
        mut sink: impl FnMut(Vec<Envelope>, Group) -> Result<(), ImportError>,
    ) -> Result<(), ImportError> {
        let Spool { dir, file, groups, mut buf } = self;
        let error = |source| error(&dir, source);
        let mut file = file.into_inner().map_err(|e| error(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(error)?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        for (group, n) in groups {
            let mut events = Vec::with_capacity(n);
            for _ in 0..n {
                buf.resize(binary::FRAME_HEADER_LEN, 0);
                reader.read_exact(&mut buf).map_err(error)?;
                let total = binary::frame_len(&buf).ok_or_else(|| error(std::io::ErrorKind::InvalidData.into()))?;
                buf.resize(total, 0);
                reader.read_exact(&mut buf[binary::FRAME_HEADER_LEN..]).map_err(error)?;
                // The frame this process wrote a moment ago: a failure is
                // the disk's, and nothing has been appended from it.
                let env = binary::decode(&buf)
                    .map_err(|e| error(std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())))?;
                events.push(env);
            }
            sink(events, group)?;
        }
        Ok(())
    }
}

/// What went wrong with the scratch file in `dir`.
fn error(dir: &Path, source: std::io::Error) -> ImportError {
    ImportError::Spool { dir: dir.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::{SessionEndReason, SessionEnded};
    use engram_events::{ActorKind, SessionId};

    fn event(i: u32) -> Envelope {
        Envelope::new(ActorKind::Importer, SessionEnded { reason: SessionEndReason::Host, turns: i })
            .with_session(SessionId::new(format!("s-{i}")))
    }

    /// What goes in comes back, group by group, equal to the envelope; and
    /// the file is never visible in the directory.
    #[test]
    fn groups_come_back_as_they_went_in_and_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let groups: Vec<(Vec<Envelope>, Group)> = vec![
            ((0..3).map(event).collect(), Group::Turn),
            (vec![], Group::Turn),
            ((3..4).map(event).collect(), Group::Envelope { is_turn: true }),
            ((4..2_000).map(event).collect(), Group::Envelope { is_turn: false }),
        ];
        let mut spool = Spool::create(dir.path()).unwrap();
        for (events, group) in &groups {
            spool.push(events, *group).unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "an anonymous file");
        let mut back = Vec::new();
        spool
            .replay(|events, group| {
                back.push((events, group));
                Ok(())
            })
            .unwrap();
        assert_eq!(back.len(), groups.len());
        for ((want, wg), (got, gg)) in groups.iter().zip(&back) {
            assert_eq!(got, want);
            assert_eq!(format!("{wg:?}"), format!("{gg:?}"));
        }
    }

    #[test]
    fn a_directory_that_cannot_hold_it_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone");
        let e = Spool::create(&missing).err().expect("no such directory");
        assert!(e.to_string().contains(&missing.display().to_string()), "{e}");
    }
}
