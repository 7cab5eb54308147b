//! Fits Tahoe's models on two recordings of one program
//! (`MEMTAMER_TAHOE_RECORD`), one run with all data in the slow tier and one
//! all in DRAM: the PMU-free fallback (beta) always, and where both
//! recordings carry counter columns (`MEMTAMER_TAHOE_COUNTERS=hw`) Eq. 4.3
//! and the ANN (thesis §4.3.4). Prints each model's per-type error of the
//! all-DRAM time and says which model the tool would predict with.
//! `--model-out FILE` writes the counter model (`--model ann`, the
//! thesis's choice and the default, or `linear`) for
//! `MEMTAMER_TAHOE_COUNTER_MODEL`.
//!
//! `cargo run --release -p memtamer-tahoe --example tahoe_fit -- SLOW.csv DRAM.csv [--model-out FILE] [--model ann|linear]`

use memtamer_tahoe::counters::{fit_counter_models, format_model};
use memtamer_tahoe::model::CompleteModel;
use memtamer_tahoe::record::{fit_fallback, parse, Row};
use std::process::ExitCode;

/// ANN training passes and seed (deterministic).
const EPOCHS: usize = 3000;
const SEED: u64 = 42;

fn err(predicted: Option<f64>, measured: f64) -> String {
    match predicted {
        Some(p) if measured > 0.0 => format!("{:>6.1}%", 100.0 * (p - measured).abs() / measured),
        _ => "   n/a".into(),
    }
}

fn counters(s: &[Row], d: &[Row], out: Option<&str>, want: &str) -> Result<(), String> {
    let f = match fit_counter_models(s, d, EPOCHS, SEED) {
        Ok(f) => f,
        Err(e) => {
            println!("counter models: {e}; the tool predicts with the fallback (beta) alone");
            return match out {
                Some(_) => Err("--model-out: nothing to write".into()),
                None => Ok(()),
            };
        }
    };
    match &f.linear {
        Ok(l) => println!(
            "Eq. 4.3 (linear): ipc_dram = {:.4} * ipc + {:.4} * llc_miss_rate + {:.4}",
            l.b1, l.b2, l.eps
        ),
        Err(e) => println!("Eq. 4.3 (linear): {e}"),
    }
    match &f.ann {
        Ok((_, mse)) => println!("ANN 2-10-5-1: training MSE {mse:.3e} (IPC^2), {EPOCHS} epochs"),
        Err(e) => println!("ANN: {e}"),
    }
    let (mut sl, mut sa, mut nl, mut na) = (0.0, 0.0, 0, 0);
    for r in &f.rows {
        println!(
            "{:<40} measured {:>12.0} ns  linear {}  ann {}",
            r.ty,
            r.measured_ns,
            err(r.linear_ns, r.measured_ns),
            err(r.ann_ns, r.measured_ns)
        );
        if let Some(p) = r.linear_ns {
            sl += (p - r.measured_ns).abs() / r.measured_ns.max(f64::MIN_POSITIVE);
            nl += 1;
        }
        if let Some(p) = r.ann_ns {
            sa += (p - r.measured_ns).abs() / r.measured_ns.max(f64::MIN_POSITIVE);
            na += 1;
        }
    }
    let mean = |s: f64, n: usize| {
        if n > 0 {
            format!("{:.1}% over {n} types", 100.0 * s / n as f64)
        } else {
            "n/a".into()
        }
    };
    println!("mean error: linear {}, ann {}", mean(sl, nl), mean(sa, na));
    let Some(path) = out else { return Ok(()) };
    let m = match want {
        "linear" => f.linear.map(CompleteModel::Linear),
        _ => f.ann.map(|(a, _)| CompleteModel::Ann(Box::new(a))),
    }
    .map_err(|e| format!("--model {want}: {e}"))?;
    std::fs::write(path, format_model(&m)).map_err(|e| format!("{path}: {e}"))?;
    println!(
        "wrote the {} model to {path}: MEMTAMER_TAHOE_COUNTER_MODEL={path} makes the tool predict the all-DRAM time from a representative's counters",
        m.name()
    );
    Ok(())
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut take = |flag: &str| -> Option<Option<String>> {
        let i = args.iter().position(|a| a == flag)?;
        let v = args.get(i + 1).cloned();
        args.drain(i..(i + 2).min(args.len()));
        Some(v)
    };
    let out = take("--model-out");
    let want = take("--model");
    let usage = "usage: tahoe_fit SLOW.csv DRAM.csv [--model-out FILE] [--model ann|linear]";
    let (out, want) = match (out, want) {
        (Some(None), _) | (_, Some(None)) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
        (o, w) => (o.flatten(), w.flatten().unwrap_or_else(|| "ann".into())),
    };
    if want != "ann" && want != "linear" {
        eprintln!("{usage}");
        return ExitCode::from(2);
    }
    let [slow, dram] = args.as_slice() else {
        eprintln!("{usage}");
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
            println!("fallback: beta_ns per page access = {:.1}", m.beta_ns);
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
        }
        Err(e) => {
            eprintln!("tahoe_fit: {e}");
            return ExitCode::FAILURE;
        }
    }
    match counters(&s, &d, out.as_deref(), &want) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tahoe_fit: {e}");
            ExitCode::FAILURE
        }
    }
}
