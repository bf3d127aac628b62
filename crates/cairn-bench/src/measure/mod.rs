//! Measurements taken while a workload runs.

pub mod cpu;
pub mod latency;
pub mod rss;
pub mod timeline;
