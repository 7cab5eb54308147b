//! Unit tests of the policy registry's grammar.

use super::*;

fn one(s: &str) -> PolicyName {
    let p = parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
    assert_eq!(p.parts.len(), 1, "{s}");
    p.parts[0].clone()
}

#[test]
fn a_model_file_that_never_ends_is_refused_not_read_to_exhaustion() {
    // /dev/zero: reading it to the end would take all memory (issue 22)
    match load_model(Path::new("/dev/zero")) {
        Err(ModelLoadError::TooLarge { .. }) => {}
        other => panic!("{other:?}"),
    }
}

fn err(s: &str) -> String {
    match parse(s) {
        Ok(p) => panic!("{s} parsed as {p:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_name_with_defaults() {
    assert_eq!(one("baseline"), PolicyName::Baseline);
    assert_eq!(one("pats"), PolicyName::Pats { t_mc: 0.2 });
    assert_eq!(
        one("pats-calibrated"),
        PolicyName::PatsCalibrated { model: None }
    );
    assert_eq!(
        one("pats-adaptive"),
        PolicyName::PatsAdaptive { max_loss: 0.05 }
    );
    assert_eq!(one("dicio"), PolicyName::Dicio);
    assert_eq!(
        one("caladan-pm"),
        PolicyName::CaladanPm {
            pm_gbps: None,
            dram_gbps: None
        }
    );
    assert_eq!(one("pm-counter-only"), PolicyName::PmCounterOnly);
    assert_eq!(one("core-spec"), PolicyName::CoreSpec { pm_cpus: None });
    assert_eq!(one("placement"), PolicyName::Placement);
    assert_eq!(one("external"), PolicyName::External);
    assert_eq!(one("off"), PolicyName::Off);
    // every table row parses bare, except the one that needs an argument
    for e in POLICIES {
        let r = PolicyName::parse(e.name);
        assert_eq!(r.is_ok(), e.name != "gate", "{}", e.name);
    }
}

#[test]
fn arguments_and_their_ranges() {
    assert_eq!(one("gate:3"), PolicyName::Gate(3));
    assert_eq!(one("pats:0"), PolicyName::Pats { t_mc: 0.0 });
    assert_eq!(one("pats:1"), PolicyName::Pats { t_mc: 1.0 });
    assert_eq!(
        one("pats-adaptive:1"),
        PolicyName::PatsAdaptive { max_loss: 1.0 }
    );
    assert_eq!(
        one("pats-calibrated:/tmp/m.toml"),
        PolicyName::PatsCalibrated {
            model: Some("/tmp/m.toml".into())
        }
    );
    assert_eq!(
        one("caladan-pm:2.5"),
        PolicyName::CaladanPm {
            pm_gbps: Some(2.5),
            dram_gbps: None
        }
    );
    assert_eq!(
        one("caladan-pm:2.5:25"),
        PolicyName::CaladanPm {
            pm_gbps: Some(2.5),
            dram_gbps: Some(25.0)
        }
    );
    assert_eq!(
        one("core-spec:4"),
        PolicyName::CoreSpec { pm_cpus: Some(4) }
    );
    for bad in [
        "gate",
        "gate:0",
        "gate:-1",
        "gate:1.5",
        "gate:4294967295",
        "gate:x",
        "gate:1:2",
        "pats:1.1",
        "pats:-0.1",
        "pats:nan",
        "pats:inf",
        "pats:x",
        "pats:0.2:1",
        "pats-adaptive:0",
        "pats-adaptive:1.5",
        "pats-calibrated:",
        "caladan-pm:0",
        "caladan-pm:-1",
        "caladan-pm:1:2:3",
        "caladan-pm:inf",
        "core-spec:0",
        "core-spec:x",
        "dicio:1",
        "baseline:1",
        "placement:1",
        "external:1",
        "off:1",
        "pm-counter-only:2",
    ] {
        let e = err(bad);
        assert!(e.contains("syntax:"), "{bad}: {e}");
    }
}

#[test]
fn unknown_names_list_the_valid_ones() {
    let e = err("patz:0.2");
    assert!(e.contains("unknown policy `patz`"), "{e}");
    for entry in POLICIES {
        assert!(e.contains(entry.name), "{e} lacks {}", entry.name);
    }
    assert!(err("").contains("empty part"));
    assert!(err("PATS").contains("unknown"), "names are case-sensitive");
}

#[test]
fn aliases_parse_and_are_reported() {
    let p = parse("fixed:3").expect("alias");
    assert_eq!(p.parts, vec![PolicyName::Gate(3)]);
    assert_eq!(
        p.deprecated,
        vec![Deprecated {
            old: "fixed".into(),
            new: "gate"
        }]
    );
    let p = parse("calibrated:m.toml").expect("alias");
    assert_eq!(
        p.parts,
        vec![PolicyName::PatsCalibrated {
            model: Some("m.toml".into())
        }]
    );
    assert_eq!(
        p.deprecated[0].to_string(),
        "policy name `calibrated` is deprecated, write `pats-calibrated`"
    );
    assert!(parse("pats").expect("ok").deprecated.is_empty());
    // an alias keeps its target's argument rules
    assert!(err("fixed:0").contains("syntax: gate:N"));
    for (old, new) in ALIASES {
        assert!(entry(new).is_some(), "{old} -> {new}");
        assert!(entry(old).is_none(), "{old} is not also canonical");
    }
}

#[test]
fn compositions_fill_each_slot_once() {
    let p = parse("dicio+core-spec:3+pats:0.5+placement").expect("ok");
    assert_eq!(
        p.parts,
        vec![
            PolicyName::Dicio,
            PolicyName::CoreSpec { pm_cpus: Some(3) },
            PolicyName::Pats { t_mc: 0.5 },
            PolicyName::Placement
        ]
    );
    assert!(err("dicio+caladan-pm").contains("same slot"));
    assert!(err("pats+gate:2").contains("same slot"));
    assert!(err("baseline+pats").contains("cannot be composed"));
    assert!(err("dicio+off").contains("cannot be composed"));
    assert!(err("dicio+").contains("empty part"));
    assert!(err("dicio+nope").contains("unknown policy `nope`"));
}

#[test]
fn display_round_trips() {
    for s in [
        "baseline",
        "gate:7",
        "pats:0.2",
        "pats:1",
        "pats-calibrated",
        "pats-calibrated:a/b.toml",
        "pats-adaptive:0.05",
        "dicio",
        "caladan-pm",
        "caladan-pm:2.5",
        "caladan-pm:2:25",
        "pm-counter-only",
        "core-spec",
        "core-spec:2",
        "placement",
        "external",
        "off",
    ] {
        let p = one(s);
        assert_eq!(one(&p.to_string()), p, "{s}");
    }
    assert_eq!(one("fixed:2").to_string(), "gate:2");
}

#[test]
fn consumers_restrict_the_names() {
    let p = parse("dicio").expect("ok");
    assert!(check_allowed(&p.parts, &["dicio", "off"], "here").is_ok());
    let e = check_allowed(
        &parse("pats").expect("ok").parts,
        &["dicio", "off"],
        "in [isolation] policy",
    )
    .expect_err("refused")
    .to_string();
    assert_eq!(
        e,
        "policy `pats` is not available in [isolation] policy; valid there: dicio, off"
    );
}

#[test]
fn isolation_kinds() {
    assert_eq!(one("dicio").isolation_kind(), Some(IsolationKind::Dicio));
    assert_eq!(
        one("caladan-pm").isolation_kind(),
        Some(IsolationKind::CaladanPm)
    );
    assert_eq!(
        one("pm-counter-only").isolation_kind(),
        Some(IsolationKind::PmCounterOnly)
    );
    assert_eq!(one("pats").isolation_kind(), None);
}

#[test]
fn models_load_and_bad_ones_name_file_and_line() {
    let dir = std::env::temp_dir().join(format!("memtamer-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        "platform = \"x\"\nmax_dram_loss = 0.05\n[[points]]\nwrite_ratio = 1.0\nrequest_bytes = 4096\nt_s = 3\n",
    )
    .expect("write");
    assert_eq!(load_model(&good).expect("loads").points.len(), 1);
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "platform = \"x\"\nmax_dram_loss = 0.05\npoints = []\n",
    )
    .expect("write");
    let e = load_model(&bad).expect_err("no points").to_string();
    assert!(e.contains("bad.toml:3: points:"), "{e}");
    let e = load_model(&dir.join("missing.toml"))
        .expect_err("missing")
        .to_string();
    assert!(e.contains("missing.toml"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
