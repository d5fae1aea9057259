//! engram
