//! The human view of a running daemon's status document (`memtamer status`).

use std::fmt::Write;

/// Renders the daemon's status JSON (see memtamer-control `socket`) as text.
pub fn text(v: &serde_json::Value) -> String {
    let mut out = String::new();
    let s = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    };
    let _ = writeln!(
        out,
        "memtamer pid {}  up {:.0} s  policy {}  period {} µs{}",
        s(&v["pid"]),
        v["uptime_s"].as_f64().unwrap_or(0.0),
        s(&v["policy"]),
        s(&v["period_us"]),
        if v["dry_run"].as_bool() == Some(true) {
            "  (dry run)"
        } else {
            ""
        }
    );
    if let Some(i) = v.get("isolation").filter(|i| !i.is_null()) {
        let _ = writeln!(
            out,
            "isolation: {} state {}  write amplification {:.2}",
            s(&i["policy"]),
            s(&i["state"]),
            i["write_amplification"].as_f64().unwrap_or(0.0)
        );
    }
    if let Some(c) = v.get("core_spec").filter(|c| !c.is_null()) {
        let _ = writeln!(
            out,
            "core specialization: {} threads in the PM group",
            s(&c["pm_group_threads"])
        );
    }
    let _ = writeln!(
        out,
        "\n{:<16} {:<10} {:>6} {:>8} {:<12} {:>5}  pids",
        "JOB", "CLASS", "PROCS", "THREADS", "CPUS", "DUTY"
    );
    for j in v["jobs"].as_array().into_iter().flatten() {
        let pids: Vec<String> = j["pids"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| p.to_string())
            .collect();
        let _ = writeln!(
            out,
            "{:<16} {:<10} {:>6} {:>8} {:<12} {:>5}  {}",
            s(&j["name"]),
            s(&j["class"]),
            pids.len(),
            s(&j["threads"]),
            s(&j["cpus"]),
            j["duty_cycle"]
                .as_f64()
                .map_or("-".into(), |d| format!("{d:.2}")),
            pids.join(",")
        );
    }
    let _ = writeln!(out, "\nsources:");
    for src in v["sources"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  {:<22} {:<4} {}",
            s(&src["source"]),
            if src["active"].as_bool() == Some(true) {
                "yes"
            } else {
                "no"
            },
            s(&src["detail"])
        );
    }
    let l = &v["loop"];
    let _ = writeln!(
        out,
        "\nloop: {} iterations, mean {:.1} µs, max {:.1} µs, {} overruns; {} actions ({} failed); journal {} pending",
        s(&l["iterations"]),
        l["mean_us"].as_f64().unwrap_or(0.0),
        l["max_us"].as_f64().unwrap_or(0.0),
        s(&l["overruns"]),
        s(&l["actions"]),
        s(&l["failed_actions"]),
        s(&v["journal"]["pending"])
    );
    let _ = writeln!(out, "\nlast decisions:");
    for d in v["last_decisions"].as_array().into_iter().flatten() {
        for r in d["reasons"].as_array().into_iter().flatten() {
            let _ = writeln!(out, "  +{:>8} ms  {}", s(&d["at_ms"]), s(r));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_jobs_sources_loop_and_decisions() {
        let v = serde_json::json!({
            "pid": 42, "uptime_s": 12.4, "policy": "dicio", "period_us": 1000, "dry_run": true,
            "isolation": {"policy": "dicio", "state": "throttling", "write_amplification": 1.5},
            "core_spec": null,
            "jobs": [{"name": "redis", "class": "lc", "pids": [7, 8], "threads": 9,
                      "cpus": "0-1", "duty_cycle": null}],
            "sources": [{"source": "iMC counters", "active": false, "detail": "VM"}],
            "loop": {"iterations": 100, "mean_us": 12.0, "max_us": 40.0, "overruns": 0,
                     "actions": 3, "failed_actions": 0},
            "journal": {"pending": 2},
            "last_decisions": [{"at_ms": 5, "reasons": ["throttle BE"]}]
        });
        let t = text(&v);
        assert!(
            t.starts_with("memtamer pid 42  up 12 s  policy dicio  period 1000 µs  (dry run)\n")
        );
        assert!(t.contains("isolation: dicio state throttling  write amplification 1.50\n"));
        assert!(!t.contains("core specialization"));
        assert!(t.contains("redis            lc              2        9 0-1              -  7,8\n"));
        assert!(t.contains("  iMC counters           no   VM\n"));
        assert!(t.contains("journal 2 pending"));
        assert!(t.contains("  +       5 ms  throttle BE\n"));
    }
}
