use std::time::Duration;

/// Latency model of a storage device, added to every I/O of a tier.
///
/// Read latency per 4 KiB at queue depth 1 comes from SA-LSM Table 4 (ESSD 228 us,
/// HDD 5050 us). Write latency and bandwidth are not in the paper: the values here are
/// assumptions typical of such devices, documented so experiments can state them.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum DeviceProfile {
    /// No added latency (the machine's own storage).
    None,
    /// A cloud SSD (ESSD).
    Ssd,
    /// A hard disk.
    Hdd,
    /// Explicit parameters.
    Custom {
        /// Added latency of one read, microseconds.
        read_us: f64,
        /// Added latency of one write, microseconds.
        write_us: f64,
        /// Transfer rate for the bytes beyond the first 4 KiB, MiB per second.
        mib_per_sec: f64,
    },
}

impl DeviceProfile {
    /// Parses `none`, `ssd` or `hdd`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Some(DeviceProfile::None),
            "ssd" | "essd" => Some(DeviceProfile::Ssd),
            "hdd" => Some(DeviceProfile::Hdd),
            _ => None,
        }
    }

    fn params(&self) -> Option<(f64, f64, f64)> {
        match *self {
            DeviceProfile::None => None,
            DeviceProfile::Ssd => Some((228.0, 30.0, 350.0)),
            DeviceProfile::Hdd => Some((5050.0, 5050.0, 150.0)),
            DeviceProfile::Custom {
                read_us,
                write_us,
                mib_per_sec,
            } => Some((read_us, write_us, mib_per_sec)),
        }
    }

    /// The delay to add for one I/O of `bytes`, with latencies multiplied by `scale`.
    pub fn delay(&self, is_write: bool, bytes: usize, scale: f64) -> Option<Duration> {
        let (r, w, bw) = self.params()?;
        let base = if is_write { w } else { r };
        let extra = bytes.saturating_sub(4096) as f64 / (bw * 1024.0 * 1024.0) * 1e6;
        let us = (base + extra) * scale;
        if us <= 0.0 {
            None
        } else {
            Some(Duration::from_nanos((us * 1000.0) as u64))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_latencies() {
        let d = DeviceProfile::Ssd.delay(false, 4096, 1.0).unwrap();
        assert_eq!(d.as_micros(), 228);
        let h = DeviceProfile::Hdd.delay(false, 4096, 0.5).unwrap();
        assert_eq!(h.as_micros(), 2525);
        assert!(DeviceProfile::None.delay(false, 4096, 1.0).is_none());
    }
}
