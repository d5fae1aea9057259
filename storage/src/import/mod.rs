//! Importers.
