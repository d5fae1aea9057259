//! Rule 2's paths: whether a request names a path, and of which kind —
//! what the host's lookup says, else its form. Separate: the one rule that
//! asks outside the request (the host's file system) what a word is.

use chrono::{DateTime, FixedOffset};

use super::{OfflinePlanner, PathKind};
use crate::fast_path::extract::{extract, SlotKind};

impl OfflinePlanner {
    /// Whether `request` names a path of a kind one of the tools takes
    /// (rule 2): what the planner reads better than a learnt phrasing,
    /// which knows no file from a folder (`fast_path::model_away` rule 4).
    pub fn reads_path(&self, request: &str, now: DateTime<FixedOffset>) -> bool {
        let path = self.path_named(request, now);
        path.is_some_and(|k| self.tools.iter().any(|t| t.path == Some(Some(k))))
    }

    /// What the path `text` names is, if it names one: what the host's
    /// lookup says when the path is there ([`OfflinePlanner::with_paths`]);
    /// else by its form ([`path_form`]).
    pub(super) fn path_named(&self, text: &str, now: DateTime<FixedOffset>) -> Option<PathKind> {
        let slots = extract(text, now);
        let path = slots.of(SlotKind::Path).next()?.as_str()?;
        Some(self.paths.as_ref().and_then(|lookup| lookup(path)).unwrap_or_else(|| path_form(path)))
    }
}

/// What a path names by its form: a file when its last component has an
/// extension (`notes.txt`), a directory otherwise (`~/projects`, `docs/`).
pub(super) fn path_form(path: &str) -> PathKind {
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    match last.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() && !path.ends_with('/') => PathKind::File,
        _ => PathKind::Dir,
    }
}
