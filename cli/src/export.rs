//! `engram export`

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use engram::events::codec::json;
use engram::Seq;

/// Print every envelope as JSON Lines (the format `engram import` reads).
///
/// `engram export | engram --data EMPTY import /dev/stdin` reproduces the
/// same export, byte for byte.
#[derive(clap::Args)]
pub struct Args {
    /// Write to FILE instead of stdout
    #[arg(long, short, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let log = crate::open_for_reading(data)?;
    let sink: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(std::fs::File::create(path).with_context(|| format!("{}", path.display()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, sink);
    let mut damaged = false;
    for env in log.read_from(Seq::FIRST) {
        let env = match env {
            Ok(env) => env,
            Err(e) if crate::output::around_damage(&e) => {
                damaged = true;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        out.write_all(json::to_line(&env).as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(if damaged { crate::output::damaged_exit() } else { ExitCode::SUCCESS })
}
