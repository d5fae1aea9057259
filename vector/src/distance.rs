//! Dot products, vectorised.
//!
//! Every search in this crate spends its time here: the exact scan computes
//! one dot product per stored row, HNSW one per visited node. So the
//! kernels are written for throughput rather than left to the
//! auto-vectoriser, which cannot reorder a float sum and so produces a
//! scalar chain (hnsw_rs's own `DistDot` is such a loop, ~4x slower):
//!
//! * **AVX-512F** (x86_64, detected at run time): four independent
//!   16-lane accumulators, 64 floats an iteration;
//! * **AVX2 + FMA** (x86_64, detected at run time): four independent 8-lane
//!   accumulators, 32 floats an iteration;
//! * **portable** everywhere else: eight independent scalar accumulators,
//!   which LLVM turns into SIMD on its own because the order of the sum is
//!   now written down.
//!
//! The kernel is chosen once ([`Kernel::detect`]) and kept as plain
//! function pointers, so a hot loop pays no feature test per call.

/// A dot product of two equally long slices.
pub type DotFn = fn(&[f32], &[f32]) -> f32;

/// Dot products of one query with consecutive rows of `dim` floats:
/// `out[i] = dot(query, rows[i * dim..(i + 1) * dim])`.
pub type DotRowsFn = fn(&[f32], &[f32], &mut [f32]);

/// The dot product of two equally long `i8` slices, exact in `i32` (the
/// graph walk's coded rows, [`crate::quantized`]).
pub type DotI8Fn = fn(&[i8], &[i8]) -> i32;

/// The instruction set a [`Kernel`] was built for (reported by benches).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// AVX-512F, 16 lanes.
    Avx512,
    /// AVX2 with fused multiply-add, 8 lanes.
    Avx2Fma,
    /// Plain Rust with independent accumulators.
    Portable,
}

/// The dot-product kernels of one instruction set, chosen once.
///
/// Copyable and tiny: every index and distance holds its own copy, so no
/// global state is consulted in a hot loop.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    isa: Isa,
    dot: DotFn,
    dot_rows: DotRowsFn,
    dot_i8: DotI8Fn,
}

impl Kernel {
    /// The fastest kernel this CPU runs (AVX-512F, then AVX2 + FMA, then
    /// portable).
    pub fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Kernel::for_isa(Isa::Avx512).unwrap_or_else(Kernel::portable);
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                return Kernel::for_isa(Isa::Avx2Fma).unwrap_or_else(Kernel::portable);
            }
        }
        Kernel::portable()
    }

    /// The kernel for `isa`, or `None` when this CPU cannot run it (tests
    /// compare every available kernel against a reference).
    pub fn for_isa(isa: Isa) -> Option<Kernel> {
        match isa {
            Isa::Portable => Some(Kernel::portable()),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if std::arch::is_x86_feature_detected!("avx512f") => {
                Some(Kernel { isa, dot: x86::dot_avx512, dot_rows: x86::dot_rows_avx512, dot_i8: x86::best_dot_i8() })
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") =>
            {
                Some(Kernel { isa, dot: x86::dot_avx2, dot_rows: x86::dot_rows_avx2, dot_i8: x86::best_dot_i8() })
            }
            _ => None,
        }
    }

    /// The portable kernel, available everywhere.
    pub fn portable() -> Kernel {
        Kernel { isa: Isa::Portable, dot: dot_portable, dot_rows: dot_rows_portable, dot_i8: dot_i8_portable }
    }

    /// Which instruction set this kernel uses.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// `a · b`. Panics if the lengths differ: a silent truncation would be
    /// a wrong answer, and every caller has checked dimensions already.
    #[inline]
    pub fn dot(&self, a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len(), "dot product of slices of different lengths");
        (self.dot)(a, b)
    }

    /// Dot products of `query` with each of the `out.len()` consecutive
    /// rows in `rows` (each `query.len()` floats long). Sharing the query's
    /// loads across rows is what makes the exact scan cheaper than one
    /// [`Kernel::dot`] per row.
    #[inline]
    pub fn dot_rows(&self, query: &[f32], rows: &[f32], out: &mut [f32]) {
        assert_eq!(rows.len(), query.len() * out.len(), "rows are not out.len() vectors of the query's length");
        (self.dot_rows)(query, rows, out)
    }

    /// `a · b` of two code rows, exact. Panics if the lengths differ.
    #[inline]
    pub fn dot_i8(&self, a: &[i8], b: &[i8]) -> i32 {
        assert_eq!(a.len(), b.len(), "dot product of slices of different lengths");
        (self.dot_i8)(a, b)
    }
}

impl Default for Kernel {
    fn default() -> Self {
        Kernel::detect()
    }
}

/// `a · b` with eight independent accumulators (auto-vectorised).
pub fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut sum = (acc[0] + acc[4]) + (acc[1] + acc[5]) + (acc[2] + acc[6]) + (acc[3] + acc[7]);
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        sum += x * y;
    }
    sum
}

/// `a · b` of `i8` slices in `i32` (auto-vectorised: integer sums may be
/// reordered).
pub fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(&x, &y)| x as i32 * y as i32).sum()
}

fn dot_rows_portable(query: &[f32], rows: &[f32], out: &mut [f32]) {
    let dim = query.len();
    if dim == 0 {
        out.fill(0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(dim)) {
        *o = dot_portable(query, row);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// The fastest `i8` dot product this CPU runs: the code rows' kernel
    /// does not follow the float one's ISA (AVX-512F without BW has no
    /// 512-bit integer multiply-add).
    pub(super) fn best_dot_i8() -> super::DotI8Fn {
        if is_x86_feature_detected!("avx512bw") {
            dot_i8_avx512
        } else if is_x86_feature_detected!("avx2") {
            dot_i8_avx2
        } else {
            super::dot_i8_portable
        }
    }

    /// Every `i8` kernel this CPU runs, for the tests.
    #[cfg(test)]
    pub(super) fn dot_i8_kernels() -> Vec<(&'static str, super::DotI8Fn)> {
        let mut out: Vec<(&'static str, super::DotI8Fn)> = vec![("portable", super::dot_i8_portable)];
        if is_x86_feature_detected!("avx2") {
            out.push(("avx2", dot_i8_avx2));
        }
        if is_x86_feature_detected!("avx512bw") {
            out.push(("avx512bw", dot_i8_avx512));
        }
        out
    }

    fn dot_i8_avx512(a: &[i8], b: &[i8]) -> i32 {
        // SAFETY: only chosen by `best_dot_i8` when AVX-512BW is present.
        unsafe { dot_i8_avx512_impl(a, b) }
    }

    fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
        // SAFETY: only chosen by `best_dot_i8` when AVX2 is present.
        unsafe { dot_i8_avx2_impl(a, b) }
    }

    /// 32 codes an iteration: widened to `i16`, multiplied and summed in
    /// pairs into `i32` lanes (`vpmaddwd`), so the sum is exact.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn dot_i8_avx512_impl(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc0 = _mm512_setzero_si512();
        let mut acc1 = _mm512_setzero_si512();
        let mut i = 0;
        // SAFETY (all loads): i + width <= n, and both slices hold n codes.
        unsafe {
            while i + 64 <= n {
                let x0 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(pa.add(i) as *const __m256i));
                let y0 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(pb.add(i) as *const __m256i));
                let x1 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(pa.add(i + 32) as *const __m256i));
                let y1 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(pb.add(i + 32) as *const __m256i));
                acc0 = _mm512_add_epi32(acc0, _mm512_madd_epi16(x0, y0));
                acc1 = _mm512_add_epi32(acc1, _mm512_madd_epi16(x1, y1));
                i += 64;
            }
            while i + 32 <= n {
                let x = _mm512_cvtepi8_epi16(_mm256_loadu_si256(pa.add(i) as *const __m256i));
                let y = _mm512_cvtepi8_epi16(_mm256_loadu_si256(pb.add(i) as *const __m256i));
                acc0 = _mm512_add_epi32(acc0, _mm512_madd_epi16(x, y));
                i += 32;
            }
        }
        let mut sum = _mm512_reduce_add_epi32(_mm512_add_epi32(acc0, acc1));
        for j in i..n {
            sum += a[j] as i32 * b[j] as i32;
        }
        sum
    }

    /// 16 codes an iteration, as the AVX-512 kernel does it.
    #[target_feature(enable = "avx2")]
    unsafe fn dot_i8_avx2_impl(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc0 = _mm256_setzero_si256();
        let mut acc1 = _mm256_setzero_si256();
        let mut i = 0;
        // SAFETY (all loads): i + width <= n, and both slices hold n codes.
        unsafe {
            while i + 32 <= n {
                let x0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(pa.add(i) as *const __m128i));
                let y0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(pb.add(i) as *const __m128i));
                let x1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(pa.add(i + 16) as *const __m128i));
                let y1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(pb.add(i + 16) as *const __m128i));
                acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(x0, y0));
                acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(x1, y1));
                i += 32;
            }
            while i + 16 <= n {
                let x = _mm256_cvtepi8_epi16(_mm_loadu_si128(pa.add(i) as *const __m128i));
                let y = _mm256_cvtepi8_epi16(_mm_loadu_si128(pb.add(i) as *const __m128i));
                acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(x, y));
                i += 16;
            }
        }
        let acc = _mm256_add_epi32(acc0, acc1);
        let s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b0100_1110>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b1011_0001>(s));
        let mut sum = _mm_cvtsi128_si32(s);
        for j in i..n {
            sum += a[j] as i32 * b[j] as i32;
        }
        sum
    }

    /// Safe entry point: only reachable through a [`crate::Kernel`] built
    /// after `avx2` and `fma` were detected.
    pub(super) fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: the kernel table holding this function is only built
        // when the CPU reports AVX2 and FMA.
        unsafe { dot_avx2_impl(a, b) }
    }

    pub(super) fn dot_rows_avx2(query: &[f32], rows: &[f32], out: &mut [f32]) {
        // SAFETY: as in `dot_avx2`.
        unsafe { dot_rows_avx2_impl(query, rows, out) }
    }

    pub(super) fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: the kernel table holding this function is only built
        // when the CPU reports AVX-512F.
        unsafe { dot_avx512_impl(a, b) }
    }

    pub(super) fn dot_rows_avx512(query: &[f32], rows: &[f32], out: &mut [f32]) {
        // SAFETY: as in `dot_avx512`.
        unsafe { dot_rows_avx512_impl(query, rows, out) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn hsum256(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps::<1>(v);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s));
        _mm_cvtss_f32(s)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_avx2_impl(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc0 = _mm256_setzero_ps();
        let mut acc1 = _mm256_setzero_ps();
        let mut acc2 = _mm256_setzero_ps();
        let mut acc3 = _mm256_setzero_ps();
        let mut i = 0;
        // SAFETY (all loads): i + width <= n, and both slices hold n floats.
        unsafe {
            while i + 32 <= n {
                acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), acc0);
                acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i + 8)), _mm256_loadu_ps(pb.add(i + 8)), acc1);
                acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i + 16)), _mm256_loadu_ps(pb.add(i + 16)), acc2);
                acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i + 24)), _mm256_loadu_ps(pb.add(i + 24)), acc3);
                i += 32;
            }
            while i + 8 <= n {
                acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), acc0);
                i += 8;
            }
        }
        let acc = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
        let mut sum = hsum256(acc);
        while i < n {
            sum += a[i] * b[i];
            i += 1;
        }
        sum
    }

    /// Four rows at a time: each query load feeds four FMAs, and the four
    /// rows' two accumulators each give eight independent chains, enough to
    /// hide the FMA latency.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_rows_avx2_impl(query: &[f32], rows: &[f32], out: &mut [f32]) {
        let dim = query.len();
        let q = query.as_ptr();
        let vec_end = dim - dim % 16;
        let mut r = 0;
        while r + 4 <= out.len() {
            let base = &rows[r * dim..(r + 4) * dim];
            let p0 = base.as_ptr();
            // SAFETY: rows r..r+4 are in `base`, each `dim` floats long, and
            // every offset below is < dim (vec_end <= dim).
            unsafe {
                let (p1, p2, p3) = (p0.add(dim), p0.add(2 * dim), p0.add(3 * dim));
                let mut a0 = _mm256_setzero_ps();
                let mut a1 = _mm256_setzero_ps();
                let mut b0 = _mm256_setzero_ps();
                let mut b1 = _mm256_setzero_ps();
                let mut c0 = _mm256_setzero_ps();
                let mut c1 = _mm256_setzero_ps();
                let mut d0 = _mm256_setzero_ps();
                let mut d1 = _mm256_setzero_ps();
                let mut i = 0;
                while i < vec_end {
                    let q0 = _mm256_loadu_ps(q.add(i));
                    let q1 = _mm256_loadu_ps(q.add(i + 8));
                    a0 = _mm256_fmadd_ps(q0, _mm256_loadu_ps(p0.add(i)), a0);
                    a1 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(p0.add(i + 8)), a1);
                    b0 = _mm256_fmadd_ps(q0, _mm256_loadu_ps(p1.add(i)), b0);
                    b1 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(p1.add(i + 8)), b1);
                    c0 = _mm256_fmadd_ps(q0, _mm256_loadu_ps(p2.add(i)), c0);
                    c1 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(p2.add(i + 8)), c1);
                    d0 = _mm256_fmadd_ps(q0, _mm256_loadu_ps(p3.add(i)), d0);
                    d1 = _mm256_fmadd_ps(q1, _mm256_loadu_ps(p3.add(i + 8)), d1);
                    i += 16;
                }
                let mut s = [
                    hsum256(_mm256_add_ps(a0, a1)),
                    hsum256(_mm256_add_ps(b0, b1)),
                    hsum256(_mm256_add_ps(c0, c1)),
                    hsum256(_mm256_add_ps(d0, d1)),
                ];
                for j in vec_end..dim {
                    let qj = *q.add(j);
                    s[0] += qj * *p0.add(j);
                    s[1] += qj * *p1.add(j);
                    s[2] += qj * *p2.add(j);
                    s[3] += qj * *p3.add(j);
                }
                out[r..r + 4].copy_from_slice(&s);
            }
            r += 4;
        }
        while r < out.len() {
            // SAFETY: same CPU features as this function.
            out[r] = unsafe { dot_avx2_impl(query, &rows[r * dim..(r + 1) * dim]) };
            r += 1;
        }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn dot_avx512_impl(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc0 = _mm512_setzero_ps();
        let mut acc1 = _mm512_setzero_ps();
        let mut acc2 = _mm512_setzero_ps();
        let mut acc3 = _mm512_setzero_ps();
        let mut i = 0;
        // SAFETY (all loads): i + width <= n, and both slices hold n floats;
        // the masked tail load touches only lanes below n - i.
        unsafe {
            while i + 64 <= n {
                acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)), acc0);
                acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(i + 16)), _mm512_loadu_ps(pb.add(i + 16)), acc1);
                acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(i + 32)), _mm512_loadu_ps(pb.add(i + 32)), acc2);
                acc3 = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(i + 48)), _mm512_loadu_ps(pb.add(i + 48)), acc3);
                i += 64;
            }
            while i + 16 <= n {
                acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)), acc0);
                i += 16;
            }
            if i < n {
                let mask: __mmask16 = (1u16 << (n - i)) - 1;
                let x = _mm512_maskz_loadu_ps(mask, pa.add(i));
                let y = _mm512_maskz_loadu_ps(mask, pb.add(i));
                acc1 = _mm512_fmadd_ps(x, y, acc1);
            }
        }
        _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)))
    }

    /// Four rows at a time, two 16-lane accumulators per row.
    #[target_feature(enable = "avx512f")]
    unsafe fn dot_rows_avx512_impl(query: &[f32], rows: &[f32], out: &mut [f32]) {
        let dim = query.len();
        let q = query.as_ptr();
        let vec_end = dim - dim % 32;
        let mut r = 0;
        while r + 4 <= out.len() {
            let base = &rows[r * dim..(r + 4) * dim];
            let p0 = base.as_ptr();
            // SAFETY: rows r..r+4 are in `base`, each `dim` floats long, and
            // every offset below is < dim (vec_end <= dim).
            unsafe {
                let (p1, p2, p3) = (p0.add(dim), p0.add(2 * dim), p0.add(3 * dim));
                let mut a0 = _mm512_setzero_ps();
                let mut a1 = _mm512_setzero_ps();
                let mut b0 = _mm512_setzero_ps();
                let mut b1 = _mm512_setzero_ps();
                let mut c0 = _mm512_setzero_ps();
                let mut c1 = _mm512_setzero_ps();
                let mut d0 = _mm512_setzero_ps();
                let mut d1 = _mm512_setzero_ps();
                let mut i = 0;
                while i < vec_end {
                    let q0 = _mm512_loadu_ps(q.add(i));
                    let q1 = _mm512_loadu_ps(q.add(i + 16));
                    a0 = _mm512_fmadd_ps(q0, _mm512_loadu_ps(p0.add(i)), a0);
                    a1 = _mm512_fmadd_ps(q1, _mm512_loadu_ps(p0.add(i + 16)), a1);
                    b0 = _mm512_fmadd_ps(q0, _mm512_loadu_ps(p1.add(i)), b0);
                    b1 = _mm512_fmadd_ps(q1, _mm512_loadu_ps(p1.add(i + 16)), b1);
                    c0 = _mm512_fmadd_ps(q0, _mm512_loadu_ps(p2.add(i)), c0);
                    c1 = _mm512_fmadd_ps(q1, _mm512_loadu_ps(p2.add(i + 16)), c1);
                    d0 = _mm512_fmadd_ps(q0, _mm512_loadu_ps(p3.add(i)), d0);
                    d1 = _mm512_fmadd_ps(q1, _mm512_loadu_ps(p3.add(i + 16)), d1);
                    i += 32;
                }
                let mut s = [
                    _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)),
                    _mm512_reduce_add_ps(_mm512_add_ps(b0, b1)),
                    _mm512_reduce_add_ps(_mm512_add_ps(c0, c1)),
                    _mm512_reduce_add_ps(_mm512_add_ps(d0, d1)),
                ];
                for j in vec_end..dim {
                    let qj = *q.add(j);
                    s[0] += qj * *p0.add(j);
                    s[1] += qj * *p1.add(j);
                    s[2] += qj * *p2.add(j);
                    s[3] += qj * *p3.add(j);
                }
                out[r..r + 4].copy_from_slice(&s);
            }
            r += 4;
        }
        while r < out.len() {
            // SAFETY: same CPU features as this function.
            out[r] = unsafe { dot_avx512_impl(query, &rows[r * dim..(r + 1) * dim]) };
            r += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
    }

    fn pseudo(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s as f32 / u32::MAX as f32) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn every_kernel_matches_f64_reference_at_awkward_lengths() {
        for isa in [Isa::Portable, Isa::Avx2Fma, Isa::Avx512] {
            let Some(k) = Kernel::for_isa(isa) else { continue };
            for n in [0, 1, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 100, 384, 385, 1000] {
                let a = pseudo(n, 1 + n as u32);
                let b = pseudo(n, 1000 + n as u32);
                let want = reference(&a, &b);
                let got = k.dot(&a, &b) as f64;
                assert!((got - want).abs() <= 1e-4 * (1.0 + want.abs()), "{isa:?} n={n}: {got} vs {want}");
                for rows in [0, 1, 3, 4, 5, 9] {
                    let m = pseudo(n * rows, 7 + n as u32);
                    let mut out = vec![f32::NAN; rows];
                    k.dot_rows(&a, &m, &mut out);
                    for (r, o) in out.iter().enumerate() {
                        let want = if n == 0 { 0.0 } else { reference(&a, &m[r * n..(r + 1) * n]) };
                        assert!((*o as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()), "{isa:?} n={n} row {r}");
                    }
                }
            }
        }
    }

    /// The `i8` kernels are exact: equal to an `i64` sum at every length
    /// (the tails after the last full vector included) and at the extremes
    /// of the code range, where a 16-bit intermediate would overflow.
    #[test]
    fn every_i8_kernel_is_exact() {
        #[cfg(target_arch = "x86_64")]
        let kernels = x86::dot_i8_kernels();
        #[cfg(not(target_arch = "x86_64"))]
        let kernels: Vec<(&str, DotI8Fn)> = vec![("portable", dot_i8_portable)];
        for n in [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 384, 385, 1000] {
            let a: Vec<i8> = pseudo(n, 3 + n as u32).iter().map(|x| (x * 127.0) as i8).collect();
            let b: Vec<i8> = pseudo(n, 9 + n as u32).iter().map(|x| (x * 127.0) as i8).collect();
            let extreme = vec![-127i8; n];
            for (name, f) in &kernels {
                let want: i64 = a.iter().zip(&b).map(|(x, y)| *x as i64 * *y as i64).sum();
                assert_eq!(f(&a, &b) as i64, want, "{name} n={n}");
                assert_eq!(f(&extreme, &extreme) as i64, 127 * 127 * n as i64, "{name} n={n} at the extremes");
            }
        }
    }
}
