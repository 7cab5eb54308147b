//! `memtamer sim ribbon --seed N` / `--seeds A,B,...`: bad seeds are usage
//! errors (exit code 2) that name the flag, given before any simulation
//! starts. A run over seeds takes minutes per seed, so what it prints is
//! tested on made-up results in `memtamer_sim::ribbon_seeds`'s unit tests.

mod common;
use common::*;

/// Runs `sim ribbon` with `args` and checks it is refused with code 2 and
/// a message that contains each of `says`.
fn refused(args: &[&str], says: &[&str]) {
    let mut all = vec!["sim", "ribbon"];
    all.extend_from_slice(args);
    let out = memtamer(&all);
    assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
    for s in says {
        assert!(stderr(&out).contains(s), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn an_empty_seed_list_is_a_usage_error_naming_the_flag() {
    refused(&["--seeds", ""], &["--seeds", "empty list"]);
    refused(&["--seeds", " "], &["--seeds", "empty list"]);
}

#[test]
fn a_seed_that_is_not_an_integer_is_a_usage_error_naming_it() {
    refused(
        &["--seeds", "1,x"],
        &["--seeds", "seed \"x\" is not an integer"],
    );
    refused(
        &["--seeds", "1,,2"],
        &["--seeds", "seed \"\" is not an integer"],
    );
    refused(
        &["--seeds=-1"],
        &["--seeds", "seed \"-1\" is not an integer"],
    );
    refused(
        &["--seeds", "9223372036854775808"],
        &["--seeds", "not an integer"],
    );
    refused(&["--seed", "x"], &["--seed <SEED>"]);
    refused(&["--seed", "9223372036854775808"], &["--seed <SEED>"]);
}

#[test]
fn a_repeated_seed_is_a_usage_error() {
    refused(&["--seeds", "1,2,1"], &["--seeds", "seed 1 is given twice"]);
}

#[test]
fn seed_and_seeds_together_are_a_usage_error_naming_both() {
    refused(
        &["--seed", "1", "--seeds", "1,2"],
        &["--seed <SEED>", "--seeds"],
    );
}

#[test]
fn a_format_other_than_markdown_is_refused_before_any_seed_runs() {
    refused(
        &["--seeds", "1,2", "--format", "json"],
        &["cannot print --format json", "markdown"],
    );
}
