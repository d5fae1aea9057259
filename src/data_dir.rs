//! Where engram keeps its data.
//!
//! Precedence, first match wins: an explicit directory (the CLI's global
//! `--data DIR`), the `ENGRAM_DATA` environment variable,
//! `$XDG_DATA_HOME/engram`, `~/.local/share/engram`.

use std::path::PathBuf;

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

#[cfg(test)]
mod tests {
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
