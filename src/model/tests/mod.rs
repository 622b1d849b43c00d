//! Tests of the model module: exact values, gradient checks against finite
//! differences, determinism, configuration, and CPU vs wgpu. (Timings live in `fgl-sim bench train`.)

mod classifier;
mod exact;
mod gradcheck;
pub(crate) mod support;
mod wgpu;
