//! Fast-path learning events (seed 000): canonical queries (L1), pipelines
//! (L2), their expiry, promotion and rejection, and active days.

use super::{PlanStep, ToolArgs};
use crate::ids::{EvalId, TurnId};

payload! {
    /// `canonical.recorded`: the planner's first step for a request, as an
    /// L1 candidate (seed 000 `canonical_query_log`).
    pub struct CanonicalRecorded {
        /// The request in canonical (lowercase, condensed) form.
        pub canonical: String,
        /// The executor chosen.
        pub executor: String,
        /// The argument values actually used.
        #[rkyv(with = crate::payloads::common::ToolArgsDef)]
        pub args_observed: ToolArgs,
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
