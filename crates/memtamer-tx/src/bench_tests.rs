//! Tests of `bench.rs` (kept beside it to hold bench.rs under the line limit).

use super::*;

#[test]
fn a_small_bench_runs_both_engines_and_prints_ratios() {
    let o = BenchOptions {
        threads: vec![1, 2],
        updates: vec![50],
        secs: 0.1,
        buckets: 64,
        hash_preload: 500,
        rb_preload: 500,
        tpcc_items: 1000,
        tatp_subscribers: 200,
        ..BenchOptions::default()
    };
    let r = run(&o).unwrap();
    let text = r.to_string();
    assert!(r
        .cells
        .iter()
        .filter(|c| c.engine == "ArchTM")
        .all(|c| c.ops > 0));
    assert!(text.contains("bytes per object"), "{text}");
    if r.pmdk_ran {
        assert!(text.contains('x'), "{text}");
        assert_eq!(r.cells.len(), 16);
        assert!(text.contains("tatp"), "{text}");
    }
    assert!(run(&BenchOptions {
        threads: vec![0],
        ..o
    })
    .is_err());
}

#[test]
fn a_full_pool_ends_the_cell_and_keeps_its_transactions() {
    // TPC-C grows by its inserts: in a pool with little room beyond the
    // population, the cell must end when the pool is full (not fail
    // the bench) and count what it did. The long window is only an
    // upper bound: the pool fills after a few thousand transactions.
    let path = std::env::temp_dir().join(format!("mtx-bench-full-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let size = (crate::tpcc::Tpcc::population_bytes(100) * 2 + (8 << 20)).next_power_of_two();
    let pool = Pool::create(
        &path,
        &PoolOptions {
            size,
            force_pmem: Some(true),
            ..PoolOptions::default()
        },
    )
    .unwrap();
    let _ = std::fs::remove_file(&path);
    let ds = Ds::T(crate::tpcc::Tpcc::create(&pool, 100).unwrap());
    let r = cell(&pool, &ds, u64::MAX, 1, 100, 600.0).unwrap();
    assert!(r.full, "the pool never filled");
    assert!(r.ops > 0);
    assert!(r.wall < 600.0);
}

#[cfg(has_pmdk)]
#[test]
fn pmempool_check_agrees_on_the_pmdk_pools() {
    let Ok(out) = std::process::Command::new("pmempool")
        .arg("--version")
        .output()
    else {
        eprintln!("pmempool not installed (apt pmdk-tools): skipped");
        return;
    };
    assert!(out.status.success());
    std::env::set_var("PMEM_IS_PMEM_FORCE", "1");
    let path = std::env::temp_dir().join(format!("mtx-pmempool-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    {
        let pm = crate::pmdk::Pmdk::create(&path, 16 << 20).unwrap();
        let o = BenchOptions {
            buckets: 64,
            hash_preload: 2000,
            rb_preload: 2000,
            ..BenchOptions::default()
        };
        let (ds, space) = preload(&pm, Structure::Hash, &o).unwrap();
        cell(&pm, &ds, space, 2, 80, 0.1).unwrap();
    }
    let out = std::process::Command::new("pmempool")
        .args(["check", "-v"])
        .arg(&path)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success() && text.contains("consistent") && !text.contains("not consistent"),
        "{text}"
    );
}

/// `memtamer bench tx --secs nan` (or inf, 1e300) panicked in
/// `Duration::from_secs_f64` and left its worker threads running (the
/// command hung after the panic); each bad option is now refused by name
/// before any pool exists.
#[test]
fn bad_options_are_refused_by_name_before_any_pool() {
    let dir = std::env::temp_dir().join(format!("mtx-badopts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = BenchOptions {
        dir: dir.clone(),
        ..BenchOptions::default()
    };
    for (o, want) in [
        (
            BenchOptions {
                secs: f64::NAN,
                ..base.clone()
            },
            "secs NaN",
        ),
        (
            BenchOptions {
                secs: f64::INFINITY,
                ..base.clone()
            },
            "secs inf",
        ),
        (
            BenchOptions {
                secs: 1e300,
                ..base.clone()
            },
            "secs 1e300",
        ),
        (
            BenchOptions {
                secs: -1.0,
                ..base.clone()
            },
            "secs -1",
        ),
        (
            BenchOptions {
                secs: 0.0,
                ..base.clone()
            },
            "secs 0",
        ),
        (
            BenchOptions {
                threads: vec![1, 0],
                ..base.clone()
            },
            "threads [1, 0]",
        ),
        (
            BenchOptions {
                threads: vec![],
                ..base.clone()
            },
            "threads []",
        ),
        (
            BenchOptions {
                updates: vec![5, 101],
                ..base.clone()
            },
            "updates 101",
        ),
    ] {
        let e = run(&o).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want), "{want}: {e}");
    }
    // nothing was created
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir(&dir).unwrap();
}
