//! Seeded randomness. Every random draw in the simulator comes from an RNG derived from
//! (scenario seed, purpose, ids…), so results never depend on thread count or on the
//! order in which independent pieces of work run.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

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

/// A pseudo-random generator keyed by a 32-byte secret (secure aggregation's masks):
/// ChaCha20, so that only the key's holders can compute its stream.
pub fn keyed(key: [u8; 32]) -> rand_chacha::ChaCha20Rng {
    rand_chacha::ChaCha20Rng::from_seed(key)
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

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
