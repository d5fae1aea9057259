//! `examples/host.rs` runs offline to the end and its fourth word count is
//! an L1 hit.
//!
//! Runs the example binary `cargo test --all-targets` built beside this
//! test (`target/debug/examples/host`); only when it is missing (e.g.
//! `cargo test --test example_host` alone) does it fall back to `cargo run
//! --example host`. Needs the embedding model where
//! `scripts/fetch-models.sh` installs it.

use std::path::PathBuf;
use std::process::{Command, Output};

/// `target/<profile>/examples/host`, from this test's own path
/// (`target/<profile>/deps/example_host-<hash>`).
fn built_example() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let host = profile_dir.join("examples").join(format!("host{}", std::env::consts::EXE_SUFFIX));
    host.is_file().then_some(host)
}

fn run_host(data: &std::path::Path) -> Output {
    match built_example() {
        Some(host) => Command::new(&host).arg(data).output().unwrap_or_else(|e| panic!("{}: {e}", host.display())),
        None => {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            Command::new(cargo)
                .args(["run", "--quiet", "-p", "engram", "--example", "host", "--"])
                .arg(data)
                .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
                .output()
                .expect("cargo run --example host")
        }
    }
}

#[test]
fn the_host_example_runs_offline_and_shows_an_l1_hit() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = run_host(&data);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);

    let replies: Vec<&str> = stdout.lines().filter(|l| l.trim_start().starts_with('[')).collect();
    assert_eq!(replies.len(), 5, "one reply per utterance:\n{stdout}");
    assert!(replies[0].contains("[L0 "), "\"what time is it\" is an L0 phrase:\n{stdout}");
    for r in &replies[1..4] {
        assert!(r.contains("[planner ") && r.contains("9 words in ~/notes.txt"), "planned:\n{stdout}");
    }
    assert!(
        replies[4].contains("[L1 ") && replies[4].contains("4 words in ~/todo.txt"),
        "the fourth count is an L1 hit with the new file:\n{stdout}"
    );
    assert!(stdout.contains(&format!("engram --data {} replay", data.display())), "{stdout}");
    assert!(data.join("log.sled").is_dir(), "the log is where the example says");
}

/// docs/embedding.md tells async hosts to share the runtime in an `Arc`
/// across blocking tasks: that needs `Send + Sync`.
#[test]
fn the_runtime_can_be_shared_across_threads() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<engram::actors::Runtime>();
}
