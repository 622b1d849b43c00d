//! `secagg`: secure aggregation, the SecAgg protocol of Bonawitz et al. (CCS'17), and
//! SecAgg+ (Bell et al., CCS'20) with `neighbors`. The server learns the sum of the
//! surviving clients' updates and nothing else about any one of them; attacks behind it
//! see that aggregate only ([`crate::fed::upload`]).
//!
//! One round, as the paper's semi-honest protocol, every message counted:
//! 1. *Advertise keys.* Each sampled client u makes two X25519 key pairs (c_u for the
//!    channel to each neighbour, s_u for the pairwise masks) and sends the public keys.
//! 2. *Share keys.* u draws a self-mask seed b_u and splits s_u's secret key and b_u
//!    into t-out-of-k Shamir shares (k: u and its neighbours — everyone else, or under
//!    SecAgg+ its neighbours on a random ring), u keeping one, each other encrypted for its neighbour v with
//!    ChaCha20-Poly1305 under a key derived from X25519(c_u, c_v); the server routes them.
//! 3. *Masked input.* A client may drop here (probability `dropout`). Each survivor u sends
//!    y_u = x_u + PRG(b_u) + Σ_v ±PRG(X25519(s_u, s_v)) in Z_{2^64}: x_u is its update
//!    times its FedAvg weight, and the weight, in fixed point (`fraction_bits`); the sign
//!    is + for u < v. PRG: AES-256-CTR keyed by SHA-256 of the seed (as Google's SecAgg).
//! 4. *Unmask.* Each survivor decrypts the shares it holds (a tampered ciphertext fails
//!    authentication) and hands the server, for each neighbour, the share of b_v (v
//!    survived) or of s_v's secret key (v dropped). With t shares the server rebuilds
//!    them (a rebuilt key must match the public key v advertised), removes the self
//!    masks and the masks survivors shared with dropped clients, and decodes the sum.
//!
//! Fewer than t surviving holders for any secret — too many dropouts — aborts the
//! round: nothing is aggregated, the model broadcast stays, the reason is reported. A
//! tampered share is an error that stops the run.
//!
//! With `dp` ([`DistributedDp`]) it is also DP-FedAvg with the noise added by the clients
//! in shares before they mask (distributed DP): the server never sees a sum without it.
//!
//! Cryptography from crates.io, not hand-written: `x25519-dalek` (dalek-cryptography,
//! constant-time key agreement), `chacha20poly1305` (RustCrypto AEAD), `sha2`
//! (RustCrypto) for key derivation, `aes` (RustCrypto; AES-256 in counter mode as the PRG,
//! the choice of Google's SecAgg implementation, VAES or AES-NI at run time) and `sharks` for
//! the secret sharing over GF(256) (at most 255 shares of a secret: a client and at
//! most 254 neighbours, so SecAgg over more than 255 clients needs `neighbors`). Keys are
//! drawn from the scenario's seeded streams — a simulation that repeats, not a
//! deployment.

use std::time::Instant;

use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use rand::{Rng as _, RngCore};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::error::{Error, Result};
use crate::fed::upload::{Combined, ProtocolCost, Upload, UploadContext, UploadProtocol};
use crate::fed::{ClientContext, Defense, ModelParams, RoundContext};
use crate::rng::{self, Rng};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecAggConfig {
    /// t as a share of the k holders of a client's shares (its neighbours and itself):
    /// t = ⌊threshold·k⌋ + 1 shares rebuild a secret (0.5: a majority, the paper's bound
    /// against a semi-honest server).
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// Probability that a client of the round drops after sharing its keys, before it
    /// sends its masked update (the protocol recovers its masks).
    #[serde(default)]
    pub dropout: f64,
    /// SecAgg+: each client masks with and shares to k neighbours on a random ring
    /// (⌊k/2⌋ on each side, redrawn each round) instead of all others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbors: Option<usize>,
    /// Fraction bits of the fixed-point encoding in Z_{2^64}.
    #[serde(default = "default_fraction_bits")]
    pub fraction_bits: u32,
    /// Distributed DP under the protocol (DP-FedAvg with the noise added by the clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp: Option<DistributedDp>,
}

/// Client-level DP with the noise added by the clients before they mask (distributed
/// DP): each client clips its update to L2 ≤ S and adds N(0, z²S²/m) per coordinate,
/// m = `min_clients`; a round that would release fewer than m contributions is aborted,
/// so every released sum carries noise of standard deviation at least z·S — the
/// Gaussian mechanism of DP-FedAvg, which the server never sees without its noise. The
/// mean update is that sum over q·N (every client weighs 1, as `dp-fedavg`), and ε comes
/// from the same Poisson-subsampled Gaussian accountant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistributedDp {
    /// S: the L2 bound of one client's update.
    pub clip: f64,
    /// z: the noise on a released sum has standard deviation at least z·S. Give this or
    /// `epsilon`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_multiplier: Option<f64>,
    /// The ε to spend over the scenario's rounds (z is then calibrated to it, as
    /// `dp-fedavg`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
    /// m: the fewest contributions a round may release; each client adds 1/m of the
    /// noise's variance.
    pub min_clients: usize,
    /// δ of the reported (ε, δ).
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// RDP → (ε, δ) conversion.
    #[serde(default)]
    pub conversion: crate::privacy::accountant::Conversion,
}

fn default_delta() -> f64 {
    1e-5
}

impl DistributedDp {
    /// z, given or calibrated to `epsilon` when the protocol was built.
    fn z(&self) -> f64 {
        self.noise_multiplier.expect("z is resolved when the protocol is built")
    }
}

fn default_threshold() -> f64 {
    0.5
}

fn default_fraction_bits() -> u32 {
    24
}

/// The most neighbours a client may have: with itself, it holds at most 255 shares of a
/// secret, as many as GF(256) has distinct nonzero points.
pub const MAX_NEIGHBORS: usize = 254;

impl super::DefenseConfig for SecAggConfig {
    /// It acts on the updates, whatever the samples were.
    const TASKS: &'static [crate::data::Task] = crate::data::Task::ALL;

    /// Per client and neighbour ≈ 0.24 ms for the keys (agreement, shares, their
    /// encryption); per parameter ≈ 8 ns per client (fixed point, the server's sum,
    /// decoding) and ≈ 1.3 ns per AES-256-CTR stream expanded (each client's self mask
    /// twice, by the client and by the server; each pair's mask once, [`mask_inputs`]),
    /// and under `dp` ≈ 17.5 ns per client for its share of the noise. In the units of
    /// the AVX2 host the time model is written in: measured on an AVX-512 host (one
    /// thread, 10 and 50 clients, EC-LDA's 1433 → 512 → 64) and scaled by the keys' cost,
    /// unchanged code, 2.4× slower on the AVX2 host. Before VAES and the in-place masking
    /// the per-parameter figures were 27 ns and 3.5 ns. Both ×1.15 since (9.2 and 1.5
    /// ns) against the defenses' factor the probes measure: a 20-round SecAgg run at
    /// EC-LDA's widths with 10 clients took 89 ms a round beyond the plain run (one
    /// thread, `farm-bench -n 5`) where the model gave 78 at the day's factor, and the
    /// Cora matrix's SecAgg runs 0.84× their estimate (2026-11-28).
    fn cost(&self, run: &super::RunSize) -> super::CostHint {
        let k = run.clients_per_round;
        let n = self.neighbors.map_or(k - 1.0, |n| (n as f64).min(k - 1.0));
        let noise = if self.dp.is_some() { 1.75e-8 * k } else { 0.0 };
        let per_parameter = 9.2e-9 * k + 1.5e-9 * k * (2.0 + n / 2.0) + noise;
        super::CostHint { seconds_per_round: 2.4e-4 * k * (1.0 + n) + per_parameter * run.parameters, ..Default::default() }
    }

    /// No role on one client's data or training: the clients upload through the protocol.
    fn build(&self, name: &str, _client: &ClientContext) -> Result<Defense> {
        self.check()?;
        Ok(Defense::new(name))
    }

    fn upload(&self, name: &str, ctx: &UploadContext) -> Result<Option<Box<dyn UploadProtocol>>> {
        self.check()?;
        if self.neighbors.is_none() && ctx.clients > MAX_NEIGHBORS + 1 {
            return Err(Error::param(
                "neighbors",
                format!(
                    "SecAgg over all {} clients would give each {} neighbours, and Shamir shares over GF(256) reach at most {MAX_NEIGHBORS}: set `neighbors` (SecAgg+, e.g. 32)",
                    ctx.clients,
                    ctx.clients - 1
                ),
            ));
        }
        let q = ctx.federation.client_fraction;
        let mut cfg = self.clone();
        if let Some(dp) = &mut cfg.dp {
            if !(dp.clip > 0.0 && dp.clip.is_finite()) {
                return Err(Error::param("dp.clip", format!("{} is not allowed: S must be a finite number > 0", dp.clip)));
            }
            super::dp_fedavg::check_noise("dp.", dp.noise_multiplier, dp.epsilon)?;
            if !(1..=ctx.clients).contains(&dp.min_clients) {
                return Err(Error::param("dp.min_clients", format!("{} is not allowed: 1..={} (the federation's clients)", dp.min_clients, ctx.clients)));
            }
            if !(dp.delta > 0.0 && dp.delta < 1.0) {
                return Err(Error::param("dp.delta", format!("{} is not allowed: δ must be in (0, 1)", dp.delta)));
            }
            super::dp_fedavg::poisson_rate(&format!("`{name}`'s `dp`"), ctx.federation)?;
            // The protocol runs with z resolved.
            dp.noise_multiplier = Some(super::dp_fedavg::noise_multiplier(
                "dp.",
                dp.noise_multiplier,
                dp.epsilon,
                q,
                ctx.federation.rounds,
                dp.delta,
                dp.conversion,
            )?);
        }
        Ok(Some(Box::new(SecAgg { name: name.to_string(), cfg, seed: ctx.seed, costs: Vec::new(), q, clients: ctx.clients })))
    }
}

impl SecAggConfig {
    fn check(&self) -> Result<()> {
        if !(self.threshold > 0.0 && self.threshold < 1.0) {
            return Err(Error::param("threshold", format!("{} is not in (0, 1): t = ⌊threshold·k⌋ + 1 of the k holders of a client's shares", self.threshold)));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::param("dropout", format!("{} is not a probability in [0, 1)", self.dropout)));
        }
        if let Some(k) = self.neighbors
            && !(2..=MAX_NEIGHBORS).contains(&k)
        {
            return Err(Error::param("neighbors", format!("{k} is not allowed; allowed 2..={MAX_NEIGHBORS}")));
        }
        if !(8..=40).contains(&self.fraction_bits) {
            return Err(Error::param("fraction_bits", format!("{} is not allowed; allowed 8..=40", self.fraction_bits)));
        }
        Ok(())
    }

    /// Shares needed to rebuild a secret held by `k` clients.
    fn t(&self, k: usize) -> usize {
        ((self.threshold * k as f64).floor() as usize + 1).min(k)
    }
}

/// One federation's protocol.
struct SecAgg {
    name: String,
    cfg: SecAggConfig,
    seed: u64,
    costs: Vec<ProtocolCost>,
    /// The sampling rate q and the federation's N (the fixed denominator under `dp`).
    q: f64,
    clients: usize,
}

/// A way to break the protocol on purpose, for its tests.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tamper {
    None,
    /// Flip a byte of the ciphertext client `from` sent `to` through the server.
    Ciphertext { from: usize, to: usize },
    /// Flip a byte of the share of a dropped client's key that `holder` hands the server.
    KeyShare { holder: usize },
}

/// One client's secrets in a round.
struct Keys {
    c: StaticSecret,
    s: StaticSecret,
    b: [u8; 32],
}

impl Keys {
    /// A client's two key pairs' secrets and its self-mask seed, from its stream `r`.
    fn draw(r: &mut Rng) -> Keys {
        let mut bytes = || {
            let mut b = [0u8; 32];
            r.fill_bytes(&mut b);
            b
        };
        Keys { c: StaticSecret::from(bytes()), s: StaticSecret::from(bytes()), b: bytes() }
    }
}

/// The encoded inputs of one round: per participant, its id and its vector in Z_{2^64}.
#[derive(Clone)]
pub(crate) struct RoundInput {
    pub round: u64,
    pub ids: Vec<usize>,
    pub inputs: Vec<Vec<u64>>,
    pub dropped: Vec<bool>,
}

const SHARE_LEN: usize = 33; // x, then 32 bytes of y

fn kdf(label: &str, parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(label.as_bytes());
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// The key of the AES-256-CTR keystream a 32-byte mask seed expands to.
fn prg_key(seed: &[u8; 32]) -> [u8; 32] {
    kdf("fgl-sim secagg prg", &[seed])
}

/// `y` + `x` (or with `subtract` `y` − `x`) in Z_{2^64}, value by value: a mask put on or
/// taken off, a masked input added to the server's sum.
fn add_wrapping(y: &mut [u64], x: &[u64], subtract: bool) {
    #[cfg(target_arch = "x86_64")]
    match crate::simd::Isa::current() {
        // SAFETY: the CPU has AVX-512F (part of the set it has).
        crate::simd::Isa::Avx512 => return unsafe { add_wrapping_avx512(y, x, subtract) },
        // SAFETY: the CPU has AVX2 (as above).
        crate::simd::Isa::Avx2 => return unsafe { add_wrapping_avx2(y, x, subtract) },
        crate::simd::Isa::Portable => {}
    }
    add_wrapping_portable(y, x, subtract)
}

/// The same loop for 512-bit vectors (integer sums: the width changes no value).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn add_wrapping_avx512(y: &mut [u64], x: &[u64], subtract: bool) {
    add_wrapping_portable(y, x, subtract)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_wrapping_avx2(y: &mut [u64], x: &[u64], subtract: bool) {
    add_wrapping_portable(y, x, subtract)
}

#[inline(always)]
fn add_wrapping_portable(y: &mut [u64], x: &[u64], subtract: bool) {
    if subtract {
        y.iter_mut().zip(x).for_each(|(a, m)| *a = a.wrapping_sub(*m));
    } else {
        y.iter_mut().zip(x).for_each(|(a, m)| *a = a.wrapping_add(*m));
    }
}

/// Adds to `y` (or with `subtract` takes from it) the mask a 32-byte seed expands to:
/// `y.len()` values of Z_{2^64} from the AES-256-CTR keystream keyed by SHA-256 of the
/// seed (the server's unmasking; the clients' masks: [`mask_inputs`]). A 4 KiB block
/// at a time stays in L1.
fn apply_mask(y: &mut [u64], seed: &[u8; 32], subtract: bool) {
    let mut stream = rng::Keystream::new(prg_key(seed));
    let mut block = [0u64; 512];
    for chunk in y.chunks_mut(block.len()) {
        let mask = &mut block[..chunk.len()];
        stream.fill(mask);
        add_wrapping(chunk, mask, subtract);
    }
}

/// Step 3: each survivor's input x_u becomes its masked input y_u = x_u + PRG(b_u) +
/// Σ_v ±PRG(s_uv), in place (a dropped client's input is never sent: left as it is).
/// Two survivors expand the same keystream for the mask they share
/// (X25519 agrees: s_u·S_v = s_v·S_u), so it is expanded once and added to one, taken
/// from the other: the values each client would compute, for about half the keystream.
/// The work goes a block of coordinates at a time (CTR mode seeks), every client's block
/// in cache while all its masks are applied, the blocks spread over the threads.
fn mask_inputs(input: &mut RoundInput, keys: &[Keys], s_pk: &[PublicKey], neighbours: &[Vec<usize>]) {
    let RoundInput { ids, inputs, dropped, .. } = input;
    let survivors: Vec<usize> = (0..ids.len()).filter(|&u| !dropped[u]).collect();
    let len = inputs.first().map_or(0, Vec::len);
    /// A keystream's key and who applies it: (slot k in `survivors`, adds it or takes it).
    type Stream = ([u8; 32], Vec<(usize, bool)>);
    let slot = |u: usize| survivors.iter().position(|&x| x == u).expect("a survivor");
    let mut streams: Vec<Stream> = Vec::new();
    for (k, &u) in survivors.iter().enumerate() {
        streams.push((prg_key(&keys[u].b), vec![(k, true)]));
        for &v in &neighbours[u] {
            // u adds the pair's mask if ids[u] < ids[v]; a surviving v takes it (its
            // own sign is the opposite), so the pair is expanded once, from its lower slot.
            let add = ids[u] < ids[v];
            if !dropped[v] && v < u {
                continue;
            }
            let key = prg_key(keys[u].s.diffie_hellman(&s_pk[v]).as_bytes());
            let mut users = vec![(k, add)];
            if !dropped[v] {
                users.push((slot(v), !add));
            }
            streams.push((key, users));
        }
    }
    // blocks[b][k]: survivor k's coordinates of block b.
    let mut blocks: Vec<Vec<&mut [u64]>> = (0..len.div_ceil(BLOCK)).map(|_| Vec::with_capacity(survivors.len())).collect();
    for (y, _) in inputs.iter_mut().zip(dropped.iter()).filter(|(_, d)| !**d) {
        for (b, chunk) in y.chunks_mut(BLOCK).enumerate() {
            blocks[b].push(chunk);
        }
    }
    blocks.into_par_iter().enumerate().for_each(|(b, mut ys)| {
        let mut mask = [0u64; BLOCK];
        let n = ys.first().map_or(0, |y| y.len());
        for (key, users) in &streams {
            let mask = &mut mask[..n];
            rng::Keystream::at(*key, (b * BLOCK) as u64).fill(mask);
            for &(k, add) in users {
                add_wrapping(ys[k], mask, !add);
            }
        }
    });
}

/// The coordinates a block of the masking and of the server's sum covers: 32 KiB of each
/// vector, in cache while all its masks (or all the survivors' inputs) are added.
const BLOCK: usize = 4096;

fn nonce(round: u64, from: usize, to: usize) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..4].copy_from_slice(&(round as u32).to_le_bytes());
    n[4..8].copy_from_slice(&(from as u32).to_le_bytes());
    n[8..].copy_from_slice(&(to as u32).to_le_bytes());
    n
}

impl SecAgg {
    /// Each participant's neighbours (indices into the round's participants): all
    /// others, or ⌊k/2⌋ on each side of a ring in a random order drawn for the round.
    fn neighbours(&self, round: u64, n: usize) -> Vec<Vec<usize>> {
        match self.cfg.neighbors {
            Some(k) if k < n - 1 => {
                let mut order: Vec<usize> = (0..n).collect();
                rand::seq::SliceRandom::shuffle(order.as_mut_slice(), &mut rng::derive(self.seed, "secagg-ring", &[round]));
                let mut pos = vec![0; n];
                for (p, &i) in order.iter().enumerate() {
                    pos[i] = p;
                }
                let half = (k / 2).max(1);
                (0..n)
                    .map(|i| {
                        let mut v: Vec<usize> = (1..=half).flat_map(|d| [order[(pos[i] + d) % n], order[(pos[i] + n - d) % n]]).collect();
                        v.sort_unstable();
                        v.dedup();
                        v
                    })
                    .collect()
            }
            _ => (0..n).map(|i| (0..n).filter(|&j| j != i).collect()).collect(),
        }
    }

    /// Who holds shares of each participant's secrets: its neighbours and itself (as the
    /// paper, where a client shares with every client of the round, itself included),
    /// ascending.
    fn holders(neighbours: &[Vec<usize>]) -> Vec<Vec<usize>> {
        neighbours
            .iter()
            .enumerate()
            .map(|(u, v)| {
                let mut h = v.clone();
                h.push(u);
                h.sort_unstable();
                h
            })
            .collect()
    }

    /// The protocol for one round: the sum of the survivors' inputs in Z_{2^64} (`None`
    /// when too few shares survived to unmask it: the round is aborted, its reason in
    /// the cost), and what it cost. Tampering is an error. `tamper` breaks the protocol
    /// on purpose (tests).
    pub(crate) fn aggregate(&self, mut input: RoundInput, tamper: Tamper) -> Result<(Option<Vec<u64>>, ProtocolCost)> {
        let t0 = Instant::now();
        let (round, n) = (input.round, input.ids.len());
        let len = input.inputs.first().map_or(0, Vec::len);
        let (ids, dropped) = (input.ids.clone(), input.dropped.clone());
        let neighbours = self.neighbours(round, n);
        let holders = Self::holders(&neighbours);
        let fail = |msg: String| Error::Other(format!("secure aggregation, round {round}: {msg}; nothing aggregated"));
        let n_dropped = dropped.iter().filter(|&&d| d).count();
        let cost = |bytes_sent: &[f64], server_bytes: f64, aborted: Option<String>| ProtocolCost {
            clients: n,
            dropped: n_dropped,
            bytes_per_client: bytes_sent.iter().sum::<f64>() / n.max(1) as f64,
            server_bytes,
            aborted: aborted.map(|msg| format!("{msg}: round aborted, nothing aggregated")),
            ms: t0.elapsed().as_secs_f64() * 1e3,
        };

        // 1. Keys, from each client's own stream.
        let keys: Vec<Keys> = ids
            .iter()
            .map(|&id| Keys::draw(&mut rng::derive(self.seed, "secagg-keys", &[round, id as u64])))
            .collect();
        let c_pk: Vec<PublicKey> = keys.iter().map(|k| PublicKey::from(&k.c)).collect();
        let s_pk: Vec<PublicKey> = keys.iter().map(|k| PublicKey::from(&k.s)).collect();
        let mut bytes_sent = vec![64.0f64; n]; // two public keys each
        let mut server_bytes = 64.0 * n as f64 + 64.0 * n as f64 * n as f64; // received, then broadcast to all

        // 2. Shares of s_u's secret key and of b_u, one per holder: u keeps its own, the
        // others travel encrypted. sealed[u][slot]: for holders[u][slot].
        let sealed: Vec<Vec<Vec<u8>>> = (0..n)
            .into_par_iter()
            .map(|u| {
                let k = holders[u].len();
                let t = self.cfg.t(k);
                let mut r = rng::derive(self.seed, "secagg-shares", &[round, ids[u] as u64]);
                let s_shares = shamir::split(&keys[u].s.to_bytes(), t, k, &mut r);
                let b_shares = shamir::split(&keys[u].b, t, k, &mut r);
                holders[u]
                    .iter()
                    .enumerate()
                    .map(|(slot, &v)| {
                        if v == u {
                            return [s_shares[slot].as_slice(), b_shares[slot].as_slice()].concat(); // kept, not sent
                        }
                        let key = kdf("fgl-sim secagg channel", &[keys[u].c.diffie_hellman(&c_pk[v]).as_bytes()]);
                        let mut plain = Vec::with_capacity(8 + 2 * SHARE_LEN);
                        plain.extend((ids[u] as u32).to_le_bytes());
                        plain.extend((ids[v] as u32).to_le_bytes());
                        plain.extend(&s_shares[slot]);
                        plain.extend(&b_shares[slot]);
                        ChaCha20Poly1305::new(Key::from_slice(&key))
                            .encrypt(Nonce::from_slice(&nonce(round, ids[u], ids[v])), plain.as_slice())
                            .expect("encryption of a short message")
                    })
                    .collect()
            })
            .collect();
        for u in 0..n {
            let out: f64 = holders[u].iter().zip(&sealed[u]).filter(|(v, _)| **v != u).map(|(_, c)| c.len() as f64).sum();
            bytes_sent[u] += out;
            server_bytes += 2.0 * out; // received and forwarded
        }
        let mut sealed = sealed;
        if let Tamper::Ciphertext { from, to } = tamper
            && let Some(slot) = holders[from].iter().position(|&v| v == to && v != from)
        {
            sealed[from][slot][10] ^= 1;
        }

        // 3. Masked inputs of the survivors (summed in Z_{2^64}: order does not matter).
        let survivors: Vec<usize> = (0..n).filter(|&u| !dropped[u]).collect();
        if survivors.is_empty() {
            return Ok((None, cost(&bytes_sent, server_bytes, Some("no client of the round survived to send its masked update".into()))));
        }
        mask_inputs(&mut input, &keys, &s_pk, &neighbours);
        for &u in &survivors {
            bytes_sent[u] += 8.0 * len as f64;
            server_bytes += 8.0 * len as f64;
        }

        // 4. Unmasking: each survivor opens what it holds and hands over one share per
        // neighbour; the server rebuilds every secret from t of them.
        let mut b_shares: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
        let mut s_shares: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
        for &v in &survivors {
            for &u in &holders[v] {
                let slot = holders[u].iter().position(|&x| x == v).expect("holders are mutual");
                let plain = if u == v {
                    sealed[u][slot].clone()
                } else {
                    let key = kdf("fgl-sim secagg channel", &[keys[v].c.diffie_hellman(&c_pk[u]).as_bytes()]);
                    let opened = ChaCha20Poly1305::new(Key::from_slice(&key))
                        .decrypt(Nonce::from_slice(&nonce(round, ids[u], ids[v])), sealed[u][slot].as_slice())
                        .map_err(|_| {
                            fail(format!(
                                "the shares client {} sent client {} through the server failed authentication (tampered with in transit)",
                                ids[u], ids[v]
                            ))
                        })?;
                    if opened[..4] != (ids[u] as u32).to_le_bytes() || opened[4..8] != (ids[v] as u32).to_le_bytes() {
                        return Err(fail(format!("client {} received shares addressed to someone else", ids[v])));
                    }
                    opened[8..].to_vec()
                };
                let (s, b) = plain.split_at(SHARE_LEN);
                if dropped[u] {
                    let mut s = s.to_vec();
                    if tamper == (Tamper::KeyShare { holder: ids[v] }) {
                        s[5] ^= 1;
                    }
                    s_shares[u].push(s);
                } else {
                    b_shares[u].push(b.to_vec());
                }
                bytes_sent[v] += SHARE_LEN as f64;
                server_bytes += SHARE_LEN as f64;
            }
        }
        // The server adds up the masked inputs it received, a block at a time.
        let mut masked: Vec<Vec<u64>> = input.inputs.into_iter().zip(&dropped).filter(|(_, d)| !**d).map(|(y, _)| y).collect();
        let mut sum = masked.swap_remove(0);
        sum.par_chunks_mut(BLOCK).enumerate().for_each(|(b, s)| {
            for y in &masked {
                add_wrapping(s, &y[b * BLOCK..][..s.len()], false);
            }
        });
        for &u in &survivors {
            let t = self.cfg.t(holders[u].len());
            if b_shares[u].len() < t {
                return Ok((None, cost(&bytes_sent, server_bytes, Some(format!(
                    "{} holders of client {}'s self-mask shares survived to hand them in; it takes t = {t}",
                    b_shares[u].len(),
                    ids[u]
                )))));
            }
            let b: [u8; 32] = shamir::recover(&b_shares[u], t).map_err(|e| fail(format!("client {}'s self mask: {e}", ids[u])))?;
            apply_mask(&mut sum, &b, true);
        }
        for u in (0..n).filter(|&u| dropped[u]) {
            let survivors_near: Vec<usize> = neighbours[u].iter().copied().filter(|&v| !dropped[v]).collect();
            if survivors_near.is_empty() {
                continue; // nobody masked with it
            }
            let t = self.cfg.t(holders[u].len());
            if s_shares[u].len() < t {
                return Ok((None, cost(&bytes_sent, server_bytes, Some(format!(
                    "client {} dropped and only {} holders of its key's shares survived to hand them in; it takes t = {t} (too many dropouts)",
                    ids[u],
                    s_shares[u].len()
                )))));
            }
            let sk: [u8; 32] = shamir::recover(&s_shares[u], t).map_err(|e| fail(format!("client {}'s key: {e}", ids[u])))?;
            let sk = StaticSecret::from(sk);
            if PublicKey::from(&sk) != s_pk[u] {
                return Err(fail(format!(
                    "the key rebuilt for dropped client {} does not match the public key it advertised: a share was tampered with",
                    ids[u]
                )));
            }
            for v in survivors_near {
                let seed = *sk.diffie_hellman(&s_pk[v]).as_bytes();
                // v added +mask if ids[v] < ids[u], −mask otherwise: take it back.
                let added = ids[v] < ids[u];
                apply_mask(&mut sum, &seed, added);
            }
        }
        Ok((Some(sum), cost(&bytes_sent, server_bytes, None)))
    }
}

/// One protocol round over `clients` random inputs of `len` values with the first
/// `dropped` clients dropping out (`fgl-sim bench secagg`): what it cost.
pub fn time_round(cfg: &SecAggConfig, clients: usize, len: usize, dropped: usize, seed: u64) -> Result<ProtocolCost> {
    cfg.check()?;
    let protocol = SecAgg { name: "secagg".into(), cfg: cfg.clone(), seed, costs: Vec::new(), q: 1.0, clients };
    let mut r = rng::derive(seed, "bench-secagg", &[]);
    let input = RoundInput {
        round: 1,
        ids: (0..clients).collect(),
        inputs: (0..clients).map(|_| (0..len).map(|_| r.random::<u64>()).collect()).collect(),
        dropped: (0..clients).map(|i| i < dropped).collect(),
    };
    Ok(protocol.aggregate(input, Tamper::None)?.1)
}

/// Fixed point in Z_{2^64}: round(v·2^f) (half away from zero, as `f64::round`) as a
/// two's-complement i64; `None` unless |v·2^f| < 2^62.
fn encode(v: f64, scale: f64) -> Option<u64> {
    let x = v * scale;
    if x.is_nan() || x.abs() >= 2f64.powi(62) {
        return None;
    }
    // f64::round without its library call (no SSE4.1 in the baseline target): the cast
    // truncates exactly here, and x − trunc(x) is exact (a float's fractional part is
    // representable; from 2^52 on x is an integer and it is 0). No branch on the
    // fraction: it is a coin toss on real updates, and mispredicted half the time.
    let t = x as i64;
    let frac = x - t as f64;
    Some((t + i64::from(frac >= 0.5) - i64::from(frac <= -0.5)) as u64)
}

/// `values` (then `last`) in fixed point, each |v| < `limit` (else `None`).
fn encode_all(values: impl Iterator<Item = f64>, last: f64, len: usize, scale: f64, limit: f64) -> Option<Vec<u64>> {
    let mut out = Vec::with_capacity(len + 1);
    values.chain([last]).try_for_each(|v| {
        out.push(encode(v, scale).filter(|_| v.abs() < limit)?);
        Some(())
    })?;
    Some(out)
}

fn decode(x: u64, scale: f64) -> f64 {
    x as i64 as f64 / scale
}

impl UploadProtocol for SecAgg {
    fn name(&self) -> &str {
        &self.name
    }

    fn hides_updates(&self) -> bool {
        true
    }

    /// Each client's input is wᵢ·Δᵢ and wᵢ in fixed point; the server decodes their sums
    /// and divides: FedAvg over the survivors, up to rounding (≤ n·2^-(f+1) per coordinate
    /// of the weighted sum).
    fn combine(&mut self, ctx: &RoundContext, _reference: &ModelParams, uploads: &[Upload<'_>], rng: &mut Rng) -> Result<Combined> {
        let scale = 2f64.powi(self.cfg.fraction_bits as i32);
        let limit = 2f64.powi(62) / scale / uploads.len().max(1) as f64;
        let ids: Vec<usize> = uploads.iter().map(|u| u.client).collect();
        let len: usize = uploads.first().map_or(0, |u| u.sent.tensors.iter().map(|t| t.values.len()).sum());
        // Each client encodes its own input (in parallel: one client's work, no shared state).
        let inputs = uploads
            .par_iter()
            .map(|u| {
                let encoded = match &self.cfg.dp {
                    None => {
                        let w = u.weight as f64;
                        encode_all(u.delta_values().map(|d| w * d), w, len, scale, limit)
                    }
                    // The client's own step before it masks: clip, add its share of the noise.
                    Some(dp) => {
                        let shrink = crate::privacy::clip_scale(crate::privacy::l2_norm(u.delta_values()), dp.clip);
                        let std = dp.z() * dp.clip / (dp.min_clients as f64).sqrt();
                        let mut r = rng::derive(self.seed, "secagg-dp-noise", &[ctx.round as u64, u.client as u64]);
                        let noise = rng::standard_normals(&mut r, len);
                        encode_all(u.delta_values().zip(noise).map(|(v, z)| v * shrink + std * z), 1.0, len, scale, limit)
                    }
                };
                encoded.ok_or_else(|| {
                    Error::Other(format!(
                        "secure aggregation, round {}: client {}'s weighted update does not fit {} fraction bits in Z_2^64 (|w·Δ| must stay below {limit:.3e}); lower `fraction_bits`",
                        ctx.round, u.client, self.cfg.fraction_bits
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let dropped: Vec<bool> = uploads.iter().map(|_| rng.random::<f64>() < self.cfg.dropout).collect();
        if uploads.is_empty() {
            self.costs.push(ProtocolCost::default());
            return Ok(Combined { mean_update: Vec::new(), contributors: Vec::new(), weight: 0 });
        }
        let input = RoundInput { round: ctx.round as u64, ids: ids.clone(), inputs, dropped: dropped.clone() };
        let (sum, cost) = self.aggregate(input, Tamper::None)?;
        self.costs.push(cost);
        // Too many dropouts: the round is aborted (its reason in the report), the model
        // broadcast stays.
        let Some(sum) = sum else { return Ok(Combined { mean_update: Vec::new(), contributors: Vec::new(), weight: 0 }) };
        let mut total = decode(*sum.last().expect("the weight is the last value"), scale);
        let contributors: Vec<usize> = ids.iter().zip(&dropped).filter(|(_, d)| !**d).map(|(&i, _)| i).collect();
        if let Some(dp) = &self.cfg.dp {
            if contributors.len() < dp.min_clients {
                let why = format!(
                    "{} contribution(s), fewer than dp.min_clients = {}: the sum would carry less than its noise; round aborted, nothing aggregated",
                    contributors.len(),
                    dp.min_clients
                );
                if let Some(last) = self.costs.last_mut() {
                    last.aborted = Some(why);
                }
                return Ok(Combined { mean_update: Vec::new(), contributors: Vec::new(), weight: 0 });
            }
            total = self.q * self.clients as f64; // the fixed denominator
        }
        let weight: usize = uploads.iter().zip(&dropped).filter(|(_, d)| !**d).map(|(u, _)| u.weight).sum();
        if weight == 0 {
            return Ok(Combined { mean_update: Vec::new(), contributors, weight });
        }
        let shapes: Vec<usize> = uploads[0].sent.tensors.iter().map(|t| t.values.len()).collect();
        let mut rest = &sum[..sum.len() - 1];
        let mean_update = shapes
            .iter()
            .map(|&n| {
                let (tensor, tail) = rest.split_at(n);
                rest = tail;
                tensor.iter().map(|&x| decode(x, scale) / total).collect()
            })
            .collect();
        Ok(Combined { mean_update, contributors, weight })
    }

    fn costs(&self) -> Vec<ProtocolCost> {
        self.costs.clone()
    }

    fn privacy_spent(&self, rounds: usize) -> Option<crate::privacy::PrivacyCost> {
        let dp = self.cfg.dp.as_ref()?;
        let (epsilon, delta) =
            crate::privacy::accountant::subsampled_gaussian_spent(self.q, dp.z(), rounds as u64, dp.delta, dp.conversion)
                .expect("parameters checked when built");
        Some(crate::privacy::PrivacyCost {
            protects: format!(
                "the client's whole dataset, client-level (ε, δ)-DP over {rounds} round(s) of Poisson sampling at q = {}: updates clipped to L2 ≤ {}, each client adding 1/{} of the noise (z = {}) before masking — distributed DP: against the server too, which sees only noised sums of at least {} contributions",
                self.q,
                dp.clip,
                dp.min_clients,
                dp.z(),
                dp.min_clients
            ),
            epsilon,
            delta,
            noise_multiplier: Some(dp.z()),
            ..Default::default()
        })
    }

    /// The rounds' costs so far (their wall times are not kept: they are not results).
    fn save_state(&self) -> Result<Vec<u8>> {
        crate::fed::checkpoint::encode(&self.costs)
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<()> {
        self.costs = if state.is_empty() { Vec::new() } else { crate::fed::checkpoint::decode(state, "secure aggregation's costs")? };
        Ok(())
    }
}

/// Shamir's t-out-of-k secret sharing of 32-byte secrets, through the `sharks` crate
/// (GF(256), one polynomial per byte). Shares travel as bytes: x, then the 32 y's.
mod shamir {
    use sharks::{Share, Sharks};

    use crate::rng::{self, Rng};

    /// `k` shares of `secret`, any `t` of which rebuild it; the polynomials' coefficients
    /// come from `rng`.
    pub fn split(secret: &[u8; 32], t: usize, k: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
        let mut r = rng::for_rand_08(rng);
        let dealer = Sharks(t as u8).dealer_rng(secret, &mut r);
        dealer.take(k).map(|s| Vec::from(&s)).collect()
    }

    /// The secret from at least `t` shares (the first `t` distinct ones are used).
    pub fn recover(shares: &[Vec<u8>], t: usize) -> Result<[u8; 32], String> {
        let shares: Vec<Share> = shares.iter().map(|b| Share::try_from(b.as_slice())).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
        let secret = Sharks(t as u8).recover(shares.as_slice()).map_err(|e| e.to_string())?;
        secret.try_into().map_err(|_| "the rebuilt secret is not 32 bytes".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fed::ParamTensor;

    fn protocol(neighbors: Option<usize>, dropout: f64) -> SecAgg {
        let cfg = SecAggConfig { threshold: 0.5, dropout, neighbors, fraction_bits: 24, dp: None };
        SecAgg { name: "secagg".into(), cfg, seed: 3, costs: Vec::new(), q: 1.0, clients: 10 }
    }

    /// Σ wᵢ·Δᵢ / Σ wᵢ over the uploads with weight > 0 (FedAvg on updates), in f64 in order.
    fn weighted_mean_update(uploads: &[Upload<'_>]) -> Combined {
        let total: usize = uploads.iter().map(|u| u.weight).sum();
        let contributors: Vec<usize> = uploads.iter().filter(|u| u.weight > 0).map(|u| u.client).collect();
        let mut sum: Option<Vec<Vec<f64>>> = None;
        for u in uploads.iter().filter(|u| u.weight > 0) {
            let w = u.weight as f64;
            let d = u.delta();
            match sum.as_mut() {
                None => sum = Some(d.into_iter().map(|t| t.into_iter().map(|v| w * v).collect()).collect()),
                Some(s) => {
                    for (a, t) in s.iter_mut().zip(d) {
                        for (x, v) in a.iter_mut().zip(t) {
                            *x += w * v;
                        }
                    }
                }
            }
        }
        let mean_update = sum.map(|s| s.into_iter().map(|t| t.into_iter().map(|v| v / total as f64).collect()).collect()).unwrap_or_default();
        Combined { mean_update, contributors, weight: total }
    }

    /// Inputs of `n` clients (ids 10, 11, …) of `len` values spread over Z_{2^64}.
    fn round_input(n: usize, len: usize, dropped: &[usize]) -> RoundInput {
        let mut r = rng::derive(9, "test-inputs", &[]);
        RoundInput {
            round: 4,
            ids: (0..n).map(|i| 10 + i).collect(),
            inputs: (0..n).map(|_| (0..len).map(|_| r.random::<u64>()).collect()).collect(),
            dropped: (0..n).map(|i| dropped.contains(&i)).collect(),
        }
    }

    fn plain_sum(input: &RoundInput) -> Vec<u64> {
        let len = input.inputs[0].len();
        let mut s = vec![0u64; len];
        for (x, _) in input.inputs.iter().zip(&input.dropped).filter(|(_, d)| !**d) {
            for (a, v) in s.iter_mut().zip(x) {
                *a = a.wrapping_add(*v);
            }
        }
        s
    }

    /// The survivors' masked inputs are those each client computes alone — its input, its
    /// self mask, ± each neighbour's pair mask, every mask its own expansion of the seed —
    /// across blocks of coordinates and with dropped neighbours.
    #[test]
    fn masked_inputs_are_what_each_client_computes() {
        for (neighbors, n, len, dropped) in [(None, 6, 300, vec![]), (None, 6, 10_000, vec![1, 4]), (Some(4), 9, 8193, vec![0, 5])] {
            let input = round_input(n, len, &dropped);
            let p = protocol(neighbors, 0.0);
            let neighbours = p.neighbours(input.round, n);
            let keys: Vec<Keys> = (0..n).map(|u| Keys::draw(&mut rng::derive(u as u64, "test-keys", &[]))).collect();
            let s_pk: Vec<PublicKey> = keys.iter().map(|k| PublicKey::from(&k.s)).collect();
            let survivors: Vec<usize> = (0..n).filter(|u| !dropped.contains(u)).collect();
            let by_each: Vec<Vec<u64>> = survivors
                .iter()
                .map(|&u| {
                    let mut y = input.inputs[u].clone();
                    apply_mask(&mut y, &keys[u].b, false);
                    for &v in &neighbours[u] {
                        let seed = *keys[u].s.diffie_hellman(&s_pk[v]).as_bytes();
                        apply_mask(&mut y, &seed, input.ids[u] > input.ids[v]);
                    }
                    y
                })
                .collect();
            let mut masked = input.clone();
            mask_inputs(&mut masked, &keys, &s_pk, &neighbours);
            let sent: Vec<Vec<u64>> = survivors.iter().map(|&u| masked.inputs[u].clone()).collect();
            assert_eq!(sent, by_each, "{neighbors:?}, n = {n}, len {len}");
            for &u in &dropped {
                assert_eq!(masked.inputs[u], input.inputs[u], "a dropped client's input is left as it is");
            }
        }
    }

    /// The fixed-point encoding rounds as `f64::round` (half away from zero) everywhere
    /// below 2^62: halves, near-halves, both signs, large values, the bound itself.
    #[test]
    fn encode_rounds_as_f64_round() {
        let scale = 2f64.powi(24);
        let mut r = rng::derive(3, "test-encode", &[]);
        let mut xs: Vec<f64> = vec![0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994];
        xs.extend([4503599627370495.5, -4503599627370495.5, 2f64.powi(52), 2f64.powi(53) + 2.0, -(2f64.powi(61) + 2048.0)]);
        xs.extend((0..20_000).map(|i| {
            let m = r.random::<f64>() * 2.0 - 1.0;
            let half = (r.random_range(-1000i64..1000) as f64 + 0.5) * if i % 3 == 0 { 1.0 } else { 0.0 };
            if i % 2 == 0 { m * 2f64.powi(r.random_range(-30..62)) } else { half + m * 1e-9 * f64::from(i % 5) }
        }));
        for x in xs {
            let want = (x.abs() < 2f64.powi(62)).then(|| x.round() as i64 as u64);
            assert_eq!(encode(x / scale, scale), want, "{x}");
        }
        for x in [2f64.powi(62), -2f64.powi(62), f64::INFINITY, f64::NAN] {
            assert_eq!(encode(x / scale, scale), None, "{x}");
        }
    }

    /// The masks cancel: the server's result is exactly the survivors' sum in Z_{2^64},
    /// under SecAgg and SecAgg+, with and without dropouts.
    #[test]
    fn the_server_gets_exactly_the_survivors_sum() {
        for (neighbors, n, len, dropped) in [(None, 6, 300, vec![]), (None, 6, 9000, vec![1, 4]), (Some(6), 12, 300, vec![0, 5]), (Some(6), 9, 300, vec![])] {
            let input = round_input(n, len, &dropped);
            let (sum, cost) = protocol(neighbors, 0.0).aggregate(input.clone(), Tamper::None).unwrap();
            assert_eq!(sum, Some(plain_sum(&input)), "{neighbors:?}, n = {n}, dropped {dropped:?}");
            assert_eq!(cost.aborted, None);
            assert_eq!((cost.clients, cost.dropped), (n, dropped.len()));
            assert!(cost.bytes_per_client > 8.0 * len as f64 * (n - dropped.len()) as f64 / n as f64);
        }
    }

    /// A ciphertext changed by the server (or on the way) fails authentication; a share
    /// of a dropped client's key changed by the client handing it in rebuilds a key that
    /// does not match the one it advertised. Either way: an error, nothing aggregated.
    #[test]
    fn tampering_is_caught_and_nothing_is_aggregated() {
        let input = round_input(6, 50, &[0]);
        let err = protocol(None, 0.0).aggregate(input.clone(), Tamper::Ciphertext { from: 2, to: 3 }).unwrap_err().to_string();
        assert!(err.contains("client 12 sent client 13") && err.contains("failed authentication") && err.contains("nothing aggregated"), "{err}");
        // Client 10 (index 0) dropped; its first surviving neighbour, 11, hands in a bad share.
        let err = protocol(None, 0.0).aggregate(input.clone(), Tamper::KeyShare { holder: 11 }).unwrap_err().to_string();
        assert!(err.contains("does not match the public key") && err.contains("nothing aggregated"), "{err}");
        assert!(protocol(None, 0.0).aggregate(input, Tamper::KeyShare { holder: 99 }).is_ok());
    }

    /// t = ⌊k/2⌋ + 1 shares rebuild a secret: 6 clients (k = 6 holders, t = 4) survive 2
    /// dropouts, not 3 (3 survivors hold 3 shares of each secret): then the round is
    /// aborted with its reason, and `combine` leaves the model as it was sent.
    #[test]
    fn too_many_dropouts_abort_the_round() {
        assert!(protocol(None, 0.0).aggregate(round_input(6, 10, &[0, 1]), Tamper::None).unwrap().0.is_some());
        let (sum, cost) = protocol(None, 0.0).aggregate(round_input(6, 10, &[0, 1, 2]), Tamper::None).unwrap();
        let why = cost.aborted.expect("aborted");
        assert!(sum.is_none() && why.contains("it takes t = 4") && why.contains("nothing aggregated"), "{why}");
        // Every client drops: the round's update is empty, nobody contributed.
        let sent = upload_params(&[1.0]);
        let back = upload_params(&[2.0]);
        let uploads: Vec<Upload<'_>> = (0..4).map(|i| Upload { client: i, sent: &sent, returned: &back, weight: 1 }).collect();
        let mut p = protocol(None, 0.999);
        let c = p.combine(&RoundContext { round: 1, rounds: 1 }, &sent, &uploads, &mut rng::derive(0, "t", &[])).unwrap();
        assert!(c.mean_update.is_empty() && c.contributors.is_empty() && p.costs()[0].aborted.is_some());
    }

    fn upload_params(values: &[f32]) -> ModelParams {
        ModelParams { tensors: vec![ParamTensor { name: "w".into(), shape: vec![values.len()], values: values.to_vec() }] }
    }

    /// Through `combine`: FedAvg of the survivors' updates, to the fixed-point error
    /// (n·2^-25 on the weighted sum, over the total weight), with the dropouts drawn from
    /// the round's stream and left out of the contributors.
    #[test]
    fn combine_is_fedavg_of_the_survivors_to_fixed_point_error() {
        let sent = upload_params(&[0.5, -1.0, 2.0]);
        let returned: Vec<ModelParams> =
            (0..10).map(|i| upload_params(&[0.5 + 0.01 * i as f32, -1.0 - 0.003 * i as f32, 2.0 + 1e-4 * (i * i) as f32])).collect();
        let uploads: Vec<Upload<'_>> =
            returned.iter().enumerate().map(|(i, r)| Upload { client: i, sent: &sent, returned: r, weight: 5 + 3 * i }).collect();
        let ctx = RoundContext { round: 2, rounds: 3 };
        for dropout in [0.0, 0.3] {
            let mut p = protocol(None, dropout);
            let c = p.combine(&ctx, &sent, &uploads, &mut rng::derive(1, "upload-protocol", &[2])).unwrap();
            let kept: Vec<Upload<'_>> = uploads.iter().copied().filter(|u| c.contributors.contains(&u.client)).collect();
            if dropout == 0.0 {
                assert_eq!(kept.len(), 10);
            } else {
                assert!(kept.len() < 10 && kept.len() >= 5, "{} survived", kept.len());
            }
            let plain = weighted_mean_update(&kept);
            let total: usize = kept.iter().map(|u| u.weight).sum();
            let bound = 10.0 * 2f64.powi(-25) / total as f64 + 1e-15;
            for (a, b) in c.mean_update[0].iter().zip(&plain.mean_update[0]) {
                assert!((a - b).abs() <= bound, "{a} vs {b} (bound {bound})");
            }
            assert_eq!(c.weight, total);
            assert_eq!(p.costs().len(), 1);
        }
    }

    /// Distributed DP: with negligible noise and no clipping the server's mean update is
    /// Σ Δ over q·N (every client weighs 1); with zero updates it is the clients' noise
    /// alone, of standard deviation z·S·sqrt(k/m)/(q·N) for k contributions of 1/m of the
    /// variance each (20 000 coordinates: within 3 %); fewer than m contributions abort
    /// the round; ε is DP-FedAvg's for the same q, z and rounds.
    #[test]
    fn distributed_dp_adds_the_noise_in_shares_and_accounts_as_dp_fedavg() {
        let dp = |clip: f64, z: f64, m: usize| DistributedDp { clip, noise_multiplier: Some(z), epsilon: None, min_clients: m, delta: 1e-5, conversion: Default::default() };
        let with = |d: DistributedDp, dropout: f64| SecAgg {
            name: "secagg".into(),
            cfg: SecAggConfig { threshold: 0.5, dropout, neighbors: None, fraction_bits: 24, dp: Some(d) },
            seed: 3,
            costs: Vec::new(),
            q: 0.5,
            clients: 8,
        };
        let ctx = RoundContext { round: 1, rounds: 1 };
        let sent = upload_params(&[0.0, 0.0]);
        let returned: Vec<ModelParams> = (0..4).map(|i| upload_params(&[0.1 * i as f32, -0.2])).collect();
        let uploads: Vec<Upload<'_>> = returned.iter().enumerate().map(|(i, r)| Upload { client: i, sent: &sent, returned: r, weight: 7 + i }).collect();
        let c = with(dp(1e6, 1e-12, 4), 0.0).combine(&ctx, &sent, &uploads, &mut rng::derive(0, "t", &[])).unwrap();
        // Σ Δ = (0.6, −0.8) over q·N = 4.
        assert!((c.mean_update[0][0] - 0.15).abs() < 1e-6 && (c.mean_update[0][1] + 0.2).abs() < 1e-6, "{:?}", c.mean_update);

        let zero = upload_params(&vec![0.0; 20_000]);
        let uploads: Vec<Upload<'_>> = (0..6).map(|i| Upload { client: i, sent: &zero, returned: &zero, weight: 1 }).collect();
        let (z, clip, m) = (2.0, 0.5, 3);
        let c = with(dp(clip, z, m), 0.0).combine(&ctx, &zero, &uploads, &mut rng::derive(0, "t", &[])).unwrap();
        let v = &c.mean_update[0];
        let sd = (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt();
        let expected = z * clip * (6.0f64 / m as f64).sqrt() / (0.5 * 8.0);
        assert!((sd / expected - 1.0).abs() < 0.03, "{sd} vs {expected}");

        let mut p = with(dp(1.0, 1.0, 5), 0.0);
        let c = p.combine(&ctx, &zero, &uploads[..4], &mut rng::derive(0, "t", &[])).unwrap();
        assert!(c.contributors.is_empty() && p.costs()[0].aborted.as_deref().is_some_and(|a| a.contains("dp.min_clients")));

        let ours = with(dp(1.0, 1.1, 4), 0.0).privacy_spent(30).unwrap();
        let mech = crate::privacy::accountant::Mechanism::DpSgd { sample_rate: 0.5 };
        let orders = crate::privacy::accountant::default_orders();
        let reference = crate::privacy::accountant::epsilon(&mech, 1.1, 30, 1e-5, Default::default(), &orders).unwrap();
        assert_eq!(ours.epsilon, reference.epsilon);
        assert!(protocol(None, 0.0).privacy_spent(30).is_none());
    }

    /// Bad parameters are refused naming the field; SecAgg over more than 256 clients
    /// needs SecAgg+'s neighbours.
    #[test]
    fn bad_settings_are_refused() {
        let fed = crate::fed::FederationConfig::default();
        let ctx = |clients| UploadContext { clients, federation: &fed, seed: 0 };
        let ok = SecAggConfig { threshold: 0.5, dropout: 0.2, neighbors: None, fraction_bits: 24, dp: None };
        let err = |c: &SecAggConfig, n: usize| super::super::DefenseConfig::upload(c, "secagg", &ctx(n)).err().expect("refused").to_string();
        assert!(err(&ok, 300).contains("neighbors"));
        assert!(super::super::DefenseConfig::upload(&SecAggConfig { neighbors: Some(32), ..ok.clone() }, "s", &ctx(1000)).is_ok());
        assert!(err(&SecAggConfig { threshold: 1.0, ..ok.clone() }, 5).contains("threshold"));
        assert!(err(&SecAggConfig { dropout: 1.0, ..ok.clone() }, 5).contains("dropout"));
        assert!(err(&SecAggConfig { neighbors: Some(1), ..ok.clone() }, 5).contains("neighbors"));
        assert!(err(&SecAggConfig { fraction_bits: 60, ..ok }, 5).contains("fraction_bits"));
    }
}
