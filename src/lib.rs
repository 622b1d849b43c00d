//! fgl-sim: a federated graph learning simulator with a privacy attack/defense harness.
//!
//! The data flow is one-way (see ARCHITECTURE.md, whose layer list a test checks):
//! scenario → data (load, preprocess, split) → partition (clients) → model + train
//! (local) → fed (FedAvg rounds; the server strategy, the clients' defenses) →
//! attacks / defenses (what plugs into fed) → run → metrics (scored) → results.

pub mod atomic;
pub mod attacks;
pub mod backend;
pub mod bench;
pub mod cli;
pub mod data;
pub mod defenses;
pub mod error;
pub mod estimate;
pub mod fed;
pub mod matrix;
pub mod metrics;
pub mod model;
pub mod partition;
pub mod presets;
pub mod privacy;
pub mod record;
pub mod reproduce;
pub mod results;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod scoring;
pub mod simd;
pub mod speed;
pub mod train;

pub use error::{Error, Result};
