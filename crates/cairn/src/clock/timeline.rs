//! The virtual clock's timeline: one queue per device, shared by foreground requests and
//! background jobs, so that a compaction's I/O delays reads as it would on one SSD.
//!
//! Time is integer nanoseconds. The foreground (the thread driving requests) has a
//! position, `now`; its I/Os wait for the device and advance it. A background job runs
//! to its end at once in the calling thread (virtual mode has no background threads),
//! and its I/Os are queued on the device, ready at the `now` the job started. The device
//! serves them whenever the foreground leaves it idle, one at a time as a compaction
//! thread issues them; a foreground I/O that arrives while one is in flight waits for it
//! to end (no pre-emption), then goes before the rest. The backlog is evaluated lazily,
//! at the next foreground I/O: exact for this discipline, since no later event can
//! change what started before that I/O arrived.
//!
//! An open-loop replay of many concurrent clients ([`VirtualClock::arrive`]) moves the
//! foreground's position to each request's arrival, which may fall before the previous
//! request's end: the devices keep the time they are busy until, so a request queues at
//! each device behind the I/O that requests before it left there (each device serves
//! requests in the order they arrive), while a request that does not touch a busy device
//! does not wait for it. CPU is then charged as if each request had its own core.
//!
//! A memtable switch waits until every queued background I/O is done (a stall): the
//! engine has already installed the flush and compactions it queued, so the tree a
//! writer sees is one whose work has been paid for. Write amplification therefore costs
//! the foreground once the device cannot keep up, as on a real device.

use std::collections::VecDeque;

use parking_lot::Mutex;

use super::device::{DeviceModel, IoOp};
use super::in_background;

/// Count, bytes and device time of one kind of I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IoTally {
    /// Operations.
    pub ops: u64,
    /// Bytes.
    pub bytes: u64,
    /// Device time they took, nanoseconds (queueing not included).
    pub service_ns: u64,
}

impl IoTally {
    fn add(&mut self, bytes: u64, ns: u64) {
        self.ops += 1;
        self.bytes += bytes;
        self.service_ns += ns;
    }

    /// Difference `self - earlier`.
    pub fn since(&self, earlier: &IoTally) -> IoTally {
        IoTally {
            ops: self.ops.saturating_sub(earlier.ops),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            service_ns: self.service_ns.saturating_sub(earlier.service_ns),
        }
    }
}

/// One device's I/O so far, by who issued it and what it was.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceStats {
    /// The device's model.
    pub model: Option<DeviceModel>,
    /// Foreground I/O, by [`IoOp::index`].
    pub foreground: [IoTally; 4],
    /// Background I/O (flushes, compactions, learning, proactive compactions).
    pub background: [IoTally; 4],
    /// Background device time queued but not yet served, nanoseconds.
    pub backlog_ns: u64,
}

impl DeviceStats {
    /// Difference `self - earlier` (the model and backlog are this one's).
    pub fn since(&self, earlier: &DeviceStats) -> DeviceStats {
        let d = |a: &[IoTally; 4], b: &[IoTally; 4]| std::array::from_fn(|i| a[i].since(&b[i]));
        DeviceStats {
            model: self.model.clone(),
            foreground: d(&self.foreground, &earlier.foreground),
            background: d(&self.background, &earlier.background),
            backlog_ns: self.backlog_ns,
        }
    }

    /// Device time of all I/O, foreground and background.
    pub fn service_ns(&self) -> u64 {
        self.foreground
            .iter()
            .chain(&self.background)
            .map(|t| t.service_ns)
            .sum()
    }
}

/// Where the virtual clock stands.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VirtualStats {
    /// The foreground's time, nanoseconds since the clock started.
    pub now_ns: u64,
    /// Priced CPU time charged to the foreground.
    pub cpu_ns: u64,
    /// Time foreground I/Os spent waiting for the I/O ahead of them on their device
    /// (background I/O in flight; in an open-loop replay, other requests' too).
    pub queue_wait_ns: u64,
    /// Time memtable switches waited for queued background I/O.
    pub stall_ns: u64,
    /// Memtable switches that waited.
    pub stalls: u64,
    /// Per device (one per tier).
    pub devices: Vec<DeviceStats>,
}

impl VirtualStats {
    /// Difference `self - earlier`; `now_ns` becomes the time elapsed.
    pub fn since(&self, earlier: &VirtualStats) -> VirtualStats {
        VirtualStats {
            now_ns: self.now_ns.saturating_sub(earlier.now_ns),
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            queue_wait_ns: self.queue_wait_ns.saturating_sub(earlier.queue_wait_ns),
            stall_ns: self.stall_ns.saturating_sub(earlier.stall_ns),
            stalls: self.stalls.saturating_sub(earlier.stalls),
            devices: self
                .devices
                .iter()
                .enumerate()
                .map(|(i, d)| match earlier.devices.get(i) {
                    Some(e) => d.since(e),
                    None => d.clone(),
                })
                .collect(),
        }
    }

    /// Device time of the foreground's own I/O (queueing not included).
    pub fn foreground_io_ns(&self) -> u64 {
        self.devices
            .iter()
            .flat_map(|d| d.foreground.iter())
            .map(|t| t.service_ns)
            .sum()
    }

    /// Device time of background I/O.
    pub fn background_io_ns(&self) -> u64 {
        self.devices
            .iter()
            .flat_map(|d| d.background.iter())
            .map(|t| t.service_ns)
            .sum()
    }
}

struct Device {
    model: DeviceModel,
    /// When the I/O last started on the device ends.
    free_at: u64,
    /// Background I/Os not yet started: (ready at, duration).
    backlog: VecDeque<(u64, u64)>,
    backlog_ns: u64,
    stats: DeviceStats,
}

impl Device {
    /// Serves queued background I/O that starts before `t`.
    fn drain_before(&mut self, t: u64) {
        while let Some(&(ready, dur)) = self.backlog.front() {
            let start = self.free_at.max(ready);
            if start >= t {
                break;
            }
            self.free_at = start + dur;
            self.backlog_ns -= dur;
            self.backlog.pop_front();
        }
    }

    /// Serves the whole backlog; returns when it ends.
    fn drain_all(&mut self) -> u64 {
        self.drain_before(u64::MAX);
        self.free_at
    }
}

struct Timeline {
    now: u64,
    /// The latest time any request ended (open-loop replays move `now` back).
    latest: u64,
    /// Device time of all background I/O queued so far.
    background_ns: u64,
    cpu_ns: u64,
    queue_wait_ns: u64,
    stall_ns: u64,
    stalls: u64,
    devices: Vec<Device>,
}

/// A simulated time line of one database: its foreground position and one queue per
/// device (tier). Deterministic: the same I/Os in the same order give the same times.
pub struct VirtualClock {
    state: Mutex<Timeline>,
}

impl std::fmt::Debug for VirtualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualClock")
            .field("now_ns", &self.now_ns())
            .finish()
    }
}

impl VirtualClock {
    /// A clock at time 0 with one device per model (tier order).
    pub fn new(devices: Vec<DeviceModel>) -> Self {
        let devices = devices
            .into_iter()
            .map(|model| Device {
                stats: DeviceStats {
                    model: Some(model.clone()),
                    ..Default::default()
                },
                model,
                free_at: 0,
                backlog: VecDeque::new(),
                backlog_ns: 0,
            })
            .collect();
        VirtualClock {
            state: Mutex::new(Timeline {
                now: 0,
                latest: 0,
                background_ns: 0,
                cpu_ns: 0,
                queue_wait_ns: 0,
                stall_ns: 0,
                stalls: 0,
                devices,
            }),
        }
    }

    /// The foreground's time, nanoseconds since the clock started.
    pub fn now_ns(&self) -> u64 {
        self.state.lock().now
    }

    /// The foreground's time and the device time of all background I/O queued so far,
    /// read together (a [`super::Stopwatch`]'s marks).
    pub fn marks(&self) -> (u64, u64) {
        let s = self.state.lock();
        (s.now, s.background_ns)
    }

    /// Starts a request arriving at `at_ns`, one of many concurrent clients (an open-loop
    /// replay, arrivals in order): the foreground's position moves to that time, earlier
    /// or later than the last request's end, and the request waits at each device for
    /// what earlier requests left in flight or queued there. Time no request spends is
    /// idle, not a stall; [`VirtualStats::now_ns`] is the latest end.
    pub fn arrive(&self, at_ns: u64) {
        let mut s = self.state.lock();
        s.latest = s.latest.max(s.now);
        s.now = at_ns;
    }

    /// Charges `ns` of CPU work to the foreground.
    pub fn charge_cpu(&self, ns: u64) {
        let mut s = self.state.lock();
        s.now += ns;
        s.cpu_ns += ns;
    }

    /// Moves the foreground's time forward by `ns` of waiting (not CPU, not I/O).
    pub fn wait(&self, ns: u64) {
        let mut s = self.state.lock();
        s.now += ns;
        s.stall_ns += ns;
    }

    /// Prices one I/O of `bytes` on `device` (a tier; past the last, the last): on the
    /// foreground's time line, or queued as background work when the calling thread runs
    /// background work ([`super::BackgroundWork`]).
    pub fn io(&self, device: usize, op: IoOp, bytes: u64) {
        let background = in_background();
        let mut s = self.state.lock();
        let now = s.now;
        let last = s.devices.len().saturating_sub(1);
        let Some(d) = s.devices.get_mut(device.min(last)) else {
            return;
        };
        let ns = d.model.cost_ns(op, bytes);
        if background {
            d.stats.background[op.index()].add(bytes, ns);
            d.backlog.push_back((now, ns));
            d.backlog_ns += ns;
            s.background_ns += ns;
            return;
        }
        d.stats.foreground[op.index()].add(bytes, ns);
        d.drain_before(now);
        let start = d.free_at.max(now);
        d.free_at = start + ns;
        let end = d.free_at;
        s.queue_wait_ns += start - now;
        s.now = end;
    }

    /// Waits until every queued background I/O is done (a memtable switch). Returns the
    /// time waited.
    pub fn wait_for_background(&self) -> u64 {
        let mut s = self.state.lock();
        let done = s
            .devices
            .iter_mut()
            .map(Device::drain_all)
            .max()
            .unwrap_or(0);
        let waited = done.saturating_sub(s.now);
        if waited > 0 {
            s.now = done;
            s.stall_ns += waited;
            s.stalls += 1;
        }
        waited
    }

    /// Background device time queued and not yet served, as of the foreground's time.
    pub fn backlog_ns(&self) -> u64 {
        let mut s = self.state.lock();
        let now = s.now;
        s.devices
            .iter_mut()
            .map(|d| {
                d.drain_before(now);
                d.backlog_ns + d.free_at.saturating_sub(now)
            })
            .sum()
    }

    /// The counts and times so far.
    pub fn stats(&self) -> VirtualStats {
        let s = self.state.lock();
        VirtualStats {
            now_ns: s.now.max(s.latest),
            cpu_ns: s.cpu_ns,
            queue_wait_ns: s.queue_wait_ns,
            stall_ns: s.stall_ns,
            stalls: s.stalls,
            devices: s
                .devices
                .iter()
                .map(|d| DeviceStats {
                    backlog_ns: d.backlog_ns,
                    ..d.stats.clone()
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::BackgroundWork;
    use super::*;

    fn model() -> DeviceModel {
        // 1 byte per microsecond both ways, 10 us access, 5 us sync: easy arithmetic.
        DeviceModel {
            name: "t".into(),
            access_us: 10.0,
            read_mib_per_sec: 1e6 / (1024.0 * 1024.0),
            write_mib_per_sec: 1e6 / (1024.0 * 1024.0),
            sync_us: 5.0,
        }
    }

    #[test]
    fn foreground_ios_add_up() {
        let c = VirtualClock::new(vec![model()]);
        c.io(0, IoOp::RandomRead, 4); // 10 + 4 us
        c.io(0, IoOp::SequentialRead, 6); // 6 us
        c.io(0, IoOp::Write, 100); // 100 us
        c.io(0, IoOp::Sync, 0); // 5 us
        c.charge_cpu(1_000);
        assert_eq!(c.now_ns(), 125_000 + 1_000);
        let s = c.stats();
        assert_eq!(s.cpu_ns, 1_000);
        assert_eq!(s.foreground_io_ns(), 125_000);
        assert_eq!(s.devices[0].foreground[IoOp::Write.index()].bytes, 100);
        assert_eq!(s.queue_wait_ns, 0);
    }

    #[test]
    fn a_background_write_delays_a_foreground_read_by_its_queue_time() {
        let c = VirtualClock::new(vec![model()]);
        {
            let _bg = BackgroundWork::enter();
            c.io(0, IoOp::Write, 50); // 50 us, ready at 0
            c.io(0, IoOp::Write, 50); // 50 us more
        }
        assert_eq!(
            c.now_ns(),
            0,
            "background work does not move the foreground"
        );
        c.charge_cpu(20_000);
        // At 20 us the first background write is in flight until 50: the read waits 30,
        // then goes before the second (not started), taking 14.
        c.io(0, IoOp::RandomRead, 4);
        assert_eq!(c.now_ns(), 64_000);
        assert_eq!(c.stats().queue_wait_ns, 30_000);
        // The second write runs from 64 to 114; a read at 200 finds the device idle.
        c.charge_cpu(136_000);
        c.io(0, IoOp::RandomRead, 4);
        assert_eq!(c.now_ns(), 214_000);
        assert_eq!(c.stats().queue_wait_ns, 30_000);
        assert_eq!(c.backlog_ns(), 0);
    }

    #[test]
    fn concurrent_arrivals_queue_per_device() {
        let c = VirtualClock::new(vec![model(), model()]);
        c.arrive(0);
        c.io(0, IoOp::RandomRead, 4); // 0..14 us
        assert_eq!(c.now_ns(), 14_000);
        // Arrives at 5 while the first is in flight on device 0: waits 9, ends at 28.
        c.arrive(5_000);
        c.io(0, IoOp::RandomRead, 4);
        assert_eq!(c.now_ns(), 28_000);
        // Arrives at 6 on the other device: no wait behind device 0's queue.
        c.arrive(6_000);
        c.io(1, IoOp::RandomRead, 4);
        assert_eq!(c.now_ns(), 20_000);
        let s = c.stats();
        assert_eq!(s.queue_wait_ns, 9_000);
        assert_eq!(s.now_ns, 28_000, "the latest end");
        // A later arrival finds device 0 idle again.
        c.arrive(100_000);
        c.io(0, IoOp::RandomRead, 4);
        assert_eq!(c.now_ns(), 114_000);
        assert_eq!(c.stats().queue_wait_ns, 9_000);
    }

    #[test]
    fn a_switch_waits_for_the_backlog_and_devices_queue_apart() {
        let c = VirtualClock::new(vec![model(), model()]);
        {
            let _bg = BackgroundWork::enter();
            c.io(1, IoOp::Write, 300);
            c.io(0, IoOp::Write, 100);
        }
        // Device 0 is busy until 100; device 1 until 300. A read on device 0 at 1 waits
        // for the write in flight; the cold device's write does not delay it. (At the
        // instant a job is queued, the foreground goes first.)
        c.charge_cpu(1_000);
        c.io(0, IoOp::RandomRead, 0);
        assert_eq!(c.now_ns(), 110_000);
        assert_eq!(c.backlog_ns(), 190_000);
        assert_eq!(c.wait_for_background(), 190_000);
        assert_eq!(c.now_ns(), 300_000);
        assert_eq!(c.wait_for_background(), 0);
        let s = c.stats();
        assert_eq!((s.stalls, s.stall_ns), (1, 190_000));
        assert_eq!(s.background_io_ns(), 400_000);
        // Past the last device, the last one.
        c.io(7, IoOp::Sync, 0);
        assert_eq!(c.stats().devices[1].foreground[IoOp::Sync.index()].ops, 1);
    }
}
