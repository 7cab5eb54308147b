//! `memtamer`: the command-line front end.

use clap::{Parser, Subcommand, ValueEnum};
use memtamer_sim::config::{parse_value, SweepSpec};
use memtamer_sim::experiment::{self, load_scenario, RunOptions, ScenarioResult};
use memtamer_sim::report;
use memtamer_sim::validate;
use std::path::PathBuf;
use std::process::ExitCode;

mod bench_daemon;
mod bench_gate;
mod daemon_cmd;
mod gate;

#[derive(Parser)]
#[command(
    name = "memtamer",
    version,
    about = "Tame DRAM/PM contention: simulate, sense, decide, act."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Show DRAM throughput collapsing as PM writers are added (simulated PATS platform).
    Demo {
        /// Also write an HTML report with plots into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// The memory-system simulator.
    Sim {
        #[command(subcommand)]
        cmd: SimCmd,
    },
    /// Measure a platform's contention knee (PATS T_S per request mix) in the simulator,
    /// or on this host with --host, and write a model file for `pats-calibrated:FILE`
    /// (simulator) or MEMTAMER_GATE_POLICY=calibrated:FILE (gate library).
    Calibrate {
        /// Platform (built-in name or file).
        #[arg(long, default_value = "pats")]
        platform: String,
        /// Tolerated loss of DRAM throughput (0.05 = 5%).
        #[arg(long, default_value_t = 0.05)]
        max_loss: f64,
        /// Request sizes to measure, bytes.
        #[arg(long, value_delimiter = ',', default_value = "256,512,1024,4096")]
        sizes: Vec<u64>,
        /// Write the model (TOML) here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Measure this host instead of a simulated platform: real PM threads copy into
        /// --pm-file through a gate fixed at N = 1, 2, ... beside a DRAM memcpy probe.
        #[arg(long)]
        host: bool,
        /// (--host) The PM file to create and write (on a DAX file system for real PM).
        #[arg(long, default_value = "/dev/shm/memtamer-calibrate")]
        pm_file: PathBuf,
        /// (--host) PM threads, the largest N tried (default: cores - 1).
        #[arg(long)]
        threads: Option<u32>,
        /// (--host) Measurement time per limit, milliseconds.
        #[arg(long, default_value_t = 500)]
        point_ms: u64,
        /// (--host) PMs in the interleave set, for the Eq. 1 column.
        #[arg(long, default_value_t = 1)]
        interleave: u32,
    },
    /// Benchmarks that print ratios measured in the same run.
    Bench {
        #[command(subcommand)]
        cmd: BenchCmd,
    },
    /// What the sensors see on this host: which sources are active (and why the others are
    /// not), then one Observation per interval.
    Stat {
        /// Gate whose library reports to read (MEMTAMER_GATE of the programs).
        #[arg(long, default_value = "default")]
        gate: String,
        /// Interval between observations, milliseconds.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
        /// Observations to print (0: until interrupted).
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Print JSON (one object per line: sources first, then observations).
        #[arg(long)]
        json: bool,
    },
    /// The scheduling-domain tree of this host (NUMA node, LLC, SMT core) and its memory-only
    /// NUMA nodes (PM or CXL as memory tiers), from sysfs.
    Topology {
        /// sysfs root (a fake one for tests).
        #[arg(long, default_value = "/sys/devices/system")]
        sysfs: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A live view: per thread, PM read/write bandwidth, request size, gate wait and state,
    /// with the host's DRAM, WPQ and media figures where counters exist.
    Top {
        /// Gate whose library reports to read.
        #[arg(long, default_value = "default")]
        gate: String,
        /// Refresh interval, milliseconds.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
        /// Sort rows by this column.
        #[arg(long, value_enum, default_value_t = TopSort::Write)]
        sort: TopSort,
        /// Print one frame and exit (for scripts).
        #[arg(long)]
        once: bool,
    },
    /// Serve Prometheus metrics (sensing sources, per-thread PM bandwidth, DRAM, WPQ delay,
    /// media, gate) over HTTP at /metrics.
    ServeMetrics {
        /// Address to listen on (localhost by default).
        #[arg(long, default_value = "127.0.0.1:9464")]
        listen: String,
        /// Gate whose library reports to read.
        #[arg(long, default_value = "default")]
        gate: String,
        /// Window over which rates are computed, milliseconds.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
    },
    /// The daemon (foreground): Dicio LC/BE isolation and core specialization on the
    /// processes a config selects; undoes every change on exit (and via a guard after SIGKILL).
    Run {
        /// The config (TOML; see docs/control.md).
        #[arg(long, default_value = "/etc/memtamer/memtamer.toml")]
        config: PathBuf,
        /// proc root (a fake one for tests).
        #[arg(long, default_value = "/proc")]
        proc_root: PathBuf,
        /// Stop after this many iterations (tests, benchmarks).
        #[arg(long)]
        iterations: Option<u64>,
        /// Do not start the guard process (only for tests of the guard itself).
        #[arg(long, hide = true)]
        no_guard: bool,
    },
    /// Jobs, classes, policy state and the last decisions of a running daemon.
    Status {
        /// The daemon's control socket.
        #[arg(long, default_value = "/run/memtamer/control.sock")]
        socket: PathBuf,
        /// Print the raw JSON document.
        #[arg(long)]
        json: bool,
    },
    /// (started by `memtamer run`) wait for the daemon PID to die, then undo its journal.
    Guard {
        /// The daemon's pid.
        #[arg(long)]
        pid: i32,
        /// The daemon's journal.
        #[arg(long)]
        journal: PathBuf,
    },
    /// Undo every change recorded in a daemon journal (e.g. systemd ExecStopPost).
    Restore {
        /// The journal.
        #[arg(long, default_value = "/run/memtamer/journal")]
        journal: PathBuf,
    },
    /// The system-wide PATS gate: statistics, limit, and running programs under the libpmem shim.
    Gate {
        #[command(subcommand)]
        cmd: GateCmd,
    },
}

#[derive(clap::Args)]
struct GateWhich {
    /// Gate name (the MEMTAMER_GATE of the programs using it).
    #[arg(long, default_value = "default")]
    name: String,
    /// Directory of the gate file.
    #[arg(long, default_value = "/dev/shm")]
    dir: PathBuf,
}

#[derive(Subcommand)]
enum GateCmd {
    /// Show the limit, the Serving-Thread count, the peak, and per-thread request statistics
    /// (slots of dead threads are freed first).
    Stats {
        #[command(flatten)]
        which: GateWhich,
        /// Output format.
        #[arg(long, value_enum, default_value_t = GateFormat::Table)]
        format: GateFormat,
        /// Redraw every SECONDS (a live view).
        #[arg(long, value_name = "SECONDS")]
        watch: Option<f64>,
    },
    /// Set the limit T_S (a number, or `unlimited`). The collector may change it again
    /// unless the programs run with MEMTAMER_GATE_POLICY=external.
    SetLimit {
        #[command(flatten)]
        which: GateWhich,
        /// New limit.
        limit: String,
    },
    /// Forget the recorded peak (start a new measurement).
    ResetPeak {
        #[command(flatten)]
        which: GateWhich,
    },
    /// Remove the gate file (refused while live threads use it).
    Remove {
        #[command(flatten)]
        which: GateWhich,
    },
    /// Run an unmodified libpmem program with the shim preloaded:
    /// `memtamer gate exec --policy fixed:2 -- fio job.fio`.
    Exec {
        /// Gate name (MEMTAMER_GATE).
        #[arg(long)]
        name: Option<String>,
        /// pats | pats:T_MC | fixed:N | calibrated:MODEL.toml | external (MEMTAMER_GATE_POLICY).
        #[arg(long)]
        policy: Option<String>,
        /// PMs in the interleave set (MEMTAMER_PM_INTERLEAVE).
        #[arg(long)]
        interleave: Option<u32>,
        /// The program and its arguments.
        #[arg(last = true, required = true)]
        cmd: Vec<String>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TopSort {
    Write,
    Read,
    Wait,
    Pid,
}

#[derive(Clone, Copy, ValueEnum)]
enum GateFormat {
    Table,
    Json,
    Prometheus,
}

#[derive(Subcommand)]
enum SimCmd {
    /// List built-in platforms and scenarios.
    List,
    /// Run a scenario (built-in name or a .toml file).
    Run {
        /// Scenario name or path.
        scenario: String,
        /// Override a key: `job.NAME.threads=4`, `duration_ms=10`, `platform.memory.wpq_entries=64`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Sweep a key over values (replaces the scenario's sweeps): `job.fio.threads=0,2,4`.
        #[arg(long = "sweep", value_name = "KEY=V1,V2,...")]
        sweeps: Vec<String>,
        /// Seed (0 ..= 2^63-1).
        #[arg(long, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
        seed: Option<u64>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write an HTML report with SVG plots into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
    },
    /// Run every built-in reproduction and platform check; print paper vs simulated.
    Validate {
        /// Print the validation tables as Markdown (for docs/simulator.md).
        #[arg(long)]
        markdown: bool,
        /// Write an HTML report with every figure into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Compare Baseline, PATS (Eq. 1), calibrated and adaptive PATS on several platforms
    /// and request mixes; print Markdown tables and where each wins.
    ComparePats {
        /// Platforms (built-in names or files).
        #[arg(long, value_delimiter = ',', default_value = "pats,pats-3pm,dicio,ahn")]
        platforms: Vec<String>,
    },
    /// Ahn Table 2 against a brute-force optimum: every static layout of N SPEC-like and N
    /// fio-like tasks over the two sockets, plus the `placement` policy; prints the Markdown
    /// table of docs/placement.md.
    Placement {
        /// SPEC-like profiles.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "xalancbmk,perlbench,x264,mcf,omnetpp,fotonik3d"
        )]
        profiles: Vec<String>,
        /// Tasks of each type (even, at most 8).
        #[arg(long = "n", value_delimiter = ',', default_value = "2,4,8")]
        ns: Vec<u32>,
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
    },
    /// Measure the simulated PEBS sampler's accounting error against ground truth.
    Sampler {
        /// Sampling periods to test.
        #[arg(long, value_delimiter = ',', default_value = "2503,5107,9973,20011")]
        periods: Vec<u64>,
    },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Simulated memory requests per second of wall time on one core.
    Sim,
    /// The PATS gate: begin+end cost, libpmem shim overhead, collector CPU.
    Gate {
        /// Fewer iterations (a smoke run).
        #[arg(long)]
        quick: bool,
    },
    /// Sensing: perf-sample attribution throughput (samples/s on one core).
    Sense,
    /// The daemon: CPU use of its loop with many managed threads, against an empty loop.
    Daemon {
        /// Seconds to run each loop.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Managed threads (one worker process).
        #[arg(long, default_value_t = 100)]
        threads: usize,
        /// Loop period, microseconds.
        #[arg(long, default_value_t = 1000)]
        period_us: u64,
    },
    /// (internal) the managed worker process of `bench daemon`.
    #[command(hide = true)]
    DaemonWorker {
        #[arg(long)]
        threads: usize,
    },
    /// (internal) the child process of `bench gate` that times pmem_memcpy_persist.
    #[command(hide = true)]
    ShimWorker {
        #[arg(long)]
        file: String,
        #[arg(long)]
        iters: u64,
        /// Also time blocks straight to libpmem, alternated with the others.
        #[arg(long)]
        alternate: bool,
        /// Pin the worker to this CPU.
        #[arg(long)]
        cpu: Option<usize>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
    Csv,
}

fn main() -> ExitCode {
    // like other Unix tools, stop quietly when the reader of our output goes away
    // SAFETY: restoring the default disposition of SIGPIPE at start-up.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("memtamer: {e}");
            ExitCode::from(2)
        }
    }
}

fn parse_kv(arg: &str) -> Result<(String, String), String> {
    arg.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .ok_or_else(|| format!("`{arg}`: expected KEY=VALUE"))
}

fn write_report(dir: &PathBuf, title: &str, results: &[ScenarioResult]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("index.html");
    std::fs::write(&path, report::html(title, results))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    for r in results {
        for (i, svg) in report::scenario_svgs(r).iter().enumerate() {
            let p = dir.join(format!("{}-{}.svg", r.scenario, i + 1));
            std::fs::write(&p, svg).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        }
    }
    eprintln!("report: {}", path.display());
    Ok(())
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.cmd {
        Cmd::Demo { report: dir } => {
            let s = load_scenario("demo").map_err(|e| e.to_string())?;
            let opts = RunOptions {
                progress: true,
                ..Default::default()
            };
            let r = experiment::run_scenario(&s, &opts).map_err(|e| e.to_string())?;
            print!("{}", demo_view(&r));
            println!("\nTry: memtamer sim run pats-fig10 · memtamer sim validate --report report/ · memtamer gate exec -- <libpmem program>");
            if let Some(d) = dir {
                write_report(&d, "memtamer demo", &[r])?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sim { cmd } => match cmd {
            SimCmd::List => {
                println!("platforms:");
                for (n, t) in experiment::PLATFORMS {
                    let d = memtamer_sim::Platform::parse(n, t)
                        .map(|p| p.description)
                        .unwrap_or_default();
                    println!("  {n:<12} {d}");
                }
                println!("scenarios:");
                for (n, t) in experiment::SCENARIOS {
                    let d = memtamer_sim::Scenario::parse(n, t)
                        .map(|s| s.title)
                        .unwrap_or_default();
                    println!("  {n:<20} {d}");
                }
                Ok(ExitCode::SUCCESS)
            }
            SimCmd::Run {
                scenario,
                sets,
                sweeps,
                seed,
                format,
                report: dir,
                jobs,
            } => {
                let s = load_scenario(&scenario).map_err(|e| e.to_string())?;
                let mut opts = RunOptions {
                    seed,
                    jobs,
                    progress: true,
                    ..Default::default()
                };
                for a in &sets {
                    let (k, v) = parse_kv(a)?;
                    opts.sets.push((k, parse_value(&v)));
                }
                if !sweeps.is_empty() {
                    let mut list = Vec::new();
                    for a in &sweeps {
                        let (k, v) = parse_kv(a)?;
                        let values = v.split(',').map(|x| parse_value(x.trim())).collect();
                        list.push(SweepSpec { key: k, values });
                    }
                    opts.sweep = Some(list);
                }
                let r = experiment::run_scenario(&s, &opts).map_err(|e| e.to_string())?;
                match format {
                    Format::Table => print!("{}", report::table(&r)),
                    Format::Json => println!(
                        "{}",
                        serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?
                    ),
                    Format::Csv => print!("{}", report::csv(&r)),
                }
                if let Some(d) = dir {
                    write_report(&d, &r.title.clone(), &[r])?;
                }
                Ok(ExitCode::SUCCESS)
            }
            SimCmd::Validate {
                markdown,
                report: dir,
            } => {
                let v = validate::run_all(true).map_err(|e| e.to_string())?;
                if markdown {
                    print!("{}", validate::markdown(&v));
                } else {
                    print!("{}", validate::text(&v));
                }
                if let Some(d) = dir {
                    write_report(&d, "memtamer simulator validation", &v.scenarios)?;
                }
                Ok(ExitCode::SUCCESS)
            }
            SimCmd::ComparePats { platforms } => {
                let rows =
                    memtamer_sim::compare::compare(&platforms, true).map_err(|e| e.to_string())?;
                eprintln!();
                print!("{}", memtamer_sim::compare::markdown(&rows));
                Ok(ExitCode::SUCCESS)
            }
            SimCmd::Placement { profiles, ns, jobs } => {
                let cases = memtamer_sim::placement_eval::evaluate(&profiles, &ns, jobs, true)
                    .map_err(|e| e.to_string())?;
                print!("{}", memtamer_sim::placement_eval::markdown(&cases));
                Ok(ExitCode::SUCCESS)
            }
            SimCmd::Sampler { periods } => {
                print!(
                    "{}",
                    validate::sampler_accuracy(&periods).map_err(|e| e.to_string())?
                );
                Ok(ExitCode::SUCCESS)
            }
        },
        Cmd::Calibrate {
            platform,
            max_loss,
            sizes,
            out,
            host,
            pm_file,
            threads,
            point_ms,
            interleave,
        } => {
            let (model, n_pm) = if host {
                let defaults = memtamer_gate::host_calibrate::HostCalibration::default();
                let spec = memtamer_gate::host_calibrate::HostCalibration {
                    pm_file,
                    threads: threads.unwrap_or(defaults.threads),
                    request_sizes: sizes,
                    per_point: std::time::Duration::from_millis(point_ms.max(1)),
                    max_dram_loss: max_loss,
                    ..defaults
                };
                let model = memtamer_gate::host_calibrate::calibrate_host(&spec, |line| {
                    eprintln!("{line}")
                })
                .map_err(|e| e.to_string())?;
                (model, interleave.max(1))
            } else {
                let spec = memtamer_sim::calibrate::CalibrationSpec {
                    platform,
                    max_dram_loss: max_loss,
                    request_sizes: sizes,
                    progress: true,
                    ..Default::default()
                };
                let model = memtamer_sim::calibrate::calibrate(&spec).map_err(|e| e.to_string())?;
                let n_pm = memtamer_sim::experiment::pm_interleave(
                    &memtamer_sim::experiment::load_platform(&model.platform, &Default::default())
                        .map_err(|e| e.to_string())?,
                );
                (model, n_pm)
            };
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
            let text = toml::to_string(&model).map_err(|e| e.to_string())?;
            match out {
                Some(path) => {
                    std::fs::write(&path, text)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    if host {
                        eprintln!(
                            "model: {} (use MEMTAMER_GATE_POLICY=calibrated:{})",
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
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { cmd: BenchCmd::Sim } => {
            print!("{}", validate::speed_bench().map_err(|e| e.to_string())?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench {
            cmd: BenchCmd::Gate { quick },
        } => {
            print!("{}", bench_gate::run(quick)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench {
            cmd: BenchCmd::Sense,
        } => {
            print!("{}", memtamer_sense::bench::run(2_000_000)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench {
            cmd:
                BenchCmd::Daemon {
                    seconds,
                    threads,
                    period_us,
                },
        } => {
            print!(
                "{}",
                bench_daemon::run(seconds, threads.max(1), period_us.max(10))?
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench {
            cmd: BenchCmd::DaemonWorker { threads },
        } => bench_daemon::worker(threads.max(1)),
        Cmd::Bench {
            cmd:
                BenchCmd::ShimWorker {
                    file,
                    iters,
                    alternate,
                    cpu,
                },
        } => {
            bench_gate::shim_worker(&file, iters.max(1), alternate, cpu)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Gate { cmd } => run_gate(cmd),
        Cmd::Run {
            config,
            proc_root,
            iterations,
            no_guard,
        } => daemon_cmd::run(&config, &proc_root, iterations, no_guard),
        Cmd::Status { socket, json } => daemon_cmd::status(&socket, json),
        Cmd::Guard { pid, journal } => daemon_cmd::guard(pid, &journal),
        Cmd::Restore { journal } => daemon_cmd::restore(&journal),
        Cmd::Topology { sysfs, json } => {
            let t = memtamer_sense::topology::read_topology(&sysfs)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&t).map_err(|e| e.to_string())?
                );
            } else {
                print!("{}", t.render());
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Top {
            gate,
            interval_ms,
            sort,
            once,
        } => run_top(&gate, interval_ms, sort, once),
        Cmd::ServeMetrics {
            listen,
            gate,
            interval_ms,
        } => serve_metrics(&listen, &gate, interval_ms),
        Cmd::Stat {
            gate,
            interval_ms,
            count,
            json,
        } => run_stat(&gate, interval_ms, count, json),
    }
}

fn sensors_for(gate: &str) -> Result<memtamer_sense::sources::Sensors, String> {
    let mut config = memtamer_sense::sources::SourceConfig::from_env()?;
    config.gate = memtamer_gate::GateOptions {
        name: gate.to_string(),
        ..Default::default()
    };
    Ok(memtamer_sense::sources::Sensors::open(&config))
}

/// A window's host-wide figures, each unknown when its source is missing.
struct HostRates {
    /// DRAM GB/s from the iMC CAS counts.
    dram_gbps: Option<f64>,
    /// WPQ delay per channel, iMC cycles.
    wpq_cycles: Vec<f64>,
    /// PM media write GB/s over all DIMMs.
    media_write_gbps: Option<f64>,
}

impl HostRates {
    fn of(obs: &memtamer_core::Observation) -> HostRates {
        let secs = (obs.duration_ns as f64 / 1e9).max(1e-9);
        HostRates {
            dram_gbps: obs.dram_cas().map(|c| c as f64 * 64.0 / secs / 1e9),
            wpq_cycles: obs
                .channels
                .iter()
                .filter_map(|c| c.wpq_delay_cycles())
                .collect(),
            media_write_gbps: (!obs.dimms.is_empty()).then(|| {
                let w: u64 = obs.dimms.iter().filter_map(|d| d.media_write_bytes).sum();
                w as f64 / secs / 1e9
            }),
        }
    }
}

/// One frame of `memtamer top`.
fn top_frame(
    obs: &memtamer_core::Observation,
    snap: Option<&memtamer_gate::GateSnapshot>,
    sources: &[memtamer_sense::sources::SourceStatus],
    sort: TopSort,
) -> String {
    let secs = (obs.duration_ns as f64 / 1e9).max(1e-9);
    let active: Vec<&str> = sources
        .iter()
        .filter(|s| s.active)
        .map(|s| s.source)
        .collect();
    let missing: Vec<&str> = sources
        .iter()
        .filter(|s| !s.active)
        .map(|s| s.source)
        .collect();
    let mut out = format!(
        "memtamer top · window {:.2} s · sources: {} · missing: {} (memtamer stat says why)\n",
        secs,
        if active.is_empty() {
            "none".into()
        } else {
            active.join(", ")
        },
        if missing.is_empty() {
            "none".into()
        } else {
            missing.join(", ")
        }
    );
    match &obs.gate {
        Some(g) => {
            out += &format!(
                "gate: T_S {}  in use {}  waiting {}\n",
                g.limit.map_or("unlimited".into(), |n| n.to_string()),
                g.admitted,
                g.waiting
            )
        }
        None => out += "gate: unknown (no library reports)\n",
    }
    let host = HostRates::of(obs);
    let unknown = || "unknown".to_string();
    out += &format!(
        "DRAM {} · WPQ delay {} · media writes {}\n\n",
        host.dram_gbps
            .map_or_else(unknown, |g| format!("{g:.2} GB/s")),
        if host.wpq_cycles.is_empty() {
            unknown()
        } else {
            format!(
                "{:.0} cycles (max over channels)",
                host.wpq_cycles.iter().copied().fold(0.0, f64::max)
            )
        },
        host.media_write_gbps
            .map_or_else(unknown, |g| format!("{g:.2} GB/s"))
    );
    struct Row {
        pid: u32,
        tid: u32,
        comm: String,
        read: f64,
        write: f64,
        avg: Option<f64>,
        wait: f64,
        state: String,
        source: &'static str,
    }
    let mut rows: Vec<Row> = obs
        .threads
        .iter()
        .map(|t| {
            let pm = t.pm.unwrap_or_default();
            let state = snap
                .and_then(|s| s.threads.iter().find(|x| x.pid == t.job && x.tid == t.tid))
                .map_or("-".to_string(), |x| format!("{:?}", x.state).to_lowercase());
            Row {
                pid: t.job,
                tid: t.tid,
                comm: std::fs::read_to_string(format!("/proc/{}/task/{}/comm", t.job, t.tid))
                    .map(|c| c.trim().to_string())
                    .unwrap_or_else(|_| "?".into()),
                read: pm.read_bytes as f64 / secs / 1e6,
                write: pm.write_bytes as f64 / secs / 1e6,
                avg: pm.average_request_bytes(),
                wait: t.gate_wait_ns.unwrap_or(0) as f64 / obs.duration_ns.max(1) as f64 * 100.0,
                state,
                // library reports carry gate waits; sampled threads do not
                source: if t.gate_wait_ns.is_some() {
                    "library"
                } else {
                    "pebs"
                },
            }
        })
        .collect();
    rows.sort_by(|a, b| match sort {
        TopSort::Write => b.write.total_cmp(&a.write),
        TopSort::Read => b.read.total_cmp(&a.read),
        TopSort::Wait => b.wait.total_cmp(&a.wait),
        TopSort::Pid => (a.pid, a.tid).cmp(&(b.pid, b.tid)),
    });
    out += &format!(
        "{:>7} {:>7} {:<16} {:>12} {:>12} {:>9} {:>7} {:<8} {}\n",
        "PID",
        "TID",
        "COMM",
        "PM READ MB/s",
        "PM WRITE MB/s",
        "AVG REQ",
        "WAIT %",
        "STATE",
        "SOURCE"
    );
    for r in &rows {
        out += &format!(
            "{:>7} {:>7} {:<16} {:>12.1} {:>12.1} {:>9} {:>7.1} {:<8} {}\n",
            r.pid,
            r.tid,
            r.comm,
            r.read,
            r.write,
            r.avg.map_or("-".into(), |b| format!("{b:.0} B")),
            r.wait,
            r.state,
            r.source
        );
    }
    if rows.is_empty() {
        out += "  (no thread issued PM requests in this window)\n";
    }
    out
}

fn run_top(gate: &str, interval_ms: u64, sort: TopSort, once: bool) -> Result<ExitCode, String> {
    let mut sensors = sensors_for(gate)?;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(interval_ms.max(1)));
        let obs = sensors.observe();
        let frame = top_frame(
            &obs,
            sensors.gate_snapshot().as_ref(),
            &sensors.status,
            sort,
        );
        if once {
            print!("{frame}");
            return Ok(ExitCode::SUCCESS);
        }
        print!("\x1b[H\x1b[2J{frame}");
    }
}

fn serve_metrics(listen: &str, gate: &str, interval_ms: u64) -> Result<ExitCode, String> {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    let listener = std::net::TcpListener::bind(listen)
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    eprintln!(
        "serving http://{}/metrics",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    let text = Arc::new(Mutex::new(String::from("# no window yet\n")));
    let writer = Arc::clone(&text);
    let gate = gate.to_string();
    std::thread::spawn(move || {
        let mut sensors = match sensors_for(&gate) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("memtamer: {e}");
                std::process::exit(2);
            }
        };
        loop {
            std::thread::sleep(std::time::Duration::from_millis(interval_ms.max(1)));
            let obs = sensors.observe();
            let mut body = memtamer_sense::metrics::render(&obs, &sensors.status);
            if let Some(s) = sensors.gate_snapshot() {
                body += &s.prometheus();
            }
            *writer.lock().unwrap_or_else(|p| p.into_inner()) = body;
        }
    });
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
        let mut req = [0u8; 1024];
        let n = stream.read(&mut req).unwrap_or(0);
        let req = String::from_utf8_lossy(&req[..n]);
        let (status, body) = if req.starts_with("GET /metrics") {
            (
                "200 OK",
                text.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            )
        } else {
            ("404 Not Found", "try /metrics\n".to_string())
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_stat(gate: &str, interval_ms: u64, count: u64, json: bool) -> Result<ExitCode, String> {
    let mut sensors = sensors_for(gate)?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&sensors.status).map_err(|e| e.to_string())?
        );
    } else {
        println!("sources:");
        for s in &sensors.status {
            println!(
                "  {:<20} {:<8} {}",
                s.source,
                if s.active { "active" } else { "missing" },
                s.detail
            );
        }
    }
    let mut n = 0;
    while count == 0 || n < count {
        std::thread::sleep(std::time::Duration::from_millis(interval_ms.max(1)));
        let obs = sensors.observe();
        n += 1;
        if json {
            println!(
                "{}",
                serde_json::to_string(&obs).map_err(|e| e.to_string())?
            );
            continue;
        }
        let secs = obs.duration_ns as f64 / 1e9;
        let pm = obs.pm_total();
        let gbps = |b: u64| b as f64 / secs.max(1e-9) / 1e9;
        let host = HostRates::of(&obs);
        let pm_known = obs.gate.is_some()
            || sensors
                .status
                .iter()
                .any(|s| s.active && s.source.starts_with("PEBS"));
        let pm_text = if pm_known {
            format!(
                "PM read {:.3} GB/s write {:.3} GB/s ({} threads)",
                gbps(pm.read_bytes),
                gbps(pm.write_bytes),
                obs.threads.len()
            )
        } else {
            "PM unknown".to_string()
        };
        println!(
            "{:.2} s: {pm_text} · DRAM {} · WPQ delay {} · media {}",
            secs,
            host.dram_gbps
                .map_or("unknown".into(), |g| format!("{g:.3} GB/s")),
            if host.wpq_cycles.is_empty() {
                "unknown".into()
            } else {
                let cycles: Vec<String> =
                    host.wpq_cycles.iter().map(|d| format!("{d:.0}")).collect();
                format!("{} cycles", cycles.join("/"))
            },
            host.media_write_gbps
                .map_or("unknown".into(), |g| format!("write {g:.3} GB/s"))
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_gate(cmd: GateCmd) -> Result<ExitCode, String> {
    match cmd {
        GateCmd::Stats {
            which,
            format,
            watch,
        } => {
            let g = gate::open_existing(&which.name, &which.dir)?;
            // show live threads only: free the slots of dead ones first
            g.reap(true);
            if let Some(secs) = watch {
                if !(secs.is_finite() && secs > 0.0) {
                    return Err(format!(
                        "--watch {secs}: expected a positive number of seconds"
                    ));
                }
                gate::watch(&g, std::time::Duration::from_secs_f64(secs));
            }
            let snap = g.snapshot();
            match format {
                GateFormat::Table => print!("{}", gate::table(&snap)),
                GateFormat::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&snap).map_err(|e| e.to_string())?
                ),
                GateFormat::Prometheus => print!("{}", snap.prometheus()),
            }
            Ok(ExitCode::SUCCESS)
        }
        GateCmd::SetLimit { which, limit } => {
            let value = match limit.trim() {
                "unlimited" => None,
                n => Some(
                    n.parse::<u32>()
                        .ok()
                        .filter(|n| *n >= 1 && *n < u32::MAX)
                        .ok_or_else(|| {
                            format!("limit {n:?}: expected a whole number >= 1 or `unlimited`")
                        })?,
                ),
            };
            gate::open_existing(&which.name, &which.dir)?.set_limit(value);
            Ok(ExitCode::SUCCESS)
        }
        GateCmd::ResetPeak { which } => {
            gate::open_existing(&which.name, &which.dir)?.reset_peak();
            Ok(ExitCode::SUCCESS)
        }
        GateCmd::Remove { which } => {
            gate::remove(&which.name, &which.dir)?;
            Ok(ExitCode::SUCCESS)
        }
        GateCmd::Exec {
            name,
            policy,
            interleave,
            cmd,
        } => {
            let mut env = Vec::new();
            if let Some(n) = name {
                env.push(("MEMTAMER_GATE".to_string(), n));
            }
            if let Some(p) = policy {
                env.push(("MEMTAMER_GATE_POLICY".to_string(), p));
            }
            if let Some(n) = interleave {
                env.push(("MEMTAMER_PM_INTERLEAVE".to_string(), n.to_string()));
            }
            gate::exec(&env, &cmd)
        }
    }
}

/// The demo's pivot: one column per policy, then a sparkline per policy.
fn demo_view(r: &ScenarioResult) -> String {
    let policies: Vec<String> = {
        let mut seen: Vec<String> = Vec::new();
        for p in &r.points {
            if let Some(v) = p.params.get("policy").and_then(|v| v.as_str()) {
                if !seen.iter().any(|s| s == v) {
                    seen.push(v.to_string());
                }
            }
        }
        seen
    };
    let xs: Vec<f64> = {
        let mut xs: Vec<f64> = r.points.iter().filter_map(|p| p.x).collect();
        xs.sort_by(|a, b| a.total_cmp(b));
        xs.dedup();
        xs
    };
    let get = |x: f64, policy: &str, metric: &str| -> Option<f64> {
        r.points
            .iter()
            .find(|p| {
                p.x == Some(x) && p.params.get("policy").and_then(|v| v.as_str()) == Some(policy)
            })
            .and_then(|p| p.metrics.get(metric).copied())
    };
    let mut out = format!("# {}\n\n", r.title);
    let w = 16;
    out += &format!(
        "{:>8} | {:^width$} | {:^width$}\n",
        "PM",
        "DRAM memcpy GB/s",
        "PM write GB/s",
        width = (w + 1) * policies.len()
    );
    out += &format!("{:>8} |", "writers");
    for _ in 0..2 {
        for p in &policies {
            out += &format!(" {p:>w$}");
        }
        out += " |";
    }
    out.pop();
    out += "\n";
    for &x in &xs {
        out += &format!("{x:>8} |");
        for metric in ["memcpy.gbps", "pm.request_write_gbps"] {
            for p in &policies {
                out += &format!(" {:>w$}", get(x, p, metric).map_or("-".into(), report::num));
            }
            out += " |";
        }
        out.pop();
        out += "\n";
    }
    let blocks = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = r
        .points
        .iter()
        .filter_map(|p| p.metrics.get("memcpy.gbps").copied())
        .fold(0.0, f64::max)
        .max(1e-9);
    out += &format!(
        "\nDRAM memcpy as PM writers go {} → {}:\n",
        xs.first().unwrap_or(&0.0),
        xs.last().unwrap_or(&0.0)
    );
    for p in &policies {
        let line: String = xs
            .iter()
            .map(|&x| {
                let v = get(x, p, "memcpy.gbps").unwrap_or(0.0) / max;
                blocks[((v * 7.0).round() as usize).min(7)]
            })
            .collect();
        let last = xs
            .last()
            .and_then(|&x| get(x, p, "memcpy.gbps"))
            .unwrap_or(0.0);
        let first = xs
            .first()
            .and_then(|&x| get(x, p, "memcpy.gbps"))
            .unwrap_or(1.0);
        out += &format!(
            "  {p:<16} {line}  {:>5.1}% of no-PM at {} writers\n",
            100.0 * last / first.max(1e-9),
            xs.last().unwrap_or(&0.0)
        );
    }
    out
}
