//! Where the synthetic fingerprints come from: [`Topic`]s (what turns about
//! one kind of work look like), the fingerprint [`Kind`]s, and the
//! [`Generator`] that draws features, embeddings, models, scores and costs
//! from them — the one source of both the recommendation corpus and the
//! rebuild stream.

use chrono::{DateTime, Utc};

use engram::events::payloads::StructuralFeatures;
use engram::events::rust_decimal::Decimal;
use engram::learning::patterns::knn::unit;
use engram::learning::patterns::{Embedding, Fingerprint};

use super::random::{Rng, Zipf};
use super::vocabulary::{side_effects_of, tool_names, BUCKETS, EXTENSIONS, INTENTS, MODELS};

/// Embedding dimension of the hybrid corpus (MiniLM-sized).
pub const DIM: usize = 384;
/// Embedding provider of the hybrid corpus.
pub const PROVIDER: &str = "bench:384";
/// Topics: each has preferred features, models and an embedding centroid.
pub const TOPICS: usize = 50;

/// A topic: what turns about one kind of work tend to look like.
#[derive(Clone, Debug)]
pub struct Topic {
    intent: usize,
    extensions: [usize; 3],
    tools: [usize; 6],
    buckets: [usize; 3],
    /// Candidate models, the topic's favourite first.
    models: [usize; 5],
    /// Success-score mean of each model on this topic.
    quality: [f64; MODELS.len()],
    /// Unit centroid of the topic's request embeddings.
    centroid: Vec<f32>,
}

/// Fingerprint kind of a corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// v1: structural features only.
    Structural,
    /// v2: structural features and a 384-d embedding.
    Hybrid,
}

impl Kind {
    /// Both kinds.
    pub const ALL: [Kind; 2] = [Kind::Structural, Kind::Hybrid];

    /// `structural` or `hybrid`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Structural => "structural",
            Kind::Hybrid => "hybrid",
        }
    }
}

/// Draws fingerprints like a coding assistant's turns: a topic (one of
/// [`TOPICS`]) picks the likely intent, extensions, tools and directories
/// (each drawn from the topic's favourites or, less often, from the whole
/// vocabulary by a Zipf law), side effects follow from the tools, the
/// input-token bucket leans small, images are rare; a hybrid's embedding is
/// its topic's centroid plus Gaussian noise (cosine ≈ 0.7 to the centroid,
/// ≈ 0.5 between two requests of a topic, ≈ 0 across topics).
#[derive(Clone, Debug)]
pub struct Generator {
    rng: Rng,
    tools: Vec<String>,
    topics: Vec<Topic>,
    ext_zipf: Zipf,
    tool_zipf: Zipf,
    bucket_zipf: Zipf,
    topic_zipf: Zipf,
}

impl Generator {
    /// A generator for `seed`; the topics depend on the seed only.
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let tools = tool_names();
        let (ext_zipf, tool_zipf, bucket_zipf) =
            (Zipf::new(EXTENSIONS.len()), Zipf::new(tools.len()), Zipf::new(BUCKETS.len()));
        let topics = (0..TOPICS)
            .map(|t| {
                let mut models = [0usize; 5];
                let mut order: Vec<usize> = (0..MODELS.len()).collect();
                for (i, m) in models.iter_mut().enumerate() {
                    let j = i + rng.below(order.len() - i);
                    order.swap(i, j);
                    *m = order[i];
                }
                let centroid: Vec<f32> = (0..DIM).map(|_| rng.gaussian() as f32).collect();
                Topic {
                    intent: t % INTENTS.len(),
                    extensions: std::array::from_fn(|_| ext_zipf.sample(&mut rng)),
                    tools: std::array::from_fn(|_| tool_zipf.sample(&mut rng)),
                    buckets: std::array::from_fn(|_| bucket_zipf.sample(&mut rng)),
                    models,
                    quality: std::array::from_fn(|_| 0.45 + 0.5 * rng.unit()),
                    centroid: unit(PROVIDER, centroid).vector.to_vec(),
                }
            })
            .collect();
        Generator { rng, tools, topics, ext_zipf, tool_zipf, bucket_zipf, topic_zipf: Zipf::new(TOPICS) }
    }

    /// The generator's own random stream.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// A topic, the popular ones more often.
    pub fn topic(&mut self) -> usize {
        // Flattened Zipf: half uniform, half Zipf.
        if self.rng.chance(0.5) {
            self.rng.below(TOPICS)
        } else {
            self.topic_zipf.sample(&mut self.rng)
        }
    }

    /// Structural features of a turn about `topic`.
    pub fn features(&mut self, topic: usize) -> StructuralFeatures {
        let t = &self.topics[topic];
        let rng = &mut self.rng;
        let mut intent_tags = vec![INTENTS[if rng.chance(0.85) { t.intent } else { rng.below(INTENTS.len()) }]];
        if rng.chance(0.3) {
            intent_tags.push(INTENTS[rng.below(INTENTS.len())]);
        }
        let pick = |rng: &mut Rng, n: usize, own: &[usize], p_own: f64, zipf: &Zipf| -> Vec<usize> {
            (0..n).map(|_| if rng.chance(p_own) { own[rng.below(own.len())] } else { zipf.sample(rng) }).collect()
        };
        let n_ext = [0, 1, 1, 1, 2, 2, 2, 3, 3, 4][rng.below(10)];
        let extensions = pick(rng, n_ext, &t.extensions, 0.7, &self.ext_zipf);
        let n_tools = 1 + rng.below(6);
        let tools = pick(rng, n_tools, &t.tools, 0.6, &self.tool_zipf);
        let n_buckets = [0, 1, 1, 1, 2, 2, 3][rng.below(7)];
        let buckets = pick(rng, n_buckets, &t.buckets, 0.7, &self.bucket_zipf);
        let tool_names: Vec<String> = tools.iter().map(|i| self.tools[*i].clone()).collect();
        let side_effect_classes = tool_names.iter().flat_map(|t| side_effects_of(t)).collect();
        StructuralFeatures {
            intent_tags: intent_tags.into_iter().map(str::to_owned).collect(),
            file_extensions: extensions.into_iter().map(|i| EXTENSIONS[i].to_owned()).collect(),
            tool_names,
            file_path_buckets: buckets.into_iter().map(|i| BUCKETS[i].to_owned()).collect(),
            side_effect_classes,
            estimated_input_tokens_bucket: [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 3][rng.below(15)],
            has_images: rng.chance(0.02),
            has_tool_calls_in_history: rng.chance(0.5),
        }
        .normalized()
    }

    /// A request embedding about `topic`: its centroid plus noise, unit
    /// length.
    pub fn embedding(&mut self, topic: usize) -> Embedding {
        let sigma = 1.0 / (DIM as f64).sqrt();
        let c = &self.topics[topic].centroid;
        let v: Vec<f32> = c.iter().map(|x| x + (sigma * self.rng.gaussian()) as f32).collect();
        unit(PROVIDER, v)
    }

    /// A fingerprint of `kind` about a random topic, and the topic.
    pub fn fingerprint(&mut self, kind: Kind) -> (Fingerprint, usize) {
        let topic = self.topic();
        let fp = Fingerprint::structural(self.features(topic));
        let fp = match kind {
            Kind::Structural => fp,
            Kind::Hybrid => fp.with_embedding(Some(self.embedding(topic))),
        };
        (fp, topic)
    }

    /// `n` distinct candidate models of `topic` (2 ≤ n ≤ 5), as indices
    /// into [`MODELS`].
    pub fn models(&mut self, topic: usize, n: usize) -> Vec<usize> {
        let mut order = self.topics[topic].models;
        let n = n.clamp(1, order.len());
        for i in 0..n {
            let j = i + self.rng.below(order.len() - i);
            order.swap(i, j);
        }
        order[..n].to_vec()
    }

    /// A model for a turn about `topic`: the favourite half the time, else
    /// one of the topic's three first candidates.
    pub fn model(&mut self, topic: usize) -> usize {
        let models = self.topics[topic].models;
        if self.rng.chance(0.5) {
            models[0]
        } else {
            models[self.rng.below(3)]
        }
    }

    /// A success score of `model` on `topic`: its mean quality plus noise.
    pub fn score(&mut self, topic: usize, model: usize) -> f64 {
        (self.topics[topic].quality[model] + 0.15 * self.rng.gaussian()).clamp(0.0, 1.0)
    }

    /// A session cost of `model`, around its list price.
    pub fn cost(&mut self, model: usize) -> Decimal {
        let base = MODELS[model].1;
        Decimal::new(base / 2 + (self.rng.unit() * base as f64) as i64, 6)
    }
}

/// Where the synthetic outcome rows and the rebuild stream start
/// (2025-01-01).
pub(super) fn epoch() -> DateTime<Utc> {
    DateTime::from_timestamp(1_735_689_600, 0).expect("a valid time")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_embeddings_cluster_by_topic() {
        let mut g = Generator::new(1);
        let dot = |a: &Embedding, b: &Embedding| a.vector.iter().zip(b.vector.iter()).map(|(x, y)| x * y).sum::<f32>();
        let (a, b, c) = (g.embedding(0), g.embedding(0), g.embedding(1));
        let norm = dot(&a, &a);
        assert!((norm - 1.0).abs() < 1e-4);
        assert!(dot(&a, &b) > 0.3, "same topic {}", dot(&a, &b));
        assert!(dot(&a, &c).abs() < 0.3, "other topic {}", dot(&a, &c));
    }
}
