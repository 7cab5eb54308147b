//! `memtamer bench ...`: benchmarks that print ratios against baselines
//! measured in the same run (never absolute pass/fail on wall-clock time).

use crate::args::BenchCmd;
use crate::error::{CliError, Outcome};

mod daemon;
mod gate;

/// Runs one `bench` subcommand.
pub fn run(cmd: BenchCmd) -> Result<Outcome, CliError> {
    match cmd {
        BenchCmd::Sim => print!("{}", memtamer_sim::validate::speed_bench()?),
        BenchCmd::Gate { quick } => print!("{}", gate::run(quick)?),
        BenchCmd::Sense => print!(
            "{}",
            memtamer_sense::bench::run(2_000_000).map_err(CliError::sense("sensing benchmark"))?
        ),
        BenchCmd::Daemon {
            seconds,
            threads,
            period_us,
        } => print!("{}", daemon::run(seconds, threads as usize, period_us)?),
        BenchCmd::Ribbon {
            threads,
            iters,
            rounds,
        } => {
            let opts = memtamer_ribbon::bench::Opts {
                threads,
                iters,
                rounds,
                ..memtamer_ribbon::bench::Opts::default()
            };
            let report =
                memtamer_ribbon::bench::run(&opts).map_err(|e| CliError::Bench(e.to_string()))?;
            print!("{report}");
        }
        BenchCmd::Tx {
            dir,
            threads,
            updates,
            secs,
            quick,
            no_pmdk,
        } => {
            // libpmemobj's flushes/fences are counted by the libpmem shim:
            // run this command again under it when it is built beside us
            if !no_pmdk {
                if let Some(code) = memtamer_tx::shim_counts::reexec_under_shim() {
                    std::process::exit(code);
                }
            }
            let mut opts = memtamer_tx::bench::BenchOptions {
                dir,
                threads,
                updates,
                secs,
                pmdk: !no_pmdk,
                ..memtamer_tx::bench::BenchOptions::default()
            };
            if quick {
                opts.hash_preload = 10_000;
                opts.rb_preload = 100_000;
                opts.tatp_subscribers = 10_000;
            }
            let report =
                memtamer_tx::bench::run(&opts).map_err(|e| CliError::Bench(e.to_string()))?;
            print!("{report}");
        }
        BenchCmd::Tier {
            nx,
            ny,
            iters,
            rounds,
            tick_us,
            pages,
            pace_wall,
        } => {
            let opts = memtamer_tier::bench::TierBenchOptions {
                nx,
                ny,
                iters,
                rounds,
                tick: std::time::Duration::from_micros(tick_us),
                pages_per_tick: pages,
                pace: if pace_wall {
                    memtamer_tier::sampling::Pace::Wall
                } else {
                    memtamer_tier::sampling::Pace::Cpu
                },
            };
            let rows =
                memtamer_tier::bench::run(&opts).map_err(|e| CliError::Bench(e.to_string()))?;
            print!("{}", memtamer_tier::bench::render(&opts, &rows));
        }
        BenchCmd::DaemonWorker { threads } => daemon::worker(threads.max(1)),
        BenchCmd::ShimWorker {
            file,
            iters,
            alternate,
            cpu,
        } => gate::shim_worker(&file, iters.max(1), alternate, cpu)?,
    }
    Ok(Outcome::Success)
}
