//! LC/BE performance isolation: Dicio (APSys'21 §4.3) and the two baselines
//! it is compared with, CaladanPM and PMcounterOnly (§5).
//!
//! The knob is the CPU budget of best-effort (BE) jobs: throttling takes a
//! core from a BE job, relaxing gives one back (Dicio §4.2, after Caladan).
//! Latency-critical (LC) jobs are never touched; their CPUs are not in the
//! BE pool. Below one core a BE job is duty-cycled (`0 < x < 1` core, Dicio's
//! "single thread saturates PM" special case).
//!
//! Beyond the paper, which manages one LC and one BE job, any number of BE
//! jobs are managed at once: the congestion signals are system-wide, and
//! per-job attribution (request-level PM bytes per thread from sensing)
//! chooses whom to throttle: the job whose CPU costs the PM most (estimated
//! media bytes/s per core) first, as Caladan picks the job with the most LLC
//! misses, and relaxing gives to the one whose CPU costs the PM least. Each
//! core taken then removes as much PM traffic as one core can, and the light
//! jobs keep theirs. Without attribution the job holding the most CPU is
//! throttled first and the one holding the least is relaxed first. See
//! docs/control.md.

mod budget;
mod caladan_pm;
mod dicio;
mod pm_counter_only;

use crate::{CoreBudget, CpuSet, Decision, JobClass, JobId, Observation};
use budget::BeJob;
use std::collections::{BTreeMap, VecDeque};

/// Bytes per memory-controller queue insert or CAS (one cache line).
const LINE_BYTES: f64 = 64.0;

/// Thresholds of Dicio §4.3 and of the CaladanPM baseline (§5).
#[derive(Clone, Debug, PartialEq)]
pub struct IsolationParams {
    /// T_mediawrite: PM media write bandwidth that counts as saturated, GB/s
    /// (Dicio §4.3: 6 GB/s on 6 DIMMs, from their sensitivity study).
    pub media_write_gbps: f64,
    /// T_mediaread: PM media read bandwidth that counts as saturated, GB/s
    /// (Dicio §4.3: 10 GB/s; includes the reads of read-modify-writes).
    pub media_read_gbps: f64,
    /// T_DRAM when PM media use is below 0.4, below 0.8, and at or above 0.8
    /// of T_media, GB/s (Dicio §4.3: 30, 15, 5).
    pub dram_gbps: [f64; 3],
    /// T_WPQ: average WPQ queuing delay, memory-controller cycles (Dicio §4.3: 700).
    pub wpq_delay_cycles: f64,
    /// Throttle a job relaxed by prediction when the estimated media write
    /// bandwidth reaches this multiple of T_mediawrite (Dicio §4.3: 1.2).
    pub predict_factor: f64,
    /// CaladanPM: request-level PM write bandwidth threshold, GB/s (§5.1: 2.5 or 2).
    pub request_write_gbps: f64,
    /// CaladanPM: DRAM bandwidth threshold, GB/s, if any (§5.2: 25).
    pub caladan_dram_gbps: Option<f64>,
    /// Dicio's special case: a job throttled from one core to none this many
    /// times within `oscillation_window_ns` is duty-cycled instead.
    pub oscillation_flips: usize,
    /// See `oscillation_flips`.
    pub oscillation_window_ns: u64,
    /// Smallest duty cycle handed out before a job is stopped outright.
    pub min_duty: f64,
}

impl Default for IsolationParams {
    fn default() -> Self {
        IsolationParams {
            media_write_gbps: 6.0,
            media_read_gbps: 10.0,
            dram_gbps: [30.0, 15.0, 5.0],
            wpq_delay_cycles: 700.0,
            predict_factor: 1.2,
            request_write_gbps: 2.0,
            caladan_dram_gbps: None,
            oscillation_flips: 3,
            oscillation_window_ns: 20_000_000,
            min_duty: 0.02,
        }
    }
}

/// An [`IsolationParams`] value out of range: the field (which is also the
/// daemon's `[isolation]` key), the index for `dram_gbps`, and why.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{key}{}: {message}", index.map(|i| format!("[{i}]")).unwrap_or_default())]
pub struct ParamError {
    /// The field name.
    pub key: &'static str,
    /// The element of an array field.
    pub index: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl IsolationParams {
    /// Checks every threshold once, for every consumer (the daemon's TOML,
    /// the simulator's policy arguments): thresholds are finite and > 0,
    /// the DRAM thresholds do not increase with PM media use (Dicio §4.3),
    /// the smallest duty cycle is in (0, 1].
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key, index, message: String| {
            Err(ParamError {
                key,
                index,
                message,
            })
        };
        let positive = |key: &'static str, index: Option<usize>, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                err(key, index, format!("must be a finite number > 0, got {v}"))
            }
        };
        for (n, v) in self.dram_gbps.iter().enumerate() {
            positive("dram_gbps", Some(n), *v)?;
            if n > 0 && *v > self.dram_gbps[n - 1] {
                return err(
                    "dram_gbps",
                    Some(n),
                    format!(
                        "thresholds must not increase with PM media use: {v} > {}",
                        self.dram_gbps[n - 1]
                    ),
                );
            }
        }
        positive("media_write_gbps", None, self.media_write_gbps)?;
        positive("media_read_gbps", None, self.media_read_gbps)?;
        positive("wpq_delay_cycles", None, self.wpq_delay_cycles)?;
        positive("predict_factor", None, self.predict_factor)?;
        positive("request_write_gbps", None, self.request_write_gbps)?;
        if let Some(d) = self.caladan_dram_gbps {
            positive("caladan_dram_gbps", None, d)?;
        }
        if !(self.min_duty > 0.0 && self.min_duty <= 1.0) {
            return err(
                "min_duty",
                None,
                format!("must be in (0, 1], got {}", self.min_duty),
            );
        }
        Ok(())
    }
}

/// Which controller decides when to throttle and relax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsolationKind {
    /// Dicio §4.3: media counters (slow), DRAM and WPQ delay (fast), prediction.
    Dicio,
    /// CaladanPM (§5): throttle while request-level PM write bandwidth (and,
    /// if set, DRAM bandwidth) is above its threshold, relax otherwise.
    CaladanPm,
    /// PMcounterOnly (§5): the same on media write bandwidth, evaluated only
    /// when a new (slow) media reading arrives.
    PmCounterOnly,
}

/// Dicio's controller state (§4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlState {
    /// The last action took a core away.
    Throttling,
    /// The last action gave a core back.
    Relaxing,
}

/// A media-counter reading, decoded.
#[derive(Clone, Copy, Debug, PartialEq)]
struct MediaReading {
    /// End of the interval it covers, ns since the sensing epoch.
    end_ns: u64,
    write_gbps: f64,
    read_gbps: f64,
}

/// Dicio, CaladanPM or PMcounterOnly over the BE jobs of an observation.
#[derive(Clone, Debug)]
pub struct Isolation {
    kind: IsolationKind,
    params: IsolationParams,
    /// CPUs BE jobs may be given, in preference order; `None` = decided at
    /// the first observation (every CPU not used by an LC job).
    pool: Option<Vec<u32>>,
    jobs: BTreeMap<JobId, BeJob>,
    state: ControlState,
    relaxed_by_prediction: bool,
    last_media: Option<MediaReading>,
    /// Recent PM write amplification (media / request bytes), Dicio §4.3.
    write_amplification: f64,
    /// (window end ns, request-level PM write bytes) for the WA ratio.
    request_history: VecDeque<(u64, f64)>,
}

/// What one window shows the controllers: the end of the window, a fresh
/// media reading if one arrived, request-level PM write and DRAM bandwidth
/// (GB/s) and the worst WPQ delay (cycles).
#[derive(Clone, Copy, Debug)]
struct Signals {
    now: u64,
    fresh: Option<MediaReading>,
    req_write_gbps: Option<f64>,
    dram_gbps: Option<f64>,
    wpq: Option<f64>,
}

impl Isolation {
    /// A controller of `kind` with `params`. `pool` lists the CPUs BE jobs may
    /// use in the order to hand them out (SMT siblings adjacent, siblings of
    /// LC cores last); `None` takes, at the first observation, the CPUs the
    /// BE jobs' threads may use then, less those of LC jobs.
    pub fn new(kind: IsolationKind, params: IsolationParams, pool: Option<Vec<u32>>) -> Isolation {
        Isolation {
            kind,
            params,
            pool,
            jobs: BTreeMap::new(),
            state: ControlState::Relaxing,
            relaxed_by_prediction: false,
            last_media: None,
            write_amplification: 1.0,
            request_history: VecDeque::new(),
        }
    }

    /// Current controller state, for `memtamer status`.
    pub fn state(&self) -> ControlState {
        self.state
    }

    /// Current estimated PM write amplification.
    pub fn write_amplification(&self) -> f64 {
        self.write_amplification
    }

    /// CPU share (cores, or a duty fraction of one core) per BE job.
    pub fn shares(&self) -> Vec<(JobId, f64)> {
        self.jobs.iter().map(|(&id, j)| (id, j.share())).collect()
    }

    /// Decodes a media reading that is newer than the last one seen.
    fn new_media_reading(&self, obs: &Observation) -> Option<MediaReading> {
        if obs.dimms.is_empty() {
            return None;
        }
        let end = obs.start_ns + obs.duration_ns;
        let (mut w, mut r, mut interval, mut age) = (0u64, 0u64, 0u64, 0u64);
        for d in &obs.dimms {
            w += d.media_write_bytes?;
            r += d.media_read_bytes?;
            interval = interval.max(d.interval_ns?);
            age = age.max(d.age_ns?);
        }
        if interval == 0 {
            return None;
        }
        let end_ns = end.saturating_sub(age);
        if self.last_media.is_some_and(|m| m.end_ns >= end_ns) {
            return None;
        }
        // bytes per ns = GB/s
        Some(MediaReading {
            end_ns,
            write_gbps: w as f64 / interval as f64,
            read_gbps: r as f64 / interval as f64,
        })
    }

    /// Request-level PM write bytes in the window: iMC WPQ inserts when every
    /// channel reports them, else `thread_writes`, the sum of the threads'
    /// reported traffic.
    fn request_write_bytes(obs: &Observation, thread_writes: Option<f64>) -> Option<f64> {
        let from_imc: Option<u64> = if obs.channels.is_empty() {
            None
        } else {
            obs.channels.iter().map(|c| c.pmm_wpq_inserts).sum()
        };
        match from_imc {
            Some(ins) => Some(ins as f64 * LINE_BYTES),
            None => thread_writes,
        }
    }

    fn media_interval(obs: &Observation) -> u64 {
        obs.dimms
            .iter()
            .filter_map(|d| d.interval_ns)
            .max()
            .unwrap_or(0)
    }

    /// One control step (Dicio's 10 µs main loop when the window is 10 µs).
    pub fn decide(&mut self, obs: &Observation) -> Decision {
        self.decide_hinted(obs, None)
    }

    /// [`Isolation::decide`] for a caller that knows which threads may carry
    /// traffic: `reporting` indexes `obs.threads` (see
    /// [`crate::policy::Hints::reporting`]); the decision is the same.
    pub fn decide_hinted(&mut self, obs: &Observation, reporting: Option<&[usize]>) -> Decision {
        let mut d = Decision::default();
        let pool = self.init_pool(obs);
        self.sync_jobs(obs, &pool);
        let now = obs.start_ns + obs.duration_ns;
        let secs = (obs.duration_ns.max(1)) as f64 * 1e-9;
        let thread_writes = self.attribute(obs, reporting, secs);
        let req_write = Self::request_write_bytes(obs, thread_writes);
        if let Some(b) = req_write {
            self.request_history.push_back((now, b));
        }
        let keep_ns = Self::media_interval(obs).max(10_000_000) * 3;
        while self
            .request_history
            .front()
            .is_some_and(|(t, _)| now.saturating_sub(*t) > keep_ns)
            || self.request_history.len() > 1_000_000
        {
            self.request_history.pop_front();
        }
        let fresh = self.new_media_reading(obs);
        if let Some(m) = fresh {
            self.update_write_amplification(&m, Self::media_interval(obs));
            self.last_media = Some(m);
        }
        let req_write_gbps = req_write.map(|b| b / obs.duration_ns.max(1) as f64);
        let dram_gbps = obs
            .dram_cas()
            .map(|c| c as f64 * LINE_BYTES / obs.duration_ns.max(1) as f64);
        let wpq = obs
            .channels
            .iter()
            .filter_map(|c| c.wpq_delay_cycles())
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));

        let signals = Signals {
            now,
            fresh,
            req_write_gbps,
            dram_gbps,
            wpq,
        };
        let mut reasons = Vec::new();
        match self.kind {
            IsolationKind::Dicio => self.dicio_step(&signals, &pool, &mut reasons),
            IsolationKind::CaladanPm => self.caladan_pm_step(&signals, &pool, &mut reasons),
            IsolationKind::PmCounterOnly => {
                self.pm_counter_only_step(&signals, &pool, &mut reasons)
            }
        }
        self.emit(&pool, &mut d);
        self.pool = Some(pool);
        d.reasons = reasons;
        d
    }
}
impl crate::Policy for Isolation {
    fn name(&self) -> &str {
        match self.kind {
            IsolationKind::Dicio => "dicio",
            IsolationKind::CaladanPm => "caladan-pm",
            IsolationKind::PmCounterOnly => "pm-counter-only",
        }
    }
    fn decide(&mut self, obs: &Observation) -> Decision {
        Isolation::decide(self, obs)
    }
}

#[cfg(test)]
mod tests;
