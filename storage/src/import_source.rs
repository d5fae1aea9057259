//! What `engram import` reads: a file, a FIFO or standard input, opened
//! here so that the import itself (`engram_learning::import`: detection,
//! validation, conversion, the plan) reads bytes and opens nothing.
//!
//! An import reads its input more than once — pass 1 validates, pass 2
//! converts, and records the log already holds are read again to compare —
//! and every pass must read the bytes pass 1 validated:
//!
//! 1. **A regular file is the one opened, up to its length then.** Each
//!    pass reads that handle by position ([`ImportSource::reader`]), so a
//!    file put in its place later (an editor saving) is not read, and
//!    records appended after the open are left for the next import.
//!    Nothing is held in memory: a file of millions of records streams.
//! 2. **An input that can be read only once** — `-` (standard input), a
//!    FIFO, a character device — is read whole at the open and kept.
//! 3. **Bytes a host already holds** ([`ImportSource::bytes`]) are read
//!    as they are: what the import's own tests feed it.

use std::io::BufRead;
use std::path::{Path, PathBuf};

/// An import's input could not be opened or read whole.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct ImportSourceError {
    /// The path as given (`-`: standard input).
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// The bytes of one import, the same for every pass (see the module docs).
#[derive(Debug)]
pub enum ImportSource {
    /// Read once, kept (standard input, a FIFO, bytes handed over).
    Once(Vec<u8>),
    /// A regular file: the handle opened and its length then.
    File {
        /// The file opened.
        file: std::fs::File,
        /// Its length when opened; later bytes are not read.
        len: u64,
    },
}

impl ImportSource {
    /// Opens `path`: `-` is standard input; a FIFO or device is read
    /// whole now (rule 2); a regular file is opened and its length noted
    /// (rule 1).
    pub fn open(path: &Path) -> Result<ImportSource, ImportSourceError> {
        let error = |source| ImportSourceError { path: path.to_owned(), source };
        let mut bytes = Vec::new();
        if path == Path::new("-") {
            std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes).map_err(error)?;
            return Ok(ImportSource::Once(bytes));
        }
        let file = std::fs::File::open(path).map_err(error)?;
        let meta = file.metadata().map_err(error)?;
        if !meta.file_type().is_file() {
            std::io::Read::read_to_end(&mut &file, &mut bytes).map_err(error)?;
            return Ok(ImportSource::Once(bytes));
        }
        Ok(ImportSource::File { file, len: meta.len() })
    }

    /// Bytes already in memory (rule 3).
    pub fn bytes(bytes: impl Into<Vec<u8>>) -> ImportSource {
        ImportSource::Once(bytes.into())
    }

    /// A reader from the first byte to the last of what was opened; each
    /// call starts again, whatever another reader has read.
    pub fn reader(&self) -> Box<dyn BufRead + '_> {
        match self {
            ImportSource::Once(bytes) => Box::new(bytes.as_slice()),
            ImportSource::File { file, len } => {
                Box::new(std::io::BufReader::with_capacity(256 * 1024, At { file, pos: 0, end: *len }))
            }
        }
    }
}

/// A file read from `pos` to `end` by position: each pass has its own,
/// whatever another pass's reader has read (a cloned handle would share
/// one offset).
struct At<'a> {
    file: &'a std::fs::File,
    pos: u64,
    end: u64,
}

impl std::io::Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let want = buf.len().min(usize::try_from(self.end - self.pos).unwrap_or(usize::MAX));
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn all(source: &ImportSource) -> String {
        let mut s = String::new();
        source.reader().read_to_string(&mut s).unwrap();
        s
    }

    /// Rule 1: what is appended after the open is not read, and a file
    /// renamed into its place is not either; two readers do not share an
    /// offset.
    #[test]
    fn a_file_reads_as_it_was_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let source = ImportSource::open(&path).unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"three\n").unwrap();
        let mut first = source.reader();
        let mut line = String::new();
        first.read_line(&mut line).unwrap();
        assert_eq!(all(&source), "one\ntwo\n", "a second reader starts again");
        let other = dir.path().join("b.jsonl");
        std::fs::write(&other, "else\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(all(&source), "one\ntwo\n");
    }

    /// Rule 2: a FIFO is read once, at the open, and kept.
    #[test]
    fn a_fifo_is_read_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("in.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path and mode.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(&fifo, "x\ny\n").unwrap())
        };
        let source = ImportSource::open(&fifo).unwrap();
        writer.join().unwrap();
        assert!(matches!(source, ImportSource::Once(_)));
        assert_eq!((all(&source), all(&source)), ("x\ny\n".to_owned(), "x\ny\n".to_owned()));
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = ImportSource::open(Path::new("/nonexistent/turns.jsonl")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/turns.jsonl: "), "{e}");
    }
}
