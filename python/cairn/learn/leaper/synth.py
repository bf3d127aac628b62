"""Synthetic access traces for tests and demos.

The workload has the traits the paper's features are meant to catch:

* Zipf-like popularity over groups of ``group`` adjacent fine ranges (so coarser ranges
  are meaningful), skewed inside each group as well;
* drift: every slot a few groups swap popularity ranks with a random other group, so the
  hot set moves over time;
* a daily component: the volume follows the time of day, and a share of the groups is
  only busy during its own part of the (UTC) day;
* write traffic from the same popularity (popular items are both read and written);
* range scans that read a few adjacent ranges;
* leader/follower pairs: after reading a leader group, the same client thread often
  reads its follower group, which shows up in the transfer matrix (precursors).

Accesses are sampled like the collector does (first access of each (range, slot) counter
always, later ones with probability P) and transfers are counted over each thread's
sampled access order with gamma = 3, as the spec describes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .trace import Trace, make_rows, make_transfers

DAY_MS = 86_400_000


@dataclass
class SynthConfig:
    slots: int = 864
    slot_ms: int = 300_000
    ranges: int = 4000  # fine ranges
    range_width: int = 10  # A0
    group: int = 8  # fine ranges per popularity group
    ops_per_slot: int = 2000
    zipf_s: float = 1.1
    swaps_per_slot: int = 2
    daytime_share: float = 0.15
    follower_share: float = 0.1
    follow_prob: float = 0.6
    write_share: float = 0.2
    scan_share: float = 0.05
    threads: int = 8
    sample_p: float = 1.0
    gamma: int = 3
    seed: int = 0
    start_unix_ms: int = 1_704_067_200_000  # 2024-01-01T00:00:00Z
    cf_id: int = 0


def synth_trace(cfg: SynthConfig | None = None) -> Trace:
    """A deterministic (given ``cfg.seed``) synthetic trace; see the module docstring."""
    cfg = cfg or SynthConfig()
    rng = np.random.default_rng(cfg.seed)
    n_groups = max(cfg.ranges // cfg.group, 2)
    rank_w = 1.0 / np.arange(1, n_groups + 1) ** cfg.zipf_s
    perm = rng.permutation(n_groups)  # perm[rank] = group
    daytime = rng.random(n_groups) < cfg.daytime_share
    phase = rng.random(n_groups)
    followers = rng.random(n_groups) < cfg.follower_share
    leader_of = np.full(n_groups, -1)
    cand = np.flatnonzero(~followers)
    follower_ids = np.flatnonzero(followers)
    leaders = rng.choice(cand, size=follower_ids.shape[0], replace=False) if follower_ids.size else cand[:0]
    follower_of = np.full(n_groups, -1)
    follower_of[leaders] = follower_ids
    leader_of[follower_ids] = leaders
    inner = 0.6 ** np.arange(cfg.group)
    inner /= inner.sum()

    ev_range, ev_slot, ev_write, ev_thread = [], [], [], []
    for s in range(cfg.slots):
        tod = ((cfg.start_unix_ms + (s + 0.5) * cfg.slot_ms) % DAY_MS) / DAY_MS
        for _ in range(cfg.swaps_per_slot):
            a = rng.integers(0, min(50, n_groups))
            b = rng.integers(0, n_groups)
            perm[a], perm[b] = perm[b], perm[a]
        w = np.empty(n_groups)
        w[perm] = rank_w
        w[daytime] *= 0.05 + 2.0 * np.maximum(0.0, np.sin(2 * np.pi * (tod - phase[daytime]))) ** 2
        w[followers] = 0.0  # followers are read only after their leader
        w /= w.sum()
        n_ops = rng.poisson(cfg.ops_per_slot * (0.7 + 0.3 * np.sin(2 * np.pi * tod)))
        grp = rng.choice(n_groups, size=n_ops, p=w)
        fine = grp * cfg.group + rng.choice(cfg.group, size=n_ops, p=inner)
        write = rng.random(n_ops) < cfg.write_share
        thread = rng.integers(0, cfg.threads, size=n_ops)
        # Expand scans (reads only) into 2..4 adjacent ranges, and leaders into a
        # follower read on the same thread right after.
        scan = (~write) & (rng.random(n_ops) < cfg.scan_share)
        length = np.where(scan, rng.integers(2, 5, size=n_ops), 1)
        follow = (~write) & (follower_of[grp] >= 0) & (rng.random(n_ops) < cfg.follow_prob)
        extra = follow.astype(np.int64)
        per_op = length + extra
        op_idx = np.repeat(np.arange(n_ops), per_op)
        pos = np.arange(op_idx.shape[0]) - np.repeat(np.cumsum(per_op) - per_op, per_op)
        is_follow = pos >= length[op_idx]
        r = fine[op_idx] + np.where(is_follow, 0, pos)
        fgrp = follower_of[grp[op_idx]]
        r = np.where(is_follow, fgrp * cfg.group + rng.choice(cfg.group, size=r.shape[0], p=inner), r)
        r = np.minimum(r, n_groups * cfg.group - 1)
        ev_range.append(r)
        ev_slot.append(np.full(r.shape[0], s, dtype=np.int64))
        ev_write.append(write[op_idx])
        ev_thread.append(thread[op_idx])

    rng_ = np.concatenate(ev_range).astype(np.int64)
    slot = np.concatenate(ev_slot)
    write = np.concatenate(ev_write)
    thread = np.concatenate(ev_thread)

    # Sampling: the first access of each (range, slot, kind) counter always counts.
    cell = (slot * (n_groups * cfg.group) + rng_) * 2 + write
    sampled = rng.random(cell.shape[0]) < cfg.sample_p
    _, first = np.unique(cell, return_index=True)
    sampled[first] = True

    cells, inv = np.unique(cell[sampled] // 2, return_inverse=True)
    reads = np.bincount(inv, weights=~write[sampled], minlength=cells.shape[0]).astype(np.uint32)
    writes = np.bincount(inv, weights=write[sampled], minlength=cells.shape[0]).astype(np.uint32)
    rows = make_rows(cells % (n_groups * cfg.group), cells // (n_groups * cfg.group), reads, writes)

    # Transfers over each thread's sampled access order.
    seq_r, seq_t = rng_[sampled], thread[sampled]
    order = np.argsort(seq_t, kind="stable")
    seq_r, seq_t = seq_r[order], seq_t[order]
    tos, froms = [], []
    for j in range(1, cfg.gamma + 1):
        ok = (seq_t[j:] == seq_t[:-j]) & (seq_r[j:] != seq_r[:-j])
        tos.append(seq_r[j:][ok])
        froms.append(seq_r[:-j][ok])
    pair = np.concatenate(tos) * (n_groups * cfg.group) + np.concatenate(froms)
    pairs, counts = np.unique(pair, return_counts=True)
    transfers = make_transfers(pairs // (n_groups * cfg.group), pairs % (n_groups * cfg.group), counts)
    return Trace(
        cf_id=cfg.cf_id,
        key_offset=0,
        range_width=cfg.range_width,
        slot_ms=cfg.slot_ms,
        sample_p=cfg.sample_p,
        start_unix_ms=cfg.start_unix_ms,
        rows=rows,
        transfers=transfers,
    )
