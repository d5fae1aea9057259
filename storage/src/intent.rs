//! SCAFFOLD (replaced by the memory branch).
use chrono::{DateTime, Utc};
use engram_events::payloads::{IntentJudged, JudgeKind};
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntentMode {
    Chat,
    Voice,
}
#[derive(Default)]
pub struct RuleIntentJudge;
impl RuleIntentJudge {
    pub fn judge(&self, text: &str, _m: IntentMode, _l: Option<DateTime<Utc>>, _n: DateTime<Utc>) -> IntentJudged {
        IntentJudged { directed: true, query: text.into(), stop: false, confidence: 1.0, judge: JudgeKind::Rule }
    }
}
