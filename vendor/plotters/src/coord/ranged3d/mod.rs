mod projection;
pub use projection::{ProjectionMatrix, ProjectionMatrixBuilder};

mod cartesian3d;
pub use cartesian3d::Cartesian3d;
