//! glibc's `expf`, inlined: the value libm's `expf` gives on Linux with FMA (what
//! burn-flex's `exp` calls there), to the last bit, but written out so that loops over it
//! vectorise, where libm is one call per element. `mul_add` rounds once on every machine,
//! so the value does not depend on the CPU either (only its speed: without FMA in the
//! target features `mul_add` is a libm call).

/// log(2^-149), the least f32 subnormal: below it glibc leaves the fast path for an
/// underflow handler that sets `errno` (`__math_may_uflowf`, `__math_uflowf`).
pub(crate) const MAY_UNDERFLOW: f32 = f32::from_bits(0xc2ce_8ecf); // −0x1.9d1d9ep6 ≈ −103.28
/// log(2^-150): below it e^x rounds to 0.
const UNDERFLOW: f32 = f32::from_bits(0xc2cf_f1b4); // −0x1.9fe368p6 ≈ −103.97
/// log(2^128): above it e^x rounds to +∞.
const OVERFLOW: f32 = f32::from_bits(0x42b1_7217); // 0x1.62e42ep6 ≈ 88.72

/// e^x for every f32 x, as glibc's `expf`: [`expf_core`], and glibc's special cases as
/// selects rather than branches. Between log(2^-150) and log(2^-149) glibc's handler
/// returns the least subnormal (0x1.4p-75² rounded); below, 0; above log(2^128), +∞.
/// (NaN gives a NaN, its payload not promised.)
#[inline(always)]
pub(crate) fn expf(x: f32) -> f32 {
    let core = expf_core(x);
    let low = if x < UNDERFLOW { 0.0 } else { f32::from_bits(1) };
    let v = if x < MAY_UNDERFLOW { low } else { core };
    if x > OVERFLOW { f32::INFINITY } else { v }
}

/// 2^(i/32) as f64 bits, less i·2^47 (the exponent the index adds back): glibc's
/// `__exp2f_data.tab`, from Arm's optimized-routines.
const EXP2_TABLE: [u64; 32] = [
    0x3ff0000000000000,
    0x3fefd9b0d3158574,
    0x3fefb5586cf9890f,
    0x3fef9301d0125b51,
    0x3fef72b83c7d517b,
    0x3fef54873168b9aa,
    0x3fef387a6e756238,
    0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715,
    0x3feef1a7373aa9cb,
    0x3feedea64c123422,
    0x3feece086061892d,
    0x3feebfdad5362a27,
    0x3feeb42b569d4f82,
    0x3feeab07dd485429,
    0x3feea47eb03a5585,
    0x3feea09e667f3bcd,
    0x3fee9f75e8ec5f74,
    0x3feea11473eb0187,
    0x3feea589994cce13,
    0x3feeace5422aa0db,
    0x3feeb737b0cdc5e5,
    0x3feec49182a3f090,
    0x3feed503b23e255d,
    0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47,
    0x3fef199bdd85529c,
    0x3fef3720dcef9069,
    0x3fef5818dcfba487,
    0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da,
    0x3fefd0765b6e4540,
];

/// e^x as glibc computes it on x86-64 with FMA (`__expf_fma`, Arm's algorithm: x·32/ln 2
/// = k + r, e^x = 2^(k/32)·p(r) with a cubic p, all in f64 with these fused multiply-adds,
/// rounded once to f32), for [`MAY_UNDERFLOW`] ≤ x ≤ [`OVERFLOW`], where glibc takes
/// this path (outside it the value is meaningless: see [`expf`]).
#[inline(always)]
pub(crate) fn expf_core(x: f32) -> f32 {
    const INV_LN2_N: f64 = f64::from_bits(0x40471547652b82fe); // 32/ln 2
    const SHIFT: f64 = f64::from_bits(0x4338000000000000); // 1.5·2^52
    const C0: f64 = f64::from_bits(0x3ebc6af84b912394);
    const C1: f64 = f64::from_bits(0x3f2ebfce50fac4f3);
    const C2: f64 = f64::from_bits(0x3f962e42ff0c52d6);
    let xd = f64::from(x);
    let kd = INV_LN2_N.mul_add(xd, SHIFT);
    let ki = kd.to_bits();
    let kd = kd - SHIFT;
    let r = INV_LN2_N.mul_add(xd, -kd);
    let s = f64::from_bits(EXP2_TABLE[(ki & 31) as usize].wrapping_add(ki << 47));
    let z = r.mul_add(C0, C1);
    let r2 = r * r;
    let y = r.mul_add(C2, 1.0);
    let y = z.mul_add(r2, y);
    (y * s) as f32
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rayon::prelude::*;

    /// The largest distance in units in the last place between `ours` and libm's `expf`
    /// over the f32s with bits in `range`, every `step`-th, and where it is.
    fn worst(range: std::ops::RangeInclusive<u32>, step: usize, ours: fn(f32) -> f32) -> (u32, f32) {
        let (a, b) = (*range.start(), *range.end());
        let chunks: Vec<(u32, u32)> = (a..=b).step_by(1 << 20).map(|c| (c, b.min(c.saturating_add((1 << 20) - 1)))).collect();
        chunks
            .into_par_iter()
            .map(|(c, d)| {
                let mut worst = (0u32, 0.0f32);
                for bits in (c..=d).step_by(step) {
                    let x = f32::from_bits(bits);
                    let (o, libm) = (ours(x), x.exp());
                    if o.is_nan() && libm.is_nan() {
                        continue;
                    }
                    let ulps = (i64::from(o.to_bits()) - i64::from(libm.to_bits())).unsigned_abs() as u32;
                    if ulps > worst.0 {
                        worst = (ulps, x);
                    }
                }
                worst
            })
            .reduce(|| (0, 0.0), |a, b| if a.0 >= b.0 { a } else { b })
    }

    /// Bit for bit where libm is glibc's x86-64 FMA variant, else within one unit in the
    /// last place.
    fn allowed() -> u32 {
        if libm_is_glibcs_fma_variant() { 0 } else { 1 }
    }

    /// [`expf_core`] against libm's `expf` on every f32 in [L, 0] (1.1·10⁹ values, what
    /// SELU takes it on).
    #[test]
    fn expf_core_equals_glibcs_on_every_nonpositive_input_of_its_range() {
        let w = worst(0x8000_0000..=MAY_UNDERFLOW.to_bits(), 1, expf_core);
        assert!(w.0 <= allowed(), "{} ulps at x = {:e}", w.0, w.1);
    }

    /// [`expf`] against libm's `expf`: every f32 around and between the underflow bounds
    /// and from 88 to past the overflow bound; every 61st f32 of all 2³² (NaNs, large
    /// magnitudes, subnormals); the special values.
    #[test]
    fn expf_equals_glibcs_everywhere() {
        let near_underflow = MAY_UNDERFLOW.to_bits() - (1 << 16)..=UNDERFLOW.to_bits() + (1 << 16);
        for (range, step) in [(near_underflow, 1), (88f32.to_bits()..=OVERFLOW.to_bits() + (1 << 16), 1), (0..=u32::MAX, 61)] {
            let w = worst(range.clone(), step, expf);
            assert!(w.0 <= allowed(), "{range:x?}: {} ulps at x = {:e}", w.0, w.1);
        }
        for x in [f32::NEG_INFINITY, -1e30, UNDERFLOW, MAY_UNDERFLOW, -0.0, 0.0, 1e-30, OVERFLOW, 89.0, f32::INFINITY] {
            assert_eq!(expf(x).to_bits(), x.exp().to_bits(), "{x:e}");
        }
        assert!(expf(f32::NAN).is_nan());
    }

    /// Whether libm's `expf` is glibc's x86-64 FMA variant (glibc picks it on a CPU with
    /// FMA and AVX2), which [`expf`] computes the same way.
    pub(crate) fn libm_is_glibcs_fma_variant() -> bool {
        #[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
        return std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2");
        #[cfg(not(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64")))]
        false
    }
}
