//! Simulated PEBS store sampling (a per-CPU counter of retired stores that
//! takes one sample every `period`), with the ground truth beside it.

use super::Engine;
use crate::config::MemKind;
use crate::workload::REGION_SHIFT;

/// A simulated PEBS store sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreSample {
    /// Thread.
    pub tid: u32,
    /// Data address.
    pub addr: u64,
    /// Store size, bytes.
    pub size: u32,
}

/// Simulated PEBS: a per-CPU counter of retired store instructions that
/// takes one sample every `period` stores, with ground truth kept beside it.
pub struct Sampler {
    /// Sampling period (stores).
    pub period: u64,
    /// Bytes per store instruction (64 = one zmm NT store per line).
    pub store_bytes: u64,
    counters: Vec<u64>,
    /// Samples taken (bounded).
    pub samples: Vec<StoreSample>,
    /// Per-thread sampled PM store bytes estimate (samples x period x size).
    pub estimate: Vec<u64>,
}

impl Sampler {
    /// A sampler over `cpus` CPUs and `threads` threads taking one sample
    /// every `period` stores of `store_bytes` (1..=64) each.
    pub(super) fn new(period: u64, store_bytes: u64, cpus: usize, threads: usize) -> Sampler {
        Sampler {
            period: period.max(1),
            store_bytes: store_bytes.clamp(1, 64),
            counters: vec![0; cpus],
            samples: Vec::new(),
            estimate: vec![0; threads],
        }
    }

    /// Thread `tid` on `cpu` stored the 64 B line at `addr` (as
    /// `64 / store_bytes` store instructions).
    fn record(&mut self, cpu: usize, tid: u32, addr: u64) {
        let stores = 64 / self.store_bytes;
        for k in 0..stores {
            self.counters[cpu] += 1;
            if self.counters[cpu] >= self.period {
                self.counters[cpu] = 0;
                self.estimate[tid as usize] += self.period * self.store_bytes;
                if self.samples.len() < 1 << 16 {
                    self.samples.push(StoreSample {
                        tid,
                        addr: addr + k * self.store_bytes,
                        size: self.store_bytes as u32,
                    });
                }
            }
        }
    }
}

impl Engine {
    #[inline(always)]
    pub(super) fn count_store(&mut self, tid: u32, addr: u64) {
        let region = (addr >> REGION_SHIFT) as usize;
        let is_pm = self
            .uncore
            .regions
            .get(region)
            .is_some_and(|r| r.kind == MemKind::Pm);
        if !is_pm {
            return;
        }
        self.threads[tid as usize].pm_store_bytes += 64;
        if self.sampler.is_some() {
            self.sample_store(tid, addr);
        }
    }

    /// The PEBS sampler's part of [`Engine::count_store`] (out of line: the
    /// sampler is rarely on).
    #[cold]
    pub(super) fn sample_store(&mut self, tid: u32, addr: u64) {
        let cpu = self.threads[tid as usize].cpu as usize;
        if let Some(s) = &mut self.sampler {
            s.record(cpu, tid, addr);
        }
    }
}
