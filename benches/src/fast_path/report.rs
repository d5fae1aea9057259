//! The fast-path bench's report: [`Report`] (one model: L0, the embedding
//! alone, L1 / L2 hits and planner-bound misses per table size, how each
//! table was made, the labelled pairs, the offline planner and a month of
//! requests) and [`Reports`] (every model of the run), serialised as the
//! JSON of `engram bench fast-path --json`, and their `human` tables.

use crate::labelled;

/// Median and 99th percentile.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Latency {
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile (nearest rank), µs.
    pub p99_us: f64,
}

/// Requests that should hit one layer, at one table size.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Hits {
    /// Rows in the layer's table (L1 rows or L2 pipelines).
    pub rows: usize,
    /// `route` end to end, median, µs.
    pub p50_us: f64,
    /// The same, 99th percentile, µs.
    pub p99_us: f64,
    /// Share of the requests answered by the intended layer.
    pub hit_rate: f64,
    /// Hits that matched another row than the intended one.
    pub wrong: usize,
    /// Embedding the request, median, µs.
    pub embed_p50_us: f64,
    /// Index searches (L1, and L2 for L2 hits), median, µs.
    pub search_p50_us: f64,
    /// The rest of `route` (extraction, normalisation, gate, placeholders),
    /// median, µs.
    pub rest_p50_us: f64,
    /// Value extraction and normalisation alone (`canonical`), median, µs.
    pub canonical_p50_us: f64,
    /// The replay gate alone on the matched pair, median, µs.
    pub gate_p50_us: f64,
    /// `route` with the request's vector given (as on an embedding-cache
    /// hit): the fast path's own work, median, µs.
    pub given_p50_us: f64,
}

/// Requests that should go to the planner, at one table size.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Misses {
    /// L1 rows (and L2 pipelines).
    pub rows: usize,
    /// `route` end to end, median, µs.
    pub p50_us: f64,
    /// The same, 99th percentile, µs.
    pub p99_us: f64,
    /// Share of the requests sent to the planner (anything else is a wrong
    /// replay).
    pub planner_rate: f64,
    /// Share where the gate ran and refused at least one candidate.
    pub gated: f64,
    /// Embedding the request, median, µs.
    pub embed_p50_us: f64,
    /// Both index searches, median, µs.
    pub search_p50_us: f64,
    /// The rest of `route`, median, µs.
    pub rest_p50_us: f64,
    /// `route` with the request's vector given, median, µs.
    pub given_p50_us: f64,
}

/// How one table size was made.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Table {
    /// L1 rows.
    pub l1_rows: usize,
    /// L2 pipelines.
    pub l2_rows: usize,
    /// L1 rows embedded with the real model (the rest derived).
    pub l1_embedded: usize,
    /// L2 pipelines embedded with the real model.
    pub l2_embedded: usize,
    /// Seconds to learn the tables from turns (3 × rows turns a layer).
    pub learn_s: f64,
    /// Seconds in `FastPath::build` (row vectors gathered, indexes built).
    pub build_s: f64,
    /// The part of `build_s` spent building the indexes (all cores).
    pub index_s: f64,
    /// Learning one more L1 row
    /// ([`FastPath::update_texts`](engram::learning::fast_path::FastPath::update_texts):
    /// its rows looked up, one index insert), without embedding its text,
    /// median, µs.
    pub learn_row_p50_us: f64,
    /// `build_s` over `learn_row_p50_us`: what a rebuild per learnt row
    /// (the router before `update`) cost, as a multiple.
    pub rebuild_ratio: f64,
}

/// The report of `engram bench fast-path`.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Report {
    /// L0 phrases through `route`.
    pub l0: Latency,
    /// One short request embedded alone.
    pub embed: Latency,
    /// L1 hits per table size.
    pub l1: Vec<Hits>,
    /// L2 hits per table size.
    pub l2: Vec<Hits>,
    /// Planner-bound hard negatives per table size.
    pub miss: Vec<Misses>,
    /// How each table was made.
    pub tables: Vec<Table>,
    /// Timed requests per figure.
    pub queries: usize,
    /// The model.
    pub model: String,
    /// Inference threads of the request embedder.
    pub embedder_threads: usize,
    /// Seconds spent embedding table rows with the real model.
    pub row_embedding_s: f64,
    /// The labelled pairs, per language: wrong replays and paraphrase recall.
    pub pairs: Vec<labelled::PairScore>,
    /// The offline planner's tool choice on natural requests, per language.
    pub planner: Vec<labelled::ChoiceScore>,
    /// A month of EN + IT requests through the live offline runtime.
    pub month: labelled::MonthScore,
    /// Cores, CPU, OS.
    pub machine: String,
}

/// `engram bench fast-path`: one [`Report`] per embedding model, measured
/// in the same run so that their figures compare.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Reports {
    /// Per model, the default first.
    pub models: Vec<Report>,
}

impl Reports {
    /// Each model's table, then the models side by side.
    pub fn human(&self) -> String {
        let mut out: String = self.models.iter().map(|r| r.human() + "\n").collect();
        if self.models.len() > 1 {
            out.push_str(&format!(
                "{:<44} {:>10} {:>10} {:>14} {:>13}\n",
                "model", "encode p50", "L1 p50", "wrong replays", "planner right"
            ));
            for r in &self.models {
                let wrong: usize = r.pairs.iter().map(|p| p.wrong_replays).sum();
                let (right, asked) = r.planner.iter().fold((0, 0), |(a, b), c| (a + c.right, b + c.requests));
                out.push_str(&format!(
                    "{:<44} {:>7.0} µs {:>7.0} µs {:>14} {:>9}/{}\n",
                    r.model,
                    r.embed.p50_us,
                    r.l1.first().map_or(f64::NAN, |h| h.p50_us),
                    wrong,
                    right,
                    asked
                ));
            }
        }
        out
    }
}

impl Report {
    /// The report as a table.
    pub fn human(&self) -> String {
        let mut out = self.single_requests();
        out.push_str(&self.hits_table());
        out.push_str(&self.misses_table());
        out.push_str(&self.tables_made());
        out.push_str(&self.labelled_scores());
        out.push_str(&self.machine);
        out.push('\n');
        out
    }

    /// What was measured, then L0 and one request embedded alone.
    fn single_requests(&self) -> String {
        let mut out = format!(
            "fast path: FastPath::route end to end, {} ({} inference thread(s)), {} timed requests per figure; \
             the request is embedded each time\n\n",
            self.model, self.embedder_threads, self.queries
        );
        out.push_str(&format!(
            "L0 (literal phrase, no embedding)  p50 {:>8.2} µs  p99 {:>8.2} µs\n",
            self.l0.p50_us, self.l0.p99_us
        ));
        out.push_str(&format!(
            "embedding one request alone        p50 {:>8.1} µs  p99 {:>8.1} µs\n\n",
            self.embed.p50_us, self.embed.p99_us
        ));
        out
    }

    /// The L1 and L2 hits, a row per layer and table size.
    fn hits_table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "{:<6} {:>7} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>8} {:>8} {:>9}\n",
            "layer",
            "rows",
            "p50 µs",
            "p99 µs",
            "hit rate",
            "embed µs",
            "search µs",
            "rest µs",
            "canon µs",
            "gate µs",
            "given µs"
        ));
        for (name, hits) in [("L1", &self.l1), ("L2", &self.l2)] {
            for h in hits {
                out.push_str(&format!(
                    "{:<6} {:>7} {:>10.1} {:>10.1} {:>9.3} {:>10.1} {:>10.1} {:>9.1} {:>8.1} {:>8.1} {:>9.1}{}\n",
                    name,
                    h.rows,
                    h.p50_us,
                    h.p99_us,
                    h.hit_rate,
                    h.embed_p50_us,
                    h.search_p50_us,
                    h.rest_p50_us,
                    h.canonical_p50_us,
                    h.gate_p50_us,
                    h.given_p50_us,
                    if h.wrong > 0 { format!("  ({} WRONG)", h.wrong) } else { String::new() }
                ));
            }
        }
        out
    }

    /// The planner-bound misses, a row per table size.
    fn misses_table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "\n{:<6} {:>7} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>8} {:>9}\n",
            "miss", "rows", "p50 µs", "p99 µs", "planner", "embed µs", "search µs", "rest µs", "gated", "given µs"
        ));
        for m in &self.miss {
            out.push_str(&format!(
                "{:<6} {:>7} {:>10.1} {:>10.1} {:>9.3} {:>10.1} {:>10.1} {:>9.1} {:>8.3} {:>9.1}\n",
                "",
                m.rows,
                m.p50_us,
                m.p99_us,
                m.planner_rate,
                m.embed_p50_us,
                m.search_p50_us,
                m.rest_p50_us,
                m.gated,
                m.given_p50_us
            ));
        }
        out
    }

    /// How each table was made, and the time spent embedding rows.
    fn tables_made(&self) -> String {
        let mut out = String::new();
        out.push_str("\ntables (N L1 rows and N L2 pipelines; rows beyond the embedded ones have derived vectors):\n");
        for t in &self.tables {
            out.push_str(&format!(
                "  {:>6} rows: {} + {} embedded, learned in {:.1} s, built in {:.1} s (indexes {:.1} s); \
                 one more row learnt in {:.0} µs (median, embedding aside) — {:.0}× less than a rebuild\n",
                t.l1_rows,
                t.l1_embedded,
                t.l2_embedded,
                t.learn_s,
                t.build_s,
                t.index_s,
                t.learn_row_p50_us,
                t.rebuild_ratio
            ));
        }
        out.push_str(&format!("  row embedding: {:.1} s in all\n", self.row_embedding_s));
        out
    }

    /// The labelled pairs, the offline planner's tool choice and the month
    /// through the live runtime.
    fn labelled_scores(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "\nlabelled pairs (tests/fixtures/fast_path; x: across languages) and the offline planner's choice:\n",
        );
        for p in &self.pairs {
            out.push_str(&format!(
                "  {:<5} hard negatives {:>3}, wrong replays {}{}; paraphrases {:>3}, served by L1 {:>3} (recall {:.2})\n",
                p.lang,
                p.hard_negatives,
                p.wrong_replays,
                if p.wrong_replays > 0 { " (WRONG)" } else { "" },
                p.paraphrases,
                p.served,
                p.served as f64 / p.paraphrases.max(1) as f64
            ));
        }
        for c in &self.planner {
            out.push_str(&format!(
                "  {:<5} offline planner: {:>3} of {:>3} requests planned with the right tool ({:.0} %)\n",
                c.lang,
                c.right,
                c.requests,
                100.0 * c.right as f64 / c.requests.max(1) as f64
            ));
        }
        let m = &self.month;
        out.push_str(&format!(
            "  a month ({} days, {} requests, EN + IT, live runtime offline): fast path {} ({} with other tools than \
             the request's{}), offline planner {} ({} right)\n",
            m.days,
            m.turns,
            m.fast_path,
            m.wrong_fast_path,
            if m.wrong_fast_path > 0 { ": WRONG" } else { "" },
            m.planner,
            m.planner_right
        ));
        out
    }
}
