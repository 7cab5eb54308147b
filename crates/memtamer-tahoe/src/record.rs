//! Recorded per-type task times, for fitting the model on real runs
//! (thesis §4.3.4 trains on recorded tasks). The OMPT tool writes one line
//! per task type when `MEMTAMER_TAHOE_RECORD` is set:
//! `type,instances,mean_ns,pages[,ipc,llc_miss_rate]` (type as
//! `0xCODE(size,size,..)`; the two counter columns only where the tool
//! counted the type's instances, `MEMTAMER_TAHOE_COUNTERS`, so a recording
//! without them, and every older one, still parses). Two recordings of the
//! same program, one with all data in the slow tier (e.g. under `numactl
//! --membind=<slow node>`) and one all in DRAM, fit the PMU-free fallback
//! (`LinearAccess`) and give its prediction error per task type; where
//! both carry counters they also fit Eq. 4.3 and train the ANN
//! ([`crate::counters::fit_counter_models`]).

use crate::error::TahoeError;
use crate::model::LinearAccess;

/// One recorded task type.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Task type, printed.
    pub ty: String,
    /// Instances measured.
    pub instances: u64,
    /// Mean task time, ns.
    pub mean_ns: f64,
    /// Pages the type's dependence objects span (the fallback's access
    /// count under a uniform profile).
    pub pages: f64,
    /// The type's IPC and LLC miss rate over its counted instances, where
    /// the tool read counters (the counter models' inputs, §4.3.4).
    pub counters: Option<RowCounters>,
}

/// Counter columns of a recorded type (thesis §4.3.4: the model's inputs
/// are IPC and the last-level-cache miss rate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowCounters {
    /// Instructions per cycle, summed over the counted instances
    /// (total instructions / total cycles).
    pub ipc: f64,
    /// LLC misses / LLC references over the counted instances.
    pub llc_miss_rate: f64,
}

/// Formats a row as the tool writes it.
pub fn format_row(r: &Row) -> String {
    let mut s = format!("{},{},{:.1},{}", r.ty, r.instances, r.mean_ns, r.pages);
    if let Some(c) = r.counters {
        s.push_str(&format!(",{:.6},{:.6}", c.ipc, c.llc_miss_rate));
    }
    s
}

/// Parses a recording; `#` lines and blank lines are skipped. An error
/// names the line.
pub fn parse(text: &str) -> Result<Vec<Row>, TahoeError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        // The type itself contains commas inside its parentheses.
        let bad = |why: &str| TahoeError::Record {
            line: i + 1,
            why: why.into(),
        };
        let close = l.rfind(')').ok_or_else(|| bad("no task type 0xCODE(..)"))?;
        let ty = &l[..=close];
        let rest: Vec<&str> = l[close + 1..].trim_start_matches(',').split(',').collect();
        if rest.len() != 3 && rest.len() != 5 {
            return Err(bad(
                "expected type,instances,mean_ns,pages[,ipc,llc_miss_rate]",
            ));
        }
        let instances = rest[0]
            .trim()
            .parse()
            .map_err(|_| bad("instances is not an integer"))?;
        let mean_ns: f64 = rest[1]
            .trim()
            .parse()
            .map_err(|_| bad("mean_ns is not a number"))?;
        let pages: f64 = rest[2]
            .trim()
            .parse()
            .map_err(|_| bad("pages is not a number"))?;
        if !(mean_ns.is_finite() && pages.is_finite()) {
            return Err(bad("non-finite value"));
        }
        let counters = if rest.len() == 5 {
            let ipc: f64 = rest[3]
                .trim()
                .parse()
                .map_err(|_| bad("ipc is not a number"))?;
            let llc_miss_rate: f64 = rest[4]
                .trim()
                .parse()
                .map_err(|_| bad("llc_miss_rate is not a number"))?;
            if !(ipc.is_finite() && ipc > 0.0) {
                return Err(bad("ipc must be a number > 0"));
            }
            if !(0.0..=1.0).contains(&llc_miss_rate) {
                return Err(bad("llc_miss_rate must be in 0..=1"));
            }
            Some(RowCounters { ipc, llc_miss_rate })
        } else {
            None
        };
        out.push(Row {
            ty: ty.into(),
            instances,
            mean_ns,
            pages,
            counters,
        });
    }
    Ok(out)
}

/// Per-type result of a fit.
#[derive(Clone, Debug, PartialEq)]
pub struct FitRow {
    /// Task type.
    pub ty: String,
    /// Predicted all-DRAM time, ns.
    pub predicted_ns: f64,
    /// Measured all-DRAM time, ns.
    pub measured_ns: f64,
}

impl FitRow {
    /// |predicted - measured| / measured.
    pub fn rel_error(&self) -> f64 {
        if self.measured_ns > 0.0 {
            (self.predicted_ns - self.measured_ns).abs() / self.measured_ns
        } else {
            0.0
        }
    }
}

/// Joins the two recordings by type and fits the fallback on them.
pub fn fit_fallback(slow: &[Row], dram: &[Row]) -> Result<(LinearAccess, Vec<FitRow>), TahoeError> {
    let pairs: Vec<(&Row, &Row)> = slow
        .iter()
        .filter_map(|s| dram.iter().find(|d| d.ty == s.ty).map(|d| (s, d)))
        .collect();
    let samples: Vec<(f64, f64, f64)> = pairs
        .iter()
        .map(|(s, d)| (s.pages, s.mean_ns, d.mean_ns))
        .collect();
    let m = LinearAccess::fit(&samples)?;
    let rows = pairs
        .iter()
        .map(|(s, d)| FitRow {
            ty: s.ty.clone(),
            predicted_ns: m.predict(s.mean_ns, s.pages),
            measured_ns: d.mean_ns,
        })
        .collect();
    Ok((m, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors_name_the_line() {
        let r = Row {
            ty: "0x40(64,128)".into(),
            instances: 3,
            mean_ns: 1500.0,
            pages: 12.0,
            counters: None,
        };
        let text = format!("# header\n\n{}\n", format_row(&r));
        assert_eq!(parse(&text).unwrap(), vec![r]);
        let e = parse("0x1(8),1,2,3\n0x1(8),x,2,3\n").unwrap_err();
        assert_eq!(
            e,
            TahoeError::Record {
                line: 2,
                why: "instances is not an integer".into()
            }
        );
        assert!(parse("garbage").is_err());
        assert!(parse("0x1(8),1,2").is_err());
        assert!(parse("0x1(8),1,NaN,2").is_err());
    }

    #[test]
    fn counter_columns_round_trip_and_bad_ones_name_the_line() {
        let r = Row {
            ty: "0x40(64,128)".into(),
            instances: 3,
            mean_ns: 1500.0,
            pages: 12.0,
            counters: Some(RowCounters {
                ipc: 0.75,
                llc_miss_rate: 0.125,
            }),
        };
        let line = format_row(&r);
        assert_eq!(line, "0x40(64,128),3,1500.0,12,0.750000,0.125000");
        assert_eq!(parse(&line).unwrap(), vec![r]);
        // an old recording (no counter columns) next to a new one
        let rows = parse("0x1(8),1,2,3\n0x2(8),1,2,3,1.5,0.5\n").unwrap();
        assert_eq!(rows[0].counters, None);
        assert_eq!(rows[1].counters.map(|c| c.ipc), Some(1.5));
        for (text, line, why) in [
            (
                "0x1(8),1,2,3,1.5\n",
                1,
                "expected type,instances,mean_ns,pages[,ipc,llc_miss_rate]",
            ),
            (
                "0x1(8),1,2,3\n0x1(8),1,2,3,x,0.1\n",
                2,
                "ipc is not a number",
            ),
            (
                "0x1(8),1,2,3,1,0.1\n#\n0x1(8),1,2,3,1,y\n",
                3,
                "llc_miss_rate is not a number",
            ),
            ("0x1(8),1,2,3,0,0.1\n", 1, "ipc must be a number > 0"),
            ("0x1(8),1,2,3,inf,0.1\n", 1, "ipc must be a number > 0"),
            ("0x1(8),1,2,3,1,1.5\n", 1, "llc_miss_rate must be in 0..=1"),
            ("0x1(8),1,2,3,1,NaN\n", 1, "llc_miss_rate must be in 0..=1"),
        ] {
            assert_eq!(
                parse(text).unwrap_err(),
                TahoeError::Record {
                    line,
                    why: why.into()
                },
                "{text}"
            );
        }
    }

    #[test]
    fn fit_joins_by_type_and_reports_errors() {
        let row = |ty: &str, ns: f64, pages: f64| Row {
            ty: ty.into(),
            instances: 1,
            mean_ns: ns,
            pages,
            counters: None,
        };
        let slow = vec![
            row("a()", 1000.0, 100.0),
            row("b()", 2000.0, 200.0),
            row("c()", 5.0, 1.0),
        ];
        let dram = vec![row("a()", 800.0, 100.0), row("b()", 1600.0, 200.0)];
        let (m, rows) = fit_fallback(&slow, &dram).unwrap();
        assert!((m.beta_ns - 2.0).abs() < 1e-12);
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.rel_error() < 1e-12));
        assert!(fit_fallback(&slow, &[]).is_err());
    }
}
