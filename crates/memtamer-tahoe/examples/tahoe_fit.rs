//! Fits Tahoe's PMU-free fallback model on two recordings of one program
//! (`MEMTAMER_TAHOE_RECORD`), one run with all data in the slow tier and one
//! all in DRAM, and prints beta and the per-type prediction error of the
//! all-DRAM time.
//!
//! `cargo run --release -p memtamer-tahoe --example tahoe_fit -- SLOW.csv DRAM.csv`

use memtamer_tahoe::record::{fit_fallback, parse};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [slow, dram] = args.as_slice() else {
        eprintln!("usage: tahoe_fit SLOW.csv DRAM.csv");
        return ExitCode::from(2);
    };
    let read = |p: &str| -> Result<_, String> {
        let t = std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"))?;
        parse(&t).map_err(|e| format!("{p}: {e}"))
    };
    let (s, d) = match (read(slow), read(dram)) {
        (Ok(s), Ok(d)) => (s, d),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("tahoe_fit: {e}");
            return ExitCode::FAILURE;
        }
    };
    match fit_fallback(&s, &d) {
        Ok((m, rows)) => {
            println!("beta_ns per page access = {:.1}", m.beta_ns);
            let mut sum = 0.0;
            for r in &rows {
                println!(
                    "{:<40} predicted {:>12.0} ns  measured {:>12.0} ns  error {:>6.1}%",
                    r.ty,
                    r.predicted_ns,
                    r.measured_ns,
                    100.0 * r.rel_error()
                );
                sum += r.rel_error();
            }
            println!(
                "mean error over {} types: {:.1}%",
                rows.len(),
                100.0 * sum / rows.len().max(1) as f64
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tahoe_fit: {e}");
            ExitCode::FAILURE
        }
    }
}
