//! Checkpoint bench: recovery time full scan vs checkpoint path, checkpoint
//! pause, throughput with a checkpointer (see `memtamer_tx::chkp_bench`).
//!
//! `cargo run --release -p memtamer-tx --example chkp_bench -- [--size-mb N]
//! [--objects N] [--updates N] [--secs S] [--interval-ms N] [--dir D]`

use memtamer_tx::chkp_bench::{run, ChkpBenchOptions};

fn main() {
    let mut o = ChkpBenchOptions::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        let num = |what: &str| -> u64 {
            v.parse().unwrap_or_else(|_| {
                eprintln!("{what}: not a number: {v:?}");
                std::process::exit(2)
            })
        };
        match args[i].as_str() {
            "--size-mb" => o.size = num("--size-mb") << 20,
            "--objects" => o.objects = num("--objects"),
            "--updates" => o.updates = num("--updates"),
            "--secs" => o.secs = num("--secs") as f64,
            "--interval-ms" => o.interval = std::time::Duration::from_millis(num("--interval-ms")),
            "--dir" => o.dir = v.into(),
            a => {
                eprintln!("unknown argument {a}");
                std::process::exit(2)
            }
        }
        i += 2;
    }
    match run(&o) {
        Ok(r) => print!("{r}"),
        Err(e) => {
            eprintln!("chkp_bench: {e}");
            std::process::exit(1)
        }
    }
}
