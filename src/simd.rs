//! The instruction sets fgl-sim's own host kernels are compiled for, and the one place
//! that decides which of them runs.
//!
//! A kernel is written once, for the vectoriser, as an `#[inline(always)]` function, and
//! wrapped in one `#[target_feature]` function per set (`…_avx512`, `…_avx2`); its caller
//! matches on [`Isa::current`]. Every copy computes the same values: Rust never fuses a
//! multiply and an add on its own, and `mul_add` is one rounding with or without FMA in
//! the target features, so a path changes speed, never a bit. (The wrappers take the
//! kernel's slices as their own arguments. One generic wrapper over kernel structs was
//! tried: a Cora GAT epoch ran 1.3× slower, its edge softmax compiled to less vector
//! code with its inputs reached through a struct.) Kernels whose sums must follow another
//! library's choice of lanes (burn-flex's, through macerator) do not ask here.
//!
//! [`cap`] keeps every kernel at or below a set: `fgl-sim bench --isa avx2` times, on an
//! AVX-512 host, the path an AVX2-only host takes (gemm's and burn-flex's own kernels
//! pick theirs regardless), and tests run each path.

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction set the kernels are compiled for, ordered from the least to the most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Whatever the target guarantees (SSE2 on x86-64).
    Portable,
    /// AVX2 with FMA.
    Avx2,
    /// AVX-512 F, BW, DQ and VL, with AVX2 and FMA.
    Avx512,
}

impl Isa {
    /// Every set, most first.
    pub const ALL: [Isa; 3] = [Isa::Avx512, Isa::Avx2, Isa::Portable];

    /// The most this CPU has, whatever the cap (detected once).
    pub fn detected() -> Isa {
        static DETECTED: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::is_x86_feature_detected as has;
                if has!("avx2") && has!("fma") {
                    if has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
                        return Isa::Avx512;
                    }
                    return Isa::Avx2;
                }
            }
            Isa::Portable
        })
    }

    /// The set kernels run on: the most this CPU has, at most the [`cap`].
    pub fn current() -> Isa {
        Isa::detected().min(Isa::from_u8(CAP.load(Ordering::Relaxed)))
    }

    /// The sets this CPU can run, most first: each kernel's tests check every one.
    pub fn on_this_cpu() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|&isa| isa <= Isa::detected()).collect()
    }

    /// Its name in `--isa` and in printed figures.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Portable => "portable",
        }
    }

    fn from_u8(v: u8) -> Isa {
        match v {
            0 => Isa::Portable,
            1 => Isa::Avx2,
            _ => Isa::Avx512,
        }
    }
}

/// No kernel takes a path above `isa` from now on (the values stay the same); returns
/// the cap it replaces. For benchmarks and tests: the cap is process-wide.
pub fn cap(isa: Isa) -> Isa {
    Isa::from_u8(CAP.swap(isa as u8, Ordering::Relaxed))
}

static CAP: AtomicU8 = AtomicU8::new(Isa::Avx512 as u8);

/// Held by a test while it caps: the values never depend on the cap, but a test that
/// checks which path ran does.
#[cfg(test)]
pub(crate) static CAP_HELD: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `f` on every set this CPU can run, most first, each as the cap, holding [`CAP_HELD`];
/// the cap is put back as it was, a failing assertion in `f` included. For the kernels'
/// tests.
#[cfg(test)]
pub(crate) fn on_each_isa<R>(mut f: impl FnMut(Isa) -> R) -> Vec<(Isa, R)> {
    struct Restore(Isa);
    impl Drop for Restore {
        fn drop(&mut self) {
            cap(self.0);
        }
    }
    let _held = CAP_HELD.lock().unwrap_or_else(|e| e.into_inner());
    let _restore = Restore(Isa::from_u8(CAP.load(Ordering::Relaxed)));
    Isa::on_this_cpu()
        .into_iter()
        .map(|isa| {
            cap(isa);
            (isa, f(isa))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cap bounds the set kernels run on without touching what was detected, and
    /// the sets this CPU runs go from its best down to the portable one.
    #[test]
    fn the_cap_bounds_the_choice() {
        let sets = Isa::on_this_cpu();
        assert_eq!(sets[0], Isa::detected());
        assert_eq!(*sets.last().unwrap(), Isa::Portable);
        assert!(sets.windows(2).all(|w| w[0] > w[1]));
        let _only_this_test_caps = CAP_HELD.lock().unwrap_or_else(|e| e.into_inner());
        for isa in Isa::ALL {
            let before = cap(isa);
            assert_eq!(Isa::current(), isa.min(Isa::detected()), "{isa:?}");
            cap(before);
        }
        assert_eq!(Isa::current(), Isa::detected());
        assert_eq!(Isa::ALL.map(|i| Isa::from_u8(i as u8)), Isa::ALL);
    }
}
