//! The simulator's [`Rng`] (ChaCha8 in rand_chacha's layout: a 64-bit block counter and
//! a 64-bit stream) read in bulk: sixteen blocks at once in AVX-512 registers, one block
//! per lane, where rand_chacha's AVX2 code makes four at a time. Same words, same final
//! state; ≈ 4× faster per word on an AVX-512 host.

use super::Rng;
use rand::Rng as _;

/// Fills `out` with the next `out.len()` values of `rng.next_u64()`, and leaves `rng`
/// where those calls would.
pub(super) fn fill_words(rng: &mut Rng, out: &mut [u64]) {
    #[cfg(target_arch = "x86_64")]
    if out.len() >= 64 && crate::simd::Isa::current() == crate::simd::Isa::Avx512 {
        // SAFETY: the CPU has AVX-512F (part of the set it has).
        return unsafe { fill_words_avx512(rng, out) };
    }
    rng.fill(out);
}

/// Fills `out` with the next `out.len()` values of `rng.next_u32()` — what `rng.fill(out)`
/// gives — and leaves `rng` where those calls would: [`fill_words`]' words, each the
/// next two 32-bit values (low half first), then one more value for an odd length.
pub fn fill_u32(rng: &mut Rng, out: &mut [u32]) {
    let mut words = [0u64; 512];
    // Chunks of an even length but for the last.
    for chunk in out.chunks_mut(2 * words.len()) {
        let words = &mut words[..chunk.len() / 2];
        fill_words(rng, words);
        let mut pairs = chunk.chunks_exact_mut(2);
        for (pair, &w) in pairs.by_ref().zip(words.iter()) {
            (pair[0], pair[1]) = (w as u32, (w >> 32) as u32);
        }
        if let [last] = pairs.into_remainder() {
            *last = rand::RngCore::next_u32(rng);
        }
    }
}

/// [`fill_words`] sixteen blocks at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fill_words_avx512(rng: &mut Rng, out: &mut [u64]) {
    let start = rng.get_word_pos();
    let seed = rng.get_seed();
    let key: [u32; 8] = std::array::from_fn(|i| u32::from_le_bytes([seed[4 * i], seed[4 * i + 1], seed[4 * i + 2], seed[4 * i + 3]]));
    let stream = rng.get_stream();
    let mut block = (start / 16) as u64;
    // Each run of sixteen blocks goes to buf[1..]; the words to take are buf[from..].
    // From an odd word a run leaves its last word as the next value's low half: it
    // moves to buf[0] and the next run is read from there.
    let mut buf = [0u32; 257];
    let mut from = 1 + (start % 16) as usize;
    let mut taken = 0;
    while taken < out.len() {
        if from == 1 && out.len() - taken >= 128 {
            // Whole words from a run's first: the run's 256 halves are the next 128
            // words as they lie in memory (x86-64 is little-endian), written in place.
            // SAFETY: 128 u64 are 256 u32 of no stricter alignment, all inside `out`.
            let run = unsafe { &mut *(out[taken..taken + 128].as_mut_ptr() as *mut [u32; 256]) };
            // SAFETY: this function's callers checked avx512f.
            unsafe { blocks16(&key, block, stream, run) };
            block = block.wrapping_add(16);
            taken += 128;
            continue;
        }
        let run: &mut [u32; 256] = (&mut buf[1..]).try_into().expect("257 = 1 + 256");
        // SAFETY: this function's callers checked avx512f.
        unsafe { blocks16(&key, block, stream, run) };
        block = block.wrapping_add(16);
        for (o, pair) in out[taken..].iter_mut().zip(buf[from..].chunks_exact(2)) {
            *o = u64::from(pair[0]) | (u64::from(pair[1]) << 32);
            taken += 1;
        }
        from = if (257 - from) % 2 == 1 {
            buf[0] = buf[256];
            0
        } else {
            1
        };
    }
    rng.set_word_pos(start + 2 * out.len() as u128);
}

/// Sixteen ChaCha8 blocks from block `counter` on (wrapping, as rand_chacha's counter
/// does), in stream order: block b's 16 words at `out[16 b..]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn blocks16(key: &[u32; 8], counter: u64, stream: u64, out: &mut [u32; 256]) {
    use std::arch::x86_64::*;
    let splat = |w: u32| _mm512_set1_epi32(w as i32);
    let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let low = _mm512_add_epi32(splat(counter as u32), lane);
    let wrapped = _mm512_cmplt_epu32_mask(low, lane); // the low word carried into the high
    let high = _mm512_mask_add_epi32(splat((counter >> 32) as u32), wrapped, splat((counter >> 32) as u32), splat(1));
    #[rustfmt::skip]
    let init: [__m512i; 16] = [
        splat(0x6170_7865), splat(0x3320_646e), splat(0x7962_2d32), splat(0x6b20_6574),
        splat(key[0]), splat(key[1]), splat(key[2]), splat(key[3]),
        splat(key[4]), splat(key[5]), splat(key[6]), splat(key[7]),
        low, high, splat(stream as u32), splat((stream >> 32) as u32),
    ];
    let mut x = init;
    macro_rules! quarter {
        ($a:expr, $b:expr, $c:expr, $d:expr) => {
            x[$a] = _mm512_add_epi32(x[$a], x[$b]);
            x[$d] = _mm512_rol_epi32::<16>(_mm512_xor_si512(x[$d], x[$a]));
            x[$c] = _mm512_add_epi32(x[$c], x[$d]);
            x[$b] = _mm512_rol_epi32::<12>(_mm512_xor_si512(x[$b], x[$c]));
            x[$a] = _mm512_add_epi32(x[$a], x[$b]);
            x[$d] = _mm512_rol_epi32::<8>(_mm512_xor_si512(x[$d], x[$a]));
            x[$c] = _mm512_add_epi32(x[$c], x[$d]);
            x[$b] = _mm512_rol_epi32::<7>(_mm512_xor_si512(x[$b], x[$c]));
        };
    }
    for _ in 0..4 {
        quarter!(0, 4, 8, 12);
        quarter!(1, 5, 9, 13);
        quarter!(2, 6, 10, 14);
        quarter!(3, 7, 11, 15);
        quarter!(0, 5, 10, 15);
        quarter!(1, 6, 11, 12);
        quarter!(2, 7, 8, 13);
        quarter!(3, 4, 9, 14);
    }
    for (xj, ij) in x.iter_mut().zip(&init) {
        *xj = _mm512_add_epi32(*xj, *ij);
    }
    // Transpose: lane b of x[j] is word j of block b.
    let mut a = [_mm512_setzero_si512(); 16];
    for k in 0..8 {
        a[2 * k] = _mm512_unpacklo_epi32(x[2 * k], x[2 * k + 1]);
        a[2 * k + 1] = _mm512_unpackhi_epi32(x[2 * k], x[2 * k + 1]);
    }
    let mut b = [_mm512_setzero_si512(); 16];
    for k in 0..4 {
        b[4 * k] = _mm512_unpacklo_epi64(a[4 * k], a[4 * k + 2]);
        b[4 * k + 1] = _mm512_unpackhi_epi64(a[4 * k], a[4 * k + 2]);
        b[4 * k + 2] = _mm512_unpacklo_epi64(a[4 * k + 1], a[4 * k + 3]);
        b[4 * k + 3] = _mm512_unpackhi_epi64(a[4 * k + 1], a[4 * k + 3]);
    }
    // 128-bit lane L of b[4k + m] now holds words 4k..4k+3 of block 4L + m.
    for m in 0..4 {
        let (g0, g1, g2, g3) = (b[m], b[4 + m], b[8 + m], b[12 + m]);
        let t0 = _mm512_shuffle_i32x4::<0b01_00_01_00>(g0, g1); // g0.L0 g0.L1 g1.L0 g1.L1
        let t1 = _mm512_shuffle_i32x4::<0b11_10_11_10>(g0, g1); // g0.L2 g0.L3 g1.L2 g1.L3
        let t2 = _mm512_shuffle_i32x4::<0b01_00_01_00>(g2, g3);
        let t3 = _mm512_shuffle_i32x4::<0b11_10_11_10>(g2, g3);
        let rows = [
            _mm512_shuffle_i32x4::<0b10_00_10_00>(t0, t2), // lane 0 of g0..g3: block m
            _mm512_shuffle_i32x4::<0b11_01_11_01>(t0, t2), // lane 1: block 4 + m
            _mm512_shuffle_i32x4::<0b10_00_10_00>(t1, t3), // lane 2: block 8 + m
            _mm512_shuffle_i32x4::<0b11_01_11_01>(t1, t3), // lane 3: block 12 + m
        ];
        for (l, row) in rows.into_iter().enumerate() {
            // SAFETY: 16·(4l + m) + 16 ≤ 256 words.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(16 * (4 * l + m)) as *mut _, row) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore as _, SeedableRng as _};

    /// Bulk 32-bit values equal `next_u32`'s one by one (and `rand`'s `fill`), whatever
    /// the start (odd, mid-block) and length (odd, across a chunk of words), and leave
    /// the RNG where those calls would.
    #[test]
    fn bulk_halves_are_the_rngs_u32s() {
        for (case, start) in [0u128, 1, 7, 16 * 3 + 5].into_iter().enumerate() {
            for len in [0usize, 1, 2, 3, 127, 128, 129, 255, 1023, 1024, 1025, 2049, 5001] {
                let mut want = Rng::seed_from_u64(case as u64 * 7 + len as u64);
                want.set_word_pos(start);
                let (mut got, mut filled) = (want.clone(), want.clone());
                let expected: Vec<u32> = (0..len).map(|_| want.next_u32()).collect();
                let mut values = vec![0u32; len];
                fill_u32(&mut got, &mut values);
                assert_eq!(values, expected, "start {start}, {len} values");
                assert_eq!(got.get_word_pos(), want.get_word_pos(), "start {start}, {len} values");
                let mut by_rand = vec![0u32; len];
                rand::Rng::fill(&mut filled, &mut by_rand[..]);
                assert_eq!(by_rand, expected, "rand's fill, start {start}, {len} values");
            }
        }
    }

    /// Bulk words equal rand_chacha's one by one, whatever the position (odd, mid-block,
    /// the low counter word carrying into the high one, the 64-bit counter wrapping) and
    /// length, and leave the RNG where rand_chacha's calls would.
    #[test]
    fn bulk_words_are_the_rngs_words() {
        let starts: [u128; 7] =
            [0, 1, 7, 16 * 5 + 2, 16 * ((1 << 32) - 3) + 9, 16 * u128::from(u64::MAX - 2) + 4, 16 * u128::from(u64::MAX)];
        for (case, &start) in starts.iter().enumerate() {
            for len in [0usize, 1, 63, 64, 65, 127, 128, 129, 1000, 4099] {
                let mut want = Rng::seed_from_u64(case as u64 * 31 + len as u64);
                want.set_stream(0x0123_4567_89ab_cdef ^ case as u64);
                want.set_word_pos(start);
                let got = want.clone();
                let expected: Vec<u64> = (0..len).map(|_| want.next_u64()).collect();
                let mut paths: Vec<fn(&mut Rng, &mut [u64])> = vec![fill_words];
                #[cfg(target_arch = "x86_64")]
                if crate::simd::Isa::detected() == crate::simd::Isa::Avx512 {
                    // SAFETY: the CPU has AVX-512F (part of the set it has).
                    paths.push(|rng, out| unsafe { fill_words_avx512(rng, out) });
                }
                let after = want.next_u64();
                for fill in paths {
                    let mut rng = got.clone();
                    let mut words = vec![0u64; len];
                    fill(&mut rng, &mut words);
                    assert_eq!(words, expected, "start {start}, {len} words");
                    assert_eq!(rng.get_word_pos() + 2, want.get_word_pos(), "start {start}, {len} words");
                    assert_eq!(rng.next_u64(), after, "start {start}, {len} words");
                }
            }
        }
    }
}
