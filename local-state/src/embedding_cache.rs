//! The embedding cache: a bounded memo of `(model, text) → vector`
//! (DESIGN; seed 001 §16.4).
//!
//! Embeddings are a pure function of the model and the text, so they are
//! not events: they live here, in a sled tree beside the log, and a rebuild
//! of the fast-path index or of hybrid fingerprints embeds only what the
//! cache lacks. The key is the model id and a BLAKE3 hash of the text, so a
//! different model never sees another's vectors.
//!
//! The cache is bounded like the pattern store: `max_rows` (10,000) and
//! `max_age_days` (180). Trimming drops rows created more than
//! `max_age_days` ago first, then the least recently used, then the least
//! used; it runs when a write takes the cache 5% over `max_rows`, so its
//! cost is amortised over many writes instead of paid on each.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use engram_storage::local_db::{LocalDb, Namespace};
use engram_storage::LogError;

/// Caps of the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheCaps {
    /// Rows kept after a trim.
    pub max_rows: usize,
    /// Rows older than this go first.
    pub max_age_days: u32,
}

impl Default for CacheCaps {
    fn default() -> Self {
        CacheCaps { max_rows: 10_000, max_age_days: 180 }
    }
}

/// A row's bookkeeping, before its vector.
const HEADER: usize = 8 + 8 + 4;
/// Reads bump `last_used` only when it is older than this, so a hot read
/// path does not write on every lookup.
const TOUCH_EVERY_US: u64 = 60 * 1_000_000;

/// The cache over one sled tree.
#[derive(Clone)]
pub struct EmbeddingCache {
    tree: sled::Tree,
    caps: CacheCaps,
    /// The tree's rows, counted at the first write and kept since
    /// ([`UNCOUNTED`] until then). sled's `len` walks every row, reading
    /// each ≈ 2 KB vector: done at every write, it read the whole memo per
    /// new embedding and kept it resident whatever `[storage] cache_mb`
    /// said (measured by `engram bench soak`, issue 31). The count only
    /// decides when to trim, and a trim counts exactly again.
    rows: Arc<AtomicUsize>,
    /// Bytes of the last row written (key and value), for
    /// [`EmbeddingCache::held`].
    row_bytes: Arc<AtomicUsize>,
}

/// [`EmbeddingCache::rows`] before the first count.
const UNCOUNTED: usize = usize::MAX;

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

fn key(model: &str, text: &str) -> Vec<u8> {
    let mut k = model.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(blake3::hash(text.as_bytes()).as_bytes());
    k
}

struct Row {
    created: u64,
    last_used: u64,
    uses: u32,
}

fn header(v: &[u8]) -> Option<Row> {
    Some(Row {
        created: u64::from_le_bytes(v.get(0..8)?.try_into().ok()?),
        last_used: u64::from_le_bytes(v.get(8..16)?.try_into().ok()?),
        uses: u32::from_le_bytes(v.get(16..20)?.try_into().ok()?),
    })
}

fn encode(row: &Row, vector: &[f32]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER + vector.len() * 4);
    v.extend_from_slice(&row.created.to_le_bytes());
    v.extend_from_slice(&row.last_used.to_le_bytes());
    v.extend_from_slice(&row.uses.to_le_bytes());
    for x in vector {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v
}

fn vector(v: &[u8]) -> Vec<f32> {
    v[HEADER..].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect()
}

impl EmbeddingCache {
    /// The cache kept in `db` (its `cache.embeddings` tree).
    pub fn open(db: &LocalDb, caps: CacheCaps) -> Result<Self, LogError> {
        Ok(EmbeddingCache {
            tree: db.tree(Namespace::Cache, "embeddings")?,
            caps,
            rows: Arc::new(AtomicUsize::new(UNCOUNTED)),
            row_bytes: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Rows as counted at the last write (`None` before the first: counting
    /// means a walk of the tree, see [`EmbeddingCache::len`]), the bytes
    /// they hold (rows × the last row's key and value; what sled stores,
    /// and caches within `[storage] cache_mb`), and the cap on rows. What
    /// `engram bench soak` reports beside the learnt tables: the memo grows
    /// until its cap, then stays.
    pub fn held(&self) -> (Option<usize>, usize, usize) {
        let rows = Some(self.rows.load(Ordering::Relaxed)).filter(|&n| n != UNCOUNTED);
        let bytes = rows.unwrap_or(0) * self.row_bytes.load(Ordering::Relaxed);
        (rows, bytes, self.caps.max_rows)
    }

    /// Number of cached vectors.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// The cached vector of `text` under `model`.
    pub fn get(&self, model: &str, text: &str) -> Result<Option<Vec<f32>>, LogError> {
        let k = key(model, text);
        let Some(v) = self.tree.get(&k)? else { return Ok(None) };
        let Some(mut row) = header(&v) else {
            // A damaged row is a miss; the next put replaces it.
            if self.tree.remove(&k)?.is_some() {
                let _ = self.rows.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n != UNCOUNTED).then(|| n.saturating_sub(1))
                });
            }
            return Ok(None);
        };
        let out = vector(&v);
        let now = now_us();
        if now.saturating_sub(row.last_used) > TOUCH_EVERY_US {
            row.last_used = now;
            row.uses = row.uses.saturating_add(1);
            self.tree.insert(k, encode(&row, &out))?;
        }
        Ok(Some(out))
    }

    /// Stores the vector of `text` under `model`.
    pub fn put(&self, model: &str, text: &str, v: &[f32]) -> Result<(), LogError> {
        let now = now_us();
        let (k, row) = (key(model, text), encode(&Row { created: now, last_used: now, uses: 1 }, v));
        self.row_bytes.store(k.len() + row.len(), Ordering::Relaxed);
        let new = self.tree.insert(k, row)?.is_none();
        let rows = match self.rows.load(Ordering::Relaxed) {
            UNCOUNTED => self.tree.len(),
            n => n + usize::from(new),
        };
        self.rows.store(rows, Ordering::Relaxed);
        if rows > self.caps.max_rows + self.caps.max_rows / 20 {
            self.trim()?;
        }
        Ok(())
    }

    /// The vectors of `texts` under `model`, embedding (in one batch) only
    /// those not cached.
    pub fn get_or_embed<E>(
        &self,
        model: &str,
        texts: &[&str],
        embed: impl FnOnce(&[&str]) -> Result<Vec<Vec<f32>>, E>,
    ) -> Result<Result<Vec<Vec<f32>>, E>, LogError> {
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
        let mut missing: Vec<&str> = Vec::new();
        for t in texts {
            let v = self.get(model, t)?;
            if v.is_none() && !missing.contains(t) {
                missing.push(t);
            }
            out.push(v);
        }
        if !missing.is_empty() {
            let fresh = match embed(&missing) {
                Ok(f) => f,
                Err(e) => return Ok(Err(e)),
            };
            for (t, v) in missing.iter().zip(&fresh) {
                self.put(model, t, v)?;
            }
            for (slot, t) in out.iter_mut().zip(texts) {
                if slot.is_none() {
                    let i = missing.iter().position(|m| m == t).expect("missing text");
                    *slot = Some(fresh[i].clone());
                }
            }
        }
        Ok(Ok(out.into_iter().map(|v| v.expect("filled")).collect()))
    }

    /// Trims the cache to `max_rows`: rows past `max_age_days` first, then
    /// least recently used, then least used. Returns rows removed.
    pub fn trim(&self) -> Result<usize, LogError> {
        let now = now_us();
        let max_age = u64::from(self.caps.max_age_days) * 86_400 * 1_000_000;
        let mut rows: Vec<(bool, u64, u32, sled::IVec)> = Vec::with_capacity(self.tree.len());
        for item in self.tree.iter() {
            let (k, v) = item?;
            let (old, last, uses) = match header(&v) {
                Some(r) => (now.saturating_sub(r.created) > max_age, r.last_used, r.uses),
                None => (true, 0, 0),
            };
            rows.push((old, last, uses, k));
        }
        let excess_age = rows.iter().filter(|r| r.0).count();
        let over = rows.len().saturating_sub(self.caps.max_rows);
        let n = over.max(excess_age);
        rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut batch = sled::Batch::default();
        for r in rows.iter().take(n) {
            batch.remove(r.3.clone());
        }
        self.tree.apply_batch(batch)?;
        self.rows.store(rows.len() - n.min(rows.len()), Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(max_rows: usize) -> (tempfile::TempDir, EmbeddingCache) {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("cache.embeddings").unwrap();
        (
            dir,
            EmbeddingCache {
                tree,
                caps: CacheCaps { max_rows, max_age_days: 180 },
                rows: Arc::new(AtomicUsize::new(UNCOUNTED)),
                row_bytes: Arc::new(AtomicUsize::new(0)),
            },
        )
    }

    #[test]
    fn hit_miss_and_model_isolation() {
        let (_d, c) = cache(100);
        assert_eq!(c.get("m1", "hello").unwrap(), None);
        c.put("m1", "hello", &[0.5, -0.25]).unwrap();
        assert_eq!(c.get("m1", "hello").unwrap(), Some(vec![0.5, -0.25]));
        assert_eq!(c.get("m2", "hello").unwrap(), None, "another model never sees m1's vectors");
        assert_eq!(c.get("m1", "hello!").unwrap(), None);
    }

    #[test]
    fn get_or_embed_embeds_only_misses_once() {
        let (_d, c) = cache(100);
        c.put("m", "a", &[1.0]).unwrap();
        let mut calls = Vec::new();
        let out = c
            .get_or_embed("m", &["a", "b", "c", "b"], |texts| {
                calls.push(texts.iter().map(|t| t.to_string()).collect::<Vec<_>>());
                Ok::<_, ()>(texts.iter().map(|t| vec![t.len() as f32 + 1.0]).collect())
            })
            .unwrap()
            .unwrap();
        assert_eq!(out, vec![vec![1.0], vec![2.0], vec![2.0], vec![2.0]]);
        assert_eq!(calls, vec![vec!["b".to_string(), "c".to_string()]]);
        // Everything is cached now: no call.
        let again = c.get_or_embed("m", &["b", "c"], |_| Err::<Vec<Vec<f32>>, _>("called")).unwrap();
        assert!(again.is_ok());
    }

    #[test]
    fn the_cap_evicts_least_recently_used_first() {
        let (_d, c) = cache(20);
        for i in 0..21 {
            c.put("m", &format!("t{i}"), &[i as f32]).unwrap();
            // Distinct microsecond timestamps, so "least recent" is defined.
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(c.len(), 21, "within the 5% slack");
        c.put("m", "t21", &[21.0]).unwrap();
        assert_eq!(c.len(), 20, "trimmed back to the cap");
        // The oldest writes went.
        assert_eq!(c.get("m", "t0").unwrap(), None);
        assert_eq!(c.get("m", "t1").unwrap(), None);
        assert!(c.get("m", "t21").unwrap().is_some());
    }

    /// The row count the trim goes by is kept, not walked: a text written
    /// again is not a new row, and a cache opened again counts what it
    /// holds.
    #[test]
    fn the_kept_row_count_is_the_trees() {
        let (_d, c) = cache(20);
        for i in 0..21 {
            c.put("m", &format!("t{i}"), &[i as f32]).unwrap();
        }
        for _ in 0..5 {
            c.put("m", "t5", &[5.0]).unwrap();
        }
        assert_eq!(c.len(), 21, "rewrites are no new rows: still within the slack, untrimmed");
        let reopened = EmbeddingCache { rows: Arc::new(AtomicUsize::new(UNCOUNTED)), ..c.clone() };
        reopened.put("m", "t21", &[21.0]).unwrap();
        assert_eq!(c.len(), 20, "the reopened cache counted the 21 it holds and trimmed at the 22nd");
    }
}
