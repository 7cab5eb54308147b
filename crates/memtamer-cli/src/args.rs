//! The command line as clap definitions: every subcommand, flag and default
//! of `memtamer`. Only declarations live here; `cmd::*` does the work, so the
//! interface can be read in one place (scripts/ and README use these spellings).

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub(crate) use crate::format::Format;

#[derive(Parser)]
#[command(
    name = "memtamer",
    version,
    about = "Tame DRAM/PM contention: simulate, sense, decide, act."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
    /// Output format of the command's data (each command lists what it prints in
    /// docs/cli.md; an unsupported one is refused). Default: table.
    #[arg(long, global = true, value_enum)]
    pub(crate) format: Option<Format>,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
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
    /// (simulator) or MEMTAMER_GATE_POLICY=pats-calibrated:FILE (gate library).
    Calibrate(CalibrateArgs),
    /// Benchmarks of memtamer's own speed and costs: simulator and sensing rates, and gate,
    /// daemon, Ribbon, ArchTM and tier costs as ratios against baselines of the same run.
    Bench {
        #[command(subcommand)]
        cmd: BenchCmd,
    },
    /// What the sensors see on this host: which sources are active (and why the others are
    /// not), then one Observation per interval.
    Stat {
        /// Gate whose library reports to read (MEMTAMER_GATE of the programs).
        #[arg(long, default_value = "default", value_parser = parse_gate_name)]
        gate: String,
        /// Interval between observations, milliseconds (1 ..= 3600000:
        /// 0 would read the sensors in a loop with no pause).
        #[arg(long, default_value_t = 1000,
              value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
        interval_ms: u64,
        /// Observations to print (0: until interrupted).
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Same as --format json (one object per line: sources first, then observations).
        #[arg(long, hide = true)]
        json: bool,
    },
    /// The scheduling-domain tree of this host (NUMA node, LLC, SMT core) and its memory-only
    /// NUMA nodes (PM or CXL as memory tiers), from sysfs.
    Topology {
        /// sysfs root (a fake one for tests).
        #[arg(long, default_value = "/sys/devices/system")]
        sysfs: PathBuf,
        /// Same as --format json.
        #[arg(long, hide = true)]
        json: bool,
    },
    /// A live view: per thread, PM read/write bandwidth, request size, gate wait and state,
    /// with the host's DRAM, WPQ and media figures where counters exist.
    Top {
        /// Gate whose library reports to read.
        #[arg(long, default_value = "default", value_parser = parse_gate_name)]
        gate: String,
        /// Refresh interval, milliseconds (1 ..= 3600000:
        /// 0 would read the sensors in a loop with no pause).
        #[arg(long, default_value_t = 1000,
              value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
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
        #[arg(long, default_value = "default", value_parser = parse_gate_name)]
        gate: String,
        /// How often the sensors are read into the counters, milliseconds (1 ..= 3600000:
        /// 0 would read the sensors in a loop with no pause).
        #[arg(long, default_value_t = 1000,
              value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
        interval_ms: u64,
        /// Also label PM series by pid and tid: one series per thread ever
        /// seen, for debugging; by default series are per gate, job and cgroup.
        #[arg(long)]
        per_thread: bool,
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
        /// Only load and validate the config, then exit (systemd ExecReload runs this
        /// before sending SIGHUP, which makes the daemon undo, reload and restart).
        #[arg(long)]
        check_config: bool,
    },
    /// Jobs, classes, policy state and the last decisions of a running daemon.
    Status {
        /// The daemon's control socket.
        #[arg(long, default_value = "/run/memtamer/control.sock")]
        socket: PathBuf,
        /// Same as --format json (the raw status document).
        #[arg(long, hide = true)]
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
        /// Watchdog: read the daemon's heartbeat on stdin and kill and undo
        /// a daemon silent this long (stopped or hung).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=600_000))]
        watchdog_ms: Option<u64>,
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
    /// Tiered data objects (Unimem): status of objects and placements per rank.
    Tier {
        #[command(subcommand)]
        cmd: TierCmd,
    },
    /// (packaging) Write man pages and bash/zsh/fish completions generated from this
    /// command line into DIR/man1 and DIR/completions.
    #[command(hide = true)]
    GenerateAssets {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
    },
}

// the options of `memtamer calibrate`
#[derive(clap::Args)]
pub(crate) struct CalibrateArgs {
    /// Platform (built-in name or file).
    #[arg(long, default_value = "pats")]
    pub(crate) platform: String,
    /// Tolerated loss of DRAM throughput (0.05 = 5%).
    #[arg(long, default_value_t = 0.05)]
    pub(crate) max_loss: f64,
    /// Request sizes to measure, bytes.
    #[arg(long, value_delimiter = ',', default_value = "256,512,1024,4096")]
    pub(crate) sizes: Vec<u64>,
    /// Write the model (TOML) here.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Measure this host instead of a simulated platform: real PM threads copy into
    /// --pm-file through a gate fixed at N = 1, 2, ... beside a DRAM memcpy probe.
    #[arg(long)]
    pub(crate) host: bool,
    /// (--host) The PM file to create and write (on a DAX file system for real PM).
    #[arg(long, default_value = "/dev/shm/memtamer-calibrate")]
    pub(crate) pm_file: PathBuf,
    /// (--host) PM threads, the largest N tried (default: cores - 1).
    #[arg(long)]
    pub(crate) threads: Option<u32>,
    /// (--host) Measurement time per limit, milliseconds (1 ..= 60000: 0 was taken as 1
    /// and 2^64-1 measured forever).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub(crate) point_ms: u64,
    /// (--host) PMs in the interleave set, for the Eq. 1 column.
    #[arg(long, default_value_t = 1)]
    pub(crate) interleave: u32,
    /// Worker threads of the simulated calibration (default: all cores; --host
    /// measures with --threads instead and refuses --jobs).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
}

// which gate a `gate` subcommand works on
#[derive(clap::Args)]
pub(crate) struct GateWhich {
    /// Gate name (the MEMTAMER_GATE of the programs using it).
    #[arg(long, default_value = "default", value_parser = parse_gate_name)]
    pub(crate) name: String,
    /// Directory of the gate file.
    #[arg(long, default_value = "/dev/shm")]
    pub(crate) dir: PathBuf,
}

#[derive(Subcommand)]
pub(crate) enum GateCmd {
    /// Show the limit, the Serving-Thread count, the peak, and per-thread request statistics
    /// (slots of dead threads are freed first).
    Stats {
        #[command(flatten)]
        which: GateWhich,
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
    /// Validate the gate file (header checksum, bounds of every shared word, slot states,
    /// lock owner); exits nonzero when something is wrong.
    Check {
        #[command(flatten)]
        which: GateWhich,
    },
    /// Repair the gate file in place: rewrite the fixed header and its checksum, rebuild the
    /// serving count and the queue from the slots, free slots of dead threads.
    Repair {
        #[command(flatten)]
        which: GateWhich,
    },
    /// Remove the gate file (refused while live threads use it; a file of another
    /// version's layout is always removed).
    Remove {
        #[command(flatten)]
        which: GateWhich,
    },
    /// (internal) Torture a gate as hostile processes would (scripts/check-hostile).
    #[command(hide = true)]
    Hostile(HostileArgs),
    /// Run an unmodified libpmem program with the shim preloaded:
    /// `memtamer gate exec --policy gate:2 -- fio job.fio`.
    Exec {
        /// Gate name (MEMTAMER_GATE).
        #[arg(long)]
        name: Option<String>,
        /// pats | pats:T_MC | gate:N | pats-calibrated:MODEL.toml | pats-adaptive | external (MEMTAMER_GATE_POLICY; docs/policy.md).
        #[arg(long)]
        policy: Option<String>,
        /// PMs in the interleave set (MEMTAMER_PM_INTERLEAVE).
        #[arg(long)]
        interleave: Option<u32>,
        /// Route pmem_flush / pmem_drain / pmem_persist (and the flushing copies) through
        /// Ribbon's adaptive flusher threads (MEMTAMER_RIBBON=1; docs/ribbon.md).
        #[arg(long)]
        ribbon: bool,
        /// Ribbon flusher threads: `auto` (the four-point search) or a count, 0 = the
        /// application threads flush (MEMTAMER_RIBBON_FLUSHERS; implies --ribbon).
        #[arg(long)]
        ribbon_flushers: Option<String>,
        /// The program and its arguments.
        #[arg(last = true, required = true)]
        cmd: Vec<String>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TopSort {
    Write,
    Read,
    Wait,
    Pid,
}

#[derive(Subcommand)]
pub(crate) enum SimCmd {
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
        /// Write an HTML report with SVG plots into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
        /// Also report every Ribbon four-point search of each point: its probes
        /// with the bandwidth read, P1..P4's estimates, the row and M chosen, and
        /// why it started (a `searches` list per point in JSON; text after the
        /// table; on stderr with CSV). Results are otherwise unchanged.
        #[arg(long)]
        trace_search: bool,
    },
    /// Run every built-in reproduction and platform check; print paper vs simulated.
    Validate {
        /// Scenarios to validate (built-in names or .toml files) instead of every
        /// built-in one and the platform checks.
        scenarios: Vec<String>,
        /// Same as --format markdown (the tables of docs/simulator.md).
        #[arg(long, hide = true)]
        markdown: bool,
        /// Worker threads (default: all cores); results do not depend on it.
        #[arg(long, default_value_t = 0)]
        jobs: usize,
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
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
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
    /// Tahoe (issue 21) against unmanaged first touch, static placement, Unimem with task
    /// types as phases and an oracle, on task-graph programs with the slow tier at 1/4
    /// bandwidth and at 4x latency; prints the Markdown tables of docs/tahoe.md.
    Tahoe {
        /// Platforms (the two built-in slow tiers, or platform files with regions dram and slow).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "tahoe-quarter-bw,tahoe-4x-latency"
        )]
        platforms: Vec<String>,
        /// Benchmarks (default: all): heat, strassen, fft, cg, randomaccess.
        #[arg(long = "bench", value_delimiter = ',')]
        benches: Vec<String>,
        /// Also evaluate a recording of the OMPT tool (MEMTAMER_TAHOE_RECORD=FILE), or
        /// `builtin` for the shipped recording of the heat client.
        #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
        recorded: Option<String>,
        /// Recorded program: tasks of a type that share one data block.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
        reuse: u64,
        /// Recorded program: divisor of instance counts and footprints.
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
        shrink: u64,
        /// Recorded program: data bytes per DRAM byte.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
        ratio: u64,
        /// Seed (0 ..= 2^63-1, the scenarios' seed range).
        #[arg(long, default_value_t = 1,
              value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
        seed: u64,
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
        /// Tahoe's partial-placement model: `parallel` (max(p*T_slow, T_dram), the
        /// simulator's default; docs/tahoe.md) or `additive` (the thesis's Eq. 4.4).
        #[arg(long = "partial-form", default_value = "parallel",
              value_parser = ["parallel", "additive"])]
        partial_form: String,
        /// Also run Tahoe placing the `out` blocks its tasks write whole in DRAM
        /// without a copy (`tahoe-outnocopy`, an ablation beyond the thesis), and
        /// print its table (docs/notebook/tahoe.md "Out blocks placed without a copy").
        #[arg(long = "out-no-copy")]
        out_no_copy: bool,
        /// Page-fault handling time per page of `--out-no-copy`, ns (default:
        /// measured on this repository's host, `tahoe_eval::OUT_FAULT_NS`).
        #[arg(long = "out-fault-ns", default_value_t = memtamer_sim::tahoe_eval::OUT_FAULT_NS,
              value_parser = parse_ns)]
        out_fault_ns: f64,
        /// Where Tahoe's all-slow time per task type comes from: `refined` (a
        /// representative with its pages in the slow tier, refined by every completed
        /// instance's time; the default), `slow-rep` (that representative only) or
        /// `thesis` (the first instance, wherever its pages are). docs/tahoe.md.
        #[arg(long = "model", default_value = "refined",
              value_parser = ["refined", "slow-rep", "thesis"])]
        model: String,
        /// Which pages unmanaged first touch puts in DRAM: `source` (arrays a program
        /// writes before its tasks, in allocation order, then the arrays its tasks
        /// first touch, as they run: Strassen's C and temporaries, from KASTORS's
        /// source) or `alloc` (every array at the start in allocation order, the
        /// tables before 2026-11-27). docs/notebook/tahoe.md "The setup against the thesis".
        #[arg(long = "first-touch", default_value = "source",
              value_parser = ["source", "alloc"])]
        first_touch: String,
        /// Where Tahoe's run-time first touches go (arrays a program first touches in its
        /// tasks: Strassen's C and temporaries): `thesis` (the slow tier: "All memory pages
        /// are initially allocated on NVM", §4.3.5) or `os` (free DRAM by unmanaged's
        /// first-touch rule, adopted by Tahoe; an ablation). docs/notebook/tahoe.md "Run-time first
        /// touch under Tahoe".
        #[arg(long = "tahoe-touch", default_value = "thesis",
              value_parser = ["thesis", "os"])]
        tahoe_touch: String,
        /// Frees inside the programs: `source` (KASTORS's Strassen frees each recursion
        /// node's temporaries after its taskwait: their DRAM is given back, no
        /// write-back) or `never` (every array lives the whole run, the tables before
        /// branch `tahoeft`). docs/notebook/tahoe.md "Freed temporaries".
        #[arg(long = "frees", default_value = "source",
              value_parser = ["source", "never"])]
        frees: String,
        /// How the cost-benefit check prices a page's saving and a copy's
        /// slow-tier traffic: `one` (one slope per task type, the check as it
        /// was) or `rw` (a slope per load and one per store, fitted
        /// leave-one-out like beta: a store moves two lines over the slow tier;
        /// wins RandomAccess at 1/4 bandwidth, loses heat at 4x latency).
        /// docs/notebook/tahoe.md "The check and later tasks' reuse".
        #[arg(long = "check-slopes", default_value = "one",
              value_parser = ["rw", "one"])]
        check_slopes: String,
        /// A benchmark's data bytes per DRAM byte in place of its Table 4.4 ratio,
        /// `NAME=N` (repeatable or comma-separated), e.g. `heat=2`: a probe of the
        /// DRAM that the thesis's stated inputs give at 128 MB (docs/notebook/tahoe.md "The
        /// setup against the thesis").
        #[arg(long = "dram-ratio", value_delimiter = ',')]
        dram_ratio: Vec<String>,
    },
    /// Unimem and its baselines on phased MPI-like programs over tiered data objects
    /// (issue 20 item 5); prints the Markdown of docs/notebook/unimem.md "In the simulator".
    Unimem {
        /// Platforms (built-in emulations emul-bw2, emul-lat4, or any simulator platform).
        #[arg(long, value_delimiter = ',', default_value = "emul-bw2,emul-lat4,pats")]
        platforms: Vec<String>,
        /// Phased scenarios (built-in names or .toml paths).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "cg,mg,ft,bt,nek,nek-eddy"
        )]
        scenarios: Vec<String>,
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
        /// Instead: each object's measured benefit of DRAM (slow-only vs only it in
        /// DRAM) against Unimem's model (docs/notebook/unimem.md, "One-time moves overlapped, per-object benefit").
        #[arg(long = "per-object")]
        per_object: bool,
        /// Also run the hindsight baselines (columns oracle-static, oracle-free):
        /// placements chosen by running candidates in the simulator (docs/notebook/unimem.md
        /// "What is attainable").
        #[arg(long, conflicts_with = "per_object")]
        oracle: bool,
        /// Unimem's benefit models: `measured` (each phase's exposure learned from
        /// its phase times once the first plan has run, then one re-decision; the
        /// default) or `full` (every slow-tier access exposed, thesis Eq. 3.2 as
        /// written: the ablation). docs/notebook/unimem.md "Measured exposure".
        #[arg(long, default_value = "measured", value_parser = ["measured", "full"])]
        exposure: String,
        /// The DRAM Unimem's plan leaves free in every phase: `remainder` (filled
        /// with the leading pages of the regular object the models predict best
        /// there; the default) or `off` (left free: the ablation).
        /// docs/notebook/unimem.md "Partial units".
        #[arg(long, default_value = "remainder", value_parser = ["remainder", "off"])]
        fill: String,
    },
    /// Ribbon in the simulator (issue 19): eager flushing, the PATS gate, the four-point
    /// search and proactive flushing against the M = 1..P4 oracle sweep; prints the
    /// Markdown tables of docs/ribbon.md "Ribbon in the simulator".
    Ribbon {
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
        /// Run every scenario with this seed instead of the scenarios' own (1); prints
        /// the same tables.
        #[arg(long, conflicts_with = "seeds",
              value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
        seed: Option<u64>,
        /// Run the tables once per seed (one worker pool for all) and print a
        /// Done-when summary with a column per seed and mean / min / max.
        #[arg(long, value_name = "S1,S2,...", value_parser = parse_seed_list)]
        seeds: Option<SeedList>,
    },
    /// Measure the simulated PEBS sampler's accounting error against ground truth.
    Sampler {
        /// Sampling periods to test (each >= 1: a PEBS period is the events
        /// counted per sample; 1 samples every event).
        #[arg(long, value_delimiter = ',', default_value = "2503,5107,9973,20011",
              value_parser = clap::value_parser!(u64).range(1..))]
        periods: Vec<u64>,
    },
}

#[derive(Subcommand)]
pub(crate) enum BenchCmd {
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
        /// Seconds to run each loop (at most an hour).
        #[arg(long, default_value_t = 5.0, value_parser = parse_loop_seconds)]
        seconds: f64,
        /// Managed threads (one worker process), 1..=4096.
        #[arg(long, default_value_t = 100,
              value_parser = clap::value_parser!(u64).range(1..=4096))]
        threads: u64,
        /// Loop period, microseconds, 10..=1000000.
        #[arg(long, default_value_t = 1000,
              value_parser = clap::value_parser!(u64).range(10..=1_000_000))]
        period_us: u64,
    },
    /// Ribbon: 4 KiB pmem_persist loop, eager flushing vs Ribbon at M = N and M = 0, and
    /// flushed lines per key/value insert with and without the coalescing allocator.
    Ribbon {
        /// Application threads N (Ribbon runs M = N flushers).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Persists per thread per round.
        #[arg(long, default_value_t = 2_000)]
        iters: usize,
        /// Alternating rounds (each runs every mode once; the median is reported).
        #[arg(long, default_value_t = 41)]
        rounds: usize,
    },
    /// ArchTM (memtamer-tx) against PMDK libpmemobj: hash table, red-black tree, TPC-C
    /// new-order and TATP; transactions/s, flushes and fences per transaction, ratios in one run.
    Tx {
        /// Directory for both engines' pools (a DAX mount, /dev/shm, any directory).
        #[arg(long, default_value = "/dev/shm")]
        dir: PathBuf,
        /// Thread counts (every workload runs once per count).
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        threads: Vec<usize>,
        /// Update percentages of the hash table and the red-black tree (TPC-C new-order
        /// always updates, TATP runs its standard 20%).
        #[arg(long, value_delimiter = ',', default_value = "5,50,80")]
        updates: Vec<u32>,
        /// Seconds per cell.
        #[arg(long, default_value_t = 1.0)]
        secs: f64,
        /// Smaller preloads (10K hash pairs, 100K tree pairs, 10K TATP subscribers) for a smoke run.
        #[arg(long)]
        quick: bool,
        /// Skip libpmemobj (ArchTM only).
        #[arg(long)]
        no_pmdk: bool,
    },
    /// Unimem: a CG kernel on tier objects with and without the runtime's profiling and
    /// decisions (objects starting in DRAM, then in the slow tier), ratio in one run.
    Tier {
        /// Grid columns (the matrix has nx * ny rows).
        #[arg(long, default_value_t = 512)]
        nx: usize,
        /// Grid rows.
        #[arg(long, default_value_t = 512)]
        ny: usize,
        /// CG iterations per run (NPB CG class B/C runs 75 x 25 = 1875).
        #[arg(long, default_value_t = 200)]
        iters: usize,
        /// Alternating rounds (the median ratio is reported).
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// Profiling sampler period, microseconds (the C ABI's default).
        #[arg(long, default_value_t = 1000)]
        tick_us: u64,
        /// Pages armed per object per tick.
        #[arg(long, default_value_t = 16)]
        pages: usize,
        /// Tick the sampler on the wall clock, as before the sampler was
        /// paced by the application's CPU time (`MEMTAMER_TIER_PACE=wall`;
        /// for comparisons).
        #[arg(long)]
        pace_wall: bool,
    },
    /// (internal) the managed worker process of `bench daemon`.
    #[command(hide = true)]
    DaemonWorker {
        /// Threads to run, the main one included (each sleeps; the daemon manages them).
        #[arg(long)]
        threads: usize,
    },
    /// (internal) the child process of `bench gate` that times pmem_memcpy_persist.
    #[command(hide = true)]
    ShimWorker {
        /// The PM file to copy into.
        #[arg(long)]
        file: String,
        /// pmem_memcpy_persist calls to time.
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

// what a `memtamer gate hostile` process plays
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HostileRole {
    /// The torture itself: spawns the others, corrupts, measures.
    Torture,
    /// A PM program: gated 4 KiB writes until stdin closes (or --requests).
    Worker,
    /// Enters the gate and exits while admitted, never giving its unit back.
    DieAdmitted,
}

// the options of `memtamer gate hostile` (cmd/hostile.rs, scripts/check-hostile)
#[derive(clap::Args)]
pub(crate) struct HostileArgs {
    /// Gate name.
    #[arg(long)]
    pub(crate) name: String,
    /// Directory of the gate file.
    #[arg(long, default_value = "/dev/shm")]
    pub(crate) dir: PathBuf,
    /// Corruption trials.
    #[arg(long, default_value_t = 1000)]
    pub(crate) trials: u32,
    /// PM programs (worker processes).
    #[arg(long, default_value_t = 4)]
    pub(crate) workers: u32,
    /// Admission bound of every process (MEMTAMER_GATE_MAX_WAIT_MS), ms.
    #[arg(long, default_value_t = 100)]
    pub(crate) max_wait_ms: u64,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 22)]
    pub(crate) seed: u64,
    /// Role of this process.
    #[arg(long, value_enum, default_value = "torture")]
    pub(crate) role: HostileRole,
    /// (worker) Stop after this many requests instead of at the end of stdin.
    #[arg(long)]
    pub(crate) requests: Option<u64>,
}

/// `memtamer tier ...`
#[derive(Subcommand)]
pub(crate) enum TierCmd {
    /// Per rank: objects (size, tier, access share, moves, bytes moved, exposed time) and
    /// DRAM budget use, from the status files the tier runtime writes into
    /// MEMTAMER_TIER_STATUS_DIR. A bad, truncated or stale file is named (exit 3);
    /// the others are still printed.
    Status {
        /// The job's status directory (default: $MEMTAMER_TIER_STATUS_DIR).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Unimem's per-platform calibration on this host (thesis §3.4.1): a STREAM triad and a
    /// single-threaded pointer chase timed with their data in DRAM and in the slow tier (the
    /// tier runtime's own backing: a CPU-less NUMA node, else files in MEMTAMER_TIER_DIR),
    /// fitted into CF_bw and CF_lat; prints the factors and the line that makes the MPI
    /// interposer plan with them (MEMTAMER_CF_BW, MEMTAMER_CF_LAT).
    Calibrate {
        /// DRAM budget for the calibration objects (K/M/G suffix; the arrays take at most
        /// half of it, at most 16 MiB each).
        #[arg(long, default_value = "64M")]
        dram_budget: String,
        /// DRAM bandwidth the model assumes, bytes/s (as MEMTAMER_DRAM_BW).
        #[arg(long)]
        dram_bw: Option<f64>,
        /// Slow tier's bandwidth divisor the model assumes (as MEMTAMER_SLOW_BW_DIV).
        #[arg(long)]
        slow_bw_div: Option<f64>,
        /// Slow tier's latency multiplier the model assumes (as MEMTAMER_SLOW_LAT_MUL).
        #[arg(long)]
        slow_lat_mul: Option<f64>,
    },
}

/// A time in ns: finite and >= 0 (`--out-fault-ns`). Checked when parsed,
/// so a NaN or negative value is a usage error naming the flag even
/// without `--out-no-copy` (it was ignored there, and exit 3 with it).
fn parse_ns(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| "expected a finite number of ns >= 0".into())
}

/// Seconds of `memtamer bench daemon --seconds`: finite, in (0, 3600].
/// `inf` looped forever and `nan` ran no iteration and printed ratios of
/// nothing.
fn parse_loop_seconds(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| *x > 0.0 && *x <= 3600.0)
        .ok_or_else(|| "expected a number of seconds in (0, 3600]".into())
}

/// A gate name as the library accepts it: `--name ../x` or `a/b` made a
/// path outside the gate directory (`gate remove` unlinks it).
fn parse_gate_name(s: &str) -> Result<String, String> {
    if memtamer_gate::valid_gate_name(s) {
        Ok(s.to_string())
    } else {
        Err("expected 1-64 characters from A-Z a-z 0-9 _ . -, not starting with .".into())
    }
}

/// The seeds of `memtamer sim ribbon --seeds` (one clap value: the list).
#[derive(Clone, Debug)]
pub(crate) struct SeedList(pub(crate) Vec<u64>);

fn parse_seed_list(s: &str) -> Result<SeedList, memtamer_sim::ribbon_seeds::SeedListError> {
    memtamer_sim::ribbon_seeds::parse_seeds(s).map(SeedList)
}
