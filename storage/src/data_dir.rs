//! The data dir: where it is, and that it stays its owner's.
//!
//! **Where.** Precedence, first match wins: an explicit directory (the
//! CLI's global `--data DIR`, a host's own choice), the `ENGRAM_DATA`
//! environment variable, `$XDG_DATA_HOME/engram`, `~/.local/share/engram`
//! ([`resolve`]).
//!
//! **Owner-only.** //! A data dir holds every utterance, tool argument and reply the assistant
//! has seen, so nobody but its owner may list or read it. It is created
//! with mode `0700`, and a dir that already exists but is open to the group
//! or to others (created by hand, by an older engram, or under a loose
//! umask) is tightened when engram opens it, with a warning saying so.

use std::io;
use std::path::{Path, PathBuf};

/// The environment variable naming the data dir.
pub const ENV_VAR: &str = "ENGRAM_DATA";

/// Resolves the data dir (see the module docs).
pub fn resolve(explicit: Option<PathBuf>) -> PathBuf {
    resolve_with(explicit, |k| std::env::var_os(k))
}

fn resolve_with(explicit: Option<PathBuf>, env: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let non_empty = |k: &str| env(k).filter(|v| !v.is_empty());
    if let Some(dir) = explicit {
        return dir;
    }
    if let Some(dir) = non_empty(ENV_VAR) {
        return dir.into();
    }
    if let Some(xdg) = non_empty("XDG_DATA_HOME") {
        return PathBuf::from(xdg).join("engram");
    }
    let home = non_empty("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".local/share/engram")
}

/// Creates `path` (and any missing parents) with mode `0700`, or tightens
/// an existing dir that is group- or world-accessible to owner-only.
///
/// Parents created here are `0700` too; existing parents are left alone
/// (they are the user's, e.g. `~/.local/share`). On non-unix platforms the
/// dir is only created: permissions there are ACLs, not mode bits.
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    if !path.is_dir() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(path)?;
    }
    #[cfg(unix)]
    tighten(path)?;
    Ok(())
}

/// Drops the group and other bits of an existing dir, if any are set.
#[cfg(unix)]
fn tighten(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        let tight = mode & 0o700;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(tight))?;
        tracing::warn!(
            dir = %path.display(),
            from = format_args!("{mode:o}"),
            to = format_args!("{tight:o}"),
            "data dir was accessible to other users; tightened to owner-only"
        );
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn creates_nested_dirs_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/data");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&tmp.path().join("a")), 0o700, "created parents are private too");
        // Idempotent.
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn tightens_an_open_dir_and_keeps_owner_bits() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert_eq!(mode(&dir), 0o775);
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        // An owner-only dir with fewer owner bits is left as it is.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500)).unwrap();
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o500);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn a_file_in_the_way_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("data");
        std::fs::write(&file, b"x").unwrap();
        assert!(create_private_dir(&file).is_err());
    }
}

#[cfg(test)]
mod resolve_tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)], explicit: Option<&str>) -> PathBuf {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        resolve_with(explicit.map(PathBuf::from), |k| map.get(k).map(Into::into))
    }

    #[test]
    fn precedence() {
        let all = [("ENGRAM_DATA", "/env"), ("XDG_DATA_HOME", "/xdg"), ("HOME", "/home/u")];
        assert_eq!(with(&all, Some("/flag")), PathBuf::from("/flag"));
        assert_eq!(with(&all, None), PathBuf::from("/env"));
        assert_eq!(with(&all[1..], None), PathBuf::from("/xdg/engram"));
        assert_eq!(with(&all[2..], None), PathBuf::from("/home/u/.local/share/engram"));
        assert_eq!(with(&[("ENGRAM_DATA", ""), ("HOME", "/h")], None), PathBuf::from("/h/.local/share/engram"));
    }
}
