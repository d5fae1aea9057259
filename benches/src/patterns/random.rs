//! The randomness behind every synthetic corpus of the benches: a seeded
//! SplitMix64 generator (so a seed makes the same corpus on any machine)
//! and a Zipf law for the vocabulary's long tails. The fast-path, memory
//! and start-up benches draw from the same [`Rng`].

/// SplitMix64: a tiny, fast, seeded generator (the library does not depend
/// on `rand`).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5851_F42D_4C95_7F2D)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Standard normal (Box–Muller).
    pub fn gaussian(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// An independent generator derived from this one and `stream`.
    pub fn fork(&mut self, stream: u64) -> Rng {
        Rng::new(self.next_u64() ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93))
    }
}

/// Zipf(1) over `n` items: item `i` with weight `1 / (i + 1)`.
#[derive(Clone, Debug)]
pub(super) struct Zipf {
    cum: Vec<f64>,
}

impl Zipf {
    /// The law over `n` items.
    pub(super) fn new(n: usize) -> Self {
        let mut total = 0.0;
        let cum = (0..n)
            .map(|i| {
                total += 1.0 / (i as f64 + 1.0);
                total
            })
            .collect();
        Zipf { cum }
    }

    /// An item, `0..n`.
    pub(super) fn sample(&self, rng: &mut Rng) -> usize {
        let x = rng.unit() * self.cum.last().copied().unwrap_or(0.0);
        self.cum.partition_point(|c| *c <= x).min(self.cum.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_roughly_uniform() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        assert_eq!(xs, (0..100).map(|_| b.next_u64()).collect::<Vec<_>>());
        let mut counts = [0usize; 10];
        for _ in 0..10_000 {
            counts[a.below(10)] += 1;
        }
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
        let mean = (0..10_000).map(|_| a.gaussian()).sum::<f64>() / 10_000.0;
        assert!(mean.abs() < 0.05);
    }
}
