//! The demo's table: DRAM memcpy and PM write throughput per PM writer count,
//! one column per policy, then a sparkline per policy.

use memtamer_sim::report;
use memtamer_sim::ScenarioResult;

/// The demo's pivot: one column per policy, then a sparkline per policy.
pub fn pivot(r: &ScenarioResult) -> String {
    let policies: Vec<String> = {
        let mut seen: Vec<String> = Vec::new();
        for p in &r.points {
            if let Some(v) = p.params.get("policy").and_then(|v| v.as_str()) {
                if !seen.iter().any(|s| s == v) {
                    seen.push(v.to_string());
                }
            }
        }
        seen
    };
    let xs: Vec<f64> = {
        let mut xs: Vec<f64> = r.points.iter().filter_map(|p| p.x).collect();
        xs.sort_by(|a, b| a.total_cmp(b));
        xs.dedup();
        xs
    };
    let get = |x: f64, policy: &str, metric: &str| -> Option<f64> {
        r.points
            .iter()
            .find(|p| {
                p.x == Some(x) && p.params.get("policy").and_then(|v| v.as_str()) == Some(policy)
            })
            .and_then(|p| p.metrics.get(metric).copied())
    };
    let mut out = format!("# {}\n\n", r.title);
    let w = 16;
    out += &format!(
        "{:>8} | {:^width$} | {:^width$}\n",
        "PM",
        "DRAM memcpy GB/s",
        "PM write GB/s",
        width = (w + 1) * policies.len()
    );
    out += &format!("{:>8} |", "writers");
    for _ in 0..2 {
        for p in &policies {
            out += &format!(" {p:>w$}");
        }
        out += " |";
    }
    out.pop();
    out += "\n";
    for &x in &xs {
        out += &format!("{x:>8} |");
        for metric in ["memcpy.gbps", "pm.request_write_gbps"] {
            for p in &policies {
                out += &format!(" {:>w$}", get(x, p, metric).map_or("-".into(), report::num));
            }
            out += " |";
        }
        out.pop();
        out += "\n";
    }
    let blocks = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = r
        .points
        .iter()
        .filter_map(|p| p.metrics.get("memcpy.gbps").copied())
        .fold(0.0, f64::max)
        .max(1e-9);
    out += &format!(
        "\nDRAM memcpy as PM writers go {} → {}:\n",
        xs.first().unwrap_or(&0.0),
        xs.last().unwrap_or(&0.0)
    );
    for p in &policies {
        let line: String = xs
            .iter()
            .map(|&x| {
                let v = get(x, p, "memcpy.gbps").unwrap_or(0.0) / max;
                blocks[((v * 7.0).round() as usize).min(7)]
            })
            .collect();
        let last = xs
            .last()
            .and_then(|&x| get(x, p, "memcpy.gbps"))
            .unwrap_or(0.0);
        let first = xs
            .first()
            .and_then(|&x| get(x, p, "memcpy.gbps"))
            .unwrap_or(1.0);
        out += &format!(
            "  {p:<16} {line}  {:>5.1}% of no-PM at {} writers\n",
            100.0 * last / first.max(1e-9),
            xs.last().unwrap_or(&0.0)
        );
    }
    out
}
