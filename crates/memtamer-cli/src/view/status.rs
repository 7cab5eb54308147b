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
    if let Some(pl) = v.get("placement").filter(|p| !p.is_null()) {
        placement(&mut out, pl);
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

/// Placement's threads: the loads its plan compared (Ahn Eq. 1), where it
/// pinned each and how long until it may decide about it again.
fn placement(out: &mut String, pl: &serde_json::Value) {
    let threads = pl["threads"].as_array().map_or(&[][..], |a| a.as_slice());
    let _ = writeln!(
        out,
        "placement: {} threads tracked, {} shown (PM I/O or pinned)",
        pl["tracked"].as_u64().unwrap_or(0),
        threads.len()
    );
    if threads.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "  {:>8} {:<16} {:>6} {:>10} {:>10} {:>5} {:>9}",
        "TID", "JOB", "PINNED", "WRITE", "READ", "CPU", "RESTS"
    );
    for t in threads {
        let f = |k: &str| t[k].as_f64().unwrap_or(0.0);
        let _ = writeln!(
            out,
            "  {:>8} {:<16} {:>6} {:>10.1} {:>10.1} {:>5.2} {:>9}",
            t["tid"].as_u64().map_or("-".into(), |x| x.to_string()),
            t["job"].as_str().unwrap_or("-"),
            t["pinned"].as_u64().map_or("-".into(), |c| c.to_string()),
            f("write"),
            f("read"),
            f("cpu_load"),
            match t["rests_ms"].as_u64() {
                Some(0) | None => "rested".to_string(),
                Some(ms) => format!("{ms} ms"),
            }
        );
    }
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

    #[test]
    fn renders_placement_threads() {
        let v = serde_json::json!({
            "pid": 1, "uptime_s": 1.0, "policy": "placement", "period_us": 1000,
            "placement": {"tracked": 5, "threads": [
                {"tid": 4242, "job": "fio", "pinned": 1, "write": 436.25, "read": 0.0,
                 "cpu_load": 0.11, "pm_io": true, "rests_ms": 8200},
                {"tid": 4243, "job": "fio", "pinned": null, "write": 2.0, "read": 1.5,
                 "cpu_load": 1.0, "pm_io": true, "rests_ms": 0}
            ]},
            "jobs": [], "sources": [], "loop": {}, "journal": {}, "last_decisions": []
        });
        let t = text(&v);
        assert!(
            t.contains("placement: 5 threads tracked, 2 shown (PM I/O or pinned)\n"),
            "{t}"
        );
        assert!(
            t.contains(
                "      4242 fio                   1      436.2        0.0  0.11   8200 ms\n"
            ),
            "{t}"
        );
        assert!(
            t.contains(
                "      4243 fio                   -        2.0        1.5  1.00    rested\n"
            ),
            "{t}"
        );
        // no placement section when the daemon runs none
        let mut w = v.clone();
        w["placement"] = serde_json::Value::Null;
        assert!(!text(&w).contains("placement:"));
    }
}
