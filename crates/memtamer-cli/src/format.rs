//! The one output flag, `--format table|json|csv|prometheus|markdown`, taken
//! by every command (it is global on the command line). Each command names
//! the formats it can print; any other is refused with a usage error that
//! lists them, so a script never gets a table where it asked for JSON.
//! Also: progress lines only when stderr is a terminal (logs and pipes stay
//! clean), and the one spelling of "no limit".

use crate::error::CliError;
use clap::ValueEnum;
use std::io::IsTerminal;

/// How a command prints its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Aligned text for people (the default).
    Table,
    /// JSON (one document, or one object per line for streams).
    Json,
    /// Comma-separated values with a header line.
    Csv,
    /// Prometheus text exposition format.
    Prometheus,
    /// Markdown tables (for docs/).
    Markdown,
}

impl Format {
    /// The spelling on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Prometheus => "prometheus",
            Format::Markdown => "markdown",
        }
    }
}

/// The format `command` prints: `given` when it is one of `supported`, the
/// first of `supported` when none was given; a usage error naming the
/// supported ones otherwise. `supported` empty: the command prints no data,
/// so any `--format` is refused.
pub(crate) fn pick(
    command: &str,
    given: Option<Format>,
    supported: &[Format],
) -> Result<Format, CliError> {
    match given {
        None => Ok(supported.first().copied().unwrap_or(Format::Table)),
        Some(f) if supported.contains(&f) => Ok(f),
        Some(f) => Err(CliError::FormatUnsupported {
            command: command.to_string(),
            format: f.name(),
            supported: if supported.is_empty() {
                "none (it prints no data)".to_string()
            } else {
                supported
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        }),
    }
}

/// `--format json` or the deprecated `--json` of the same command (kept so
/// existing scripts keep working; both at once with another format is refused).
pub(crate) fn with_json_alias(
    given: Option<Format>,
    json: bool,
) -> Result<Option<Format>, CliError> {
    match (given, json) {
        (g, false) => Ok(g),
        (None | Some(Format::Json), true) => Ok(Some(Format::Json)),
        (Some(f), true) => Err(CliError::Usage {
            arg: format!("--json with --format {}", f.name()),
            expected: "one of them (--json is --format json)".into(),
        }),
    }
}

/// Whether to print progress lines: only to a terminal, so that logs,
/// pipes and CI output carry results and errors only.
pub(crate) fn progress() -> bool {
    std::io::stderr().is_terminal()
}

/// The one spelling of "no limit" in every human-readable output and input
/// (`gate set-limit unlimited`, `gate stats`, `top`); JSON uses `null` and
/// Prometheus `-1`.
pub(crate) const UNLIMITED: &str = "unlimited";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_first_supported() {
        assert_eq!(
            pick("x", None, &[Format::Table, Format::Json]).unwrap(),
            Format::Table
        );
        assert_eq!(
            pick("x", Some(Format::Json), &[Format::Table, Format::Json]).unwrap(),
            Format::Json
        );
    }

    #[test]
    fn an_unsupported_format_is_a_usage_error_listing_the_supported() {
        let e = pick("memtamer top", Some(Format::Csv), &[Format::Table]).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        assert_eq!(
            e.to_string(),
            "memtamer top cannot print --format csv; it prints: table"
        );
        let e = pick("memtamer restore", Some(Format::Json), &[]).unwrap_err();
        assert!(e.to_string().contains("none (it prints no data)"), "{e}");
    }

    #[test]
    fn the_command_line_is_consistent() {
        // clap's own checks: among them, no subcommand may declare its own
        // `--format` beside the global one (release builds skip them)
        use clap::CommandFactory;
        crate::args::Cli::command().debug_assert();
    }

    #[test]
    fn the_json_alias() {
        assert_eq!(with_json_alias(None, true).unwrap(), Some(Format::Json));
        assert_eq!(
            with_json_alias(Some(Format::Csv), false).unwrap(),
            Some(Format::Csv)
        );
        assert!(with_json_alias(Some(Format::Csv), true).is_err());
    }
}
