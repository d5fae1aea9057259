//! `engram bench`

use std::process::ExitCode;

/// Benchmarks, each measured beside its peer baseline in the same run.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Event log: durable append (1/4/16 appenders), relaxed append and full
    /// replay, beside SQLite in WAL mode
    Log(engram_bench::log::Options),
    /// Pattern store: recommendation latency (K-NN index beside the exact
    /// reference scan, structural and 384-d hybrid, recall@10) and the
    /// `pattern_outcomes` rebuild from the log
    Patterns(engram_bench::patterns::Options),
    /// Vector K-NN: the HNSW index's recall@k, QPS and p50 at several ef
    /// beside the exact scan, on .fvecs files or structured synthetic data
    /// (--synthetic N --dim D)
    Knn(engram_bench::knn::Options),
    /// Fast path: FastPath::route end to end with the real embedding model —
    /// L0 phrases, one request embedded alone, L1 and L2 hits and planner
    /// misses at several table sizes (p50/p99, hit rates, where the time goes)
    #[command(alias = "fastpath")]
    FastPath(engram_bench::fast_path::Options),
    /// Actor runtime: a fast-path turn through the live actors (L0 without
    /// embedding, L1 with) beside the same decision by direct calls — the
    /// runtime's overhead p50/p99, under durable and relaxed logs — turns/s
    /// with 1 and 16 sessions, events per turn
    Runtime(engram_bench::runtime::Options),
    /// Memory context per turn with a long history (1,000 sessions): the
    /// warm profile, the recall gate, recall with the real model and the
    /// memory digest's prompt (p50/p99), beside the LLM call it precedes
    Memory(engram_bench::memory::Options),
    /// Learning on data the code never saw: routing of same-structure kinds
    /// of request (EN + IT) by meaning beside the structural design, on a
    /// held-out split
    Learning(engram_bench::learning::Options),
    /// The offline planner on real users' requests among their own
    /// functions: BFCL v4's live sets (scripts/fetch-bfcl.sh), scored as
    /// BFCL's AST checker does, per category, on a fixed dev/heldout split
    Bfcl(engram_bench::bfcl::Options),
    /// Start-up: `engram run --offline --once` on a long imported log (the
    /// actors' snapshots in place, then without them) beside a near-empty
    /// data dir, whole processes in pairs
    Startup(engram_bench::startup::Options),
    /// Memory under long use: many turns of a mixed workload (repeated and
    /// varied tool requests, memory statements and questions, small talk,
    /// feedback, sessions ending every few turns) through the live runtime,
    /// offline — RSS, p50/p99 turn latency and the size of every structure
    /// the actors hold, every --every turns
    Soak(engram_bench::soak::Options),
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Log(o) => emit(o.json, &engram_bench::log::run(&o)?, |r| r.human()),
        Command::Patterns(o) => emit(o.json, &engram_bench::patterns::run(&o)?, |r| r.human()),
        Command::Knn(o) => emit(o.json, &engram_bench::knn::run(&o)?, |r| r.human(&o)),
        Command::FastPath(o) => emit(o.json, &engram_bench::fast_path::run(&o)?, |r| r.human()),
        Command::Runtime(o) => emit(o.json, &engram_bench::runtime::run(&o)?, |r| r.human()),
        Command::Memory(o) => emit(o.json, &engram_bench::memory::run(&o)?, |r| r.human()),
        Command::Learning(o) => emit(o.json, &engram_bench::learning::run(&o)?, |r| r.human()),
        Command::Bfcl(o) => emit(o.json, &engram_bench::bfcl::run(&o)?, |r| r.human()),
        Command::Startup(o) => emit(o.json, &engram_bench::startup::run(&o)?, |r| r.human()),
        Command::Soak(o) => emit(o.json, &engram_bench::soak::run(&o)?, |r| r.human()),
    }?;
    Ok(ExitCode::SUCCESS)
}

/// Prints a report as JSON (`--json`) or in its human form.
fn emit<R: serde::Serialize>(json: bool, report: &R, human: impl FnOnce(&R) -> String) -> anyhow::Result<()> {
    if json {
        crate::output::print_json(report)?;
    } else {
        println!("{}", human(report));
    }
    Ok(())
}
