//! The harness's side of Leaper's experiments: the clock the access statistics run on,
//! the oracle's hot ranges read off the op stream, and training a model on the warm-up
//! part of the stream with the Python learner.

pub mod clock;
pub mod oracle;
pub mod summary;
pub mod train;

pub use clock::PausableClock;
pub use oracle::OracleSource;
pub use train::{LeaperSettings, LeaperTraining};
