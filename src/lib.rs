//! fgl-sim: a federated graph learning simulator with a privacy attack/defense harness.
//!
//! The data flow is one-way (see ARCHITECTURE.md):
//! scenario → data (load, preprocess, split) → partition (clients) → model + train
//! (local) → fed (FedAvg rounds, server strategy, client transforms) → results.

pub mod backend;
pub mod bench;
pub mod cli;
pub mod data;
pub mod error;
pub mod fed;
pub mod model;
pub mod partition;
pub mod presets;
pub mod results;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod train;

pub use error::{Error, Result};
