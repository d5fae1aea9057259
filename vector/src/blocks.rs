//! Rows of a fixed width kept in fixed-size blocks, for tables that only
//! grow.
//!
//! A learnt table (the memory index's vectors, the pattern store's k-NN
//! arena) gains a row now and then for as long as the assistant runs. Kept
//! in one `Vec` that doubles when full, it holds up to twice the bytes it
//! uses, and every doubling copies the whole table and frees the old
//! buffer, leaving a hole in the heap the size of everything learnt so far
//! (the soak measured the step: `docs/performance.md`, *Where the rest of
//! the RSS goes*). [`RowBlocks`] allocates [`ROWS_PER_BLOCK`] rows at a
//! time instead and never moves a row once written: the capacity is at most
//! one block above what is used, and nothing is freed while it grows.
//!
//! A block is [`ROWS_PER_BLOCK`] = 64 rows, the exact scan's scoring chunk
//! and a multiple of the four rows the dot-product kernels take at once, so
//! a scan over the blocks scores every row exactly as a scan over one flat
//! array did (same groups of four, same order of additions).

/// Rows per block: 64 (128 KiB of 512-d `f32` rows, 32 KiB of their int8
/// codes).
pub const ROWS_PER_BLOCK: usize = 64;

/// Rows of `dim` values each, in blocks of [`ROWS_PER_BLOCK`] rows.
///
/// Slots are dense `u32` indices in push order, like a flat `Vec` of rows;
/// only the storage differs.
#[derive(Clone, Debug, Default)]
pub struct RowBlocks<T> {
    dim: usize,
    /// Full blocks, then the last one (filled up to `len`); each allocated
    /// with room for exactly [`ROWS_PER_BLOCK`] rows.
    blocks: Vec<Vec<T>>,
    len: usize,
}

impl<T: Copy + Default> RowBlocks<T> {
    /// No rows, `dim` values a row.
    pub fn new(dim: usize) -> Self {
        RowBlocks { dim, blocks: Vec::new(), len: 0 }
    }

    /// The rows of `flat` (`dim` values each, end to end).
    ///
    /// # Panics
    /// If `dim` is 0 or `flat.len()` is not a multiple of it.
    pub fn from_flat(dim: usize, flat: &[T]) -> Self {
        assert!(dim > 0 && flat.len().is_multiple_of(dim), "{} values are not rows of {dim}", flat.len());
        let mut rows = RowBlocks::new(dim);
        for row in flat.chunks_exact(dim) {
            rows.push(row);
        }
        rows
    }

    /// Values per row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Rows stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no row is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rows the allocated blocks can hold: at most one block more than
    /// [`RowBlocks::len`].
    pub fn capacity(&self) -> usize {
        self.blocks.len() * ROWS_PER_BLOCK
    }

    /// Heap bytes held (the blocks, allocated or not yet filled, and the
    /// block list): what the table costs, for the runtime's accounting.
    pub fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.capacity() * size_of::<T>()).sum::<usize>()
            + self.blocks.capacity() * size_of::<Vec<T>>()
    }

    /// Appends a row and returns its slot.
    ///
    /// # Panics
    /// If `row.len() != dim`, or more than `u32::MAX` rows are stored.
    pub fn push(&mut self, row: &[T]) -> u32 {
        assert_eq!(row.len(), self.dim, "row of {} values in rows of {}", row.len(), self.dim);
        let slot = u32::try_from(self.len).expect("more than u32::MAX rows");
        if self.len == self.capacity() {
            self.blocks.push(Vec::with_capacity(ROWS_PER_BLOCK * self.dim));
        }
        self.blocks[self.len / ROWS_PER_BLOCK].extend_from_slice(row);
        self.len += 1;
        slot
    }

    /// The row in `slot`.
    ///
    /// # Panics
    /// If `slot` is out of range.
    #[inline]
    pub fn row(&self, slot: u32) -> &[T] {
        let s = slot as usize;
        assert!(s < self.len, "row {s} of {}", self.len);
        let at = (s % ROWS_PER_BLOCK) * self.dim;
        &self.blocks[s / ROWS_PER_BLOCK][at..at + self.dim]
    }

    /// The row in `slot`, to write.
    ///
    /// # Panics
    /// If `slot` is out of range.
    pub fn row_mut(&mut self, slot: u32) -> &mut [T] {
        let s = slot as usize;
        assert!(s < self.len, "row {s} of {}", self.len);
        let at = (s % ROWS_PER_BLOCK) * self.dim;
        &mut self.blocks[s / ROWS_PER_BLOCK][at..at + self.dim]
    }

    /// Moves the last row into `slot` and drops the last slot (`Vec`'s
    /// `swap_remove`, a row at a time). An emptied last block is freed.
    ///
    /// # Panics
    /// If `slot` is out of range.
    pub fn swap_remove(&mut self, slot: u32) {
        let last = u32::try_from(self.len - 1).expect("a row below u32::MAX");
        if slot != last {
            let moved: Vec<T> = self.row(last).to_vec();
            self.row_mut(slot).copy_from_slice(&moved);
        }
        let b = last as usize / ROWS_PER_BLOCK;
        let keep = self.blocks[b].len() - self.dim;
        self.blocks[b].truncate(keep);
        if keep == 0 {
            self.blocks.pop();
        }
        self.len -= 1;
    }

    /// The stored rows block by block, each slice whole rows end to end
    /// (the last may be shorter): what a scan walks.
    pub fn blocks(&self) -> impl Iterator<Item = &[T]> + '_ {
        self.blocks.iter().map(Vec::as_slice)
    }

    /// Every row in slot order.
    pub fn rows(&self) -> impl Iterator<Item = &[T]> + '_ {
        self.blocks().flat_map(move |b| b.chunks_exact(self.dim.max(1)))
    }

    /// Drops every row and frees the blocks.
    pub fn clear(&mut self) {
        self.blocks = Vec::new();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: usize, dim: usize) -> Vec<f32> {
        (0..dim).map(|j| (i * dim + j) as f32).collect()
    }

    #[test]
    fn rows_read_back_across_block_boundaries_and_capacity_stays_within_a_block() {
        let dim = 3;
        let mut b = RowBlocks::<f32>::new(dim);
        assert_eq!(b.capacity(), 0);
        for i in 0..3 * ROWS_PER_BLOCK + 5 {
            assert_eq!(b.push(&row(i, dim)) as usize, i);
            assert!(b.capacity() >= b.len() && b.capacity() <= b.len() + ROWS_PER_BLOCK);
            assert_eq!(b.heap_bytes() - b.blocks.capacity() * size_of::<Vec<f32>>(), b.capacity() * dim * 4);
        }
        for i in [0, ROWS_PER_BLOCK - 1, ROWS_PER_BLOCK, 2 * ROWS_PER_BLOCK, 3 * ROWS_PER_BLOCK + 4] {
            assert_eq!(b.row(i as u32), row(i, dim).as_slice());
        }
        let flat: Vec<f32> = b.rows().flatten().copied().collect();
        assert_eq!(flat, (0..(3 * ROWS_PER_BLOCK + 5) * dim).map(|x| x as f32).collect::<Vec<_>>());
        assert_eq!(b.blocks().map(|s| s.len() / dim).collect::<Vec<_>>(), [64, 64, 64, 5]);
        let again = RowBlocks::from_flat(dim, &flat);
        assert_eq!(again.len(), b.len());
        assert_eq!(again.rows().collect::<Vec<_>>(), b.rows().collect::<Vec<_>>());
    }

    #[test]
    fn swap_remove_matches_a_vec_of_rows() {
        let dim = 2;
        let mut b = RowBlocks::<f32>::new(dim);
        let mut reference: Vec<Vec<f32>> = Vec::new();
        for i in 0..ROWS_PER_BLOCK + 2 {
            b.push(&row(i, dim));
            reference.push(row(i, dim));
        }
        for slot in [3usize, ROWS_PER_BLOCK, 0, 10] {
            b.swap_remove(slot as u32);
            reference.swap_remove(slot);
            assert_eq!(b.rows().map(<[f32]>::to_vec).collect::<Vec<_>>(), reference);
            assert!(b.capacity() <= b.len() + ROWS_PER_BLOCK);
        }
        // The last block emptied is freed.
        assert_eq!(b.len(), ROWS_PER_BLOCK - 2);
        assert_eq!(b.capacity(), ROWS_PER_BLOCK);
        while !b.is_empty() {
            b.swap_remove(0);
        }
        assert_eq!(b.capacity(), 0);
    }

    #[test]
    #[should_panic(expected = "row 5 of 5")]
    fn a_row_past_the_end_panics() {
        let mut b = RowBlocks::<i8>::new(4);
        for _ in 0..5 {
            b.push(&[1, 2, 3, 4]);
        }
        let _ = b.row(5);
    }
}
