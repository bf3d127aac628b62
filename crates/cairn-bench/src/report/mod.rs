//! Results: the JSON record of one run, the markdown report and the PNG plots.

pub mod json;
pub mod markdown;
pub mod plots;
pub mod provenance;
pub mod transition;
