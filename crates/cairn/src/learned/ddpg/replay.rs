//! The agent's replay buffer.

/// The replay buffer: a ring of `(s, a, r, s2)` records stored flat.
pub(super) struct Replay {
    pub(super) capacity: usize,
    /// Floats per record: `2 * state_dim + 2`.
    pub(super) record: usize,
    /// `len * record` floats.
    pub(super) data: Vec<f32>,
    pub(super) len: usize,
    /// Where the next record goes once the ring is full.
    pub(super) head: usize,
}

impl Replay {
    pub(super) fn new(capacity: usize, state_dim: usize) -> Replay {
        Replay {
            capacity,
            record: 2 * state_dim + 2,
            data: Vec::new(),
            len: 0,
            head: 0,
        }
    }

    pub(super) fn push(&mut self, s: &[f32], a: f32, r: f32, s2: &[f32]) {
        let at = if self.len < self.capacity {
            self.data.resize((self.len + 1) * self.record, 0.0);
            self.len += 1;
            self.len - 1
        } else {
            self.head
        };
        // Until the ring is full `head == len`; then it walks over the oldest record.
        self.head = (at + 1) % self.capacity;
        let rec = &mut self.data[at * self.record..(at + 1) * self.record];
        let d = s.len();
        rec[..d].copy_from_slice(s);
        rec[d] = a;
        rec[d + 1] = r;
        rec[d + 2..].copy_from_slice(s2);
    }
}
