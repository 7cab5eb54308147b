use super::*;

fn doc() -> RankStatus {
    RankStatus {
        format: FORMAT.into(),
        version: VERSION,
        host: "nodeA".into(),
        pid: 4242,
        rank: Some(1),
        ranks: Some(4),
        state: RunState::Running,
        updated_unix_ms: 10_000,
        unimem: true,
        profiler: None,
        dram_budget: 4 << 20,
        dram_used: 3 << 20,
        iterations: 30,
        decisions: 2,
        plan: Some("global".into()),
        moves: 5,
        failed: 0,
        bytes_moved: 6 << 20,
        copy_ms: 12.5,
        exposed_ms: 0.25,
        to_dram: Some(DirectionStatus {
            moves: 3,
            bytes: 4 << 20,
            copy_ms: 10.0,
            copy_bw: Some(419_430_400.0),
        }),
        to_slow: Some(DirectionStatus {
            moves: 2,
            bytes: 2 << 20,
            copy_ms: 2.5,
            copy_bw: Some(838_860_800.0),
        }),
        last_move_error: None,
        alloc: None,
        decisions_detail: None,
        objects: vec![
            ObjectStatus {
                name: "r0".into(),
                size: 1 << 20,
                tier: TierName::Slow,
                migrating: false,
                access_share: Some(0.125),
                moves: 0,
                bytes_moved: 0,
                exposed_ms: 0.0,
            },
            ObjectStatus {
                name: "u0".into(),
                size: 3 << 20,
                tier: TierName::Dram,
                migrating: false,
                access_share: Some(0.5),
                moves: 1,
                bytes_moved: 3 << 20,
                exposed_ms: 0.25,
            },
        ],
    }
}

fn p() -> PathBuf {
    PathBuf::from("/d/rank1.json")
}

#[test]
fn round_trips_through_json() {
    let d = doc();
    let text = serde_json::to_string_pretty(&d).unwrap();
    assert_eq!(parse(&text, &p()).unwrap(), d);
    assert_eq!(d.file_name(), "rank1.json");
    assert_eq!(file_name(None, 7), "pid7.json");
}

/// A document written before the per-direction fields existed is still a
/// version-1 document: it parses, with the directions absent, and the
/// table shows `-` for them.
#[test]
fn a_document_without_directions_still_reads() {
    let mut v: serde_json::Value = serde_json::to_value(doc()).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("to_dram").unwrap();
    o.remove("to_slow").unwrap();
    let d = parse(&v.to_string(), &p()).unwrap();
    assert!(d.to_dram.is_none() && d.to_slow.is_none());
    let t = render_table(&[(p(), d)], 10_000);
    assert_eq!(t.lines().nth(2), Some("  to DRAM -; to slow -"), "{t}");
}

/// Births by allocation-time placement (branch `unimemalloc`): a line
/// after the directions where the document has them; a document without
/// the field (placement off, or written before it) still reads, no line.
#[test]
fn allocation_time_births_show_where_known() {
    let mut d = doc();
    d.alloc = Some(crate::alloc_place::Counts {
        placed: 3,
        placed_bytes: 3 << 20,
        unknown: 5,
        cold: 1,
        learned: 4,
        ..Default::default()
    });
    let text = serde_json::to_string_pretty(&d).unwrap();
    assert_eq!(parse(&text, &p()).unwrap(), d);
    let t = render_table(&[(p(), d)], 10_000);
    assert_eq!(
        t.lines().nth(3),
        Some("  at allocation: born in DRAM 3 (3145728 B); born slow: 5 unknown, 1 cold, 0 no room, 0 no identity, 0 refused; 4 frees learned"),
        "{t}"
    );
    let mut v: serde_json::Value = serde_json::to_value(doc()).unwrap();
    v.as_object_mut().unwrap().remove("alloc").unwrap();
    let d = parse(&v.to_string(), &p()).unwrap();
    assert_eq!(d.alloc, None);
    assert!(!render_table(&[(p(), d)], 10_000).contains("at allocation"));
}

/// How copies are charged and the guard's reverts (branch `unimemcpu`): a
/// line where the document has them; an older document still reads.
#[test]
fn copies_exposed_and_guard_reverts_show_where_known() {
    let mut d = doc();
    d.decisions_detail = Some(DecisionsStatus {
        copies_exposed: "oversubscribed".into(),
        node_ranks: 4,
        cpus: 2,
        cpus_from: "own".into(),
        guard_reverts: 1,
        guard_refused: 2,
    });
    let text = serde_json::to_string_pretty(&d).unwrap();
    assert_eq!(parse(&text, &p()).unwrap(), d);
    let t = render_table(&[(p(), d.clone())], 10_000);
    assert_eq!(
        t.lines().nth(3),
        Some("  copies exposed: oversubscribed (4 ranks on the node, 2 CPUs); guard: 1 reverted, 2 refused"),
        "{t}"
    );
    let mut node = d.clone();
    if let Some(x) = node.decisions_detail.as_mut() {
        (x.copies_exposed, x.node_ranks, x.cpus, x.cpus_from) = ("no".into(), 1, 2, "node".into());
    }
    let t = render_table(&[(p(), node)], 10_000);
    assert_eq!(
        t.lines().nth(3),
        Some("  copies exposed: no (1 ranks on its 2 CPUs); guard: 1 reverted, 2 refused"),
        "{t}"
    );
    let mut v: serde_json::Value = serde_json::to_value(doc()).unwrap();
    v.as_object_mut()
        .unwrap()
        .remove("decisions_detail")
        .unwrap();
    let d = parse(&v.to_string(), &p()).unwrap();
    assert_eq!(d.decisions_detail, None);
    assert!(!render_table(&[(p(), d)], 10_000).contains("copies exposed"));
}

/// The access source (branch `unimempebs`): shown after "unimem on"
/// where the document has it; a document without the field still reads.
#[test]
fn the_access_source_shows_where_known() {
    let mut d = doc();
    d.profiler = Some("faults (auto:no-pebs,errno-2)".into());
    let text = serde_json::to_string_pretty(&d).unwrap();
    assert_eq!(parse(&text, &p()).unwrap(), d);
    let t = render_table(&[(p(), d)], 10_000);
    assert!(
        t.lines().nth(1).is_some_and(
            |l| l.contains("unimem on, profiler faults (auto:no-pebs,errno-2); 30 iterations")
        ),
        "{t}"
    );
    let mut v: serde_json::Value = serde_json::to_value(doc()).unwrap();
    v.as_object_mut().unwrap().remove("profiler").unwrap();
    assert_eq!(parse(&v.to_string(), &p()).unwrap().profiler, None);
}

#[test]
fn truncated_file_names_the_file_and_position() {
    let text = serde_json::to_string_pretty(&doc()).unwrap();
    let e = parse(&text[..text.len() / 2], &p()).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, StatusError::Parse { .. }), "{m}");
    assert!(
        m.starts_with("/d/rank1.json: not a tier status file"),
        "{m}"
    );
    assert!(m.contains("line"), "{m}");
    let e = parse("", &p()).unwrap_err();
    assert!(e.to_string().contains("/d/rank1.json"));
    // JSON, but some other document
    let e = parse(r#"{"hello": 1}"#, &p()).unwrap_err();
    assert!(e.to_string().contains("missing field"), "{e}");
}

#[test]
fn impossible_values_are_named() {
    type Mutate = Box<dyn Fn(&mut RankStatus)>;
    let cases: Vec<(Mutate, &str)> = vec![
        (
            Box::new(|d| d.format = "other".into()),
            "format is \"other\"",
        ),
        (Box::new(|d| d.version = 9), "version 9"),
        (Box::new(|d| d.dram_budget = 0), "dram_budget is 0"),
        (
            Box::new(|d| d.dram_used = d.dram_budget + 1),
            "exceeds dram_budget",
        ),
        (
            Box::new(|d| d.rank = Some(4)),
            "rank 4 is not below ranks 4",
        ),
        (Box::new(|d| d.copy_ms = -1.0), "copy_ms is -1"),
        (
            Box::new(|d| d.to_slow.as_mut().unwrap().copy_ms = -1.0),
            "to_slow.copy_ms is -1",
        ),
        (
            Box::new(|d| d.to_dram.as_mut().unwrap().copy_bw = Some(0.0)),
            "to_dram.copy_bw is 0",
        ),
        (
            Box::new(|d| d.to_dram.as_mut().unwrap().moves = 6),
            "to_dram has 6 moves of 4194304 B, more than the totals (5 moves",
        ),
        (
            Box::new(|d| d.to_slow.as_mut().unwrap().bytes = 1 << 20),
            "to_dram and to_slow add up to 5 moves of 5242880 B, the totals are 5 moves of 6291456 B",
        ),
        (
            Box::new(|d| d.objects[0].access_share = Some(1.5)),
            "object \"r0\": access_share 1.5",
        ),
        (
            Box::new(|d| d.objects[1].exposed_ms = -0.5),
            "object \"u0\": exposed_ms is -0.5",
        ),
    ];
    for (mutate, want) in cases {
        let mut d = doc();
        mutate(&mut d);
        let text = serde_json::to_string(&d).unwrap();
        let e = parse(&text, &p()).unwrap_err();
        assert!(matches!(e, StatusError::Invalid { .. }));
        let m = e.to_string();
        assert!(m.starts_with("/d/rank1.json: invalid tier status: "), "{m}");
        assert!(m.contains(want), "{m} lacks {want}");
    }
}

#[test]
fn table_shows_every_rank_and_object_largest_first() {
    let mut d0 = doc();
    d0.rank = Some(0);
    d0.state = RunState::Finished;
    d0.objects[0].migrating = true;
    d0.objects[0].access_share = None;
    d0.objects[1].access_share = Some(-0.0);
    let t = render_table(&[(p(), d0), (p(), doc())], 12_500);
    let lines: Vec<&str> = t.lines().collect();
    assert!(
        lines[0].starts_with("rank 0 of 4 (pid 4242 on nodeA, finished, updated 2.5 s ago"),
        "{t}"
    );
    assert!(
        lines[1].contains("DRAM 3.0 MiB of 4.0 MiB (75%); unimem on; 30 iterations, 2 decisions (plan global); 5 moves (0 failed), 6.0 MiB moved"),
        "{t}"
    );
    assert_eq!(
        lines[2],
        "  to DRAM 3 moves, 4.0 MiB, copy 10.000 ms, 0.42 GB/s; to slow 2 moves, 2.0 MiB, copy 2.500 ms, 0.84 GB/s"
    );
    assert!(lines[3].split_whitespace().eq([
        "object",
        "size",
        "tier",
        "access",
        "moves",
        "moved",
        "exposed_ms"
    ]));
    assert!(lines[4]
        .split_whitespace()
        .eq(["u0", "3.0", "MiB", "dram", "0.0%", "1", "3.0", "MiB", "0.250"]));
    assert!(lines[5]
        .split_whitespace()
        .eq(["r0", "1.0", "MiB", "move", "-", "0", "0", "B", "0.000"]));
    assert!(lines[6].starts_with("rank 1 of 4"), "{t}");
    assert!(lines[10].trim_start().starts_with("u0"), "{t}");
    assert!(
        lines[11].contains("slow") && lines[11].contains("12.5%"),
        "{t}"
    );
    // a direction without a bandwidth sample
    let mut d = doc();
    d.to_slow.as_mut().unwrap().copy_bw = None;
    let t = render_table(&[(p(), d)], 10_000);
    assert!(
        t.lines().nth(2).unwrap().ends_with("copy 2.500 ms, - GB/s"),
        "{t}"
    );
}

#[test]
fn human_bytes_units() {
    assert_eq!(human_bytes(0), "0 B");
    assert_eq!(human_bytes(1023), "1023 B");
    assert_eq!(human_bytes(1536), "1.5 KiB");
    assert_eq!(human_bytes(5 << 30), "5.0 GiB");
}

#[test]
fn directory_sorts_ranks_and_reports_bad_and_stale_files() {
    let dir = std::env::temp_dir().join(format!("mt-status-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(matches!(
        read_dir(&dir, "nodeA", |_| true),
        Err(StatusError::Read { .. })
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let e = read_dir(&dir, "nodeA", |_| true).unwrap_err();
    assert!(e.to_string().contains("no tier status files"), "{e}");
    let mut r2 = doc();
    r2.rank = Some(2);
    r2.pid = 11;
    write_atomic(&dir, &r2.file_name(), &serde_json::to_string(&r2).unwrap()).unwrap();
    let mut r0 = doc();
    r0.rank = Some(0);
    r0.pid = 10;
    write_atomic(&dir, &r0.file_name(), &serde_json::to_string(&r0).unwrap()).unwrap();
    // a writer's temporary and a non-JSON file are not status files
    std::fs::write(dir.join(".rank3.json.99.tmp"), "{").unwrap();
    std::fs::write(dir.join("notes.txt"), "x").unwrap();
    let DirStatus {
        ranks: good,
        problems: bad,
    } = read_dir(&dir, "nodeA", |_| true).unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(
        good.iter().map(|(_, s)| s.rank).collect::<Vec<_>>(),
        [Some(0), Some(2)]
    );
    // a truncated file, and rank 2's process gone while running: both
    // named, rank 0 still shown; on another host liveness is not judged
    std::fs::write(dir.join("rank1.json"), "{\"format\": \"memtamer-tier-st").unwrap();
    let DirStatus {
        ranks: good,
        problems: bad,
    } = read_dir(&dir, "nodeA", |pid| pid != 11).unwrap();
    assert_eq!(good.len(), 1);
    let msgs: Vec<String> = bad.iter().map(|e| e.to_string()).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(
        msgs[0].contains("rank1.json: not a tier status file"),
        "{msgs:?}"
    );
    assert!(
        msgs[1].contains("rank2.json: stale: process 11 on nodeA"),
        "{msgs:?}"
    );
    let DirStatus {
        ranks: good,
        problems: bad,
    } = read_dir(&dir, "nodeB", |pid| pid != 11).unwrap();
    assert_eq!((good.len(), bad.len()), (2, 1));
    let all = StatusError::Several(bad);
    assert!(all
        .to_string()
        .starts_with("1 status files cannot be shown:\n  "));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A FIFO under a `.json` name blocked `memtamer tier status` until
/// something wrote it (forever, if nothing did), and `/dev/zero` behind a
/// link was read without end: both are named now and never opened for a
/// blocking read. Here a writer waits on the FIFO with a valid document;
/// the old reader opened it, got the document and showed it as a rank.
#[test]
fn fifos_devices_and_oversized_files_are_named_not_read() {
    use std::os::unix::fs::OpenOptionsExt;
    let base = std::env::temp_dir().join(format!("mt-status-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let (fifo_dir, dev_dir, big_dir) = (base.join("fifo"), base.join("dev"), base.join("big"));
    for d in [&fifo_dir, &dev_dir, &big_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let fifo = fifo_dir.join("rank0.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: c is a NUL-terminated path
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let doc_text = serde_json::to_string(&doc()).unwrap();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            // blocks until a reader opens the FIFO; errors (EPIPE once the
            // reader is gone) are the reader's business, not the test's
            if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) {
                let _ = f.write_all(doc_text.as_bytes());
            }
        })
    };
    let DirStatus { ranks, problems } = read_dir(&fifo_dir, "nodeA", |_| true).unwrap();
    let msgs: Vec<String> = problems.iter().map(|e| e.to_string()).collect();
    assert!(ranks.is_empty(), "a FIFO was read as a status file");
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].contains("rank0.json: invalid tier status: not a regular file"),
        "{msgs:?}"
    );
    // let the writer finish: a reader that stays open while it writes
    let hold = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    writer.join().unwrap();
    drop(hold);
    // a device behind a link
    std::os::unix::fs::symlink("/dev/zero", dev_dir.join("rank1.json")).unwrap();
    let e = read_dir(&dev_dir, "nodeA", |_| true).unwrap().problems;
    assert!(
        e[0].to_string()
            .contains("rank1.json: invalid tier status: not a regular file"),
        "{e:?}"
    );
    // a (sparse) file past the limit
    let f = std::fs::File::create(big_dir.join("rank2.json")).unwrap();
    f.set_len(MAX_STATUS_BYTES + 1).unwrap();
    let e = read_dir(&big_dir, "nodeA", |_| true).unwrap().problems;
    assert!(e[0].to_string().contains("larger than"), "{e:?}");
    std::fs::remove_dir_all(&base).unwrap();
}

/// Hostile-input sweep (docs/bad-input.md, 2026-11-27): an object name
/// longer than 65535 characters made `format!`'s width argument panic
/// ("Formatting argument out of range"), so `memtamer tier status`
/// exited 101 on such a file. The row is printed, the columns aligned.
#[test]
fn an_object_name_longer_than_format_widths_allow_is_printed() {
    let mut d = doc();
    let long = "o".repeat(70_000);
    d.objects[0].name = long.clone();
    let text = serde_json::to_string(&d).unwrap();
    let d = parse(&text, &p()).unwrap();
    let t = render_table(&[(p(), d)], 10_000);
    let lines: Vec<&str> = t.lines().filter(|l| l.len() > 70_000).collect();
    // the header, the long name's row and the other object's row, all
    // padded to the long name
    assert_eq!(lines.len(), 3, "{}", &t[..200]);
    assert!(lines[0].trim_start().starts_with("object"));
    assert!(lines.iter().any(|l| l.contains(&long)));
    assert!(lines.iter().all(|l| l.len() == lines[0].len()));
}
