//! `memtamer tier status`: the objects and placements of every rank of a
//! job that runs the tier runtime with `MEMTAMER_TIER_STATUS_DIR` set (issue
//! 20 item 6). The files and their checks are `memtamer_tier::status`; this
//! is the shell: read the directory, print, map problems to exit codes.
//! `memtamer tier calibrate`: the runtime's calibration of Unimem's constant
//! factors (`memtamer_tier::calibrate`) on this host, printed.

use crate::args::TierCmd;
use crate::error::{CliError, Outcome};
use crate::format::Format;
use memtamer_tier::status::{self, StatusError};
use std::path::{Path, PathBuf};

/// Runs one `tier` subcommand.
pub(crate) fn run(cmd: TierCmd, format: Format) -> Result<Outcome, CliError> {
    match cmd {
        TierCmd::Status { dir } => {
            let dir = dir
                .or_else(|| {
                    std::env::var_os("MEMTAMER_TIER_STATUS_DIR")
                        .filter(|d| !d.is_empty())
                        .map(PathBuf::from)
                })
                .ok_or_else(|| CliError::Usage {
                    arg: "memtamer tier status".into(),
                    expected:
                        "--dir DIR or MEMTAMER_TIER_STATUS_DIR (the directory the job was run with)"
                            .into(),
                })?;
            status_cmd(&dir, format)
        }
        TierCmd::Calibrate {
            dram_budget,
            dram_bw,
            slow_bw_div,
            slow_lat_mul,
        } => calibrate_cmd(&dram_budget, dram_bw, slow_bw_div, slow_lat_mul, format),
    }
}

fn calibrate_cmd(
    budget: &str,
    dram_bw: Option<f64>,
    slow_bw_div: Option<f64>,
    slow_lat_mul: Option<f64>,
    format: Format,
) -> Result<Outcome, CliError> {
    use memtamer_tier::calibrate::{calibrate, copy_bandwidths, CalibrateConfig, COPY_ROUNDS};
    let bytes = memtamer_tier::registry::parse_bytes(budget)
        .filter(|b| *b > 0)
        .ok_or_else(|| CliError::Usage {
            arg: format!("--dram-budget {budget}"),
            expected: "a byte count > 0 with an optional K/M/G suffix (64M)".into(),
        })?;
    // the C ABI's constructor (memtamer_tier::platform), so both plan
    // with the same defaults
    let platform = memtamer_tier::platform::PlatformInputs {
        dram_bw,
        slow_bw_div,
        slow_lat_mul,
        cf_bw: None,
        cf_lat: None,
    }
    .model()
    .map_err(|b| {
        use memtamer_tier::platform::BadInput;
        let (flag, x) = match b {
            BadInput::DramBw(x) => ("--dram-bw", x),
            BadInput::SlowBwDiv(x) => ("--slow-bw-div", x),
            BadInput::SlowLatMul(x) => ("--slow-lat-mul", x),
            BadInput::CfBw(x) => ("--cf-bw", x),
            BadInput::CfLat(x) => ("--cf-lat", x),
        };
        CliError::Usage {
            arg: format!("{flag} {x}"),
            expected: b.expected().into(),
        }
    })?;
    let tier_err = |context| move |source| CliError::Tier { context, source };
    let cfg = memtamer_tier::TierConfig::detect(bytes).map_err(tier_err("configuration"))?;
    let slow = format!("{:?}", cfg.slow);
    let rt = memtamer_tier::TierRuntime::new(cfg).map_err(tier_err("runtime"))?;
    let cal = CalibrateConfig::fitting(bytes);
    let (f, runs) = calibrate(&rt, &platform, &cal).map_err(tier_err("calibration"))?;
    // Eq. 3.3's copy bandwidth per direction, timed on real moves (the
    // driver measures its own moves the same way and uses those)
    let copies = copy_bandwidths(&rt, cal.stream_bytes).map_err(tier_err("copy bandwidths"))?;
    let (copy_bw, evict_bw) = (copies.to_dram.bandwidth(), copies.to_slow.bandwidth());
    if format == Format::Json {
        let run = |r: &memtamer_tier::unimem::calibrate::CalRun| {
            serde_json::json!({
                "kind": format!("{:?}", r.kind),
                "accesses": r.accesses,
                "dram_s": r.dram_s,
                "slow_s": r.slow_s,
            })
        };
        let fac = |x: &memtamer_tier::unimem::calibrate::Factor| {
            serde_json::json!({
                "value": x.value,
                "identifiable": x.identifiable,
                "predicted_s": x.predicted,
                "measured_s": x.measured,
            })
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "slow_tier": slow,
                "cf_bw": fac(&f.bw),
                "cf_lat": fac(&f.lat),
                "runs": runs.iter().map(run).collect::<Vec<_>>(),
                "copy_bytes": cal.stream_bytes,
                "copy_rounds": COPY_ROUNDS,
                "copy_bw": copy_bw,
                "evict_bw": evict_bw,
            }))
            .map_err(CliError::json("the calibration"))?
        );
    } else {
        println!("slow tier: {slow}");
        for r in &runs {
            println!(
                "{:?}: {:.0} accesses, DRAM {:.3} ms, slow tier {:.3} ms",
                r.kind,
                r.accesses,
                r.dram_s * 1e3,
                r.slow_s * 1e3
            );
        }
        println!("factor  value  predicted slow-tier ms  measured slow-tier ms  fitted");
        for (name, x) in [("CF_bw", &f.bw), ("CF_lat", &f.lat)] {
            let fitted = if x.identifiable {
                "yes"
            } else {
                "no (tiers do not differ here: kept at 1)"
            };
            println!(
                "{name:<7} {:>5.3}  {:>22.3}  {:>21.3}  {fitted}",
                x.value,
                x.predicted * 1e3,
                x.measured * 1e3,
            );
        }
        let gbs =
            |b: Option<f64>| b.map_or("not measured".into(), |b| format!("{:.2} GB/s", b / 1e9));
        println!(
            "copy bandwidth ({COPY_ROUNDS} round trips of {} KiB): to DRAM (copy_bw) {}, to the slow tier (evict_bw) {}",
            cal.stream_bytes / 1024,
            gbs(copy_bw),
            gbs(evict_bw)
        );
        println!(
            "export MEMTAMER_CF_BW={:.4} MEMTAMER_CF_LAT={:.4}",
            f.bw.value, f.lat.value
        );
    }
    Ok(Outcome::Success)
}

fn status_cmd(dir: &Path, format: Format) -> Result<Outcome, CliError> {
    let found = status::read_dir(dir, &status::hostname(), status::pid_alive)?;
    if format == Format::Json {
        let ranks: Vec<serde_json::Value> = found
            .ranks
            .iter()
            .map(|(p, s)| {
                serde_json::json!({
                    "file": p.display().to_string(),
                    "status": s,
                })
            })
            .collect();
        let problems: Vec<String> = found.problems.iter().map(|e| e.to_string()).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "dir": dir.display().to_string(),
                "ranks": ranks,
                "problems": problems,
            }))
            .map_err(CliError::json("the tier status"))?
        );
    } else {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        print!("{}", status::render_table(&found.ranks, now));
    }
    let mut problems = found.problems;
    match problems.len() {
        0 => Ok(Outcome::Success),
        1 => Err(CliError::TierStatus(problems.remove(0))),
        _ => Err(CliError::TierStatus(StatusError::Several(problems))),
    }
}
