//! The lines of an import file, read one at a time. Every pass over the
//! input — validation, the check against the log, the conversion — reads
//! it again from the start through here, so each sees the same numbered
//! lines and the same line errors, and none holds the file in memory.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use engram_storage::ImportSource;

use super::{turn_record, ImportError, LineError};

/// The lines of `source` from the start (each pass reads again; see
/// [`ImportSource`] for why every pass reads the same bytes).
pub(super) fn lines_of<'a>(source: &'a ImportSource, path: &Path) -> Lines<Box<dyn BufRead + 'a>> {
    Lines::new(source.reader(), path)
}

/// A line's number and its text, or why it cannot be read.
type NumberedLine<'a> = (usize, Result<&'a str, LineError>);

/// The lines of an import file, read one at a time (a file is never held
/// in memory whole): 1-based numbers, blank lines skipped, a line that is
/// not UTF-8 or longer than [`turn_record::limits::MAX_LINE_BYTES`]
/// reported as a line error — and a long line is skipped without being
/// held either.
pub(super) struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    line: usize,
    path: PathBuf,
}

impl<R: BufRead> Lines<R> {
    fn new(reader: R, path: &Path) -> Self {
        Lines { reader, buf: Vec::new(), line: 0, path: path.to_owned() }
    }

    /// The next non-blank line, or `None` at the end of the file.
    pub(super) fn next_line(&mut self) -> Result<Option<NumberedLine<'_>>, ImportError> {
        let max = turn_record::limits::MAX_LINE_BYTES;
        let read_error = |path: &Path, source| ImportError::Read { path: path.to_owned(), source };
        loop {
            self.buf.clear();
            let n = (&mut self.reader)
                .take(max as u64 + 2)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| read_error(&self.path, e))?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            let ended = self.buf.last() == Some(&b'\n');
            if ended {
                self.buf.pop();
            }
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
            if self.buf.len() > max {
                let mut len = self.buf.len();
                if !ended {
                    // Skip the rest of the line, a bounded chunk at a time.
                    loop {
                        self.buf.clear();
                        let n = (&mut self.reader)
                            .take(64 * 1024)
                            .read_until(b'\n', &mut self.buf)
                            .map_err(|e| read_error(&self.path, e))?;
                        len += n;
                        if n == 0 || self.buf.last() == Some(&b'\n') {
                            break;
                        }
                    }
                }
                let message = format!("longer than {max} bytes ({len})");
                return Ok(Some((self.line, Err(LineError { line: self.line, field: "-".into(), message }))));
            }
            if std::str::from_utf8(&self.buf).is_ok_and(|s| s.trim().is_empty()) {
                continue;
            }
            let line = self.line;
            return Ok(Some(match std::str::from_utf8(&self.buf) {
                Ok(s) => (line, Ok(s)),
                Err(e) => (line, Err(LineError { line, field: "-".into(), message: format!("not UTF-8 text ({e})") })),
            }));
        }
    }
}
