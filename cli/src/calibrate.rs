//! `engram calibrate`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::events::chrono::{DateTime, FixedOffset};
use engram::events::{Event, EventKind};
use engram::learning::embedder::Embedder;
use engram::learning::fast_path::calibrate::{calibrate, evaluate, Operating, Pair};
use engram::learning::fast_path::{canonical, gate, placeholder};
use serde_json::json;

use crate::output;

/// Derive the fast path's L1 and L2 cosine thresholds for the installed
/// embedding model.
///
/// Pairs of requests that led to the same execution (same tools, same
/// arguments once the request's own values are placeholders) are positives;
/// pairs that led to different ones are negatives. The threshold is the
/// lowest at which the cosine alone keeps the false-positive rate within
/// --target-fpr; precision and recall are reported with the replay gate on
/// top, as the router applies it. Pairs come from the log's completed turns,
/// or from a labelled --pairs file (JSON Lines: candidate, request, same).
#[derive(clap::Args)]
pub struct Args {
    /// Largest share of different-execution pairs a threshold may let through
    #[arg(long, default_value_t = 0.01)]
    target_fpr: f64,
    /// Labelled pairs instead of the log (tests/fixtures/fast_path/pairs.jsonl)
    #[arg(long, value_name = "FILE")]
    pairs: Option<PathBuf>,
    /// Most distinct requests sampled from the log per layer
    #[arg(long, default_value_t = 400)]
    max_requests: usize,
    /// Print {"model","l1":{..},"l2":{..}} with threshold, fpr, precision, recall, pairs
    #[arg(long)]
    json: bool,
}

/// One request and what it led to.
struct Sample {
    canonical: String,
    execution: String,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let config = crate::load_config(data)?;
    let embedder = OnnxEmbedder::open(&config.embedder)?;
    let (l1, l2) = match &args.pairs {
        Some(file) => (labelled(file, &embedder)?, Vec::new()),
        None => from_log(data, &embedder, args.max_requests)?,
    };
    if l1.is_empty() && l2.is_empty() {
        anyhow::bail!("no pairs: import some turns first, or pass --pairs FILE");
    }
    let report = |pairs: &[Pair]| -> Option<(Operating, usize, usize)> {
        (!pairs.is_empty()).then(|| {
            let op = calibrate(pairs, args.target_fpr, 0.5);
            (op, pairs.iter().filter(|p| p.same).count(), pairs.iter().filter(|p| !p.same).count())
        })
    };
    let (r1, r2) = (report(&l1), report(&l2));
    if args.json {
        let layer = |r: &Option<(Operating, usize, usize)>| {
            r.as_ref().map(|(op, pos, neg)| {
                json!({"threshold": op.threshold, "fpr": op.fpr, "fpr_cosine": op.fpr_cosine, "precision": op.precision,
                       "recall": op.recall, "positive_pairs": pos, "negative_pairs": neg})
            })
        };
        output::print_json(
            &json!({"model": embedder.model_id(), "target_fpr": args.target_fpr, "l1": layer(&r1), "l2": layer(&r2)}),
        )?;
    } else {
        println!("model {} — target false-positive rate {}", embedder.model_id(), args.target_fpr);
        for (name, key, r, pairs) in [
            ("L1", "[fast_path] canonical_query_threshold", &r1, &l1),
            ("L2", "[multi_tool_fast_path] threshold", &r2, &l2),
        ] {
            let Some((op, pos, neg)) = r else {
                println!("{name}: no pairs");
                continue;
            };
            println!(
                "{name}: {key} = {:.3}  (precision {:.3}, recall {:.3}, fpr {:.4} with the gate / {:.4} cosine alone; {pos} same, {neg} different pairs)",
                op.threshold, op.precision, op.recall, op.fpr, op.fpr_cosine
            );
            for t in [0.70, 0.75, 0.80, 0.85, 0.90, 0.95] {
                let o = evaluate(pairs, t);
                println!(
                    "     at {t:.2}: precision {:.3}, recall {:.3}, fpr {:.4} (cosine alone {:.4})",
                    o.precision, o.recall, o.fpr, o.fpr_cosine
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
}

/// All pairs among `samples` (distinct canonical texts).
fn pairs_of(samples: &[Sample], embedder: &OnnxEmbedder) -> anyhow::Result<Vec<Pair>> {
    let texts: Vec<&str> = samples.iter().map(|s| s.canonical.as_str()).collect();
    let vecs = embedder.embed_batch(&texts)?;
    let mut out = Vec::new();
    for i in 0..samples.len() {
        for j in i + 1..samples.len() {
            out.push(Pair {
                cosine: cosine(&vecs[i], &vecs[j]),
                same: samples[i].execution == samples[j].execution,
                gate_ok: gate::check(&samples[i].canonical, &samples[j].canonical).is_ok(),
            });
        }
    }
    Ok(out)
}

/// L1 (one-step) and L2 (multi-step) pairs from the log's completed turns.
fn from_log(data: &Path, embedder: &OnnxEmbedder, max: usize) -> anyhow::Result<(Vec<Pair>, Vec<Pair>)> {
    let log = crate::open_existing(data)?;
    let mut one: BTreeMap<String, String> = BTreeMap::new();
    let mut multi: BTreeMap<String, String> = BTreeMap::new();
    for env in log.read_kinds(engram::Seq::FIRST, &[EventKind::TurnCompleted]) {
        let env = env?;
        let Event::TurnCompleted(t) = &env.event else { continue };
        if !t.tools_ok || t.steps.is_empty() {
            continue;
        }
        let now: DateTime<FixedOffset> = env.at.fixed_offset();
        let (canon, ex) = canonical(&t.text, now);
        let execution: Vec<String> =
            t.steps.iter().map(|s| format!("{}{}", s.tool, placeholder::templatize(&s.args, &ex).to_json())).collect();
        let target = if t.steps.len() == 1 { &mut one } else { &mut multi };
        if target.len() < max {
            target.entry(canon).or_insert(execution.join(" → "));
        }
    }
    let samples = |m: BTreeMap<String, String>| -> Vec<Sample> {
        m.into_iter().map(|(canonical, execution)| Sample { canonical, execution }).collect()
    };
    Ok((pairs_of(&samples(one), embedder)?, pairs_of(&samples(multi), embedder)?))
}

/// Pairs from a labelled file.
fn labelled(file: &Path, embedder: &OnnxEmbedder) -> anyhow::Result<Vec<Pair>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let now = DateTime::parse_from_rfc3339("2026-01-01T12:00:00+00:00").expect("a fixed time");
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("{}:{}: not JSON", file.display(), i + 1))?;
        let field = |k: &str| {
            v[k].as_str()
                .map(str::to_owned)
                .with_context(|| format!("{}:{}: {k}: missing or not a string", file.display(), i + 1))
        };
        let same = v["same"]
            .as_bool()
            .with_context(|| format!("{}:{}: same: missing or not a boolean", file.display(), i + 1))?;
        rows.push((canonical(&field("candidate")?, now).0, canonical(&field("request")?, now).0, same));
    }
    let texts: Vec<&str> = rows.iter().flat_map(|(c, r, _)| [c.as_str(), r.as_str()]).collect();
    let vecs = embedder.embed_batch(&texts)?;
    Ok(rows
        .iter()
        .enumerate()
        .map(|(i, (c, r, same))| Pair {
            cosine: cosine(&vecs[2 * i], &vecs[2 * i + 1]),
            same: *same,
            gate_ok: gate::check(r, c).is_ok(),
        })
        .collect())
}
