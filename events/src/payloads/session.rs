//! Sessions, verdicts and feedback.

use crate::ids::{EvalId, TurnId};

use super::JudgeKind;

closed_enum! {
    /// Why a session ended.
    pub enum SessionEndReason {
        /// The host said so (`end_session`).
        Host => "host",
        /// No utterance for the idle timeout.
        Idle => "idle",
        /// The user said stop.
        Stop => "stop",
        /// The last record of the session in an imported file.
        Import => "import",
    }
}

payload! {
    /// `session.ended`: the session is over; the pattern store records its
    /// turns now (seed 001 §10.4 phase 1).
    pub struct SessionEnded {
        /// Why it ended.
        pub reason: SessionEndReason,
        /// How many turns it had.
        pub turns: u32,
    }
}

payload! {
    /// `eval.completed`: a verdict on one turn (evaluator §4.1). A later
    /// verdict for the same turn carries a greater `eval_id` and replaces it.
    pub struct EvalCompleted {
        /// Unique per verdict; the pattern store applies each at most once.
        pub eval_id: EvalId,
        /// The turn judged.
        pub subject_turn: TurnId,
        /// 0..1.
        pub score: f64,
        /// 0..1; below `min_eval_confidence` the verdict is kept but not folded.
        pub confidence: f64,
        /// Who judged.
        pub judge: JudgeKind,
        /// Rubric id, when the judge used one.
        pub rubric: Option<String>,
        /// Price table of the judge's own LLM call, when it made one.
        pub judge_pricing_version: Option<String>,
    }
}

closed_enum! {
    /// The user's explicit reaction.
    pub enum FeedbackRating {
        /// Thumbs up / "perfect".
        Positive => "positive",
        /// Thumbs down / "no, I meant...".
        Negative => "negative",
        /// A correction that restates the request.
        Correction => "correction",
    }
}

payload! {
    /// `feedback.received`: explicit feedback from the user or host.
    pub struct FeedbackReceived {
        /// The turn it is about; `None` means the session's latest turn.
        pub subject_turn: Option<TurnId>,
        /// Positive, negative or correction.
        pub rating: FeedbackRating,
        /// Free text, if any.
        pub text: Option<String>,
    }
}
