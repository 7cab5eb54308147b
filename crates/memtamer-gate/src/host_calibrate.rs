//! Calibration on a real host: the same experiment `memtamer calibrate` runs
//! in the simulator, with real threads. PM threads copy into (or read from)
//! a mapped PM file through a private gate fixed at N = 1, 2, ...; a DRAM
//! memcpy probe runs beside them; T_S is the largest N at which the probe
//! keeps at least (1 - max_loss) of its throughput alone.
//!
//! Run it on a quiet machine with the PM file on a DAX file system (or a
//! device-DAX mapping's file); on a DRAM-backed file the "knee" measures
//! DRAM contention only.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memtamer_core::pats::{CalibratedModel, CalibrationPoint};
use memtamer_linux::shmfile::SharedMap;

use crate::{Gate, GateError, GateOptions};

/// What to measure.
#[derive(Clone, Debug)]
pub struct HostCalibration {
    /// The PM file (created, sized to `file_bytes`, removed afterwards).
    pub pm_file: PathBuf,
    /// Bytes of the PM file.
    pub file_bytes: usize,
    /// PM threads (the largest N tried).
    pub threads: u32,
    /// Request sizes, bytes.
    pub request_sizes: Vec<u64>,
    /// Measurement time per limit.
    pub per_point: Duration,
    /// Tolerated loss of DRAM throughput.
    pub max_dram_loss: f64,
}

impl Default for HostCalibration {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
        HostCalibration {
            pm_file: PathBuf::from("/dev/shm/memtamer-calibrate"),
            file_bytes: 256 << 20,
            threads: cores.saturating_sub(1).clamp(1, 24),
            request_sizes: vec![256, 512, 1024, 4096],
            per_point: Duration::from_millis(500),
            max_dram_loss: 0.05,
        }
    }
}

/// The file the PM workers write, mapped shared (each worker writes its own
/// slice, so the mapping is shared between threads without a data race).
type PmMap = SharedMap;

/// Creates (truncating) and maps the calibration file, every page faulted
/// in: page faults are not what is measured.
fn pm_map(path: &std::path::Path, len: usize) -> Result<PmMap, GateError> {
    let io = |source| GateError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io)?;
    file.set_len(len as u64).map_err(io)?;
    let map = SharedMap::new(&file, len).map_err(io)?;
    // SAFETY: the mapping is len bytes long and not yet shared.
    unsafe { std::ptr::write_bytes(map.base(), 0, len) };
    Ok(map)
}

/// Bytes/s a DRAM memcpy probe moves while `run` is true.
fn probe(run: &AtomicBool, moved: &AtomicU64) {
    let src = vec![1u8; 32 << 20];
    let mut dst = vec![0u8; 32 << 20];
    let chunk = 256 << 10;
    let mut off = 0;
    while run.load(Ordering::Relaxed) {
        dst[off..off + chunk].copy_from_slice(&src[off..off + chunk]);
        std::hint::black_box(&dst);
        moved.fetch_add(chunk as u64, Ordering::Relaxed);
        off = (off + chunk) % src.len();
    }
}

/// One measurement: the probe's bytes/s with `workers` PM threads behind a
/// gate at `limit` (0 workers: the probe alone).
fn measure(
    spec: &HostCalibration,
    map: &Arc<PmMap>,
    gate: &Arc<Gate>,
    workers: u32,
    limit: u32,
    size: u64,
    write: bool,
) -> f64 {
    gate.set_limit(Some(limit));
    let run = Arc::new(AtomicBool::new(true));
    let measuring = Arc::new(AtomicBool::new(false));
    let moved = Arc::new(AtomicU64::new(0));
    let slice = map.len() / workers.max(1) as usize;
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let (run, map, gate) = (Arc::clone(&run), Arc::clone(map), Arc::clone(gate));
            std::thread::spawn(move || {
                let Ok(me) = gate.register() else { return };
                let size = size as usize;
                let buf = vec![7u8; size];
                let mut local = vec![0u8; size];
                let start = w as usize * slice;
                let mut off = 0usize;
                while run.load(Ordering::Relaxed) {
                    // SAFETY: start + off + size <= start + slice <= map.len.
                    let p = unsafe { map.base().add(start + off) };
                    let _permit = me.enter(size as u64, write);
                    if write {
                        // SAFETY: p..p+size lies in this worker's slice.
                        unsafe {
                            std::ptr::copy_nonoverlapping(buf.as_ptr(), p, size);
                            crate::persist::persist(p, size);
                        }
                    } else {
                        // SAFETY: as above, read-only.
                        unsafe { std::ptr::copy_nonoverlapping(p, local.as_mut_ptr(), size) };
                        std::hint::black_box(&local);
                    }
                    off = (off + size) % (slice - size).max(size);
                }
            })
        })
        .collect();
    let probe_thread = {
        let (measuring, moved) = (Arc::clone(&measuring), Arc::clone(&moved));
        std::thread::spawn(move || probe(&measuring, &moved))
    };
    measuring.store(true, Ordering::Relaxed);
    // let the workers fill the queues before measuring
    std::thread::sleep(spec.per_point / 5);
    let before = moved.load(Ordering::Relaxed);
    let t0 = Instant::now();
    std::thread::sleep(spec.per_point);
    let bytes = moved.load(Ordering::Relaxed) - before;
    let secs = t0.elapsed().as_secs_f64();
    measuring.store(false, Ordering::Relaxed);
    run.store(false, Ordering::Relaxed);
    let _ = probe_thread.join();
    for h in handles {
        let _ = h.join();
    }
    bytes as f64 / secs
}

/// Runs the calibration; `progress` is called with a line per point.
pub fn calibrate_host(
    spec: &HostCalibration,
    mut progress: impl FnMut(&str),
) -> Result<CalibratedModel, GateError> {
    let bad = |key: &str, value: String, expected: &str| GateError::BadSetting {
        key: key.into(),
        value,
        expected: expected.into(),
    };
    if !(spec.max_dram_loss > 0.0 && spec.max_dram_loss < 1.0) {
        return Err(bad(
            "--max-loss",
            spec.max_dram_loss.to_string(),
            "in (0, 1)",
        ));
    }
    if spec.threads == 0 || spec.threads > 256 {
        return Err(bad("--threads", spec.threads.to_string(), "1..=256"));
    }
    let largest = spec.request_sizes.iter().copied().max().unwrap_or(0);
    if spec.request_sizes.is_empty() || spec.request_sizes.contains(&0) || largest > 1 << 20 {
        return Err(bad(
            "--sizes",
            format!("{:?}", spec.request_sizes),
            "sizes in 1..=1 MiB",
        ));
    }
    if spec.file_bytes < spec.threads as usize * 2 * largest as usize {
        return Err(bad(
            "--file-mib",
            spec.file_bytes.to_string(),
            "room for two requests per thread",
        ));
    }
    let map = Arc::new(pm_map(&spec.pm_file, spec.file_bytes)?);
    let options = GateOptions {
        name: format!("calibrate-{}", std::process::id()),
        initial_limit: 1,
        bypass_bytes: 0,
        ..GateOptions::default()
    };
    let gate = Gate::open(&options)?;
    let mut points = Vec::new();
    for write in [true, false] {
        for &size in &spec.request_sizes {
            let alone = measure(spec, &map, &gate, 0, 1, size, write);
            let mut ratios = Vec::new();
            for limit in 1..=spec.threads {
                let with = measure(spec, &map, &gate, spec.threads, limit, size, write);
                let ratio = if alone > 0.0 { with / alone } else { 0.0 };
                progress(&format!(
                    "{} {size} B, limit {limit}/{}: DRAM probe {:.2} GB/s = {:.1}% of {:.2} alone",
                    if write { "write" } else { "read" },
                    spec.threads,
                    with / 1e9,
                    ratio * 100.0,
                    alone / 1e9
                ));
                ratios.push(ratio);
            }
            let floor = 1.0 - spec.max_dram_loss;
            let t_s = (ratios.iter().take_while(|r| **r >= floor).count() as u32).max(1);
            points.push(CalibrationPoint {
                write_ratio: if write { 1.0 } else { 0.0 },
                request_bytes: size,
                t_s,
            });
        }
    }
    let _ = std::fs::remove_file(gate.path());
    let _ = std::fs::remove_file(&spec.pm_file);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    Ok(CalibratedModel {
        platform: format!("host:{host}"),
        max_dram_loss: spec.max_dram_loss,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_host_calibration_yields_a_usable_model() {
        let spec = HostCalibration {
            pm_file: std::env::temp_dir().join(format!("mt-cal-{}", std::process::id())),
            file_bytes: 4 << 20,
            threads: 2,
            request_sizes: vec![4096],
            per_point: Duration::from_millis(30),
            max_dram_loss: 0.05,
        };
        let mut lines = 0;
        let model = calibrate_host(&spec, |_| lines += 1).expect("calibrates");
        assert_eq!(lines, 4); // (write, read) x limits 1..=2
        assert_eq!(model.points.len(), 2);
        assert!(model.points.iter().all(|p| (1..=2).contains(&p.t_s)));
        assert!(model.platform.starts_with("host:"));
        assert!(model.threshold(4096.0, 1.0).is_some());
        assert!(!spec.pm_file.exists(), "the PM file is removed");
        // bad settings are errors naming the option
        for bad in [
            HostCalibration {
                threads: 0,
                ..spec.clone()
            },
            HostCalibration {
                max_dram_loss: 1.5,
                ..spec.clone()
            },
            HostCalibration {
                request_sizes: vec![],
                ..spec.clone()
            },
            HostCalibration {
                file_bytes: 1,
                ..spec.clone()
            },
        ] {
            let err = calibrate_host(&bad, |_| {})
                .expect_err("bad spec")
                .to_string();
            assert!(err.starts_with("--"), "{err}");
        }
    }
}
