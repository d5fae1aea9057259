//! Summaries and the knowledge graph (seed 002 #9-#11b).

closed_enum! {
    /// Who wrote a summary.
    pub enum SummariserKind {
        /// The LLM summariser (seed 002 #9).
        Llm => "llm",
        /// The extractive fallback.
        Extractive => "extractive",
    }
}

payload! {
    /// `summary.written`: a conversation summary (≤ 200 words + topics).
    pub struct SummaryWritten {
        /// The summary text.
        pub summary: String,
        /// 3-5 topic keywords.
        pub topics: Vec<String>,
        /// LLM or extractive.
        pub summariser: SummariserKind,
        /// How many turns it covers.
        pub turns_covered: u32,
    }
}

closed_enum! {
    /// A knowledge-graph branch (seed 002 #10).
    pub enum GraphBranch {
        /// Facts about the user.
        User => "USER",
        /// How the assistant should behave.
        Directives => "DIRECTIVES",
        /// External facts.
        World => "WORLD",
    }
}

closed_enum! {
    /// Who extracted a fact.
    pub enum ExtractorKind {
        /// The LLM extractor.
        Llm => "llm",
        /// The rule-based fallback.
        Rule => "rule",
    }
}

payload! {
    /// `graph.fact_added`: a fact placed under a node of a branch.
    pub struct GraphFactAdded {
        /// The branch.
        pub branch: GraphBranch,
        /// The node path under the branch (`food/preferences`).
        pub node: String,
        /// The fact text.
        pub fact: String,
        /// LLM or rule extractor.
        pub extractor: ExtractorKind,
    }
}

payload! {
    /// `graph.node_merged`: a node's facts rewritten in one consolidation
    /// (seed 002 #11b); `facts` is the node's full new content.
    pub struct GraphNodeMerged {
        /// The branch.
        pub branch: GraphBranch,
        /// The node path.
        pub node: String,
        /// The node's facts after the merge.
        pub facts: Vec<String>,
        /// How many facts went in (existing + new).
        pub facts_before: u32,
    }
}

payload! {
    /// One fact the user retracted, as the graph held it.
    pub struct ForgottenFact {
        /// Its branch.
        pub branch: GraphBranch,
        /// Its node path.
        pub node: String,
        /// Its text.
        pub fact: String,
    }
}

payload! {
    /// `memory.forgotten`: the user retracted what the assistant learnt
    /// (`engram forget`, a host's `Runtime::forget`). A retraction, not an
    /// erasure: the log stays append-only and keeps what was said; every
    /// fold that feeds a prompt (the graph, the diary) drops what this
    /// names, at every replay and rebuild.
    pub struct MemoryForgotten {
        /// What the user asked to forget, as asked (`"Turin"`,
        /// `"session s-12"`): for the record.
        pub request: String,
        /// The facts retracted, as the graph held them when asked.
        pub facts: Vec<ForgottenFact>,
        /// Sessions whose summaries leave the diary.
        pub sessions: Vec<crate::SessionId>,
        /// Text no diary entry shows again (case-insensitive): a sentence
        /// holding it is left out.
        pub phrases: Vec<String>,
    }
}

closed_enum! {
    /// Who said a remembered passage.
    pub enum Speaker {
        /// The user (an utterance).
        User => "user",
        /// The assistant (a reply): what it confirmed, marked as its own.
        Assistant => "assistant",
    }
}

payload! {
    /// A passage's embedding, quantised: one signed byte per dimension and
    /// the scale that turns them back into floats (`value = code × scale`).
    /// A quarter of a float vector in the log — 384 bytes a passage for a
    /// MiniLM-class model, not 1.5 KB — and the same codes the vector
    /// index scans, so rebuilding the memory index never runs the model.
    pub struct PassageVector {
        /// Stable embedder id (as `QueryEmbedding::provider`): codes of
        /// different models are never compared.
        pub provider: String,
        /// Multiplier of every code.
        pub scale: f32,
        /// One code per dimension.
        pub codes: Vec<i8>,
    }
}

payload! {
    /// One piece of what was said in a turn, as the memory index keeps it.
    pub struct Passage {
        /// The words, verbatim (a few sentences at most).
        pub text: String,
        /// Who said them.
        pub speaker: Speaker,
        /// Their embedding; `None` when the embedder failed (the passage
        /// is then found by its words alone).
        pub vector: Option<PassageVector>,
    }
}

payload! {
    /// `memory.passages_indexed`: what a completed turn said, split into
    /// passages and embedded (issue 30), so a detail said in passing is
    /// found again months later. The memory index is a fold of these
    /// (and of `memory.forgotten`); the envelope says where and when the
    /// passages were said: its session and turn, and its `at`, the time
    /// of the turn it is derived from.
    pub struct PassagesIndexed {
        /// The passages, the user's first.
        pub passages: Vec<Passage>,
    }
}
