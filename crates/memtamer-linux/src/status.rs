//! `/proc/PID/status`: `Key:<TAB>value` lines (proc(5)).

use crate::ParseError;

/// The value of the `key` line of `status` text, trimmed (e.g.
/// `Cpus_allowed_list` -> `"0-3,8"`). Exists because the daemon needs a few
/// facts (allowed CPUs) that only `status` spells out in list form.
pub fn field<'a>(text: &'a str, key: &'static str) -> Result<&'a str, ParseError> {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(key)
                .and_then(|rest| rest.strip_prefix(':'))
                .map(str::trim)
        })
        .ok_or(ParseError::MissingStatusField(key))
}

/// `Cpus_allowed_list` of `status` text: the CPUs the process may run on, as
/// the kernel's list syntax ("0-3,8"); callers parse it into their CPU set.
pub fn cpus_allowed_list(text: &str) -> Result<&str, ParseError> {
    field(text, "Cpus_allowed_list")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "Name:\tmy proc\nState:\tS (sleeping)\nTgid:\t42\nCpus_allowed:\tff\nCpus_allowed_list:\t0-3,8\nMems_allowed_list:\t0\n";

    #[test]
    fn fields_by_exact_key() {
        assert_eq!(cpus_allowed_list(TEXT), Ok("0-3,8"));
        assert_eq!(field(TEXT, "Cpus_allowed"), Ok("ff"));
        assert_eq!(field(TEXT, "Name"), Ok("my proc"));
        assert_eq!(field(TEXT, "State"), Ok("S (sleeping)"));
        assert_eq!(field(TEXT, "Tgid"), Ok("42"));
    }

    #[test]
    fn missing_field_names_it() {
        assert_eq!(
            cpus_allowed_list("Name:\tx\n"),
            Err(ParseError::MissingStatusField("Cpus_allowed_list"))
        );
        assert_eq!(
            cpus_allowed_list(""),
            Err(ParseError::MissingStatusField("Cpus_allowed_list"))
        );
        // a prefix of another key is not that key
        assert!(field("Cpus_allowed_list:\t0\n", "Cpus").is_err());
    }
}
