//! Tests of `comember.rs` and `coshm.rs`: registrations in a real registry
//! file, with ticks driven at chosen times (no sleeping, no wall clock).

use super::*;
use crate::coshm::MAGIC;
use crate::test_dir::TestDir;

const MS: u64 = 1_000_000;
/// A time far from zero, as CLOCK_MONOTONIC is.
const T0: u64 = 1_000_000 * MS;

fn cfg(cores: usize) -> ControlConfig {
    ControlConfig::thesis(cores)
}

fn join(path: &Path, max: usize, now: u64) -> Member {
    Member::join(path, max, cfg(max), false, now).expect("join")
}

fn input(bytes: u64, n: usize) -> TickInput {
    TickInput {
        bytes,
        app_threads: n,
        ..TickInput::default()
    }
}

/// A pid that no process has now: a child that has exited and was reaped.
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true")
        .spawn()
        .expect("spawn true");
    let pid = c.id();
    c.wait().expect("wait");
    pid
}

/// Writes a registration by hand, as a process that then died would have.
fn fake_slot(m: &Member, pid: u32, start_time: u64, beat: u64) -> (usize, u64) {
    let i = (0..SLOTS)
        .find(|&i| m.reg.slot(i).owner_pid.load(Ordering::Relaxed) == 0)
        .expect("a free slot");
    let s = m.reg.slot(i);
    let id = m.reg.header().next_id.fetch_add(1, Ordering::AcqRel) + 1;
    s.owner_pid.store(pid, Ordering::Relaxed);
    s.start_time.store(start_time, Ordering::Relaxed);
    s.beat_ns.store(beat, Ordering::Relaxed);
    s.max_flushers.store(8, Ordering::Relaxed);
    s.app_threads.store(2, Ordering::Relaxed);
    s.id.store(id, Ordering::Relaxed);
    s.live.store(1, Ordering::Release);
    (i, id)
}

#[test]
fn both_register_one_coordinates_and_the_shares_sum_to_the_total() {
    let dir = TestDir::new("corun-pair");
    let mut a = join(&dir.reg(), 16, T0);
    let mut b = join(&dir.reg(), 16, T0);
    assert_ne!(a.slot(), b.slot());
    assert_ne!(a.id(), b.id());
    let (mut ba, mut bb) = (0u64, 0u64);
    let mut checked = 0;
    for step in 1..3000u64 {
        let now = T0 + step * 5 * MS;
        // A flushes three times as fast as B
        ba += 3_000_000;
        bb += 1_000_000;
        let ma = a.tick(now, &input(ba, 4)).expect("tick a");
        let mb = b.tick(now, &input(bb, 4)).expect("tick b");
        assert!(a.is_coordinator() && !b.is_coordinator(), "step {step}");
        let (Some(ma), Some(mb)) = (ma, mb) else {
            panic!("step {step}: no assignment {ma:?} {mb:?}");
        };
        assert_eq!(ma.flushers + mb.flushers, a.m_total(), "step {step}");
        assert!(ma.flushers >= 1 && mb.flushers >= 1, "step {step}");
        if step > 100 && a.m_total() >= 4 {
            // 3:1 throughput: A's share within one of three quarters
            let q = a.m_total() as f64 * 0.75;
            assert!(
                (ma.flushers as f64 - q).abs() <= 1.0,
                "step {step}: {ma:?} {mb:?}"
            );
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked}");
    assert_eq!(a.reg.header().takeovers.load(Ordering::Relaxed), 0);
    assert!(a.searches() >= 1);
}

#[test]
fn a_coordinator_that_stops_beating_is_taken_over_after_the_lease() {
    let dir = TestDir::new("corun-handover");
    let mut a = join(&dir.reg(), 8, T0);
    let mut b = join(&dir.reg(), 8, T0);
    let mut now = T0;
    for _ in 0..50 {
        now += 5 * MS;
        a.tick(now, &input(0, 2)).expect("a");
        b.tick(now, &input(0, 2)).expect("b");
    }
    assert!(a.is_coordinator());
    // A dies inside the registry (no release): its heartbeat stops
    a.abandon();
    let died = now;
    let mut took = None;
    while now < died + 3 * STALE_NS {
        now += 5 * MS;
        let got = b.tick(now, &input(0, 2)).expect("b");
        if b.is_coordinator() {
            took.get_or_insert((now, got));
        }
    }
    let (at, got) = took.expect("B took the lease over");
    assert!(at > died + STALE_NS, "not before the lease ran out");
    assert!(at <= died + STALE_NS + 10 * MS, "right after it ran out");
    // B alone now: its share is the whole system-wide count
    let got = got.expect("B assigns itself at once");
    assert_eq!(got.flushers, b.m_total());
    let h = b.reg.header();
    assert_eq!(h.takeovers.load(Ordering::Relaxed), 1);
    assert_eq!(h.lease.load(Ordering::Relaxed), b.id());
}

#[test]
fn a_cleanly_stopped_coordinator_hands_over_at_the_next_tick() {
    let dir = TestDir::new("corun-release");
    let mut a = join(&dir.reg(), 8, T0);
    let mut b = join(&dir.reg(), 8, T0);
    a.tick(T0 + MS, &input(0, 1)).expect("a");
    b.tick(T0 + MS, &input(0, 1)).expect("b");
    assert!(a.is_coordinator() && !b.is_coordinator());
    drop(a);
    b.tick(T0 + 2 * MS, &input(0, 1)).expect("b");
    assert!(b.is_coordinator());
    let used = (0..SLOTS)
        .filter(|&i| b.reg.slot(i).owner_pid.load(Ordering::Relaxed) != 0)
        .count();
    assert_eq!(used, 1, "A's slot was released");
}

#[test]
fn dead_registrants_lose_their_slot_and_their_lease() {
    let dir = TestDir::new("corun-reap");
    let mut b = join(&dir.reg(), 8, T0);
    let me = std::process::id();
    let start = memtamer_linux::ProcessKey::of(me as i32)
        .expect("own key")
        .start_time;
    // a dead process, and a live pid whose start time says it was recycled
    let (dead, dead_id) = fake_slot(&b, dead_pid(), 1, T0);
    let (recycled, _) = fake_slot(&b, me, start + 1, T0);
    // a live registrant of this very process must stay
    let (alive, alive_id) = fake_slot(&b, me, start, T0);
    // the dead one held the lease, with a fresh heartbeat
    let h = b.reg.header();
    h.lease.store(dead_id, Ordering::Relaxed);
    h.lease_beat_ns.store(T0, Ordering::Relaxed);
    // its heartbeat stops: once it is older than DEAD_CHECK_NS B finds the
    // holder's process dead and takes over (without waiting for the whole
    // lease), then reaps
    let mut now = T0;
    while !b.is_coordinator() {
        now += 5 * MS;
        b.tick(now, &input(0, 1)).expect("b");
        assert!(
            now < T0 + STALE_NS,
            "B did not take over from a dead holder early"
        );
    }
    assert!(now > T0 + DEAD_CHECK_NS, "not before the dead check");
    let h = b.reg.header();
    assert_eq!(h.reclaimed.load(Ordering::Relaxed), 2);
    assert_eq!(b.reg.slot(dead).owner_pid.load(Ordering::Relaxed), 0);
    assert_eq!(b.reg.slot(recycled).owner_pid.load(Ordering::Relaxed), 0);
    assert_eq!(b.reg.slot(alive).id.load(Ordering::Relaxed), alive_id);
    // its freed slots are claimable again
    let c = join(&dir.reg(), 8, now);
    assert!(c.slot() == dead || c.slot() == recycled, "{}", c.slot());
}

#[test]
fn a_registrant_that_stops_beating_gets_no_share_until_it_beats_again() {
    let dir = TestDir::new("corun-silent");
    let mut a = join(&dir.reg(), 8, T0);
    let mut b = join(&dir.reg(), 8, T0);
    let mut now = T0;
    for _ in 0..10 {
        now += 5 * MS;
        a.tick(now, &input(0, 1)).expect("a");
        b.tick(now, &input(0, 1)).expect("b");
    }
    // B is stopped (SIGSTOP, or descheduled) for longer than the lease
    for _ in 0..500 {
        now += 5 * MS;
        let got = a.tick(now, &input(0, 1)).expect("a").expect("assigned");
        if now > T0 + 50 * MS + STALE_NS + 5 * MS {
            assert_eq!(got.flushers, a.m_total(), "A alone gets all");
        }
    }
    let got = b.tick(now + MS, &input(0, 1)).expect("b");
    assert_eq!(got, None, "B's last assignment is stale");
    now += 5 * MS;
    let ga = a.tick(now, &input(0, 1)).expect("a").expect("a");
    let gb = b.tick(now, &input(0, 1)).expect("b").expect("b again");
    assert_eq!(ga.flushers + gb.flushers, a.m_total());
}

#[test]
fn bad_registries_are_refused_with_their_path() {
    let dir = TestDir::new("corun-bad");
    // a short file
    std::fs::write(dir.reg(), b"not a registry").expect("write");
    let e = Member::join(&dir.reg(), 4, cfg(4), false, T0)
        .err()
        .expect("refused");
    assert!(matches!(e, CorunError::Incompatible { .. }), "{e}");
    assert!(e.to_string().contains("registry"), "{e}");
    // another layout version
    std::fs::remove_file(dir.reg()).expect("rm");
    drop(join(&dir.reg(), 4, T0));
    {
        let r = Registry::open(&dir.reg()).expect("open");
        r.header().magic.store(MAGIC + 1, Ordering::Relaxed);
    }
    let e = Member::join(&dir.reg(), 4, cfg(4), false, T0)
        .err()
        .expect("refused");
    assert!(matches!(e, CorunError::Incompatible { .. }), "{e}");
    assert!(e.to_string().contains(&format!("{:#x}", MAGIC + 1)), "{e}");
    // corrupted while in use: the next tick says so
    std::fs::remove_file(dir.reg()).expect("rm");
    let mut m = join(&dir.reg(), 4, T0);
    m.reg.header().slots.store(7, Ordering::Relaxed);
    let e = m.tick(T0 + MS, &input(0, 1)).expect_err("corrupt");
    assert!(matches!(e, CorunError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains("slots 7"), "{e}");
    drop(m);
    // a symlink is not followed
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.reg(), &link).expect("symlink");
    let e = Member::join(&link, 4, cfg(4), false, T0)
        .err()
        .expect("refused");
    assert!(matches!(e, CorunError::Io { .. }), "{e}");
}

#[test]
fn a_full_registry_of_live_processes_is_refused() {
    let dir = TestDir::new("corun-full");
    let all: Vec<Member> = (0..SLOTS).map(|_| join(&dir.reg(), 2, T0)).collect();
    let e = Member::join(&dir.reg(), 2, cfg(2), false, T0)
        .err()
        .expect("full");
    assert!(matches!(e, CorunError::Full { .. }), "{e}");
    drop(all);
    drop(join(&dir.reg(), 2, T0));
}

#[test]
fn a_registration_freed_behind_its_back_joins_again() {
    let dir = TestDir::new("corun-rejoin");
    let mut a = join(&dir.reg(), 4, T0);
    let (slot, id) = (a.slot(), a.id());
    assert!(a.reg.free(slot, id));
    assert!(!a.reg.free(slot, id), "freed once");
    a.tick(T0 + MS, &input(0, 1)).expect("tick");
    assert_eq!(a.rejoins, 1);
    assert_ne!(a.id(), id);
    assert!(a.is_coordinator());
}
