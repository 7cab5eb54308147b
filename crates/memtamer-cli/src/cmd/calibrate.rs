//! `memtamer calibrate`: measure the contention knee (PATS T_S per request
//! mix) of a simulated platform or of this host, and write the model file
//! that `pats-calibrated:FILE` / `calibrated:FILE` read.

use crate::args::CalibrateArgs;
use crate::error::{CliError, Outcome};
use crate::format::Format;

/// Runs the calibration, prints T_S beside PATS Eq. 1, writes or prints the model.
pub fn run(a: CalibrateArgs, format: Format) -> Result<Outcome, CliError> {
    if a.host && a.jobs.is_some() {
        return Err(CliError::Usage {
            arg: "--jobs with --host".into(),
            expected: "--threads (a host calibration measures with its own PM threads)".into(),
        });
    }
    // a calibration takes minutes: an --out it cannot write fails now
    let out = a.out.as_deref().map(OutFile::check).transpose()?;
    let progress = crate::format::progress();
    let (model, n_pm) = if a.host {
        let defaults = memtamer_gate::host_calibrate::HostCalibration::default();
        let spec = memtamer_gate::host_calibrate::HostCalibration {
            pm_file: a.pm_file,
            threads: a.threads.unwrap_or(defaults.threads),
            request_sizes: a.sizes,
            per_point: std::time::Duration::from_millis(a.point_ms.max(1)),
            max_dram_loss: a.max_loss,
            ..defaults
        };
        let model = memtamer_gate::host_calibrate::calibrate_host(&spec, |line| {
            if progress {
                eprintln!("{line}")
            }
        })
        .map_err(CliError::gate("host calibration"))?;
        (model, a.interleave.max(1))
    } else {
        let spec = memtamer_sim::calibrate::CalibrationSpec {
            platform: a.platform,
            max_dram_loss: a.max_loss,
            request_sizes: a.sizes,
            progress,
            jobs: a.jobs.unwrap_or(0),
            ..Default::default()
        };
        let model = memtamer_sim::calibrate::calibrate(&spec)?;
        let n_pm = memtamer_sim::experiment::pm_interleave(
            &memtamer_sim::experiment::load_platform(&model.platform, &Default::default())?,
        );
        (model, n_pm)
    };
    if format == Format::Json {
        // the model itself (the file --out writes, as JSON)
        println!(
            "{}",
            serde_json::to_string_pretty(&model).map_err(CliError::json("the model"))?
        );
        if let Some(out) = out {
            out.write(&model)?;
        }
        return Ok(Outcome::Success);
    }
    println!(
        "calibrated T_S on {} (memcpy keeps >= {:.0}% of its throughput alone):",
        model.platform,
        (1.0 - model.max_dram_loss) * 100.0
    );
    println!(
        "  {:<6} {:>8} {:>6} {:>14}",
        "mix", "request", "T_S", "PATS Eq. 1"
    );
    for p in &model.points {
        // PATS Eq. 1 at the paper's T_MC = 0.2, for comparison
        let eq1 = memtamer_core::pats::threshold(&memtamer_core::pats::ModelInput {
            t_mc: 0.2,
            n_pm,
            avg_request_bytes: p.request_bytes as f64,
            write_ratio: p.write_ratio,
        });
        let mix = if p.write_ratio >= 0.5 {
            "write"
        } else {
            "read"
        };
        println!(
            "  {mix:<6} {:>7}B {:>6} {:>14}",
            p.request_bytes, p.t_s, eq1
        );
    }
    let text = toml::to_string(&model)?;
    match out {
        Some(out) => {
            let path = out.write(&model)?;
            if a.host {
                eprintln!(
                    "model: {} (use MEMTAMER_GATE_POLICY=pats-calibrated:{})",
                    path.display(),
                    path.display()
                );
            } else {
                eprintln!(
                    "model: {} (use --set policy=pats-calibrated:{})",
                    path.display(),
                    path.display()
                );
            }
        }
        None => print!("\n{text}"),
    }
    Ok(Outcome::Success)
}

/// The `--out` file, checked before the calibration runs: an existing file
/// is opened for writing (not truncated: a failed run leaves it as it
/// was), a new one is created and removed again if the run fails before
/// [`OutFile::write`] (a run killed by a signal leaves it empty).
struct OutFile {
    path: std::path::PathBuf,
    /// Created by [`OutFile::check`] and not written yet: removed on drop.
    remove_on_drop: bool,
}

impl OutFile {
    fn check(path: &std::path::Path) -> Result<OutFile, CliError> {
        let cannot = || CliError::io(format!("cannot write {}", path.display()));
        let created = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(cannot())?;
                false
            }
            Err(e) => return Err(cannot()(e)),
        };
        Ok(OutFile {
            path: path.to_path_buf(),
            remove_on_drop: created,
        })
    }

    /// Writes the model as TOML; returns the path.
    fn write(
        mut self,
        model: &memtamer_core::pats::CalibratedModel,
    ) -> Result<std::path::PathBuf, CliError> {
        std::fs::write(&self.path, toml::to_string(model)?).map_err(CliError::io(format!(
            "cannot write {}",
            self.path.display()
        )))?;
        self.remove_on_drop = false;
        Ok(std::mem::take(&mut self.path))
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if self.remove_on_drop {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
