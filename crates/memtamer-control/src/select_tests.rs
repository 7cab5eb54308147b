//! Unit tests of `select.rs`.

use super::*;
use crate::procfs::CgroupEntry;
use std::path::PathBuf;

fn g(p: &str) -> Glob {
    Glob::new(p).unwrap()
}

#[test]
fn glob_literals_are_anchored() {
    assert!(g("memcached").matches("memcached"));
    assert!(!g("memcached").matches("memcached2"));
    assert!(!g("memcached").matches("xmemcached"));
    assert!(!g("memcached").matches(""));
    assert!(!g("a").matches("A"));
}

#[test]
fn glob_star() {
    assert!(g("*").matches(""));
    assert!(g("*").matches("anything/at/all"));
    assert!(g("mem*").matches("mem"));
    assert!(g("mem*").matches("memcached"));
    assert!(g("*cached").matches("memcached"));
    assert!(g("m*d").matches("memcached"));
    assert!(!g("m*d").matches("memcache"));
    assert!(g("a*b*c").matches("aXbYc"));
    assert!(g("a*b*c").matches("abc"));
    assert!(g("a*b*c").matches("abbbcbc"));
    assert!(!g("a*b*c").matches("acb"));
    assert!(g("**a**").matches("xa"));
    assert!(g("*aab").matches("aaaab"), "needs backtracking");
    assert!(!g("*a*a*a*b").matches(&"a".repeat(200)), "no blow-up");
}

#[test]
fn glob_star_crosses_slashes() {
    let p = g("/system.slice/*");
    assert!(p.matches("/system.slice/memcached.service"));
    assert!(p.matches("/system.slice/docker.service/payload"));
    assert!(!p.matches("/user.slice/x"));
    assert!(g("/system.slice/memcached*.service").matches("/system.slice/memcached@1.service"));
}

#[test]
fn glob_question_mark() {
    assert!(g("?").matches("x"));
    assert!(!g("?").matches(""));
    assert!(!g("?").matches("xy"));
    assert!(g("a?c").matches("abc"));
    assert!(g("a?c").matches("a/c"));
    assert!(g("??").matches("é!"), "counts characters, not bytes");
}

#[test]
fn glob_classes() {
    assert!(g("[abc]").matches("b"));
    assert!(!g("[abc]").matches("d"));
    assert!(g("[a-z]x").matches("qx"));
    assert!(!g("[a-z]").matches("Q"));
    assert!(g("[a-zA-Z0-9]").matches("Q"));
    assert!(g("[!a-z]").matches("Q"));
    assert!(!g("[!a-z]").matches("q"));
    assert!(g("[^a]").matches("b"));
    assert!(g("[]]").matches("]"));
    assert!(g("[!]]").matches("a"));
    assert!(!g("[!]]").matches("]"));
    assert!(g("[a-]").matches("-"));
    assert!(g("[-a]").matches("-"));
    assert!(g("[*]").matches("*"));
    assert!(!g("[*]").matches("x"));
    assert!(g("[?]").matches("?"));
    assert!(g("[[]").matches("["));
    assert!(g("worker[0-9][0-9]").matches("worker42"));
    assert!(!g("worker[0-9][0-9]").matches("worker4"));
}

#[test]
fn glob_backslash_is_literal() {
    assert!(g(r"dev-disk-by\x2duuid*").matches(r"dev-disk-by\x2duuid-1234.swap"));
    assert!(g(r"a\*").matches(r"a\anything"));
}

#[test]
fn glob_errors() {
    assert_eq!(Glob::new(""), Err(GlobError::Empty));
    assert!(matches!(
        Glob::new("ab[cd"),
        Err(GlobError::UnclosedClass { position: 2, .. })
    ));
    assert!(matches!(
        Glob::new("["),
        Err(GlobError::UnclosedClass { .. })
    ));
    assert!(matches!(
        Glob::new("[]"),
        Err(GlobError::UnclosedClass { .. })
    ));
    assert!(matches!(
        Glob::new("[!"),
        Err(GlobError::UnclosedClass { .. })
    ));
    assert!(matches!(
        Glob::new("[z-a]"),
        Err(GlobError::ReversedRange {
            lo: 'z',
            hi: 'a',
            ..
        })
    ));
    let msg = Glob::new("x[").unwrap_err().to_string();
    assert!(msg.contains("\"x[\""), "{msg}");
}

#[test]
fn glob_display_round_trips() {
    assert_eq!(g("/a/*[0-9]").to_string(), "/a/*[0-9]");
    assert_eq!(g("/a/*[0-9]").as_str(), "/a/*[0-9]");
}

#[test]
fn systemd_unit_from_paths() {
    assert_eq!(
        systemd_unit("/system.slice/memcached.service"),
        Some("memcached.service")
    );
    assert_eq!(
        systemd_unit("/system.slice/docker.service/payload"),
        Some("docker.service")
    );
    assert_eq!(
        systemd_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/app-x-12.scope"),
        Some("app-x-12.scope")
    );
    assert_eq!(
        systemd_unit("/user.slice/user-1000.slice/session-3.scope"),
        Some("session-3.scope")
    );
    assert_eq!(systemd_unit("/"), None);
    assert_eq!(systemd_unit(""), None);
    assert_eq!(systemd_unit("/user.slice"), None);
    assert_eq!(systemd_unit("/x/.service"), None, "no unit name");
    assert_eq!(systemd_unit("/x/a.services"), None);
    assert_eq!(
        systemd_unit("getty@tty1.service"),
        Some("getty@tty1.service")
    );
}

fn cg(id: u32, ctl: &str, path: &str) -> CgroupEntry {
    CgroupEntry {
        hierarchy_id: id,
        controllers: ctl
            .split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        path: path.to_string(),
    }
}

fn proc_(pid: i32, comm: &str, exe: Option<&str>, cgroups: Vec<CgroupEntry>) -> ProcessInfo {
    ProcessInfo {
        pid,
        start_time: 1000 + pid as u64,
        ppid: 1,
        state: 'S',
        comm: comm.to_string(),
        exe: exe.map(PathBuf::from),
        cgroups,
        threads: vec![pid],
        cpus_allowed: memtamer_core::CpuSet::first_n(4),
        kernel_thread: false,
        uids: None,
    }
}

#[test]
fn cgroup_path_preference() {
    let v2 = cg(0, "", "/system.slice/a.service");
    let sd = cg(1, "name=systemd", "/system.slice/b.service");
    let cpuset = cg(4, "cpuset", "/c");
    let p = proc_(1, "x", None, vec![sd.clone(), cpuset.clone(), v2.clone()]);
    assert_eq!(match_cgroup_path(&p), Some("/system.slice/a.service"));
    let p = proc_(1, "x", None, vec![cpuset.clone(), sd.clone()]);
    assert_eq!(match_cgroup_path(&p), Some("/system.slice/b.service"));
    let p = proc_(
        1,
        "x",
        None,
        vec![cg(3, "cpu,cpuacct", "/d"), cpuset.clone()],
    );
    assert_eq!(match_cgroup_path(&p), Some("/c"));
    let p = proc_(1, "x", None, vec![cg(0, "", ""), sd.clone()]);
    assert_eq!(
        match_cgroup_path(&p),
        Some("/system.slice/b.service"),
        "empty v2"
    );
    let p = proc_(1, "x", None, vec![cg(0, "", "/"), sd.clone()]);
    assert_eq!(
        match_cgroup_path(&p),
        Some("/system.slice/b.service"),
        "unused v2"
    );
    let p = proc_(1, "x", None, vec![cg(0, "", "/")]);
    assert_eq!(match_cgroup_path(&p), Some("/"), "container root");
    let p = proc_(1, "x", None, vec![cg(3, "cpu", "/d")]);
    assert_eq!(match_cgroup_path(&p), None);
    assert_eq!(match_cgroup_path(&proc_(1, "x", None, vec![])), None);
}

fn sel(m: JobMatch) -> Selector {
    Selector::compile(&m).unwrap()
}

#[test]
fn selector_requires_something() {
    assert_eq!(
        Selector::compile(&JobMatch::default()),
        Err(SelectorError::NoSelector)
    );
    let err = Selector::compile(&JobMatch {
        exe: Some("[".into()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(err.to_string().starts_with("exe: "), "{err}");
    assert!(matches!(
        Selector::compile(&JobMatch {
            comm: Some(String::new()),
            ..Default::default()
        }),
        Err(SelectorError::Glob {
            field: "comm",
            source: GlobError::Empty
        })
    ));
}

#[test]
fn selector_each_field() {
    let p = proc_(
        42,
        "memcached",
        Some("/usr/bin/memcached"),
        vec![cg(0, "", "/system.slice/memcached.service")],
    );
    let yes = [
        JobMatch {
            pid: vec![7, 42],
            ..Default::default()
        },
        JobMatch {
            comm: Some("mem*".into()),
            ..Default::default()
        },
        JobMatch {
            exe: Some("/usr/bin/*".into()),
            ..Default::default()
        },
        JobMatch {
            cgroup: Some("/system.slice/*".into()),
            ..Default::default()
        },
        JobMatch {
            unit: Some("memcached.service".into()),
            ..Default::default()
        },
    ];
    for m in yes {
        assert!(sel(m.clone()).matches(&p), "{m:?}");
    }
    let no = [
        JobMatch {
            pid: vec![7],
            ..Default::default()
        },
        JobMatch {
            comm: Some("redis".into()),
            ..Default::default()
        },
        JobMatch {
            exe: Some("/opt/*".into()),
            ..Default::default()
        },
        JobMatch {
            cgroup: Some("/user.slice/*".into()),
            ..Default::default()
        },
        JobMatch {
            unit: Some("memcached".into()),
            ..Default::default()
        },
    ];
    for m in no {
        assert!(!sel(m.clone()).matches(&p), "{m:?}");
    }
}

#[test]
fn a_rescan_reads_only_the_parts_selectors_look_at() {
    let parts = |ms: Vec<JobMatch>| {
        let sels: Vec<Selector> = ms.into_iter().map(sel).collect();
        parts_read_by(&sels)
    };
    let none = Parts {
        exe: false,
        cgroups: false,
        cpus_allowed: false,
        uids: false,
    };
    let pid = JobMatch {
        pid: vec![7],
        ..Default::default()
    };
    let comm = JobMatch {
        comm: Some("fio".into()),
        ..Default::default()
    };
    assert_eq!(parts(vec![pid.clone(), comm.clone()]), none);
    let exe = JobMatch {
        exe: Some("/usr/bin/*".into()),
        ..Default::default()
    };
    assert_eq!(parts(vec![pid.clone(), exe]), Parts { exe: true, ..none });
    for m in [
        JobMatch {
            cgroup: Some("/system.slice/*".into()),
            ..Default::default()
        },
        JobMatch {
            unit: Some("fio.service".into()),
            ..Default::default()
        },
    ] {
        assert_eq!(
            parts(vec![comm.clone(), m]),
            Parts {
                cgroups: true,
                ..none
            }
        );
    }
}

#[test]
fn selector_any_of_fields() {
    let p = proc_(5, "redis", None, vec![]);
    let s = sel(JobMatch {
        comm: Some("memcached".into()),
        pid: vec![5],
        ..Default::default()
    });
    assert!(s.matches(&p));
}

#[test]
fn selector_missing_facts_do_not_match() {
    let p = proc_(5, "x", None, vec![]);
    for m in [
        JobMatch {
            exe: Some("*".into()),
            ..Default::default()
        },
        JobMatch {
            cgroup: Some("*".into()),
            ..Default::default()
        },
        JobMatch {
            unit: Some("*".into()),
            ..Default::default()
        },
    ] {
        assert!(!sel(m.clone()).matches(&p), "{m:?}");
    }
    let p = proc_(5, "x", None, vec![cg(0, "", "/user.slice")]);
    assert!(!sel(JobMatch {
        unit: Some("*".into()),
        ..Default::default()
    })
    .matches(&p));
}

#[test]
fn classify_first_job_wins_and_unmatched_is_left_out() {
    let procs = vec![
        proc_(10, "memcached", None, vec![]),
        proc_(11, "redis", None, vec![]),
        proc_(12, "bash", None, vec![]),
        proc_(13, "memtier", None, vec![]),
    ];
    let jobs = vec![
        sel(JobMatch {
            comm: Some("memcached".into()),
            ..Default::default()
        }),
        sel(JobMatch {
            comm: Some("mem*".into()),
            ..Default::default()
        }),
        sel(JobMatch {
            comm: Some("re*".into()),
            pid: vec![10],
            ..Default::default()
        }),
    ];
    assert_eq!(classify(&procs, &jobs), vec![(10, 0), (11, 2), (13, 1)]);
    assert!(classify(&procs, &[]).is_empty());
    assert!(classify(&[], &jobs).is_empty());
    let keyed = classify_keyed(&procs, &jobs);
    assert_eq!(keyed.len(), 4);
    assert_eq!(
        keyed[2],
        (
            ProcessKey {
                pid: 12,
                start_time: 1012
            },
            None
        )
    );
}

fn k(pid: i32, start_time: u64) -> ProcessKey {
    ProcessKey { pid, start_time }
}

#[test]
fn diff_all_cases() {
    let previous = vec![
        (k(1, 10), 0), // unchanged
        (k(2, 20), 0), // exited
        (k(3, 30), 0), // pid reused
        (k(4, 40), 1), // exec'd into another job
        (k(5, 50), 1), // exec'd into something unmanaged
    ];
    let current = vec![
        (k(1, 10), Some(0)),
        (k(3, 99), Some(0)),
        (k(4, 40), Some(0)),
        (k(5, 50), None),
        (k(6, 60), Some(1)), // forked
        (k(7, 70), None),    // never managed
    ];
    let d = diff(&previous, &current);
    assert_eq!(d.unchanged, vec![(k(1, 10), 0)]);
    assert_eq!(d.exited, vec![(k(2, 20), 0), (k(3, 30), 0)]);
    assert_eq!(d.appeared, vec![(k(3, 99), 0), (k(6, 60), 1)]);
    assert_eq!(
        d.reclassified,
        vec![Reclassified {
            key: k(4, 40),
            from: 1,
            to: 0
        }]
    );
    assert_eq!(d.released, vec![(k(5, 50), 1)]);
    assert!(!d.is_quiet());
}

#[test]
fn diff_quiet_and_empty() {
    let d = diff(&[], &[]);
    assert!(d.is_quiet());
    assert_eq!(d, ProcessDiff::default());
    let d = diff(&[(k(1, 1), 0)], &[(k(1, 1), Some(0)), (k(2, 2), None)]);
    assert!(d.is_quiet());
    assert_eq!(d.unchanged.len(), 1);
    let d = diff(&[(k(1, 1), 0)], &[]);
    assert_eq!(d.exited, vec![(k(1, 1), 0)]);
}

#[test]
fn diff_on_classified_scans() {
    let jobs = vec![sel(JobMatch {
        comm: Some("a*".into()),
        ..Default::default()
    })];
    let mut procs = vec![
        proc_(1, "alpha", None, vec![]),
        proc_(2, "beta", None, vec![]),
    ];
    let prev: Vec<(ProcessKey, usize)> = classify_keyed(&procs, &jobs)
        .into_iter()
        .filter_map(|(key, j)| j.map(|j| (key, j)))
        .collect();
    procs[1].comm = "alpha2".into(); // exec
    let d = diff(&prev, &classify_keyed(&procs, &jobs));
    assert_eq!(d.appeared, vec![(k(2, 1002), 0)]);
    assert_eq!(d.unchanged, vec![(k(1, 1001), 0)]);
}

/// Issue 22 item 5: comm alone lets any user's process into an LC job;
/// `[job.require]` uid and cgroup keep out what another user starts.
#[test]
fn requirements_keep_out_processes_of_other_users_and_cgroups() {
    use crate::procfs::Uids;
    let svc = cg(0, "", "/system.slice/memcached.service");
    let user = cg(0, "", "/user.slice/user-1000.slice/session-3.scope");
    let with = |uid: (u32, u32), cgroup: &CgroupEntry| ProcessInfo {
        uids: Some(Uids {
            real: uid.0,
            effective: uid.1,
        }),
        ..proc_(9, "memcached", None, vec![cgroup.clone()])
    };
    let genuine = with((998, 998), &svc);
    let spoof = with((1000, 1000), &user);
    let by_comm = sel(JobMatch {
        comm: Some("memcached".into()),
        ..Default::default()
    });
    // without requirements both are taken: the spoof is pinned to the LC cores
    assert!(by_comm.matches(&genuine) && by_comm.matches(&spoof));
    let by_uid = by_comm
        .clone()
        .with_require(&JobRequire {
            uid: vec![998],
            cgroup: None,
        })
        .unwrap();
    assert!(by_uid.matches(&genuine));
    assert!(!by_uid.matches(&spoof));
    // both real and effective: a setuid-998 program started by user 1000 is out
    assert!(!by_uid.matches(&with((1000, 998), &svc)));
    assert!(!by_uid.matches(&with((998, 0), &svc)));
    // uids not read: a requirement on them fails
    assert!(!by_uid.matches(&proc_(9, "memcached", None, vec![svc.clone()])));
    let by_cgroup = by_comm
        .clone()
        .with_require(&JobRequire {
            uid: vec![],
            cgroup: Some("/system.slice/memcached.service".into()),
        })
        .unwrap();
    assert!(by_cgroup.matches(&genuine));
    assert!(!by_cgroup.matches(&with((998, 998), &user)));
    // a rescan reads what the requirements look at
    let p = parts_read_by(&[by_uid, by_cgroup]);
    assert!(p.uids && p.cgroups);
    assert!(matches!(
        by_comm.with_require(&JobRequire {
            uid: vec![],
            cgroup: Some("[".into())
        }),
        Err(SelectorError::Glob {
            field: "cgroup",
            ..
        })
    ));
}

#[test]
fn selector_by_pod_name_on_a_fake_kubelet_tree() {
    // a Burstable pod under the systemd driver, a Guaranteed one under
    // cgroupfs, and a host service
    let uid_a = "0f3c1a2b-4d5e-6f70-8192-a3b4c5d6e7f8";
    let uid_b = "11111111-2222-3333-4444-555555555555";
    let a = proc_(
        10,
        "memcached",
        None,
        vec![cg(
            0,
            "",
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f3c1a2b_4d5e_6f70_8192_a3b4c5d6e7f8.slice/cri-containerd-aa.scope",
        )],
    );
    let b = proc_(
        11,
        "fio",
        None,
        vec![cg(0, "", &format!("/kubepods/pod{uid_b}/bb"))],
    );
    let host = proc_(
        12,
        "memcached",
        None,
        vec![cg(0, "", "/system.slice/memcached.service")],
    );
    let pods = crate::kubepods::PodIndex::from_entries([
        format!("prod_memcached-7d9f_{uid_a}").as_str(),
        format!("batch_fio-1_{uid_b}").as_str(),
    ]);
    let mut lc = sel(JobMatch {
        pod: Some("prod/memcached-*".into()),
        ..Default::default()
    });
    let mut be = sel(JobMatch {
        pod: Some("batch/*".into()),
        ..Default::default()
    });
    // before the node's pods are known nothing matches
    assert!(!lc.matches(&a));
    lc.set_pods(&pods);
    be.set_pods(&pods);
    assert!(lc.matches(&a) && !lc.matches(&b) && !lc.matches(&host));
    assert!(be.matches(&b) && !be.matches(&a) && !be.matches(&host));
    // the pod selector needs cgroup paths read
    assert!(parts_read_by(&[lc]).cgroups);
    // a bad glob names the key
    let err = Selector::compile(&JobMatch {
        pod: Some("[".into()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(matches!(err, SelectorError::Glob { field: "pod", .. }));
}

#[test]
fn selector_by_namespace_and_labels_from_the_api_view() {
    // the recorded PodList of node-a; its pods' processes in the kubelet's
    // tree (systemd driver), plus a pod the API does not know yet
    let list =
        crate::kubeapi::parse_pod_list(include_str!("../tests/fixtures/podlist-node-a.json"))
            .unwrap();
    let in_pod = |pid, p: &crate::kubeapi::Pod| {
        let path =
            crate::kubepods::pod_cgroup_path(crate::kubepods::Driver::Systemd, p.qos, &p.uid);
        proc_(
            pid,
            "x",
            None,
            vec![cg(0, "", &format!("/{path}/cri-containerd-1.scope"))],
        )
    };
    let (redis, memcached, fio) = (
        in_pod(1, &list.pods[0]),
        in_pod(2, &list.pods[1]),
        in_pod(3, &list.pods[2]),
    );
    let new_uid = "22222222-3333-4444-5555-666666666666";
    let newcomer = proc_(
        4,
        "x",
        None,
        vec![cg(0, "", &format!("/kubepods/besteffort/pod{new_uid}/c"))],
    );
    let mut pods = crate::kubeapi::index(&list.pods);
    pods.fill_from(&crate::kubepods::PodIndex::from_entries([
        format!("batch_newcomer_{new_uid}").as_str(),
        // the API's name wins for a pod both know
        "other_name_6d1b0c2e-93a4-4f7b-8c55-0e2f1a9b7c31",
    ]));
    let labels = |kv: &[(&str, &str)]| {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let mut cache = sel(JobMatch {
        labels: labels(&[("tier", "cache")]),
        ..Default::default()
    });
    let mut redis_only = sel(JobMatch {
        namespace: Some("prod".into()),
        labels: labels(&[
            ("app", "redis"),
            ("statefulset.kubernetes.io/pod-name", "redis-0"),
        ]),
        ..Default::default()
    });
    let mut batch = sel(JobMatch {
        namespace: Some("b*".into()),
        ..Default::default()
    });
    let mut batch_storage = sel(JobMatch {
        namespace: Some("batch".into()),
        labels: labels(&[("team", "storage")]),
        ..Default::default()
    });
    // namespace and labels narrow each other: no pod of prod is a fio
    let mut none = sel(JobMatch {
        namespace: Some("prod".into()),
        labels: labels(&[("app", "fio")]),
        ..Default::default()
    });
    for s in [
        &mut cache,
        &mut redis_only,
        &mut batch,
        &mut batch_storage,
        &mut none,
    ] {
        assert!(
            !s.matches(&redis) && !s.matches(&fio),
            "nothing before the pods are known"
        );
        s.set_pods(&pods);
    }
    let all = [&redis, &memcached, &fio, &newcomer];
    let hits =
        |s: &Selector| -> Vec<i32> { all.iter().filter(|p| s.matches(p)).map(|p| p.pid).collect() };
    assert_eq!(hits(&cache), [1, 2]);
    assert_eq!(hits(&redis_only), [1]);
    // the newcomer's namespace is known from /var/log/pods...
    assert_eq!(hits(&batch), [3, 4]);
    // ...its labels are not, so a label selector leaves it alone
    assert_eq!(hits(&batch_storage), [3]);
    assert!(hits(&none).is_empty());
    assert!(parts_read_by(&[batch]).cgroups);
    // bad and set-based label selectors are refused, naming the key
    for (k, v, needle) in [
        ("app", "in (redis,memcached)", "set-based"),
        ("!app", "", "set-based"),
        ("app", "-redis", "alphanumeric at both ends"),
        ("Example.com/app", "x", "DNS subdomain"),
        ("", "x", "key name"),
    ] {
        let e = Selector::compile(&JobMatch {
            labels: labels(&[(k, v)]),
            ..Default::default()
        })
        .unwrap_err();
        assert!(
            matches!(&e, SelectorError::Label { key, why } if key == k && why.contains(needle)),
            "{k}={v}: {e}"
        );
    }
}
