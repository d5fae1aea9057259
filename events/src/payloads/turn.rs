//! One turn, from the utterance to `turn.completed` (seed 002 contexts).

use rust_decimal::Decimal;

use super::{ModelOption, PlanStep, QueryEmbedding, RouteLayer, SideEffectClass, StructuralFeatures, ToolArgs};

closed_enum! {
    /// Where an utterance came from.
    pub enum UtteranceSource {
        /// Speech, after ASR.
        Voice => "voice",
        /// Typed chat.
        Chat => "chat",
        /// A turn record brought in by `engram import`.
        Import => "import",
    }
}

payload! {
    /// `utterance.received`: the host handed the runtime what the user said.
    pub struct UtteranceReceived {
        /// The text as heard or typed.
        pub text: String,
        /// 1-based turn number within the session.
        pub turn_number: u32,
        /// Voice, chat or import.
        pub source: UtteranceSource,
        /// BCP 47 language tag when known (`en`, `it`).
        pub lang: Option<String>,
        /// Routing slot 1: the model the user chose for this utterance alone
        /// (`:model NAME …`), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub model: Option<String>,
        /// Routing slot 2: the session's sticky model (`:use NAME`) when
        /// this was said, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub sticky_model: Option<String>,
    }
}

payload! {
    /// `utterance.received` schema v1 (before `model`). Never written any
    /// more; read and upcast to v2.
    pub struct UtteranceReceivedV1 {
        /// See [`UtteranceReceived::text`].
        pub text: String,
        /// See [`UtteranceReceived::turn_number`].
        pub turn_number: u32,
        /// See [`UtteranceReceived::source`].
        pub source: UtteranceSource,
        /// See [`UtteranceReceived::lang`].
        pub lang: Option<String>,
    }
}

impl From<UtteranceReceivedV1> for UtteranceReceived {
    fn from(v1: UtteranceReceivedV1) -> Self {
        UtteranceReceived {
            text: v1.text,
            turn_number: v1.turn_number,
            source: v1.source,
            lang: v1.lang,
            model: None,
            sticky_model: None,
        }
    }
}

closed_enum! {
    /// Who produced a judgement or verdict.
    pub enum JudgeKind {
        /// Deterministic rules (wake word, stop words, tool failures).
        Rule => "rule",
        /// Heuristic evaluator (seed 002 / evaluator §5).
        Heuristic => "heuristic",
        /// An LLM judge.
        Llm => "llm",
        /// Heuristic escalated to an LLM.
        Hybrid => "hybrid",
        /// Explicit user feedback.
        Feedback => "feedback",
        /// Carried over from an imported record.
        Import => "import",
    }
}

payload! {
    /// `intent.judged`: the listener's intent judge (seed 002 #2).
    pub struct IntentJudged {
        /// Is the speech addressed to the assistant?
        pub directed: bool,
        /// The extracted query (may differ from the raw text).
        pub query: String,
        /// Is it a stop command?
        pub stop: bool,
        /// 0..1.
        pub confidence: f64,
        /// Rule-based or LLM judge.
        pub judge: JudgeKind,
    }
}

closed_enum! {
    /// A routing policy slot (routing-engine §4.1; seed 001 §9).
    pub enum RoutePolicy {
        /// The fast path (L0/L1/L2).
        FastPath => "fast_path",
        /// Slot 1: a per-message override from the user.
        UserOverride => "user_override",
        /// A configured rule.
        Rule => "rule",
        /// Slot 4: the pattern store's recommendation.
        Pattern => "pattern",
        /// The configured default model.
        Default => "default",
        /// Slot 2: the session's sticky choice (`:use NAME`).
        Sticky => "sticky",
        /// Part of slot 4: a candidate without enough evidence in this
        /// cluster, tried so the store gets some (`[pattern] explore`).
        Explore => "explore",
    }
}

closed_enum! {
    /// What a policy in the chain did.
    pub enum ChainVerdict {
        /// This policy decided the route.
        Chosen => "chosen",
        /// It had an answer but a higher-priority policy won.
        Deferred => "deferred",
        /// It had no answer.
        NotApplicable => "not_applicable",
    }
}

payload! {
    /// One entry of `route.decided.chain`.
    pub struct ChainEntry {
        /// The policy slot.
        pub policy: RoutePolicy,
        /// What it did.
        pub verdict: ChainVerdict,
        /// The model it proposed, if any.
        pub model: Option<String>,
        /// Its confidence, for the pattern slot.
        pub confidence: Option<f64>,
        /// The pattern slot's ranked alternatives.
        pub pattern_alternatives: Option<Vec<ModelOption>>,
    }
}

payload! {
    /// `route.decided`: the router's decision for a turn, with the whole
    /// policy chain and the fingerprint the pattern store will record.
    pub struct RouteDecided {
        /// Which layer answers.
        pub layer: RouteLayer,
        /// The model the turn uses; `None` on a fast-path turn.
        pub chosen_model: Option<String>,
        /// Every policy consulted, in priority order.
        pub chain: Vec<ChainEntry>,
        /// The turn's structural fingerprint features.
        pub features: StructuralFeatures,
        /// Seed 001 `workload_id` (benchmark harnesses), else `None`.
        pub workload: Option<String>,
        /// (v2) The request's embedding, on a planner route with an
        /// embedder: the vector half of its hybrid fingerprint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub embedding: Option<QueryEmbedding>,
    }
}

payload! {
    /// `route.decided` schema v1 (before `embedding`). Never written any
    /// more; read and upcast to v2.
    pub struct RouteDecidedV1 {
        /// See [`RouteDecided::layer`].
        pub layer: RouteLayer,
        /// See [`RouteDecided::chosen_model`].
        pub chosen_model: Option<String>,
        /// See [`RouteDecided::chain`].
        pub chain: Vec<ChainEntry>,
        /// See [`RouteDecided::features`].
        pub features: StructuralFeatures,
        /// See [`RouteDecided::workload`].
        pub workload: Option<String>,
    }
}

impl From<RouteDecidedV1> for RouteDecided {
    fn from(v1: RouteDecidedV1) -> Self {
        RouteDecided {
            layer: v1.layer,
            chosen_model: v1.chosen_model,
            chain: v1.chain,
            features: v1.features,
            workload: v1.workload,
            embedding: None,
        }
    }
}

payload! {
    /// `fastpath.hit`: a fast-path layer will answer the turn.
    pub struct FastPathHit {
        /// L0, L1 or L2 (never `planner`).
        pub layer: RouteLayer,
        /// The table phrase, canonical query or pipeline that matched.
        pub matched: String,
        /// Cosine similarity for L1/L2; `None` for L0.
        pub similarity: Option<f64>,
        /// The steps to replay, arguments resolved.
        pub steps: Vec<PlanStep>,
        /// With `chain_to_planner`: what the request asks after the replayed
        /// steps (the planner plans it in the same turn, after them); `None`
        /// when the replay is the whole answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub residual: Option<String>,
    }
}

payload! {
    /// `fastpath.hit` schema v1 (before `residual`). Never written any more;
    /// read and upcast to v2.
    pub struct FastPathHitV1 {
        /// See [`FastPathHit::layer`].
        pub layer: RouteLayer,
        /// See [`FastPathHit::matched`].
        pub matched: String,
        /// See [`FastPathHit::similarity`].
        pub similarity: Option<f64>,
        /// See [`FastPathHit::steps`].
        pub steps: Vec<PlanStep>,
    }
}

impl From<FastPathHitV1> for FastPathHit {
    fn from(v1: FastPathHitV1) -> Self {
        FastPathHit { layer: v1.layer, matched: v1.matched, similarity: v1.similarity, steps: v1.steps, residual: None }
    }
}

payload! {
    /// `fastpath.missed`: no layer answered; the planner takes over.
    pub struct FastPathMissed {
        /// The best candidate's similarity, if any candidate existed.
        pub best_similarity: Option<f64>,
        /// The best candidate's canonical text.
        pub best_candidate: Option<String>,
        /// Why it was rejected (below threshold, placeholder unresolved, ...).
        pub reason: String,
        /// The call the nearest L1 phrasing would have made (its gate
        /// passed, its slots filled, below its bar or its action not yet
        /// learnt), and its canonical text and similarity: what the model's
        /// answer is compared with (`canonical.compared`). Empty when none
        /// (v2; empty for v1 records).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub near: Option<NearMiss>,
    }
}

payload! {
    /// The call a learnt phrasing would have made for a request the
    /// planner answers ([`FastPathMissed::near`]).
    pub struct NearMiss {
        /// The phrasing's canonical text.
        pub canonical: String,
        /// The request's similarity to it, values set aside.
        pub similarity: f64,
        /// The call.
        pub steps: Vec<PlanStep>,
    }
}

payload! {
    /// `fastpath.missed` schema v1 (before `near`). Never written any more;
    /// read and upcast to v2.
    pub struct FastPathMissedV1 {
        /// See [`FastPathMissed::best_similarity`].
        pub best_similarity: Option<f64>,
        /// See [`FastPathMissed::best_candidate`].
        pub best_candidate: Option<String>,
        /// See [`FastPathMissed::reason`].
        pub reason: String,
    }
}

impl From<FastPathMissedV1> for FastPathMissed {
    fn from(v1: FastPathMissedV1) -> Self {
        FastPathMissed {
            best_similarity: v1.best_similarity,
            best_candidate: v1.best_candidate,
            reason: v1.reason,
            near: None,
        }
    }
}

closed_enum! {
    /// Who produced a plan.
    pub enum PlannerKind {
        /// The LLM planner (seed 002 #12).
        Llm => "llm",
        /// The offline planner (embedding similarity to tool descriptions).
        Offline => "offline",
        /// Replayed by the fast path.
        FastPath => "fast_path",
        /// Carried over from an imported record.
        Import => "import",
    }
}

payload! {
    /// `plan.created`: the steps the reply loop will execute (≤ 5).
    pub struct PlanCreated {
        /// LLM, offline, fast path or import.
        pub planner: PlannerKind,
        /// The planner model, when an LLM planned.
        pub model: Option<String>,
        /// The steps; empty is the fail-open plan.
        pub steps: Vec<PlanStep>,
        /// Planner wall time.
        pub planner_ms: u64,
        /// The tools the reply loop's model may call this turn, when the
        /// tool router (seed 002 #7) narrowed a catalogue too big for the
        /// prompt: the router's picks and the plan's; empty: every tool.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub tools: Vec<String>,
    }
}

payload! {
    /// `plan.created` schema v1 (before `tools`). Never written any more;
    /// read and upcast to v2.
    pub struct PlanCreatedV1 {
        /// See [`PlanCreated::planner`].
        pub planner: PlannerKind,
        /// See [`PlanCreated::model`].
        pub model: Option<String>,
        /// See [`PlanCreated::steps`].
        pub steps: Vec<PlanStep>,
        /// See [`PlanCreated::planner_ms`].
        pub planner_ms: u64,
    }
}

impl From<PlanCreatedV1> for PlanCreated {
    fn from(v1: PlanCreatedV1) -> Self {
        PlanCreated {
            planner: v1.planner,
            model: v1.model,
            steps: v1.steps,
            planner_ms: v1.planner_ms,
            tools: Vec::new(),
        }
    }
}

payload! {
    /// `tool.called`: the reply loop invokes a tool.
    pub struct ToolCalled {
        /// 0-based index of the step in the plan.
        pub step: u32,
        /// Tool name.
        pub tool: String,
        /// Arguments after placeholder resolution.
        #[rkyv(with = crate::payloads::common::ToolArgsDef)]
        pub args: ToolArgs,
        /// The fast-path layer that served this step, if one did.
        pub served_by: Option<RouteLayer>,
        /// (v2) What the tool may do — read, write, execute, network — as
        /// the tool declares it: the pattern store's `side_effect_classes`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub side_effect: Option<SideEffectClass>,
        /// (v3) Which source served the call: `builtin`, `host`, or
        /// `mcp:SERVER` for a tool an MCP server lists; none on events
        /// written before v3.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub source: Option<String>,
    }
}

payload! {
    /// `tool.called` schema v2 (before `source`). Never written any more;
    /// read and upcast to v3.
    pub struct ToolCalledV2 {
        /// See [`ToolCalled::step`].
        pub step: u32,
        /// See [`ToolCalled::tool`].
        pub tool: String,
        /// See [`ToolCalled::args`].
        #[rkyv(with = crate::payloads::common::ToolArgsDef)]
        pub args: ToolArgs,
        /// See [`ToolCalled::served_by`].
        pub served_by: Option<RouteLayer>,
        /// See [`ToolCalled::side_effect`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub side_effect: Option<SideEffectClass>,
    }
}

impl From<ToolCalledV2> for ToolCalled {
    fn from(v2: ToolCalledV2) -> Self {
        ToolCalled {
            step: v2.step,
            tool: v2.tool,
            args: v2.args,
            served_by: v2.served_by,
            side_effect: v2.side_effect,
            source: None,
        }
    }
}

payload! {
    /// `tool.called` schema v1 (before `side_effect`). Never written any
    /// more; read and upcast to v3.
    pub struct ToolCalledV1 {
        /// See [`ToolCalled::step`].
        pub step: u32,
        /// See [`ToolCalled::tool`].
        pub tool: String,
        /// See [`ToolCalled::args`].
        #[rkyv(with = crate::payloads::common::ToolArgsDef)]
        pub args: ToolArgs,
        /// See [`ToolCalled::served_by`].
        pub served_by: Option<RouteLayer>,
    }
}

impl From<ToolCalledV1> for ToolCalled {
    fn from(v1: ToolCalledV1) -> Self {
        ToolCalled {
            step: v1.step,
            tool: v1.tool,
            args: v1.args,
            served_by: v1.served_by,
            side_effect: None,
            source: None,
        }
    }
}

payload! {
    /// `tool.completed`: a tool returned (or failed).
    pub struct ToolCompleted {
        /// 0-based index of the step in the plan.
        pub step: u32,
        /// Tool name.
        pub tool: String,
        /// Did it succeed?
        pub ok: bool,
        /// A bounded excerpt of the result (untrusted data).
        pub output: String,
        /// The error, when `ok` is false.
        pub error: Option<String>,
        /// Tool wall time.
        pub duration_ms: u64,
    }
}

closed_enum! {
    /// The LLM context a call served (seed 002's map).
    pub enum LlmContext {
        /// #1 main reply loop.
        ReplyLoop => "reply_loop",
        /// #2 intent judge.
        IntentJudge => "intent_judge",
        /// #3 memory enrichment extractor.
        Enrichment => "enrichment",
        /// #4 memory digest.
        MemoryDigest => "memory_digest",
        /// #5 tool-result digest.
        ToolDigest => "tool_digest",
        /// #6 max-turn loop digest.
        LoopDigest => "loop_digest",
        /// #7 tool router.
        ToolRouter => "tool_router",
        /// #9 conversation summariser.
        Summariser => "summariser",
        /// #10 graph fact extraction.
        GraphExtract => "graph_extract",
        /// #11 graph best-child picker.
        GraphPick => "graph_pick",
        /// #11b graph node merge.
        GraphMerge => "graph_merge",
        /// #12 task-list planner.
        Planner => "planner",
        /// #13 plan step resolver.
        StepResolver => "step_resolver",
        /// The evaluator's LLM judge.
        Judge => "judge",
    }
}

closed_enum! {
    /// How an LLM call ended.
    pub enum LlmOutcome {
        /// A usable answer.
        Ok => "ok",
        /// The per-context timeout fired.
        Timeout => "timeout",
        /// The server answered with an HTTP error.
        HttpError => "http_error",
        /// The answer could not be parsed.
        Malformed => "malformed",
        /// The server could not be reached.
        Unreachable => "unreachable",
        /// The request was refused before it was sent: its conversation
        /// breaks the tool-call protocol (a caller's bug, which a strict
        /// server would answer with a 400). From schema v2 of
        /// `llm.call_completed`; v1 recorded it as `unreachable`.
        ProtocolError => "protocol_error",
    }
}

closed_enum! {
    /// How the tools offered to a call went to the server.
    pub enum LlmTools {
        /// No tools were offered.
        None => "none",
        /// In the protocol's own tool fields.
        Native => "native",
        /// As text guidance in the prompt, the calls parsed back out of
        /// the answer (`[llm] native_tools = "off"`, or a model without
        /// tool calling).
        Text => "text",
        /// Offered, but the call failed before it said which way they went.
        Unknown => "unknown",
    }
}

payload! {
    /// `llm.call_completed`: one LLM call, with tokens, latency and cost.
    pub struct LlmCallCompleted {
        /// Canonical `provider:name`.
        pub model: String,
        /// Which context of seed 002 the call served.
        pub context: LlmContext,
        /// Prompt tokens.
        pub input_tokens: u32,
        /// Completion tokens.
        pub output_tokens: u32,
        /// Cost under `pricing_version`.
        #[serde(with = "rust_decimal::serde::str")]
        #[rkyv(with = crate::remote::DecimalDef)]
        pub cost_usd: Decimal,
        /// The price table version the cost was computed with.
        pub pricing_version: String,
        /// Wall time of the call.
        pub latency_ms: u64,
        /// How it ended (fail-open paths are visible here).
        pub outcome: LlmOutcome,
        /// How the tools offered went: natively, as text, or none offered.
        pub tools: LlmTools,
        /// The answer was decoded under the JSON schema the call sent
        /// (structured output: the planner's plan); `false` when none was
        /// sent or the server refused it.
        pub structured: bool,
    }
}

payload! {
    /// `llm.call_completed` schema v1 (before `tools` and `structured`, and
    /// with a refused request recorded as `unreachable`). Never written any
    /// more; read and upcast to v2 (tools `unknown`, not structured).
    pub struct LlmCallCompletedV1 {
        /// See [`LlmCallCompleted::model`].
        pub model: String,
        /// See [`LlmCallCompleted::context`].
        pub context: LlmContext,
        /// See [`LlmCallCompleted::input_tokens`].
        pub input_tokens: u32,
        /// See [`LlmCallCompleted::output_tokens`].
        pub output_tokens: u32,
        /// See [`LlmCallCompleted::cost_usd`].
        #[serde(with = "rust_decimal::serde::str")]
        #[rkyv(with = crate::remote::DecimalDef)]
        pub cost_usd: Decimal,
        /// See [`LlmCallCompleted::pricing_version`].
        pub pricing_version: String,
        /// See [`LlmCallCompleted::latency_ms`].
        pub latency_ms: u64,
        /// See [`LlmCallCompleted::outcome`].
        pub outcome: LlmOutcome,
    }
}

impl From<LlmCallCompletedV1> for LlmCallCompleted {
    fn from(v1: LlmCallCompletedV1) -> Self {
        LlmCallCompleted {
            model: v1.model,
            context: v1.context,
            input_tokens: v1.input_tokens,
            output_tokens: v1.output_tokens,
            cost_usd: v1.cost_usd,
            pricing_version: v1.pricing_version,
            latency_ms: v1.latency_ms,
            outcome: v1.outcome,
            tools: LlmTools::Unknown,
            structured: false,
        }
    }
}

payload! {
    /// `reply.delivered`: the reply went back to the host.
    pub struct ReplyDelivered {
        /// The reply text.
        pub text: String,
        /// The layer that produced it.
        pub layer: RouteLayer,
        /// From utterance to reply.
        pub latency_ms: u64,
    }
}

payload! {
    /// `turn.completed`: the turn's summary — what the learners consume.
    pub struct TurnCompleted {
        /// 1-based turn number within the session.
        pub turn_number: u32,
        /// The request text.
        pub text: String,
        /// Where it was answered.
        pub layer: RouteLayer,
        /// The model used; `None` on a fast-path turn.
        pub model: Option<String>,
        /// The steps executed.
        pub steps: Vec<PlanStep>,
        /// Did every tool succeed?
        pub tools_ok: bool,
        /// Planner wall time (0 on a fast-path turn).
        pub planner_ms: u64,
        /// Utterance to reply.
        pub latency_ms: u64,
        /// Total LLM cost of the turn.
        #[serde(with = "rust_decimal::serde::str")]
        #[rkyv(with = crate::remote::DecimalDef)]
        pub cost_usd: Decimal,
        /// Price table version of `cost_usd`.
        pub pricing_version: String,
    }
}
