//! Standard normal draws in bulk, exactly rand_distr's: the same values, and the RNG left
//! in the same state, as one `rng.sample(StandardNormal)` per value — only faster.
//!
//! rand_distr's ziggurat turns one 64-bit word into a draw ≈ 98.5 % of the time: layer
//! `i` = the word's low byte, `u` from its top 52 bits, `x = u·X[i]`, kept if
//! `|x| < X[i+1]`. Here a block of words is read at once (sixteen ChaCha8 blocks per
//! AVX-512 step, `chacha8`), that first step is computed for all of them in vector
//! registers, and runs of kept words are copied out; at a word the first step does not
//! keep, rand_distr itself is called on the words from there (it reads the same word
//! again, and more), so every rare path — the wedge test, the tail — is the library's own.
//! The table `X` is read back from rand_distr at first use (one crafted word per layer),
//! not copied: a layer whose read-back fails is simply always left to the library.

use super::Rng;
use rand::RngCore;
use rand_distr::{Distribution, StandardNormal};
use std::sync::OnceLock;

/// Words read at once.
const CHUNK: usize = 1024;

/// `count` draws of N(0, 1) from `rng`, as `(0..count).map(|_| rng.sample(StandardNormal))`
/// would give them; once all are taken, `rng` is where those calls would leave it.
/// (Words are read ahead in chunks of at most the draws still to come: a draw takes at
/// least one word, so no word is read that those calls would not have read.)
pub fn standard_normals(rng: &mut Rng, count: usize) -> Normals<'_> {
    let chunk = count.min(CHUNK);
    Normals { rng, left: count, words: vec![0; chunk], xs: vec![0.0; chunk], out: Vec::with_capacity(chunk), at: 0 }
}

/// The iterator of [`standard_normals`].
pub struct Normals<'a> {
    rng: &'a mut Rng,
    /// Draws not yet made.
    left: usize,
    words: Vec<u64>,
    /// The ziggurat's first step on each word.
    xs: Vec<f64>,
    /// Draws made, not yet taken.
    out: Vec<f64>,
    at: usize,
}

impl Iterator for Normals<'_> {
    type Item = f64;

    #[inline]
    fn next(&mut self) -> Option<f64> {
        if self.at == self.out.len() {
            if self.left == 0 {
                return None;
            }
            self.refill();
        }
        let v = self.out[self.at];
        self.at += 1;
        Some(v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.left + self.out.len() - self.at;
        (n, Some(n))
    }
}

impl Normals<'_> {
    /// All the draws, handed to `each` a slice at a time (in order): what iterating
    /// gives, without a call per value.
    pub fn for_each_slice(mut self, mut each: impl FnMut(&[f64])) {
        each(&self.out[self.at..]);
        while self.left > 0 {
            // Straight from the chunk's first steps: no copy through `out`.
            self.left -= draw_chunk(self.rng, &mut self.words, &mut self.xs, self.left, &mut each);
        }
    }

    /// Makes the next draws from one chunk of words.
    fn refill(&mut self) {
        let Normals { rng, left, words, xs, out, at } = self;
        out.clear();
        *at = 0;
        *left -= draw_chunk(rng, words, xs, *left, &mut |run: &[f64]| out.extend_from_slice(run));
    }
}

/// The draws of one chunk of words (at most `left` words, so at most `left` draws),
/// handed to `emit` in order, a run at a time; returns how many.
fn draw_chunk(rng: &mut Rng, words: &mut [u64], xs: &mut [f64], left: usize, emit: &mut impl FnMut(&[f64])) -> usize {
    let k = left.min(words.len());
    let words = &mut words[..k];
    super::chacha8::fill_words(rng, words);
    let mut kept = [0u64; CHUNK / 64];
    first_steps(table(), words, &mut xs[..k], &mut kept);
    let (mut p, mut drawn) = (0, 0);
    while p < k {
        let q = next_unkept(&kept, p, k);
        if q > p {
            emit(&xs[p..q]);
            drawn += q - p;
        }
        p = q;
        if p < k {
            // rand_distr from this word on: its rare paths read more words, past the
            // chunk's end from the RNG itself (which is right after the chunk).
            let mut from = Words { words, at: p, rng: &mut *rng };
            emit(&[StandardNormal.sample(&mut from)]);
            drawn += 1;
            p = from.at;
        }
    }
    drawn
}

/// The first position ≥ `p` (and < `k`) whose first step was not kept, or `k`.
fn next_unkept(kept: &[u64], p: usize, k: usize) -> usize {
    let mut g = p / 64;
    let mut rejected = !kept[g] >> (p % 64) << (p % 64);
    loop {
        if rejected != 0 {
            return (64 * g + rejected.trailing_zeros() as usize).min(k);
        }
        g += 1;
        if 64 * g >= k {
            return k;
        }
        rejected = !kept[g];
    }
}

/// The chunk's words, then the RNG's.
struct Words<'a> {
    words: &'a [u64],
    at: usize,
    rng: &'a mut Rng,
}

impl RngCore for Words<'_> {
    fn next_u64(&mut self) -> u64 {
        let w = match self.words.get(self.at) {
            Some(&w) => w,
            None => self.rng.next_u64(),
        };
        self.at += 1;
        w
    }
    fn next_u32(&mut self) -> u32 {
        unreachable!("rand_distr's StandardNormal reads 64-bit words")
    }
    fn fill_bytes(&mut self, _: &mut [u8]) {
        unreachable!("rand_distr's StandardNormal reads 64-bit words")
    }
}

/// The ziggurat's layers as rand_distr uses them: `x[i]` = X[i], `keep[i]` = X[i+1] (0
/// where the first step never keeps, or where reading X back failed).
struct Table {
    x: [f64; 256],
    keep: [f64; 256],
}

/// The exponent bits that make 52 random bits a float in [2, 4) (rand's
/// `into_float_with_exponent(1)`).
const EXPONENT_ONE: u64 = 1024 << 52;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        // A word of layer i with u = 2^-20 exactly: the first step keeps x = 2^-20·X[i]
        // (|x| ≪ X[i+1]) from that one word. Layer 255's X[256] is 0, so it never keeps
        // there; a second word of all ones passes the wedge test and returns the same x.
        const SHIFT: i32 = 20;
        let bits = (1u64 << 51) + (1u64 << (51 - SHIFT));
        let mut x = [0.0; 256];
        let mut read = [false; 256];
        for i in 0..256 {
            let word = (bits << 12) | i as u64;
            debug_assert_eq!(f64::from_bits((word >> 12) | EXPONENT_ONE) - 3.0, 2f64.powi(-SHIFT));
            let mut probe = Probe { word, reads: 0 };
            let v: f64 = StandardNormal.sample(&mut probe);
            let expected_reads = if i == 255 { 2 } else { 1 };
            read[i] = probe.reads == expected_reads && v > 0.0 && v.is_finite();
            x[i] = if read[i] { v * 2f64.powi(SHIFT) } else { 0.0 };
        }
        let mut keep = [0.0; 256];
        for i in 0..255 {
            if read[i] && read[i + 1] {
                keep[i] = x[i + 1];
            }
        }
        Table { x, keep }
    })
}

/// One given word, then words of all ones.
struct Probe {
    word: u64,
    reads: u32,
}

impl RngCore for Probe {
    fn next_u64(&mut self) -> u64 {
        self.reads += 1;
        if self.reads == 1 { self.word } else { u64::MAX }
    }
    fn next_u32(&mut self) -> u32 {
        unreachable!("rand_distr's StandardNormal reads 64-bit words")
    }
    fn fill_bytes(&mut self, _: &mut [u8]) {
        unreachable!("rand_distr's StandardNormal reads 64-bit words")
    }
}

/// The ziggurat's first step on every word: `xs[t]`, and bit t of `kept` where it keeps.
fn first_steps(table: &Table, words: &[u64], xs: &mut [f64], kept: &mut [u64]) {
    #[cfg(target_arch = "x86_64")]
    match crate::simd::Isa::current() {
        // SAFETY: the CPU has the features (part of the set it has).
        crate::simd::Isa::Avx512 => return unsafe { first_steps_avx512(table, words, xs, kept) },
        // SAFETY: as above.
        crate::simd::Isa::Avx2 => return unsafe { first_steps_avx2(table, words, xs, kept) },
        crate::simd::Isa::Portable => {}
    }
    first_steps_portable(table, words, xs, kept)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2")]
unsafe fn first_steps_avx512(table: &Table, words: &[u64], xs: &mut [f64], kept: &mut [u64]) {
    first_steps_portable(table, words, xs, kept)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn first_steps_avx2(table: &Table, words: &[u64], xs: &mut [f64], kept: &mut [u64]) {
    first_steps_portable(table, words, xs, kept)
}

/// Written for the vectoriser: the same arithmetic as rand_distr's `ziggurat` (an `f64`
/// multiply and a strict compare), so the kept values are its values bit for bit.
#[inline(always)]
fn first_steps_portable(table: &Table, words: &[u64], xs: &mut [f64], kept: &mut [u64]) {
    for ((w64, x64), k) in words.chunks(64).zip(xs.chunks_mut(64)).zip(kept.iter_mut()) {
        let mut bits = 0u64;
        for (j, (&w, x)) in w64.iter().zip(x64.iter_mut()).enumerate() {
            let i = (w & 0xff) as usize;
            let u = f64::from_bits((w >> 12) | EXPONENT_ONE) - 3.0;
            let v = u * table.x[i];
            *x = v;
            bits |= u64::from(v.abs() < table.keep[i]) << j;
        }
        *k = bits;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng as _, SeedableRng as _};

    fn sequential(rng: &mut Rng, count: usize) -> Vec<f64> {
        (0..count).map(|_| rng.sample(StandardNormal)).collect()
    }

    /// Bit for bit rand_distr's draws and the RNG's state after them: any count (across
    /// chunk edges), any start (an odd word position included), many seeds — enough draws
    /// that the wedge test and the tail both come up, and chunks that end inside them —
    /// on every instruction set this CPU can run (the cap changes no value, so tests
    /// running meanwhile are unaffected).
    #[test]
    fn draws_are_rand_distrs_bit_for_bit() {
        let rare = crate::simd::on_each_isa(|isa| {
            let mut rare = 0;
            for seed in 0..40u64 {
                for count in [0usize, 1, 2, 63, 64, 65, 1023, 1024, 1025, 2049, 20_000] {
                    let mut want = Rng::seed_from_u64(seed);
                    if seed % 3 == 1 {
                        want.next_u32();
                    }
                    let mut got = want.clone();
                    let expected = sequential(&mut want, count);
                    let mut again = got.clone();
                    let drawn: Vec<f64> = standard_normals(&mut got, count).collect();
                    assert_eq!(drawn.len(), count);
                    let mut sliced = Vec::new();
                    let mut normals = standard_normals(&mut again, count);
                    sliced.extend(normals.by_ref().take(count / 3)); // part by value, the rest by slice
                    normals.for_each_slice(|s| sliced.extend_from_slice(s));
                    assert_eq!(sliced, drawn);
                    assert_eq!(again.get_word_pos(), want.get_word_pos());
                    let same = drawn.iter().zip(&expected).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{isa:?}, seed {seed}, {count} draws");
                    assert_eq!(got.get_word_pos(), want.get_word_pos(), "{isa:?}, seed {seed}, {count} draws");
                    rare += expected.iter().filter(|v| v.abs() > table().x[1]).count();
                }
            }
            rare
        });
        assert!(rare.iter().all(|&(_, r)| r > 0), "no draw from the tail: the test did not reach it ({rare:?})");
    }

    /// The read-back table is rand_distr's: every layer but the last keeps from one word,
    /// X decreases from X[0] = v/f(R) ≈ 3.9108 through R ≈ 3.6542 (rand_distr's
    /// ZIG_NORM_R) towards 0.
    #[test]
    fn the_table_is_read_back_whole() {
        let t = table();
        assert!((t.x[0] - 3.910_757_959_537_09).abs() < 1e-12, "{}", t.x[0]);
        assert!((t.x[1] - 3.654_152_885_361_009).abs() < 1e-12, "{}", t.x[1]);
        assert!(t.x.windows(2).all(|w| w[0] > w[1] && w[1] > 0.0));
        assert!(t.keep[..255].iter().zip(&t.x[1..]).all(|(k, x)| k == x));
        assert_eq!(t.keep[255], 0.0);
    }

    /// The AVX-512, AVX2 and portable first steps agree on every word.
    #[test]
    fn first_steps_agree_on_every_path() {
        let mut rng = Rng::seed_from_u64(5);
        let words: Vec<u64> = (0..CHUNK).map(|_| rng.next_u64()).collect();
        let mut want = (vec![0.0; CHUNK], vec![0u64; CHUNK / 64]);
        first_steps_portable(table(), &words, &mut want.0, &mut want.1);
        crate::simd::on_each_isa(|isa| {
            let mut got = (vec![0.0; CHUNK], vec![0u64; CHUNK / 64]);
            first_steps(table(), &words, &mut got.0, &mut got.1);
            assert_eq!(got.1, want.1, "{isa:?}");
            assert!(got.0.iter().zip(&want.0).all(|(a, b)| a.to_bits() == b.to_bits()), "{isa:?}");
        });
        assert!(want.1.iter().map(|b| b.count_ones()).sum::<u32>() > 990, "≈ 98.5 % kept");
    }
}
