//! On/off switches read from the environment, one parser for every one of
//! them so that they accept and refuse the same spellings.

use crate::TierError;

/// Reads the switch `key`: unset, empty, `1` or `on` is on; `0` or `off` is
/// off. Anything else is refused by name, with `off_means` saying what off
/// does: a word such as `no` or `false` must not silently pick a side.
pub(crate) fn switch(key: &'static str, off_means: &str) -> Result<bool, TierError> {
    match std::env::var(key) {
        Err(_) => Ok(true),
        Ok(v) => match v.trim() {
            "" | "1" | "on" => Ok(true),
            "0" | "off" => Ok(false),
            _ => Err(TierError::BadEnv {
                key,
                value: v,
                why: format!("expected 0/off ({off_means}) or 1/on"),
            }),
        },
    }
}
