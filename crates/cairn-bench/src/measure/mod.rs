//! Measurements taken while a workload runs.

pub mod belady;
pub mod clock;
pub mod cpu_price;
pub mod latency;
pub mod missions;
pub mod rss;
pub mod timeline;
pub mod windows;
