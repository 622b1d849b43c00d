//! One error type for the whole crate. Every variant names what the user must fix:
//! the file, the scenario field, or the parameter, and what is allowed.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A data file is missing, unreadable or malformed.
    #[error("data file {path}: {msg}")]
    DataFile { path: PathBuf, msg: String },

    /// A scenario file (or a `--set` override) has a bad field.
    #[error("scenario {file}: field `{field}`: {msg}")]
    Scenario { file: String, field: String, msg: String },

    /// A matrix file (`fgl-sim matrix`) has a bad field, or one of its cells a bad scenario.
    #[error("matrix {file}: {field}: {msg}")]
    Matrix { file: String, field: String, msg: String },

    /// A paper-table file (`fgl-sim reproduce table`) has a bad field.
    #[error("table {file}: {field}: {msg}")]
    Table { file: String, field: String, msg: String },

    /// A parameter outside its allowed range (ε ≤ 0, more clients than nodes, …).
    #[error("invalid parameter `{name}`: {msg}")]
    Param { name: String, msg: String },

    /// A dataset that cannot serve the requested use (e.g. no features).
    #[error("dataset `{name}`: {msg}")]
    Dataset { name: String, msg: String },

    /// Writing results failed or would overwrite earlier results.
    #[error("results {path}: {msg}")]
    Output { path: PathBuf, msg: String },

    /// A signal stopped the work at a round boundary: what was saved and how to go on.
    #[error("interrupted: {0}")]
    Interrupted(String),

    #[error("{0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn data_file(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::DataFile { path: path.into(), msg: msg.into() }
    }
    pub fn param(name: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Param { name: name.into(), msg: msg.into() }
    }
    pub fn dataset(name: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Dataset { name: name.into(), msg: msg.into() }
    }
    pub fn output(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Output { path: path.into(), msg: msg.into() }
    }
}
