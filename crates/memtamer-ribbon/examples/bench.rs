//! `cargo run --release -p memtamer-ribbon --example bench -- [threads] [iters] [rounds]`:
//! prints `memtamer_ribbon::bench::run` (until `memtamer bench ribbon` exists).

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let mut opts = memtamer_ribbon::bench::Opts::default();
    if let Some(&t) = args.first() {
        opts.threads = t;
    }
    if let Some(&i) = args.get(1) {
        opts.iters = i;
    }
    if let Some(&r) = args.get(2) {
        opts.rounds = r;
    }
    match memtamer_ribbon::bench::run(&opts) {
        Ok(r) => println!("{r}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
