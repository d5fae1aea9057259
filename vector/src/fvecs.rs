//! The `.fvecs` format of the standard ANN benchmark sets (SIFT, GIST,
//! …): per vector, a little-endian `i32` dimension followed by that many
//! little-endian `f32`s; no header, no footer.
//!
//! [`parse_fvecs`] is a pure function of the bytes — no I/O, no panics, no
//! allocation beyond what the input justifies — so it can be fuzzed as is;
//! [`read_fvecs`] adds the file and names it in every error. A short read
//! or a vector whose dimension differs from the first is an error naming
//! the vector's index and byte offset, never a silently shorter data set.

use std::path::{Path, PathBuf};

/// Largest dimension accepted: far above any embedding model, small enough
/// that a corrupt length cannot ask for gigabytes.
pub const MAX_DIM: usize = 1 << 16;

/// What is wrong with `.fvecs` bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FvecsError {
    /// The input ends inside vector `vector` (its header or its values).
    #[error("truncated at vector {vector} (byte offset {offset}): needs {needed} more bytes, {available} left")]
    Truncated {
        /// Index of the incomplete vector (0-based).
        vector: usize,
        /// Byte offset where that vector starts.
        offset: usize,
        /// Bytes the vector needs from `offset`.
        needed: usize,
        /// Bytes left from `offset`.
        available: usize,
    },
    /// Vector `vector` declares a different dimension than vector 0.
    #[error("vector {vector} (byte offset {offset}) has dimension {got}, vector 0 has {expected}")]
    InconsistentDim {
        /// Index of the offending vector.
        vector: usize,
        /// Byte offset where that vector starts.
        offset: usize,
        /// Dimension of vector 0.
        expected: usize,
        /// Dimension this vector declares.
        got: i64,
    },
    /// A dimension that is zero, negative or above [`MAX_DIM`].
    #[error("vector {vector} (byte offset {offset}) declares dimension {got}, outside 1..={MAX_DIM}")]
    BadDim {
        /// Index of the offending vector.
        vector: usize,
        /// Byte offset where that vector starts.
        offset: usize,
        /// The declared dimension.
        got: i64,
    },
}

/// A `.fvecs` reading error, with the file it came from.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FvecsFileError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file's contents are not valid `.fvecs`.
    #[error("{path}: {source}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        source: FvecsError,
    },
}

/// Vectors of one dimension, end to end.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fvecs {
    /// Floats per vector (0 for an empty input).
    pub dim: usize,
    /// `len() * dim` floats.
    pub data: Vec<f32>,
}

impl Fvecs {
    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    /// True when there is no vector.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Vector `i`.
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}

/// Parses `.fvecs` bytes. Empty input is an empty set (dimension 0).
pub fn parse_fvecs(bytes: &[u8]) -> Result<Fvecs, FvecsError> {
    let mut dim = 0usize;
    let mut data = Vec::new();
    let mut offset = 0usize;
    let mut vector = 0usize;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        let Some(head) = rest.get(..4) else {
            return Err(FvecsError::Truncated { vector, offset, needed: 4, available: rest.len() });
        };
        let d = i32::from_le_bytes([head[0], head[1], head[2], head[3]]) as i64;
        if d <= 0 || d as usize > MAX_DIM {
            return Err(FvecsError::BadDim { vector, offset, got: d });
        }
        let d = d as usize;
        if vector == 0 {
            dim = d;
            // Reserve only what the input can hold: a lying header cannot
            // make us allocate more than the file's size.
            data.reserve(bytes.len() / (4 * (d + 1)) * d);
        } else if d != dim {
            return Err(FvecsError::InconsistentDim { vector, offset, expected: dim, got: d as i64 });
        }
        let needed = 4 + 4 * d;
        if rest.len() < needed {
            return Err(FvecsError::Truncated { vector, offset, needed, available: rest.len() });
        }
        data.extend(rest[4..needed].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        offset += needed;
        vector += 1;
    }
    Ok(Fvecs { dim, data })
}

/// Reads and parses a `.fvecs` file.
pub fn read_fvecs(path: &Path) -> Result<Fvecs, FvecsFileError> {
    let bytes = std::fs::read(path).map_err(|source| FvecsFileError::Io { path: path.to_owned(), source })?;
    parse_fvecs(&bytes).map_err(|source| FvecsFileError::Format { path: path.to_owned(), source })
}

/// Encodes vectors of `dim` floats (laid end to end in `data`) as `.fvecs`.
///
/// # Panics
/// If `dim` is 0 or above [`MAX_DIM`], or `data.len()` is not a multiple of
/// `dim`.
pub fn encode_fvecs(dim: usize, data: &[f32]) -> Vec<u8> {
    assert!(dim > 0 && dim <= MAX_DIM && data.len().is_multiple_of(dim), "bad fvecs shape");
    let mut out = Vec::with_capacity(data.len() / dim * (4 + 4 * dim));
    for row in data.chunks_exact(dim) {
        out.extend_from_slice(&(dim as i32).to_le_bytes());
        for x in row {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

/// Writes vectors as a `.fvecs` file (see [`encode_fvecs`]).
pub fn write_fvecs(path: &Path, dim: usize, data: &[f32]) -> std::io::Result<()> {
    std::fs::write(path, encode_fvecs(dim, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let data: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 1.0).collect();
        let bytes = encode_fvecs(3, &data);
        assert_eq!(bytes.len(), 4 * (4 * 4));
        let back = parse_fvecs(&bytes).unwrap();
        assert_eq!(back, Fvecs { dim: 3, data: data.clone() });
        assert_eq!(back.len(), 4);
        assert_eq!(back.row(2), &data[6..9]);
        assert!(parse_fvecs(&[]).unwrap().is_empty());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.fvecs");
        write_fvecs(&path, 3, &data).unwrap();
        assert_eq!(read_fvecs(&path).unwrap().data, data);
    }

    #[test]
    fn truncation_and_inconsistency_name_the_vector() {
        let bytes = encode_fvecs(3, &[1.0; 9]);
        // Cut inside vector 2's values.
        let err = parse_fvecs(&bytes[..bytes.len() - 2]).unwrap_err();
        assert_eq!(err, FvecsError::Truncated { vector: 2, offset: 32, needed: 16, available: 14 });
        // Cut inside vector 1's header.
        let err = parse_fvecs(&bytes[..18]).unwrap_err();
        assert_eq!(err, FvecsError::Truncated { vector: 1, offset: 16, needed: 4, available: 2 });

        let mut bad = bytes.clone();
        bad[32..36].copy_from_slice(&4i32.to_le_bytes());
        let err = parse_fvecs(&bad).unwrap_err();
        assert_eq!(err, FvecsError::InconsistentDim { vector: 2, offset: 32, expected: 3, got: 4 });

        let err = parse_fvecs(&(-1i32).to_le_bytes()).unwrap_err();
        assert_eq!(err, FvecsError::BadDim { vector: 0, offset: 0, got: -1 });

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.fvecs");
        std::fs::write(&path, &bytes[..bytes.len() - 2]).unwrap();
        let msg = read_fvecs(&path).unwrap_err().to_string();
        assert!(msg.contains("cut.fvecs") && msg.contains("vector 2"), "{msg}");
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut s = 0x1234_5678u32;
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 17;
                    s ^= s << 5;
                    // Mostly small dimensions so some inputs parse.
                    if s.is_multiple_of(5) {
                        2
                    } else {
                        (s >> 8) as u8
                    }
                })
                .collect();
            let _ = parse_fvecs(&bytes);
        }
    }
}
