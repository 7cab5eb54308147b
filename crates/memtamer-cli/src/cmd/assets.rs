//! `memtamer generate-assets --out DIR` (hidden, for packaging): man pages
//! and shell completions generated from the clap definitions in `args.rs`,
//! so they can never disagree with the binary. `make install` puts them under
//! share/man/man1 and the shells' completion directories.

use crate::args::Cli;
use crate::error::{CliError, Outcome};
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::Path;

/// Writes `DIR/man1/memtamer*.1` (one page per visible command and
/// subcommand) and `DIR/completions/{memtamer.bash,_memtamer,memtamer.fish}`.
pub fn run(out: &Path) -> Result<Outcome, CliError> {
    // built: the global --format shows on every subcommand's page
    let mut cmd = Cli::command();
    cmd.build();
    let man = out.join("man1");
    std::fs::create_dir_all(&man)
        .map_err(CliError::io(format!("cannot create {}", man.display())))?;
    let mut pages = 0;
    write_pages(&cmd, "memtamer", &man, &mut pages)?;
    let comp = out.join("completions");
    std::fs::create_dir_all(&comp)
        .map_err(CliError::io(format!("cannot create {}", comp.display())))?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut Cli::command(), "memtamer", &comp).map_err(
            CliError::io(format!(
                "cannot write {shell} completions into {}",
                comp.display()
            )),
        )?;
    }
    eprintln!(
        "{pages} man pages in {}, completions in {}",
        man.display(),
        comp.display()
    );
    Ok(Outcome::Success)
}

/// The page of `cmd` as `name.1`, then those of its visible subcommands as
/// `name-sub.1` (the git convention: `man memtamer-sim-run`).
fn write_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    pages: &mut usize,
) -> Result<(), CliError> {
    // clap (without its `string` feature) takes names as &'static str; this
    // one-shot command leaks a few dozen short names
    let static_name: &'static str = Box::leak(name.to_string().into_boxed_str());
    let page = cmd.clone().name(static_name);
    let mut text = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut text)
        .map_err(CliError::io(format!(
            "cannot render the man page of {name}"
        )))?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, text)
        .map_err(CliError::io(format!("cannot write {}", path.display())))?;
    *pages += 1;
    // clap's generated `help` subcommands get no page of their own
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, pages)?;
    }
    Ok(())
}
