use super::*;
use std::time::Instant;

#[test]
fn action_mapping_and_clipping() {
    let third = 1.0f32 / 3.0;
    assert_eq!(action_delta(-1.0), -1);
    assert_eq!(action_delta(-0.34), -1);
    assert_eq!(action_delta(-third), 0);
    assert_eq!(action_delta(-0.33), 0);
    assert_eq!(action_delta(0.0), 0);
    assert_eq!(action_delta(0.33), 0);
    assert_eq!(action_delta(third), 0);
    assert_eq!(action_delta(0.34), 1);
    assert_eq!(action_delta(1.0), 1);
    assert_eq!(action_delta(f32::NAN), 0);
    assert_eq!(next_k(1, -1.0, 10), 1);
    assert_eq!(next_k(10, 1.0, 10), 10);
    assert_eq!(next_k(5, 0.0, 10), 5);
    assert_eq!(next_k(5, 0.3, 10), 5);
    assert_eq!(next_k(5, 0.4, 10), 6);
    assert_eq!(next_k(5, -0.4, 10), 4);
    assert_eq!(next_k(1, 0.9, 10), 2);
    assert_eq!(next_k(10, -0.9, 10), 9);
    // Out-of-range inputs are brought back into 1..=t.
    assert_eq!(next_k(12, 0.0, 10), 10);
    assert_eq!(next_k(0, 0.0, 10), 1);
    assert_eq!(next_k(3, 1.0, 0), 1);
}

#[test]
fn config_validation_and_noise_schedule() {
    assert!(DdpgAgent::new(DdpgConfig::default()).is_err());
    for bad in [
        DdpgConfig {
            gamma: 1.0,
            ..DdpgConfig::new(2)
        },
        DdpgConfig {
            tau: 0.0,
            ..DdpgConfig::new(2)
        },
        DdpgConfig {
            actor_lr: f64::NAN,
            ..DdpgConfig::new(2)
        },
        DdpgConfig {
            batch: 0,
            ..DdpgConfig::new(2)
        },
    ] {
        assert!(matches!(
            DdpgAgent::new(bad),
            Err(Error::InvalidArgument(_))
        ));
    }
    let cfg = DdpgConfig {
        hidden: 8,
        batch: 2,
        noise_start: 0.5,
        noise_decay: 0.5,
        noise_min: 0.1,
        ..DdpgConfig::new(2)
    };
    let mut agent = DdpgAgent::new(cfg).unwrap();
    assert_eq!(agent.noise(), 0.5);

    // Wrong or non-finite states are refused; bad transitions are dropped.
    assert!(agent.act(&[0.0], false).is_err());
    assert!(agent.act(&[0.0, f32::NAN], false).is_err());
    agent.remember(&[0.0, 1.0], 0.5, f32::NAN, &[0.0, 1.0]);
    agent.remember(&[0.0], 0.5, 1.0, &[0.0, 1.0]);
    agent.remember(&[0.0, 1.0], 0.5, 1.0, &[0.0, f32::INFINITY]);
    assert_eq!(agent.replay_len(), 0);
    agent.remember(&[0.0, 1.0], 0.5, 1.0, &[0.0, 1.0]);
    assert_eq!(agent.replay_len(), 1);
    // Fewer samples than a batch: no training, and the noise holds.
    assert_eq!(agent.train(4).unwrap(), None);
    agent.decay_noise();
    assert_eq!(agent.noise(), 0.5);
    agent.remember(&[1.0, 0.0], -0.5, 2.0, &[0.0, 1.0]);
    assert!(agent.train(1).unwrap().is_some());
    assert_eq!(agent.train(0).unwrap(), None);
    agent.decay_noise();
    assert_eq!(agent.noise(), 0.25);
    agent.decay_noise();
    agent.decay_noise();
    assert_eq!(agent.noise(), 0.1);
    agent.reset_noise();
    assert_eq!(agent.noise(), 0.5);

    // Greedy acting touches nothing; exploring stays in [-1, 1] and varies.
    let s = [0.3, -0.2];
    let a0 = agent.act(&s, false).unwrap();
    assert!(a0.abs() < 0.1, "{a0}");
    assert_eq!(agent.act(&s, false).unwrap().to_bits(), a0.to_bits());
    let explored: Vec<f32> = (0..50).map(|_| agent.act(&s, true).unwrap()).collect();
    assert!(explored.iter().all(|a| (-1.0..=1.0).contains(a)));
    assert!(explored.iter().any(|&a| (a - a0).abs() > 0.2));

    fn is_send<T: Send>() {}
    is_send::<DdpgAgent>();
}

#[test]
fn same_seed_same_agent() {
    let run = |seed: u64| {
        let cfg = DdpgConfig {
            hidden: 16,
            batch: 8,
            seed,
            ..DdpgConfig::new(3)
        };
        let mut agent = DdpgAgent::new(cfg).unwrap();
        let mut rng = SplitMix64(99);
        for _ in 0..20 {
            let s: Vec<f32> = (0..3).map(|_| rng.next_f64() as f32).collect();
            let s2: Vec<f32> = (0..3).map(|_| rng.next_f64() as f32).collect();
            let a = agent.act(&s, true).unwrap();
            agent.remember(&s, a, -(rng.next_f64() as f32), &s2);
            agent.train(2).unwrap();
        }
        let mut out = Vec::new();
        agent.save(&mut out);
        out
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

// ---- The toy level: cost(K) = K + 16/K on K in 1..=10, best at K = 4. ----

const T: usize = 10;
const COST_REF: f64 = 10.0;

fn cost(k: usize) -> f64 {
    k as f64 + 16.0 / k as f64
}

/// The measured cost of a mission at `k`: the true cost with ±3% uniform noise.
fn observe(k: usize, rng: &mut SplitMix64) -> f64 {
    cost(k) * (1.0 + 0.03 * (2.0 * rng.next_f64() - 1.0))
}

/// The state: K/T, the last mission's measured cost (normalised), a bias feature.
fn toy_state(k: usize, c: f64) -> [f32; 3] {
    [k as f32 / T as f32, (c / COST_REF) as f32, 1.0]
}

const TOY_MISSIONS: usize = 300;
const TOY_GREEDY: usize = 30;
const TOY_STEPS: usize = 8;

/// Runs the toy from `start`: `TOY_MISSIONS` missions of `train(steps)`, the last
/// `TOY_GREEDY` of them without exploration. Returns the agent and the K of those
/// greedy missions.
fn run_toy_with(
    start: usize,
    cfg: DdpgConfig,
    steps: usize,
    print: bool,
) -> (DdpgAgent, Vec<usize>) {
    let seed = cfg.seed;
    let mut agent = DdpgAgent::new(cfg).unwrap();
    let mut env = SplitMix64(seed ^ 0xe4f);
    let (mut k, mut c) = (start, 0.0);
    c += observe(k, &mut env);
    let mut greedy_ks = Vec::new();
    let mut trace = String::new();
    for m in 0..TOY_MISSIONS {
        let explore = m < TOY_MISSIONS - TOY_GREEDY;
        let s = toy_state(k, c);
        let a = agent.act(&s, explore).unwrap();
        let k2 = next_k(k, a, T);
        let c2 = observe(k2, &mut env);
        agent.remember(&s, a, -(c2 / COST_REF) as f32, &toy_state(k2, c2));
        agent.train(steps).unwrap();
        agent.decay_noise();
        if !explore {
            greedy_ks.push(k2);
        }
        trace.push_str(&k2.to_string());
        trace.push(if m % 50 == 49 { '\n' } else { ' ' });
        (k, c) = (k2, c2);
    }
    if print {
        println!("toy from K={start} seed {seed}, K per mission:\n{trace}");
    }
    (agent, greedy_ks)
}

/// The K a greedy rollout of `steps` missions from `start` visits.
fn greedy_rollout(agent: &mut DdpgAgent, start: usize, steps: usize) -> Vec<usize> {
    let mut env = SplitMix64(start as u64);
    let mut k = start;
    let mut ks = Vec::new();
    for _ in 0..steps {
        let a = agent
            .act(&toy_state(k, observe(k, &mut env)), false)
            .unwrap();
        k = next_k(k, a, T);
        ks.push(k);
    }
    ks
}

/// Runs the toy and judges it: `Err` says why it failed.
fn toy_outcome(start: usize, seed: u64, print: bool) -> std::result::Result<(), String> {
    let t0 = Instant::now();
    let cfg = DdpgConfig {
        seed,
        ..DdpgConfig::new(3)
    };
    let (mut agent, ks) = run_toy_with(start, cfg, TOY_STEPS, print);
    let at4 = ks.iter().filter(|&&k| k == 4).count();
    let policy: Vec<String> = (1..=T)
        .map(|k| format!("{:+.2}", agent.act(&toy_state(k, cost(k)), false).unwrap()))
        .collect();
    println!(
        "toy from K={start} seed {seed}: greedy K {ks:?}, {at4}/{TOY_GREEDY} at 4; actions \
         at K=1..10 (true cost) {policy:?}; {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    if at4 < 25 {
        return Err(format!(
            "only {at4} of {TOY_GREEDY} greedy missions at K=4: {ks:?}"
        ));
    }
    if !ks.iter().all(|k| (3..=5).contains(k)) {
        return Err(format!("greedy missions left 3..=5: {ks:?}"));
    }
    // The policy is not merely "stay": from the start it walks to 4 (at least 3 or 6
    // missions away; the noisy cost in the state may make it hesitate) and holds there.
    let from_start = greedy_rollout(&mut agent, start, 12);
    if !from_start[9..].iter().all(|&k| k == 4) {
        return Err(format!("greedy from K={start}: {from_start:?}"));
    }
    Ok(())
}

#[test]
fn toy_optimum_from_k1() {
    toy_outcome(1, 1, true).unwrap();
}

#[test]
fn toy_optimum_from_k10() {
    toy_outcome(10, 2, true).unwrap();
}

/// The success rate behind the defaults (16 of 16 when last run). Slow: run
/// with `cargo test --release -p cairn --lib toy_optimum_many_seeds -- --ignored`.
#[test]
#[ignore]
fn toy_optimum_many_seeds() {
    let mut failures = Vec::new();
    for start in [1, 10] {
        for seed in 1..=8 {
            if let Err(e) = toy_outcome(start, seed, false) {
                failures.push(format!("K={start} seed {seed}: {e}"));
            }
        }
    }
    println!("{} of 16 toy runs failed: {failures:#?}", failures.len());
    assert!(failures.len() <= 2, "{failures:#?}");
}

// ---- Checkpoints ----

/// A small trained agent whose replay has wrapped around.
fn small_agent(hidden: usize, capacity: usize, pushes: usize) -> DdpgAgent {
    let cfg = DdpgConfig {
        hidden,
        batch: 4,
        replay_capacity: capacity,
        ..DdpgConfig::new(3)
    };
    let mut agent = DdpgAgent::new(cfg).unwrap();
    let mut rng = SplitMix64(5);
    for _ in 0..pushes {
        let s: Vec<f32> = (0..3).map(|_| rng.next_f64() as f32).collect();
        let s2: Vec<f32> = (0..3).map(|_| rng.next_f64() as f32).collect();
        let a = agent.act(&s, true).unwrap();
        agent.remember(&s, a, -(rng.next_f64() as f32), &s2);
        agent.train(1).unwrap();
        agent.decay_noise();
    }
    agent
}

fn probe_states() -> Vec<[f32; 3]> {
    let mut rng = SplitMix64(11);
    (0..16)
        .map(|_| [0; 3].map(|_| (rng.next_f64() * 2.0 - 1.0) as f32))
        .collect()
}

#[test]
fn save_load_round_trip() {
    let mut agent = small_agent(32, 40, 57);
    assert_eq!(agent.replay_len(), 40);
    let mut bytes = vec![0xAB]; // save appends
    agent.save(&mut bytes);
    let other = small_agent(8, 10, 3);
    other.save(&mut bytes);
    bytes.extend_from_slice(b"tail");

    let mut input = &bytes[1..];
    let mut loaded = DdpgAgent::load(&mut input).unwrap();
    let loaded_other = DdpgAgent::load(&mut input).unwrap();
    assert_eq!(input, b"tail");
    assert_eq!(loaded_other.replay_len(), 3);
    assert_eq!(loaded_other.config(), other.config());

    assert_eq!(loaded.config(), agent.config());
    assert_eq!(loaded.replay_len(), agent.replay_len());
    assert_eq!(loaded.noise(), agent.noise());
    for s in probe_states() {
        let a = agent.act(&s, false).unwrap();
        let b = loaded.act(&s, false).unwrap();
        assert_eq!(a.to_bits(), b.to_bits());
    }
    // Same generator state: the same exploration draws.
    let s = probe_states()[0];
    for _ in 0..5 {
        assert_eq!(
            agent.act(&s, true).unwrap().to_bits(),
            loaded.act(&s, true).unwrap().to_bits()
        );
    }
    // Saving the loaded agent writes the same bytes.
    let mut again = Vec::new();
    loaded.save(&mut again);
    let mut first = Vec::new();
    agent.save(&mut first);
    assert_eq!(again, first);

    // The loaded agent trains on.
    let before: Vec<f32> = probe_states()
        .iter()
        .map(|s| loaded.act(s, false).unwrap())
        .collect();
    let loss = loaded.train(5).unwrap().expect("trained");
    assert!(loss.is_finite());
    let after: Vec<f32> = probe_states()
        .iter()
        .map(|s| loaded.act(s, false).unwrap())
        .collect();
    assert_ne!(before, after);
    loaded.remember(&s, 0.1, -1.0, &s);
    assert_eq!(loaded.replay_len(), 40);
}

fn load_all(bytes: &[u8]) -> Result<DdpgAgent> {
    let mut input = bytes;
    DdpgAgent::load(&mut input)
}

/// Overwrites a header field at `off` (relative to the header) and fixes the checksum.
fn patch_header(bytes: &[u8], off: usize, field: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[8 + off..8 + off + field.len()].copy_from_slice(field);
    let crc = crc32c::crc32c(&b[8..8 + HEADER_LEN]);
    b[8 + HEADER_LEN..12 + HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    b
}

#[test]
fn damaged_checkpoints_are_errors() {
    let agent = small_agent(4, 8, 6);
    let mut bytes = Vec::new();
    agent.save(&mut bytes);
    assert!(load_all(&bytes).is_ok());
    println!("small checkpoint: {} bytes", bytes.len());

    // Every truncation.
    for len in 0..bytes.len() {
        let e = load_all(&bytes[..len]).expect_err("truncated checkpoint loaded");
        assert!(e.is_corruption(), "{e}");
    }

    // Every bit of magic, version, header, header checksum and the layer dimensions.
    let body = 12 + HEADER_LEN;
    let mut dims_at = Vec::new();
    let mut at = body;
    for dims in [
        layer_dims(3, 4),
        layer_dims(4, 4),
        layer_dims(3, 4),
        layer_dims(4, 4),
    ] {
        for (out, inp) in dims {
            dims_at.extend(at..at + 8);
            at += 8 + 4 * (out * inp + out);
        }
    }
    assert_eq!(bytes.len(), at + 4 * 6 * (2 * 3 + 2));
    for i in (0..body).chain(dims_at) {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            let e = load_all(&b).expect_err("flipped header bit loaded");
            assert!(e.is_corruption(), "{e}");
        }
    }

    // Non-finite weights (first, last of the actor; a target critic's) and replay.
    let first_weight = body + 8;
    let mut nonfinite_at = vec![first_weight, at - 4, at - 4 * 6 * 8 - 4];
    nonfinite_at.push(dims_at_of_layer(&bytes, 13) + 8);
    for &i in &nonfinite_at {
        for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut b = bytes.clone();
            b[i..i + 4].copy_from_slice(&v.to_le_bytes());
            let e = load_all(&b).expect_err("non-finite value loaded");
            assert!(e.is_corruption(), "{e}");
        }
    }

    // Absurd values behind a valid header checksum.
    let absurd: [(usize, Vec<u8>); 9] = [
        (0, (1u32 << 30).to_le_bytes().to_vec()),  // state_dim
        (0, 0u32.to_le_bytes().to_vec()),          // state_dim
        (4, u32::MAX.to_le_bytes().to_vec()),      // hidden
        (8, (-1.0f64).to_le_bytes().to_vec()),     // actor_lr
        (24, 1.5f64.to_le_bytes().to_vec()),       // gamma
        (40, u32::MAX.to_le_bytes().to_vec()),     // batch
        (44, (1u32 << 31).to_le_bytes().to_vec()), // replay_capacity
        (80, f64::NAN.to_le_bytes().to_vec()),     // noise
        (96, 9u32.to_le_bytes().to_vec()),         // replay_len > capacity
    ];
    for (off, field) in absurd {
        let e = load_all(&patch_header(&bytes, off, &field)).expect_err("absurd header");
        assert!(e.is_corruption(), "{e}");
    }
    // A consistent header that promises more than is there.
    let big = patch_header(&bytes, 4, &(4000u32).to_le_bytes());
    assert!(load_all(&big).unwrap_err().is_corruption());
    // A newer version.
    let mut newer = bytes.clone();
    newer[4..8].copy_from_slice(&2u32.to_le_bytes());
    assert!(matches!(
        load_all(&newer),
        Err(Error::UnsupportedVersion { found: 2, .. })
    ));

    // Random byte damage anywhere: an error or a working agent, never a panic.
    let mut rng = SplitMix64(1234);
    let mut loaded = 0;
    for _ in 0..2000 {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(b.len());
            b[i] = rng.next_u64() as u8;
        }
        if let Ok(mut a) = load_all(&b) {
            loaded += 1;
            let _ = a.act(&[0.1, 0.2, 0.3], false);
            let _ = a.train(1);
        }
    }
    println!("random damage: {loaded} of 2000 damaged checkpoints still loaded");
}

/// Offset of the dimensions of layer `n` (0-based over all four networks) of a
/// `small_agent(4, ..)` checkpoint.
fn dims_at_of_layer(bytes: &[u8], n: usize) -> usize {
    let mut at = 12 + HEADER_LEN;
    for _ in 0..n {
        let out = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let inp = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        at += 8 + 4 * (out * inp + out);
    }
    at
}

fn time_train(label: &str) {
    let mut agent = DdpgAgent::new(DdpgConfig::new(8)).unwrap();
    let mut rng = SplitMix64(3);
    for _ in 0..200 {
        let s: Vec<f32> = (0..8).map(|_| rng.next_f64() as f32).collect();
        let s2: Vec<f32> = (0..8).map(|_| rng.next_f64() as f32).collect();
        agent.remember(&s, rng.next_f64() as f32, -(rng.next_f64() as f32), &s2);
    }
    agent.train(2).unwrap();
    let rounds = 10;
    let t0 = Instant::now();
    for _ in 0..rounds {
        agent.train(4).unwrap().unwrap();
    }
    let per = t0.elapsed().as_secs_f64() / rounds as f64;
    let t1 = Instant::now();
    for _ in 0..100 {
        agent.act(&[0.5; 8], true).unwrap();
    }
    let act = t1.elapsed().as_secs_f64() / 100.0;
    println!(
        "ddpg {label}: train(4) with batch 64, hidden 128, state_dim 8: {:.2} ms; \
         act: {:.1} us (RAYON_NUM_THREADS={:?})",
        per * 1e3,
        act * 1e6,
        std::env::var("RAYON_NUM_THREADS").ok()
    );
}

/// With discrete moves the critic's target is r + gamma times the target critic's best
/// move in the next state, not its value of the target actor's proposal.
#[test]
fn the_critic_target_takes_the_best_move() {
    let mut cfg = DdpgConfig::new(3);
    cfg.seed = 11;
    let moves = [-1.0f32, 0.0, 1.0];
    let agent = DdpgAgent::new(cfg).unwrap().with_discrete_moves(&moves);
    let states = [[0.1f32, 0.5, 0.9], [0.7, 0.2, 0.4]];
    let rewards = [-0.5f32, 0.25];
    let dev = &Device::Cpu;
    let s2 = Tensor::from_vec(states.concat(), (2, 3), dev).unwrap();
    let r = Tensor::from_vec(rewards.to_vec(), (2, 1), dev).unwrap();
    let y: Vec<f32> = agent
        .critic_target(&r, &s2)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    let gamma = agent.config().gamma as f32;
    for (i, s) in states.iter().enumerate() {
        let q_target = |m: f32| {
            let x = Tensor::from_vec([s.as_slice(), &[m]].concat(), (1, 4), dev).unwrap();
            agent
                .target_critic
                .forward(&x)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap()[0]
        };
        let best = moves.iter().map(|&m| q_target(m)).fold(f32::MIN, f32::max);
        let want = rewards[i] + gamma * best;
        assert!(
            (y[i] - want).abs() < 1e-5,
            "row {i}: {} against {want}",
            y[i]
        );
    }
}

#[test]
fn train_timing() {
    time_train(if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    });
}
