//! Seeded randomness. Every random draw in the simulator comes from an RNG derived from
//! (scenario seed, purpose, ids…), so results never depend on thread count or on the
//! order in which independent pieces of work run.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

mod chacha8;
mod normals;
pub use chacha8::fill_u32;
pub use normals::{Normals, standard_normals};

/// Whether [`standard_normals`] takes its AVX-512 path on this machine (2.5× faster a
/// draw than one by one, where the AVX2 path is 1.5×): the time model charges DP noise
/// by it.
pub fn wide_normals() -> bool {
    crate::simd::Isa::current() == crate::simd::Isa::Avx512
}

/// The RNG type used everywhere: ChaCha8 is portable and its stream is stable across
/// platforms and rand versions, which `StdRng` does not promise.
pub type Rng = ChaCha8Rng;

/// SplitMix64 finaliser: a cheap, well-mixed 64-bit hash step.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Derive an independent RNG for `purpose` (a short stable name such as "split" or
/// "louvain") and the given ids (client id, round, …) from the scenario `seed`.
pub fn derive(seed: u64, purpose: &str, ids: &[u64]) -> Rng {
    let mut h = mix(seed);
    for b in purpose.bytes() {
        h = mix(h ^ u64::from(b));
    }
    for &id in ids {
        h = mix(h ^ mix(id.wrapping_add(0x5851_F42D_4C95_7F2D)));
    }
    Rng::seed_from_u64(h)
}

/// A keystream keyed by a 32-byte secret (secure aggregation's masks), so that only the
/// key's holders can compute it: AES-256 in counter mode from a zero counter, the PRG of
/// Google's SecAgg (fcp/secagg/shared/aes_ctr_prng.cc, OpenSSL's `EVP_aes_256_ctr`).
/// The counter blocks are written where the values go and encrypted in place, many at
/// once: the `aes` crate picks VAES (AVX-512) or AES-NI at run time and pipelines a
/// batch of blocks; `ctr`'s generic block-by-block glue cost more than the cipher here.
pub struct Keystream {
    cipher: aes::Aes256,
    /// The counter of the next block to encrypt.
    block: u128,
    /// The second value of the last block, when a `fill` stopped halfway through it.
    spare: Option<u64>,
}

impl Keystream {
    pub fn new(key: [u8; 32]) -> Self {
        use aes::cipher::KeyInit as _;
        Self { cipher: aes::Aes256::new(&key.into()), block: 0, spare: None }
    }

    /// The stream of `key` from its `start`-th value on (CTR mode seeks).
    pub fn at(key: [u8; 32], start: u64) -> Self {
        let mut s = Self::new(key);
        s.block = u128::from(start / 2);
        if start % 2 == 1 {
            s.fill(&mut [0u64]); // the first half of the block, skipped
        }
        s
    }

    /// `out.len()` further values of the stream, each 8 bytes little-endian.
    pub fn fill(&mut self, out: &mut [u64]) {
        use aes::cipher::BlockCipherEncrypt as _;
        let out = match (self.spare, out.split_first_mut()) {
            (Some(v), Some((first, rest))) => {
                *first = v;
                self.spare = None;
                rest
            }
            (_, _) => out,
        };
        let (whole, tail) = out.split_at_mut(out.len() / 2 * 2);
        write_counters(whole, self.block);
        self.block = self.block.wrapping_add((whole.len() / 2) as u128);
        let blocks: &mut [[u8; 16]] = bytemuck::cast_slice_mut(whole);
        self.cipher.encrypt_blocks(aes::Block::cast_slice_from_core_mut(blocks));
        for v in whole.iter_mut() {
            *v = u64::from_le(*v);
        }
        if let [last] = tail {
            // Half a block: the whole block through the path above, its second value kept.
            let mut pair = [0u64; 2];
            self.fill(&mut pair);
            (*last, self.spare) = (pair[0], Some(pair[1]));
        }
    }
}

/// The counter blocks `first`, `first` + 1, … into `words`, two words a block, each
/// block's 16 bytes big-endian (AES-CTR's input).
fn write_counters(words: &mut [u64], first: u128) {
    let (high, low) = ((first >> 64) as u64, first as u64);
    if low.checked_add(words.len() as u64 / 2).is_none() {
        // The low word wraps within these blocks (after 2^64 blocks: never in practice).
        for (i, pair) in words.chunks_exact_mut(2).enumerate() {
            let c = first.wrapping_add(i as u128);
            (pair[0], pair[1]) = (((c >> 64) as u64).to_be(), (c as u64).to_be());
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    match crate::simd::Isa::current() {
        // SAFETY: the CPU has AVX-512BW (part of the set it has).
        crate::simd::Isa::Avx512 => return unsafe { write_counters_avx512(words, high, low) },
        // SAFETY: the CPU has AVX2 (as above).
        crate::simd::Isa::Avx2 => return unsafe { write_counters_avx2(words, high, low) },
        crate::simd::Isa::Portable => {}
    }
    write_counters_portable(words, high, low)
}

/// The same loop with byte shuffles in 512-bit vectors (the byte swaps vectorise).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
unsafe fn write_counters_avx512(words: &mut [u64], high: u64, low: u64) {
    write_counters_portable(words, high, low)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn write_counters_avx2(words: &mut [u64], high: u64, low: u64) {
    write_counters_portable(words, high, low)
}

#[inline(always)]
fn write_counters_portable(words: &mut [u64], high: u64, low: u64) {
    let high = high.to_be();
    for (i, pair) in words.chunks_exact_mut(2).enumerate() {
        (pair[0], pair[1]) = (high, low.wrapping_add(i as u64).to_be());
    }
}

/// An RNG of the rand 0.8 traits, seeded from `rng`, for crates still on rand 0.8
/// (`sharks`, secure aggregation's secret sharing).
pub fn for_rand_08(rng: &mut Rng) -> rand_chacha_03::ChaCha20Rng {
    use rand::RngCore as _;
    use rand_chacha_03::rand_core::SeedableRng as _;
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    rand_chacha_03::ChaCha20Rng::from_seed(seed)
}

/// `rand::seq::SliceRandom::shuffle` of rand 0.9 — the same permutation from the same
/// draws — with the swaps' loads prefetched a block ahead. A shuffle of a slice larger
/// than the caches is one random access per element, each a cache miss; knowing the next
/// indices early (they depend only on the RNG) lets the misses overlap. Louvain shuffles
/// all of a level's nodes in every pass, hundreds of passes on a million-node graph.
pub fn shuffle<T>(slice: &mut [T], rng: &mut Rng) {
    let len = slice.len();
    if len <= 1 {
        return;
    }
    assert!(len < u32::MAX as usize, "shuffle handles fewer than 2^32 elements, as rand's chunked indices do");
    // rand's IncreasingUniform (src/seq/increasing_uniform.rs), started at n = 0: the
    // i-th index is uniform on [0, i], several indices drawn from one u32 while the
    // product of their ranges fits.
    let (mut n, mut chunk, mut chunk_remaining) = (0u32, 0u32, 1u8);
    let mut next_index = |rng: &mut Rng| -> usize {
        let next_n = n + 1;
        let next_remaining = chunk_remaining.checked_sub(1).unwrap_or_else(|| {
            let (bound, remaining) = chunk_bound(next_n);
            chunk = rand::Rng::random_range(rng, ..bound);
            remaining - 1
        });
        let index = if next_remaining == 0 {
            chunk as usize
        } else {
            let r = chunk % next_n;
            chunk /= next_n;
            r as usize
        };
        chunk_remaining = next_remaining;
        n = next_n;
        index
    };
    const BLOCK: usize = 32;
    let mut ahead = [0usize; BLOCK];
    for start in (0..len).step_by(BLOCK) {
        let block = &mut ahead[..BLOCK.min(len - start)];
        for j in block.iter_mut() {
            *j = next_index(rng);
            prefetch(&slice[*j]);
        }
        for (i, &j) in (start..).zip(block.iter()) {
            slice.swap(i, j);
        }
    }
}

/// rand's `calculate_bound_u32`: the product m·(m+1)·… of as many ranges as fit in a
/// u32, and how many.
fn chunk_bound(m: u32) -> (u32, u8) {
    let (mut product, mut current) = (m, m + 1);
    loop {
        match product.checked_mul(current) {
            Some(p) => {
                product = p;
                current += 1;
            }
            None => return (product, (current - m) as u8),
        }
    }
}

/// A hint to load `x`'s cache line (nothing on targets without one).
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache; `x` is a valid reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch(x as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

    /// Secure aggregation's masks: AES-256 of the counter blocks 0, 1, 2, … (128-bit
    /// big-endian, as OpenSSL's CTR mode from a zero IV), read as little-endian u64s,
    /// the stream going on across calls — checked against the block cipher itself.
    #[test]
    fn keystream_is_aes256_of_a_counter_from_zero() {
        use aes::cipher::{BlockCipherEncrypt as _, KeyInit as _};
        // The block cipher itself against FIPS-197's AES-256 example (appendix C.3).
        let fips = aes::Aes256::new(&std::array::from_fn::<u8, 32, _>(|i| i as u8).into());
        let mut block = 0x00112233445566778899aabbccddeeffu128.to_be_bytes().into();
        fips.encrypt_block(&mut block);
        assert_eq!(u128::from_be_bytes(block.into()), 0x8ea2b7ca516745bfeafc49904b496089);
        let key: [u8; 32] = std::array::from_fn(|i| (7 * i + 3) as u8);
        let cipher = aes::Aes256::new(&key.into());
        let expected: Vec<u64> = (0u128..4)
            .flat_map(|counter| {
                let mut block = counter.to_be_bytes().into();
                cipher.encrypt_block(&mut block);
                [u64::from_le_bytes(block[..8].try_into().unwrap()), u64::from_le_bytes(block[8..].try_into().unwrap())]
            })
            .collect();
        let mut stream = Keystream::new(key);
        let (mut first, mut rest) = (vec![1u64; 5], vec![2u64; 3]); // 2.5 blocks, then the rest
        stream.fill(&mut first);
        stream.fill(&mut rest);
        assert_eq!([first, rest].concat(), expected);
        for start in [0, 1, 3, 5] {
            let mut from = vec![0u64; 8 - start];
            Keystream::at(key, start as u64).fill(&mut from);
            assert_eq!(from, expected[start..], "from value {start}");
        }
        // Any cut of the stream into fills (empty, odd, long) reads the same values, and a
        // seek far in lands where reading from 0 gets.
        let mut whole = vec![0u64; 10_000];
        Keystream::new(key).fill(&mut whole);
        assert_eq!(whole[..8], expected);
        let mut stream = Keystream::new(key);
        let mut pieces = Vec::new();
        for len in [1, 0, 3, 2, 0, 4097, 1, 1, 5000, 895] {
            let mut piece = vec![0u64; len];
            stream.fill(&mut piece);
            pieces.extend(piece);
        }
        assert_eq!(pieces, whole);
        for start in [4097, 8191, 9998] {
            let mut from = vec![0u64; 10_000 - start];
            Keystream::at(key, start as u64).fill(&mut from);
            assert_eq!(from, whole[start..], "from value {start}");
        }
        let mut other = vec![0u64; 8];
        Keystream::new([0; 32]).fill(&mut other);
        assert_ne!(other, expected, "the stream depends on the key");
    }

    /// Counter blocks are the 128-bit counter's big-endian bytes, also where the low
    /// word carries into the high one.
    #[test]
    fn counter_blocks_are_big_endian_and_carry() {
        for first in [0u128, 5, (1u128 << 64) - 3, (7u128 << 64) + 1] {
            let mut words = vec![0u64; 2 * 300];
            write_counters(&mut words, first);
            let bytes: &[[u8; 16]] = bytemuck::cast_slice(&words);
            for (i, b) in bytes.iter().enumerate() {
                assert_eq!(*b, (first + i as u128).to_be_bytes(), "block {i} from {first}");
            }
        }
    }

    #[test]
    fn shuffle_is_rands_shuffle() {
        use rand::seq::SliceRandom as _;
        // Lengths around the block size, where several indices share a draw, and past
        // 65 536 (one draw per index).
        let lengths = (0..100).chain([255, 256, 257, 1000, 65_535, 65_536, 65_537, 70_001, 300_000]);
        for (seed, len) in lengths.enumerate() {
            let mut a: Vec<u32> = (0..len as u32).map(|v| v.wrapping_mul(2_654_435_761)).collect();
            let mut b = a.clone();
            let (mut ra, mut rb) = (derive(seed as u64, "shuffle-test", &[]), derive(seed as u64, "shuffle-test", &[]));
            for _ in 0..3 {
                a.shuffle(&mut ra);
                shuffle(&mut b, &mut rb);
                assert_eq!(a, b, "length {len}");
            }
            assert_eq!(ra.random::<u64>(), rb.random::<u64>(), "length {len}: the same draws consumed");
        }
    }

    #[test]
    fn same_inputs_same_stream_different_inputs_differ() {
        let a: Vec<u64> = (0..4).map(|_| derive(7, "split", &[1]).random()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let x: u64 = derive(7, "split", &[1]).random();
        assert_ne!(x, derive(7, "split", &[2]).random::<u64>());
        assert_ne!(x, derive(8, "split", &[1]).random::<u64>());
        assert_ne!(x, derive(7, "louvain", &[1]).random::<u64>());
    }
}
