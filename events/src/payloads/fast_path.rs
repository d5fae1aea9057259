//! Fast-path learning events (seed 000): canonical queries (L1), pipelines
//! (L2), their expiry, promotion and rejection, and active days.

use super::{PlanStep, ToolArgs};
use crate::ids::{EvalId, TurnId};

payload! {
    /// `canonical.recorded`: a request answered with one call, as a phrasing
    /// of an L1 action (seed 000 `canonical_query_log`, learnt by meaning:
    /// the values the user said are slots, `docs/fast-path.md`).
    pub struct CanonicalRecorded {
        /// The request in canonical form: normalised, the extractor's values
        /// masked (`url`, `number`, …) and each said value masked by its
        /// slot (`areaslot`).
        pub canonical: String,
        /// The executor chosen.
        pub executor: String,
        /// The arguments, each value taken from the request a placeholder
        /// (`{url}`, `{number}`, `{slot:area}`).
        #[rkyv(with = crate::payloads::common::ToolArgsDef)]
        pub args_observed: ToolArgs,
        /// The said slots: name → `{"said": words, "value": as passed,
        /// "after_determiner": bool}` (v2; empty for v1 records).
        #[serde(default)]
        #[rkyv(with = crate::payloads::common::ToolArgsDef)]
        pub slots: ToolArgs,
    }
}

payload! {
    /// `canonical.recorded` schema v1 (before `slots`). Never written any
    /// more; read and upcast to v2.
    pub struct CanonicalRecordedV1 {
        /// See [`CanonicalRecorded::canonical`].
        pub canonical: String,
        /// See [`CanonicalRecorded::executor`].
        pub executor: String,
        /// See [`CanonicalRecorded::args_observed`].
        #[rkyv(with = crate::payloads::common::ToolArgsDef)]
        pub args_observed: ToolArgs,
    }
}

impl From<CanonicalRecordedV1> for CanonicalRecorded {
    fn from(v1: CanonicalRecordedV1) -> Self {
        CanonicalRecorded {
            canonical: v1.canonical,
            executor: v1.executor,
            args_observed: v1.args_observed,
            slots: ToolArgs::default(),
        }
    }
}

payload! {
    /// `canonical.compared`: a request the planner answered, compared with
    /// the call the nearest learnt phrasing would have made for it (the
    /// gate passed, its slots filled, whatever its bar): whether the two
    /// agree, at what similarity. The evidence each L1 action's own bar is
    /// learnt from (`docs/fast-path.md`, *A bar per action*).
    pub struct CanonicalCompared {
        /// The phrasing's canonical text.
        pub canonical: String,
        /// The phrasing's executor.
        pub executor: String,
        /// The request's similarity to the phrasing, values set aside.
        pub similarity: f64,
        /// Whether the model's call was the phrasing's.
        pub agreed: bool,
        /// The turn compared.
        pub subject_turn: TurnId,
    }
}

payload! {
    /// `pipeline.recorded`: a successful multi-step turn, as an L2 candidate.
    pub struct PipelineRecorded {
        /// Stable id of (canonical text, tool sequence + placeholders).
        pub pipeline_id: String,
        /// The request in canonical form.
        pub canonical: String,
        /// The steps with argument placeholders.
        pub steps: Vec<PlanStep>,
        /// The active-day rank of this use (TTL counts active days).
        pub day_rank: u32,
    }
}

payload! {
    /// `pipeline.expired`: unused for more than `ttl_active_days` active days.
    pub struct PipelineExpired {
        /// The pipeline.
        pub pipeline_id: String,
        /// Day rank of its last use.
        pub last_used_rank: u32,
        /// Day rank when it expired.
        pub current_rank: u32,
    }
}

payload! {
    /// `pipeline.promoted`: reached `k_synth` uses; a synthesis candidate.
    pub struct PipelinePromoted {
        /// The pipeline.
        pub pipeline_id: String,
        /// Its use count at promotion.
        pub uses: u32,
    }
}

payload! {
    /// `canonical.rejected`: a verdict below the learning bar (the user's
    /// `:bad`, a correction, a low judge score) on a turn an L1 row served or
    /// taught. The row stops serving and is not learnt again from turns
    /// merely answered — only from one rated well.
    pub struct CanonicalRejected {
        /// The row's canonical text.
        pub canonical: String,
        /// The row's executor.
        pub executor: String,
        /// The turn the verdict was about.
        pub subject_turn: TurnId,
        /// The verdict.
        pub eval_id: EvalId,
        /// The verdict's score, 0..1.
        pub score: f64,
        /// The said slots the turn taught the row (as in
        /// [`CanonicalRecorded::slots`]), taken back from its action's
        /// vocabulary: a value learnt from a turn rated bad is no value
        /// (v2; empty for v1 records and for the row that served the turn).
        #[serde(default)]
        #[rkyv(with = crate::payloads::common::ToolArgsDef)]
        pub slots: ToolArgs,
    }
}

payload! {
    /// `canonical.rejected` schema v1 (before `slots`). Never written any
    /// more; read and upcast to v2.
    pub struct CanonicalRejectedV1 {
        /// See [`CanonicalRejected::canonical`].
        pub canonical: String,
        /// See [`CanonicalRejected::executor`].
        pub executor: String,
        /// See [`CanonicalRejected::subject_turn`].
        pub subject_turn: TurnId,
        /// See [`CanonicalRejected::eval_id`].
        pub eval_id: EvalId,
        /// See [`CanonicalRejected::score`].
        pub score: f64,
    }
}

impl From<CanonicalRejectedV1> for CanonicalRejected {
    fn from(v1: CanonicalRejectedV1) -> Self {
        CanonicalRejected {
            canonical: v1.canonical,
            executor: v1.executor,
            subject_turn: v1.subject_turn,
            eval_id: v1.eval_id,
            score: v1.score,
            slots: ToolArgs::default(),
        }
    }
}

payload! {
    /// `pipeline.rejected`: [`CanonicalRejected`] for an L2 pipeline.
    pub struct PipelineRejected {
        /// The pipeline.
        pub pipeline_id: String,
        /// The turn the verdict was about.
        pub subject_turn: TurnId,
        /// The verdict.
        pub eval_id: EvalId,
        /// The verdict's score, 0..1.
        pub score: f64,
    }
}

payload! {
    /// `day.activated`: the first utterance of a local calendar day; ranks
    /// count active days only, skipping empty ones.
    pub struct DayActivated {
        /// The local calendar day, ISO `YYYY-MM-DD`.
        pub day: String,
        /// 1 for the first active day, then +1 per active day.
        pub rank: u32,
    }
}
