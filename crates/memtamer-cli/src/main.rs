//! `memtamer`: the command-line front end. This file only parses the command
//! line, hands it to `cmd`, and turns the result into an exit code (see
//! `error.rs`: 0 ok, 1 a check failed, 2 usage error, 3 runtime error).

use clap::Parser;
use std::process::ExitCode;

mod args;
mod cmd;
mod error;
mod format;
mod metrics_server;
mod view;

fn main() -> ExitCode {
    // like other Unix tools, stop quietly when the reader of our output goes away
    // SAFETY: restoring the default disposition of SIGPIPE at start-up.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // clap prints usage errors itself and exits with 2
    let cli = args::Cli::parse();
    match cmd::run(cli) {
        Ok(outcome) => outcome.into(),
        Err(e) => {
            eprintln!("memtamer: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
