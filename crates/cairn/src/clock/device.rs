//! Device models of the virtual clock: what one I/O costs on a simulated device.

use crate::{Error, Result};

/// The cost model of one storage device on the virtual clock (`Clock::Virtual`).
///
/// A random read costs `access_us` plus its bytes at `read_mib_per_sec`; a sequential read
/// (compaction input, a log replayed whole) and a write cost their bytes at the bandwidth
/// alone; an fsync costs `sync_us`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceModel {
    /// Name in reports (`nvme`, `ssd`, `hdd`, or the caller's).
    pub name: String,
    /// Access latency of a random read, microseconds.
    pub access_us: f64,
    /// Read bandwidth, MiB per second.
    pub read_mib_per_sec: f64,
    /// Write bandwidth, MiB per second.
    pub write_mib_per_sec: f64,
    /// Cost of one fsync / fdatasync, microseconds.
    pub sync_us: f64,
}

/// What one I/O is, for pricing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoOp {
    /// A read at an offset a foreground request chose: pays the access latency.
    RandomRead,
    /// A read that continues a scan of a file (compaction input, replay).
    SequentialRead,
    /// A write (appends reaching the OS).
    Write,
    /// An fsync of a file or directory.
    Sync,
}

impl IoOp {
    /// All kinds, in index order.
    pub const ALL: [IoOp; 4] = [
        IoOp::RandomRead,
        IoOp::SequentialRead,
        IoOp::Write,
        IoOp::Sync,
    ];

    /// Dense index.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            IoOp::RandomRead => "random_read",
            IoOp::SequentialRead => "sequential_read",
            IoOp::Write => "write",
            IoOp::Sync => "sync",
        }
    }
}

const MIB: f64 = 1024.0 * 1024.0;

impl DeviceModel {
    /// A datacenter NVMe SSD. Figures from the Intel SSD DC P4510 (2 TB) product
    /// specification: 77 us 4 KiB random-read latency at queue depth 1, 3200 MB/s
    /// sequential read, 2000 MB/s sequential write, 18 us write latency (power-loss
    /// protected, so an fsync costs about one write's latency).
    pub fn nvme() -> Self {
        DeviceModel {
            name: "nvme".into(),
            access_us: 77.0,
            read_mib_per_sec: 3200e6 / MIB,
            write_mib_per_sec: 2000e6 / MIB,
            sync_us: 18.0,
        }
    }

    /// A cloud SSD (ESSD), today's `DeviceProfile::Ssd`: 228 us per 4 KiB read at queue
    /// depth 1 (SA-LSM, Table 4); 350 MB/s, the throughput cap of an ESSD PL1 volume;
    /// an fsync costs one round trip to the volume (assumed equal to the read latency).
    pub fn ssd() -> Self {
        DeviceModel {
            name: "ssd".into(),
            access_us: 228.0,
            read_mib_per_sec: 350e6 / MIB,
            write_mib_per_sec: 350e6 / MIB,
            sync_us: 228.0,
        }
    }

    /// A hard disk: 5050 us per 4 KiB read at queue depth 1 (SA-LSM, Table 4); 150 MB/s
    /// sequential, typical of a 7200 rpm disk (assumed); an fsync costs one seek and
    /// rotation (assumed equal to the read latency).
    pub fn hdd() -> Self {
        DeviceModel {
            name: "hdd".into(),
            access_us: 5050.0,
            read_mib_per_sec: 150e6 / MIB,
            write_mib_per_sec: 150e6 / MIB,
            sync_us: 5050.0,
        }
    }

    /// `nvme`, `ssd` (or `essd`) or `hdd`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "nvme" => Some(Self::nvme()),
            "ssd" | "essd" => Some(Self::ssd()),
            "hdd" => Some(Self::hdd()),
            _ => None,
        }
    }

    /// Checks that every figure is a finite number, latencies >= 0 and bandwidths > 0.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str, v: f64| {
            Error::InvalidArgument(format!(
                "device model {:?}: {what} {v} must be a finite number {}",
                self.name,
                if what.ends_with("bandwidth") {
                    "> 0"
                } else {
                    ">= 0"
                }
            ))
        };
        for (what, v) in [
            ("access latency", self.access_us),
            ("sync cost", self.sync_us),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(what, v));
            }
        }
        for (what, v) in [
            ("read bandwidth", self.read_mib_per_sec),
            ("write bandwidth", self.write_mib_per_sec),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(bad(what, v));
            }
        }
        Ok(())
    }

    /// Nanoseconds one I/O of `bytes` takes on this device.
    pub fn cost_ns(&self, op: IoOp, bytes: u64) -> u64 {
        let at = |mib_per_sec: f64| bytes as f64 / (mib_per_sec * MIB) * 1e9;
        let ns = match op {
            IoOp::RandomRead => self.access_us * 1e3 + at(self.read_mib_per_sec),
            IoOp::SequentialRead => at(self.read_mib_per_sec),
            IoOp::Write => at(self.write_mib_per_sec),
            IoOp::Sync => self.sync_us * 1e3,
        };
        ns.round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_by_kind_and_size() {
        let d = DeviceModel {
            name: "t".into(),
            access_us: 100.0,
            read_mib_per_sec: 1.0,
            write_mib_per_sec: 2.0,
            sync_us: 50.0,
        };
        // 1 MiB at 1 MiB/s is a second; at 2 MiB/s half of one.
        assert_eq!(d.cost_ns(IoOp::RandomRead, 1 << 20), 1_000_100_000);
        assert_eq!(d.cost_ns(IoOp::SequentialRead, 1 << 20), 1_000_000_000);
        assert_eq!(d.cost_ns(IoOp::Write, 1 << 20), 500_000_000);
        assert_eq!(d.cost_ns(IoOp::Sync, 0), 50_000);
        assert_eq!(d.cost_ns(IoOp::RandomRead, 0), 100_000);
        // A 4 KiB block on the paper devices.
        assert_eq!(
            DeviceModel::ssd().cost_ns(IoOp::RandomRead, 4096) / 1000,
            239
        );
        assert_eq!(
            DeviceModel::hdd().cost_ns(IoOp::RandomRead, 4096) / 1000,
            5077
        );
        assert_eq!(
            DeviceModel::nvme().cost_ns(IoOp::RandomRead, 4096) / 1000,
            78
        );
    }

    #[test]
    fn bad_models_are_refused() {
        for m in [DeviceModel::nvme(), DeviceModel::ssd(), DeviceModel::hdd()] {
            m.validate().unwrap();
        }
        let mut m = DeviceModel::nvme();
        m.read_mib_per_sec = 0.0;
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .contains("read bandwidth"));
        let mut m = DeviceModel::nvme();
        m.access_us = -1.0;
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .contains("access latency"));
        let mut m = DeviceModel::nvme();
        m.write_mib_per_sec = f64::NAN;
        assert!(m.validate().is_err());
        let mut m = DeviceModel::nvme();
        m.sync_us = f64::INFINITY;
        assert!(m.validate().is_err());
        assert!(DeviceModel::parse("floppy").is_none());
        assert_eq!(DeviceModel::parse("HDD"), Some(DeviceModel::hdd()));
    }
}
