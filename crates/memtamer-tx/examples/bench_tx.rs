//! Runs `memtamer_tx::bench::run` until the CLI wires `memtamer bench tx`.
//! Usage: bench_tx [--secs S] [--threads 1,2] [--updates 5,50,80]
//!                 [--hash-preload N] [--rb-preload N] [--tpcc-items N]
//!                 [--tatp-subscribers N] [--structures hash,rbtree,tpcc,tatp]
//!                 [--dir D] [--no-pmdk]
use memtamer_tx::bench::{run, BenchOptions, Structure};

fn list<T: std::str::FromStr>(s: &str) -> Result<Vec<T>, String> {
    s.split(',')
        .map(|x| x.trim().parse().map_err(|_| format!("bad list item {x:?}")))
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut o = BenchOptions::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    // libpmemobj's flushes/fences are counted by the libpmem shim: run
    // again under it when it is built (target/release) and not loaded yet
    if !args.iter().any(|a| a == "--no-pmdk") {
        if let Some(code) = memtamer_tx::shim_counts::reexec_under_shim() {
            std::process::exit(code);
        }
    }
    let mut i = 0;
    while i < args.len() {
        let val = || {
            args.get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{} needs a value", args[i]))
        };
        match args[i].as_str() {
            "--secs" => o.secs = val()?.parse()?,
            "--threads" => o.threads = list(&val()?)?,
            "--updates" => o.updates = list(&val()?)?,
            "--hash-preload" => o.hash_preload = val()?.parse()?,
            "--rb-preload" => o.rb_preload = val()?.parse()?,
            "--dir" => o.dir = val()?.into(),
            "--tpcc-items" => o.tpcc_items = val()?.parse()?,
            "--tatp-subscribers" => o.tatp_subscribers = val()?.parse()?,
            "--structures" => {
                o.structures = val()?
                    .split(',')
                    .map(|s| match s {
                        "hash" => Ok(Structure::Hash),
                        "rbtree" => Ok(Structure::RbTree),
                        "tpcc" => Ok(Structure::TpccNewOrder),
                        "tatp" => Ok(Structure::Tatp),
                        x => Err(format!(
                            "unknown structure {x:?} (hash, rbtree, tpcc, tatp)"
                        )),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--no-pmdk" => {
                o.pmdk = false;
                i += 1;
                continue;
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
        i += 2;
    }
    print!("{}", run(&o)?);
    Ok(())
}
