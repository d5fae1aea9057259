//! What a model can be given: how much of a prompt its size can use, and
//! how long its plan may take at the speed it was measured to run.
//!
//! A 135M-parameter model on two CPU cores is not a 70B one behind an API,
//! and one prompt and one timeout for both fails the small one twice:
//! measured with SmolLM2-135M under llama.cpp (docs/llm.md), a planner
//! prompt listing seven tools took 606 tokens — 3.9 s of prompt processing
//! before the first token — and the model chose the first tool it was
//! shown (`get_date` for "read the file ~/Notes/todo.txt"); shown the two
//! nearest tools, nearest first, the prompt was 390 tokens and it chose
//! `read_file`. The rules, in order:
//!
//! 1. **Size from the name.** The parameter count a model's name states
//!    (`gemma3:4b`, `phi3:3.8b`, `mixtral:8x7b` = 56, `smollm2-135m`),
//!    read by [`model_size_b`]; a name without one (`gpt-5-mini`) is taken
//!    for a large model, whose prompt is as configured.
//! 2. **Three tiers** ([`ModelTier`]): *tiny* under 1 B, *small* up to 7 B
//!    (seed 002's SMALL tier), *large* above or unknown.
//! 3. **The plan's budget per tier** ([`PlanBudget`]): a tiny model sees
//!    the [`TINY_TOOLS`] tools nearest the request, nearest first, plans
//!    one step, and gets [`TINY_CONTEXT_CHARS`] characters of dialogue and
//!    memory; a small one at most [`SMALL_TOOLS`] tools and two steps (it
//!    repeats a step till its tokens run out: SmolLM2 wrote `read_file`
//!    three times in 160 tokens); a large one what `[planner]` configures
//!    and five steps (seed 002 #12).
//! 4. **Speed from the calls made** ([`CallSpeed`]): every answered call
//!    adds its prompt size (characters sent), its answer (tokens) and its
//!    wall time to a least-squares fit `ms ≈ p·chars + g·tokens`, older
//!    calls weighing less ([`SPEED_DECAY`] a call): prompt reading and
//!    writing run at different rates (measured: 6.4 ms a prompt token,
//!    24 ms a written one), and a planner call is mostly the one, a chat
//!    answer the other.
//! 5. **The planner's timeout from that speed** ([`plan_timeout`]): twice
//!    the time the fit predicts for this prompt and a plan of the budget's
//!    steps, never under the configured timeout (a fast model keeps seed
//!    002's 6 s for a server's hiccup) nor over the configured ceiling
//!    (the turn must still answer); with nothing measured yet, the
//!    configured timeout.
//! 6. **A tiny model plans, its tools answer** ([`words_tool_results`]): a
//!    turn whose plan ran tools is answered with what they returned, as
//!    offline, not reworded by a tiny model — measured, SmolLM2-135M
//!    answered a file it had rightly planned to read with the words of the
//!    fence around the file's text, and a directory listing with a page of
//!    `#`. A turn it planned no tool for is still its to answer ("what is
//!    the capital of France?" → "The capital of France is Paris.").

use std::time::Duration;

/// A tiny model's tools in the plan's prompt, nearest the request first
/// (rule 3). Tools a turn must keep (`recall`, a tool that just failed)
/// come on top.
pub const TINY_TOOLS: usize = 2;
/// A small model's tools at most (rule 3).
pub const SMALL_TOOLS: usize = 8;
/// Characters of dialogue and memory in a tiny model's plan prompt
/// (rule 3): the last exchange or two, not a session.
pub const TINY_CONTEXT_CHARS: usize = 600;
/// Steps a large model's plan may have (seed 002 #12).
pub const LARGE_PLAN_STEPS: usize = 5;
/// Steps a small model's plan may have (rule 3).
pub const SMALL_PLAN_STEPS: usize = 2;
/// The weight a call's measurement keeps per later call (rule 4): about
/// the last 20 calls count.
pub const SPEED_DECAY: f64 = 0.95;
/// Tokens a plan is expected to take per step, and once for its frame
/// (rule 5; measured plans of SmolLM2 were 26–92 tokens for 1–2 steps).
pub const PLAN_TOKENS_PER_STEP: u32 = 48;
/// See [`PLAN_TOKENS_PER_STEP`].
pub const PLAN_TOKENS_FRAME: u32 = 16;
/// The margin over the predicted time (rule 5): a call may take twice
/// what the fit says before it is given up.
pub const TIMEOUT_MARGIN: f64 = 2.0;

/// The parameter count, in billions, a model's name states (rule 1):
/// `4b`, `3.8b`, `e2b`, `8x7b` (56), `135m` (0.135); `None` without one.
pub fn model_size_b(model: &str) -> Option<f64> {
    let lower = model.to_ascii_lowercase();
    lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.')).find_map(|token| {
        // `135m`: millions (SmolLM2-135M).
        if let Some(millions) = token.strip_suffix('m').and_then(|d| d.parse::<f64>().ok()) {
            return Some(millions / 1000.0).filter(|b| b.is_finite() && *b > 0.0);
        }
        let digits = token.strip_suffix('b')?;
        let digits = digits.strip_prefix('e').unwrap_or(digits);
        match digits.split_once('x') {
            Some((n, each)) => Some(n.parse::<f64>().ok()? * each.parse::<f64>().ok()?),
            None => digits.parse::<f64>().ok(),
        }
        .filter(|b| b.is_finite() && *b > 0.0)
    })
}

/// A model's size class (rule 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelTier {
    /// Under 1 B parameters: a prompt of a few tools, plans of one step.
    Tiny,
    /// 1–7 B (seed 002's SMALL tier): digests on, plans of two steps.
    Small,
    /// Over 7 B, or a name that states no size.
    Large,
}

impl ModelTier {
    /// The tier of `model` by its name (rules 1, 2).
    pub fn of(model: &str) -> ModelTier {
        match model_size_b(model) {
            Some(b) if b < 1.0 => ModelTier::Tiny,
            Some(b) if b <= 7.0 => ModelTier::Small,
            _ => ModelTier::Large,
        }
    }

    /// Whether the model is at most 7 B (seed 002's SMALL tier, tiny
    /// included): whose context window the digests protect.
    pub fn is_small(self) -> bool {
        self != ModelTier::Large
    }
}

/// Whether `model` is at most 7 B by its name ([`ModelTier::is_small`]).
pub fn is_small_model(model: &str) -> bool {
    ModelTier::of(model).is_small()
}

/// Whether `model`'s reply loop words what the plan's tools returned
/// (rule 6): every model but a tiny one.
pub fn words_tool_results(model: &str) -> bool {
    ModelTier::of(model) != ModelTier::Tiny
}

/// `[planner]`: the planner's prompt, as configured; a small model's
/// budget is cut from it (rule 3).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerSection {
    /// Most tools a planner prompt lists: a bigger catalogue (a host that
    /// registers 200 tools) is narrowed to this many by the tool router
    /// (seed 002 #7), and the reply loop's model may find more with
    /// `search_tools` (#8).
    pub max_tools: usize,
}

impl Default for PlannerSection {
    fn default() -> Self {
        PlannerSection { max_tools: 12 }
    }
}

/// What a plan's prompt may hold for one model (rule 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanBudget {
    /// Tools chosen for the prompt, nearest first when fewer than the
    /// catalogue (rule-4 tools of the tool router come on top).
    pub tools: usize,
    /// Steps the plan may have.
    pub steps: usize,
    /// Characters of dialogue and memory (`None`: as configured).
    pub context_chars: Option<usize>,
}

impl PlanBudget {
    /// The budget of `model`, given the configured tools per prompt
    /// (`[planner] max_tools`).
    pub fn for_model(model: &str, configured_tools: usize) -> PlanBudget {
        let configured_tools = configured_tools.max(1);
        match ModelTier::of(model) {
            ModelTier::Tiny => PlanBudget {
                tools: TINY_TOOLS.min(configured_tools),
                steps: 1,
                context_chars: Some(TINY_CONTEXT_CHARS),
            },
            ModelTier::Small => {
                PlanBudget { tools: SMALL_TOOLS.min(configured_tools), steps: SMALL_PLAN_STEPS, context_chars: None }
            }
            ModelTier::Large => PlanBudget { tools: configured_tools, steps: LARGE_PLAN_STEPS, context_chars: None },
        }
    }

    /// The tokens a plan of this budget is expected to take (rule 5).
    pub fn plan_tokens(&self) -> u32 {
        PLAN_TOKENS_FRAME + PLAN_TOKENS_PER_STEP * self.steps as u32
    }

    /// The most tokens the plan's answer may take: twice what it is
    /// expected to (512 for five steps) — a model that rambles inside an
    /// argument (SmolLM2 wrote a 60-character path of `list_by_name_…`)
    /// stops there rather than spend the turn.
    pub fn max_tokens(&self) -> u32 {
        2 * self.plan_tokens()
    }
}

/// The dialogue and memory of a plan's prompt within `max` characters
/// (rule 3; `None`: as they are): the newest exchanges first — a
/// follow-up ("and tomorrow?") needs the one it follows — then the
/// memory, cut to what is left; older exchanges are dropped whole.
pub fn fit_context(
    max: Option<usize>,
    memory: Option<String>,
    dialogue: Vec<(String, String)>,
) -> (Option<String>, Vec<(String, String)>) {
    let Some(max) = max else { return (memory, dialogue) };
    let mut left = max;
    let mut kept = 0;
    for (role, text) in dialogue.iter().rev() {
        let cost = role.chars().count() + text.chars().count() + 3;
        if cost > left {
            break;
        }
        left -= cost;
        kept += 1;
    }
    let dialogue = dialogue[dialogue.len() - kept..].to_vec();
    // `truncate` adds an ellipsis: one character of what is left.
    let memory = memory.filter(|_| left > 1).map(|m| crate::text::truncate(&m, left - 1));
    (memory, dialogue)
}

/// A model's measured speed (rule 4): running sums of a least-squares fit
/// of `ms ≈ p·chars + g·tokens`, each call's weight decaying by
/// [`SPEED_DECAY`] per later call. Constant size, whatever the calls.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CallSpeed {
    /// Σw·c², Σw·c·t, Σw·t², Σw·c·ms, Σw·t·ms, Σw (c: prompt characters,
    /// t: answer tokens).
    cc: f64,
    ct: f64,
    tt: f64,
    cm: f64,
    tm: f64,
    weight: f64,
}

impl CallSpeed {
    /// Adds one answered call: `prompt_chars` sent, `answer_tokens`
    /// written, `ms` of wall time.
    pub fn record(&mut self, prompt_chars: usize, answer_tokens: u32, ms: u64) {
        let (c, t, m) = (prompt_chars as f64, f64::from(answer_tokens), ms as f64);
        if c + t <= 0.0 {
            return;
        }
        let d = SPEED_DECAY;
        self.cc = self.cc * d + c * c;
        self.ct = self.ct * d + c * t;
        self.tt = self.tt * d + t * t;
        self.cm = self.cm * d + c * m;
        self.tm = self.tm * d + t * m;
        self.weight = self.weight * d + 1.0;
    }

    /// Whether any call was measured.
    pub fn is_measured(&self) -> bool {
        self.weight > 0.0
    }

    /// The fitted milliseconds per prompt character and per answer token,
    /// both at least 0: the 2×2 normal equations when the calls tell the
    /// two apart, else one rate for both (calls all of one shape).
    pub fn rates(&self) -> Option<(f64, f64)> {
        if !self.is_measured() {
            return None;
        }
        let det = self.cc * self.tt - self.ct * self.ct;
        // Calls of one shape (or one call): the normal equations are
        // singular up to rounding; one rate per unit of (chars + tokens).
        if det > 1e-9 * self.cc * self.tt {
            let p = (self.cm * self.tt - self.tm * self.ct) / det;
            let g = (self.tm * self.cc - self.cm * self.ct) / det;
            if p >= 0.0 && g >= 0.0 {
                return Some((p, g));
            }
            // A negative rate is noise: fit the other alone.
            if p < 0.0 && self.tt > 0.0 {
                return Some((0.0, (self.tm / self.tt).max(0.0)));
            }
            if self.cc > 0.0 {
                return Some(((self.cm / self.cc).max(0.0), 0.0));
            }
        }
        let units = self.cc + 2.0 * self.ct + self.tt;
        let rate = ((self.cm + self.tm) / units).max(0.0);
        Some((rate, rate))
    }

    /// The predicted wall time of a call sending `prompt_chars` and
    /// writing `answer_tokens`, if anything was measured.
    pub fn predict(&self, prompt_chars: usize, answer_tokens: u32) -> Option<Duration> {
        let (p, g) = self.rates()?;
        let ms = p * prompt_chars as f64 + g * f64::from(answer_tokens);
        Some(Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 86_400.0)))
    }
}

/// The planner's timeout for a prompt of `prompt_chars` under `budget`
/// (rule 5): [`TIMEOUT_MARGIN`] times the predicted time, within
/// `configured ..= ceiling`; `configured` when nothing was measured.
pub fn plan_timeout(
    speed: Option<&CallSpeed>,
    prompt_chars: usize,
    budget: &PlanBudget,
    configured: Duration,
    ceiling: Duration,
) -> Duration {
    let Some(predicted) = speed.and_then(|s| s.predict(prompt_chars, budget.plan_tokens())) else {
        return configured;
    };
    predicted.mul_f64(TIMEOUT_MARGIN).clamp(configured, ceiling.max(configured))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_sizes_and_tiers_come_from_the_name() {
        for (name, tier) in [
            ("smollm2-135m-instruct", ModelTier::Tiny),
            ("qwen2.5:0.5b", ModelTier::Tiny),
            ("gemma3:4b", ModelTier::Small),
            ("qwen2.5:7b-instruct", ModelTier::Small),
            ("phi3:3.8b", ModelTier::Small),
            ("gemma3n:e2b", ModelTier::Small),
            ("llama3.2:1B", ModelTier::Small),
            ("llama3.1:8b", ModelTier::Large),
            ("mixtral:8x7b", ModelTier::Large),
            ("gpt-5-mini", ModelTier::Large),
            ("m1", ModelTier::Large),
            ("qwen3-30b-a3b", ModelTier::Large),
        ] {
            assert_eq!(ModelTier::of(name), tier, "{name}");
            assert_eq!(is_small_model(name), tier != ModelTier::Large, "{name}");
        }
        assert_eq!(model_size_b("mixtral:8x7b"), Some(56.0));
    }

    #[test]
    fn a_tiny_model_sees_fewer_tools_and_plans_one_step() {
        let tiny = PlanBudget::for_model("smollm2-135m-instruct", 12);
        assert_eq!((tiny.tools, tiny.steps, tiny.context_chars), (TINY_TOOLS, 1, Some(TINY_CONTEXT_CHARS)));
        let small = PlanBudget::for_model("gemma3:4b", 12);
        assert_eq!((small.tools, small.steps), (SMALL_TOOLS, SMALL_PLAN_STEPS));
        let large = PlanBudget::for_model("gpt-5", 12);
        assert_eq!((large.tools, large.steps, large.context_chars), (12, LARGE_PLAN_STEPS, None));
        // The configured cap holds for every tier.
        assert_eq!(PlanBudget::for_model("gemma3:4b", 3).tools, 3);
        assert!(tiny.plan_tokens() < large.plan_tokens());
        assert_eq!((tiny.max_tokens(), large.max_tokens()), (128, 512));
    }

    /// Calls of two shapes (long prompts with short answers, short prompts
    /// with long answers), timed by known rates: the fit finds both.
    #[test]
    fn the_fit_tells_prompt_reading_from_writing() {
        let (p, g) = (1.5, 24.0);
        let mut speed = CallSpeed::default();
        assert!(speed.rates().is_none());
        for (chars, tokens) in [(2400, 70), (400, 240), (2300, 30), (380, 120), (2500, 90), (420, 40)] {
            speed.record(chars, tokens, (p * chars as f64 + g * f64::from(tokens)) as u64);
        }
        let (fp, fg) = speed.rates().unwrap();
        assert!((fp - p).abs() < 0.01 && (fg - g).abs() < 0.1, "{fp} {fg}");
        let predicted = speed.predict(1000, 50).unwrap().as_millis();
        assert!((2690..=2710).contains(&predicted), "{predicted}");
    }

    /// One call (or calls of one shape): one rate for both, which predicts
    /// a call of that shape as it went.
    #[test]
    fn one_call_predicts_its_own_shape() {
        let mut speed = CallSpeed::default();
        speed.record(2400, 70, 5700);
        let predicted = speed.predict(2400, 70).unwrap().as_millis();
        assert!((5690..=5710).contains(&predicted), "{predicted}");
    }

    /// Older calls weigh less: a server that got slower is followed.
    #[test]
    fn the_fit_follows_a_server_that_slowed_down() {
        let mut speed = CallSpeed::default();
        for _ in 0..50 {
            speed.record(2000, 50, 1000);
        }
        for _ in 0..60 {
            speed.record(2000, 50, 4000);
        }
        let predicted = speed.predict(2000, 50).unwrap().as_millis();
        assert!(predicted > 3500, "{predicted}");
    }

    #[test]
    fn a_tiny_prompt_keeps_the_newest_exchanges_then_memory() {
        let said = |t: &str| ("user".to_owned(), t.to_owned());
        let dialogue = vec![said(&"old ".repeat(100)), said("weather in Oslo"), said("and tomorrow?")];
        let memory = Some("The user's name is Ada. ".repeat(20));
        let (m, d) = fit_context(None, memory.clone(), dialogue.clone());
        assert_eq!((m, d), (memory.clone(), dialogue.clone()));
        let (m, d) = fit_context(Some(100), memory, dialogue);
        assert_eq!(d, vec![said("weather in Oslo"), said("and tomorrow?")]);
        let m = m.unwrap();
        assert!(m.starts_with("The user's name is Ada.") && m.chars().count() <= 100 - 42, "{m}");
    }

    #[test]
    fn the_timeout_grows_with_a_slow_model_within_its_bounds() {
        let budget = PlanBudget::for_model("smollm2-135m-instruct", 12);
        let (configured, ceiling) = (Duration::from_secs(6), Duration::from_secs(12));
        // Nothing measured: as configured.
        assert_eq!(plan_timeout(None, 2000, &budget, configured, ceiling), configured);
        let mut fast = CallSpeed::default();
        fast.record(2000, 64, 300);
        assert_eq!(plan_timeout(Some(&fast), 2000, &budget, configured, ceiling), configured);
        let mut slow = CallSpeed::default();
        slow.record(2000, 64, 4000);
        let t = plan_timeout(Some(&slow), 2000, &budget, configured, ceiling);
        assert!(t > configured && t <= ceiling, "{t:?}");
        let mut crawling = CallSpeed::default();
        crawling.record(2000, 64, 40_000);
        assert_eq!(plan_timeout(Some(&crawling), 2000, &budget, configured, ceiling), ceiling);
    }
}
