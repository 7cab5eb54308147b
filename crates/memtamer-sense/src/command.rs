//! Running an external program (ipmctl) with a time limit.
//!
//! A program that hangs (an ipmctl stuck in ACPI or on a firmware mailbox)
//! must not hang the daemon's start-up or its media thread, nor its exit,
//! which joins that thread (issue 22 item 3). The child is killed once the
//! limit passes and the call reports a timeout naming the program.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Default limit on one external command: an ipmctl reading takes ~100 ms
/// through its process start and ACPI (Dicio §4.1 measures ~4.5 ms for the
/// ACPI read alone), so five seconds means it is stuck.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// How often the child is checked while it runs.
const POLL: Duration = Duration::from_millis(5);

/// Why a command produced no output.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// It could not be started.
    #[error("{program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// It ran past its limit and was killed.
    #[error("{program}: no answer within {} ms; killed", limit.as_millis())]
    TimedOut {
        /// The program.
        program: String,
        /// The limit.
        limit: Duration,
    },
}

/// Runs `cmd` (stdin from /dev/null, stdout and stderr captured) and waits
/// at most `limit` for it; past that it is killed and reaped. Output is read
/// on two helper threads so that a chatty child never blocks on a full pipe.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Result<Output, CommandError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| CommandError::Spawn {
            program: program.clone(),
            source,
        })?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
            _ => break None,
        }
    };
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        // the drain threads end when the pipes close; a grandchild that
        // kept them open only keeps its own thread, not the caller
        return Err(CommandError::TimedOut { program, limit });
    };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_captured() {
        let o = output_within(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(o.stdout, b"out\n");
        assert_eq!(o.stderr, b"err\n");
        assert_eq!(o.status.code(), Some(3));
    }

    #[test]
    fn a_hanging_program_is_killed_at_its_limit() {
        let e =
            output_within(Command::new("sleep").arg("60"), Duration::from_millis(100)).unwrap_err();
        assert!(matches!(e, CommandError::TimedOut { .. }), "{e}");
        assert!(
            e.to_string().contains("sleep: no answer within 100 ms"),
            "{e}"
        );
        assert!(matches!(
            output_within(&mut Command::new("/nonexistent/x"), Duration::from_secs(1)),
            Err(CommandError::Spawn { .. })
        ));
    }
}
