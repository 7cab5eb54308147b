//! The Unimem platform model the runtime plans with, built in one place
//! for every front end: the C ABI (`MEMTAMER_*` variables), the CLI
//! (`memtamer tier calibrate --dram-bw ...`) and [`crate::driver::DriverConfig`]'s
//! default. Each front end names its own keys; the defaults, the checks
//! and the thesis's emulation (§3.6: slow tier with 1/2 bandwidth or 4x
//! latency; classification against the slow tier's peak, §3.4.1) live here.

use crate::unimem::model::Platform;

/// DRAM bandwidth the default platform model assumes (bytes/s).
pub const DEFAULT_DRAM_BW: f64 = 10e9;
/// DRAM latency of the default platform model (seconds).
pub const DEFAULT_DRAM_LATENCY_S: f64 = 100e-9;
/// Slow-tier bandwidth divisor of the default model.
pub const DEFAULT_SLOW_BW_DIV: f64 = 2.0;
/// Slow-tier latency multiplier of the default model.
pub const DEFAULT_SLOW_LAT_MUL: f64 = 4.0;

/// What a front end may override of the model; `None` keeps the default.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlatformInputs {
    /// DRAM bandwidth, bytes/s (> 0).
    pub dram_bw: Option<f64>,
    /// Slow-tier bandwidth = DRAM's / this (> 0; below 1 counts as 1: the
    /// slow tier is never the faster one).
    pub slow_bw_div: Option<f64>,
    /// Slow-tier latency = DRAM's × this (> 0; below 1 counts as 1).
    pub slow_lat_mul: Option<f64>,
    /// `CF_bw` (>= 0; thesis §3.4.1, `memtamer tier calibrate` fits it).
    pub cf_bw: Option<f64>,
    /// `CF_lat` (>= 0).
    pub cf_lat: Option<f64>,
}

/// Which input was refused, and its value (the caller names its key).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BadInput {
    /// [`PlatformInputs::dram_bw`].
    DramBw(f64),
    /// [`PlatformInputs::slow_bw_div`].
    SlowBwDiv(f64),
    /// [`PlatformInputs::slow_lat_mul`].
    SlowLatMul(f64),
    /// [`PlatformInputs::cf_bw`].
    CfBw(f64),
    /// [`PlatformInputs::cf_lat`].
    CfLat(f64),
}

impl BadInput {
    /// What the value must be.
    pub fn expected(&self) -> &'static str {
        match self {
            BadInput::CfBw(_) | BadInput::CfLat(_) => "a finite number >= 0",
            _ => "a finite number > 0",
        }
    }
}

impl PlatformInputs {
    /// The model: [`Platform::emulated`] over the defaults with these
    /// overrides (t1 = 80%, t2 = 10% of the slow tier's peak).
    pub fn model(&self) -> Result<Platform, BadInput> {
        let pos = |v: Option<f64>, d: f64, bad: fn(f64) -> BadInput| match v {
            None => Ok(d),
            Some(x) if x.is_finite() && x > 0.0 => Ok(x),
            Some(x) => Err(bad(x)),
        };
        let nonneg = |v: Option<f64>, bad: fn(f64) -> BadInput| match v {
            None => Ok(1.0),
            Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
            Some(x) => Err(bad(x)),
        };
        let mut p = Platform::emulated(
            pos(self.dram_bw, DEFAULT_DRAM_BW, BadInput::DramBw)?,
            DEFAULT_DRAM_LATENCY_S,
            pos(self.slow_bw_div, DEFAULT_SLOW_BW_DIV, BadInput::SlowBwDiv)?.max(1.0),
            pos(
                self.slow_lat_mul,
                DEFAULT_SLOW_LAT_MUL,
                BadInput::SlowLatMul,
            )?
            .max(1.0),
        );
        p.cf_bw = nonneg(self.cf_bw, BadInput::CfBw)?;
        p.cf_lat = nonneg(self.cf_lat, BadInput::CfLat)?;
        Ok(p)
    }
}

/// The default model (no overrides).
pub fn default_platform() -> Platform {
    Platform::emulated(
        DEFAULT_DRAM_BW,
        DEFAULT_DRAM_LATENCY_S,
        DEFAULT_SLOW_BW_DIV,
        DEFAULT_SLOW_LAT_MUL,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_overrides_and_refusals() {
        let d = PlatformInputs::default().model().unwrap();
        assert_eq!(d, default_platform());
        assert_eq!(d.slow_bw, DEFAULT_DRAM_BW / DEFAULT_SLOW_BW_DIV);
        // Eq. 3.1's thresholds are against the slow tier's peak (§3.4.1)
        assert_eq!(d.bw_peak, d.slow_bw);
        let p = PlatformInputs {
            dram_bw: Some(20e9),
            slow_bw_div: Some(0.5),
            slow_lat_mul: Some(3.0),
            cf_bw: Some(0.0),
            cf_lat: Some(2.0),
        }
        .model()
        .unwrap();
        // a divisor below 1 counts as 1
        assert_eq!((p.dram_bw, p.slow_bw), (20e9, 20e9));
        assert!((p.slow_lat - 300e-9).abs() < 1e-15);
        assert_eq!((p.cf_bw, p.cf_lat), (0.0, 2.0));
        let bad = |i: PlatformInputs| i.model().unwrap_err();
        assert_eq!(
            bad(PlatformInputs {
                dram_bw: Some(0.0),
                ..Default::default()
            }),
            BadInput::DramBw(0.0)
        );
        assert_eq!(
            bad(PlatformInputs {
                slow_lat_mul: Some(f64::NAN),
                ..Default::default()
            })
            .expected(),
            "a finite number > 0"
        );
        assert_eq!(
            bad(PlatformInputs {
                cf_lat: Some(-1.0),
                ..Default::default()
            }),
            BadInput::CfLat(-1.0)
        );
    }
}
