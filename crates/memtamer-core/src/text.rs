//! Padding for the plain-text tables the CLI prints (`memtamer sim run`'s
//! report, `memtamer tier status`): `format!("{s:>w$}")` and
//! `format!("{s:<w$}")` for any width. `format!` panics ("Formatting
//! argument out of range") on a width above 65535, which a scenario's job
//! name or a status file's object name of that length made (hostile-input
//! sweep, docs/bad-input.md, 2026-11-27). One pair here, used by both
//! crates, where each had its own copy before (2026-11-28).

/// Spaces that pad `s` to `w` characters (none when `s` is longer): the
/// width counts `char`s, as `format!`'s alignment does.
fn padding(s: &str, w: usize) -> impl Iterator<Item = char> {
    std::iter::repeat_n(' ', w.saturating_sub(s.chars().count()))
}

/// `s` right-aligned in `w` characters, as `format!("{s:>w$}")` but for
/// any width (numbers in a column).
pub fn pad_left(s: &str, w: usize) -> String {
    let mut out: String = padding(s, w).collect();
    out.push_str(s);
    out
}

/// `s` left-aligned in `w` characters, as `format!("{s:<w$}")` but for any
/// width (names in a column).
pub fn pad_right(s: &str, w: usize) -> String {
    let mut out = String::from(s);
    out.extend(padding(s, w));
    out
}

#[cfg(test)]
mod tests {
    use super::{pad_left, pad_right};

    #[test]
    fn padding_is_format_alignment_at_any_width() {
        for (s, w) in [("ab", 5), ("abc", 2), ("", 3), ("é", 4), ("x", 0)] {
            assert_eq!(pad_left(s, w), format!("{s:>w$}"), "{s:?} {w}");
            assert_eq!(pad_right(s, w), format!("{s:<w$}"), "{s:?} {w}");
        }
        let long = "n".repeat(70_000);
        assert_eq!(pad_left(&long, 70_002), format!("  {long}"));
        assert_eq!(pad_right(&long, 70_002), format!("{long}  "));
    }
}
