//! GNN models on Burn: GCN, GraphSAGE, GAT, KProp and a node classifier with an optional
//! fully connected head.
//!
//! Everything is message passing on edge lists (PyG style): a [`GraphTensors`] holds a
//! graph's directed edges and normalisation weights on a device, and every layer moves
//! rows with the one gather/scatter-add primitive in [`propagate`]. No N×N matrix is
//! ever built, and the same code runs on every Burn device (CPU or GPU) — Burn 0.22
//! tensors carry their backend in their `Device`, not in a type parameter.
//!
//! Randomness (initial weights, dropout masks) comes from explicit host RNGs, never
//! from a device's global generator; see `init.rs` and `dropout.rs`.

pub mod activation;
pub mod classifier;
pub mod config;
pub mod dense;
pub mod dropout;
pub mod expf;
pub mod gat;
pub mod gcn;
pub mod graph_tensors;
pub mod init;
pub mod input;
pub mod kprop;
pub mod propagate;
pub mod sage;
pub mod spmm;

#[cfg(test)]
pub(crate) mod tests;

pub use activation::Activation;
pub use classifier::{Conv, NodeClassifier, Output, Pairs, pairs_on};
pub use config::{Arch, Hidden, ModelConfig, check_kprop_steps};
pub use gat::GatConv;
pub use gcn::GcnConv;
pub use graph_tensors::{GraphTensors, Norm};
pub use input::{InputLayout, NodeInput};
pub use kprop::{KProp, kprop};
pub use propagate::{Edges, Strategy, add_rows, select_rows};
pub use sage::SageConv;
