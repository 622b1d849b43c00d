//! fgl-sim: a federated graph learning simulator with a privacy attack/defense harness.
//!
//! The data flow is one-way (see ARCHITECTURE.md):
//! scenario → data (load, preprocess, split) → partition (clients) → [training,
//! defenses, attacks: later issues] → results.

pub mod bench;
pub mod cli;
pub mod data;
pub mod error;
pub mod partition;
pub mod presets;
pub mod results;
pub mod rng;
pub mod run;
pub mod scenario;

pub use error::{Error, Result};
