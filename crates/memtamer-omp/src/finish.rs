//! The tool's end: `ompt_finalize_tool`'s callback writes the recorded
//! profiles and rows and prints the closing line (split from `lib.rs`,
//! which keeps the callbacks of a running program).

use super::*;

/// `module+0xoffset` for a code address (dladdr), stable across runs of a
/// position-independent executable; the raw address if dladdr fails.
fn code_name(code: u64) -> String {
    // SAFETY: Dl_info is plain data; dladdr only reads the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: any address may be queried.
    let ok = unsafe { libc::dladdr(code as *const c_void, &mut info) };
    if ok == 0 || info.dli_fname.is_null() {
        return format!("{code:#x}");
    }
    // SAFETY: dladdr returned a NUL-terminated file name.
    let file = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let base = file.rsplit('/').next().unwrap_or("?").to_string();
    format!("{base}+{:#x}", code.wrapping_sub(info.dli_fbase as u64))
}

pub(crate) unsafe extern "C" fn finalize(_data: *mut OmptData) {
    let Some(t) = TOOL.get() else { return };
    ACTIVE.store(false, Ordering::Release);
    deps::stop();
    // Close the helper's queue.
    t.helper.lock().unwrap_or_else(|e| e.into_inner()).take();
    // Every sampled page back, the ticker stopped.
    if let Some(h) = &t.hot {
        h.shutdown();
    }
    // every thread's events, in order
    let tr = t.shared.drained();
    if let Some(path) = &t.cfg.profiles {
        let mut text = String::from("# type,arg,offset,len,per_page,total_accesses\n");
        let mut rows: Vec<String> = Vec::new();
        for (ty, p) in tr.planner().db().iter() {
            let name = format!(
                "{}({})",
                code_name(ty.code),
                ty.arg_sizes
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(";")
            );
            for r in &p.ranges {
                rows.push(format!(
                    "{name},{},{},{},{},{}",
                    r.arg, r.offset, r.len, r.per_page, p.total_accesses
                ));
            }
        }
        rows.sort();
        for r in rows {
            text.push_str(&r);
            text.push('\n');
        }
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("memtamer-tahoe: MEMTAMER_TAHOE_PROFILES={path}: {e}");
        }
    }
    if let Some(path) = &t.cfg.record {
        let mut text = String::from("# type,instances,mean_ns,pages[,ipc,llc_miss_rate]\n");
        for r in tr.recorded(code_name) {
            text.push_str(&memtamer_tahoe::record::format_row(&r));
            text.push('\n');
        }
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("memtamer-tahoe: MEMTAMER_TAHOE_RECORD={path}: {e}");
        }
    }
    if t.cfg.quiet {
        return;
    }
    let s = tr.stats();
    let p = tr.planner().stats();
    let (n, sum) = tr
        .errors()
        .values()
        .fold((0u64, 0.0), |(n, s), e| (n + e.n, s + e.sum));
    let err = if n > 0 {
        format!("{:.1}%", 100.0 * sum / n as f64)
    } else {
        "n/a".into()
    };
    let hot = match &t.hot {
        Some(h) => {
            let h = h.stats();
            format!(
                " hotness=sample sampled={} uniform={} armings={} sample_hits={} sample_foreign={}",
                h.sampled, h.uniform, h.armings, h.hits, h.foreign
            )
        }
        None if t.cfg.hotness == Hotness::Sample => " hotness=sample(idle: placement off)".into(),
        None => " hotness=uniform".into(),
    };
    let check = match (&t.prior, t.cfg.mode) {
        (Some(pr), Mode::Place) => format!(
            " check=on copy_prior_ns={:.1}({}) copy_prior_fixed_ns={:.0} copy_ns={:.1} copy_fixed_ns={:.0} refused_pages={} refused_batches={}",
            pr.ns_per_page,
            pr.source.name(),
            pr.fixed_ns,
            tr.planner().copy_ns().unwrap_or(f64::NAN),
            tr.planner().copy_cost().map_or(f64::NAN, |c| c.fixed_ns),
            p.refused_pages,
            p.refused_batches
        ),
        (None, Mode::Place) => " check=off".into(),
        _ => String::new(),
    };
    // which model predicted each type's all-DRAM time: the counter model
    // where it has counters, the fallback (beta) otherwise
    let model = tr.planner().model();
    let by_counters = tr
        .planner()
        .db()
        .iter()
        .filter(|(_, p)| model.counter_t_dram(p).is_some())
        .count();
    let counted = match t.counters_missing {
        Some(why) => format!(" counters=off({why})"),
        None => format!(
            " counters={} counted={}{}",
            counters::active(),
            s.counted,
            match counters::thread_fails() {
                0 => String::new(),
                n => format!(" counter_threads_failed={n}"),
            }
        ),
    };
    let t_dram = format!(
        " t_dram={}:{},beta:{}",
        model.counters.as_ref().map_or("counters", |m| m.name()),
        by_counters,
        tr.planner().db().len() - by_counters
    );
    eprintln!(
        "memtamer-tahoe: mode={:?} tasks={} completed={} edges={} ready_max={} types={} decisions={} representatives={} planned_in={} planned_out={} batches={} moved={} move_failed={} move_ms={:.2} model_err={}{}{}{}{} events={} exact_extents={}",
        t.cfg.mode,
        s.created,
        s.completed,
        s.edges,
        s.ready_max,
        tr.planner().db().len(),
        p.decisions,
        p.profiled,
        p.promoted,
        p.evicted,
        p.batches,
        t.moved.load(Ordering::Relaxed),
        t.move_fail.load(Ordering::Relaxed),
        t.move_ns.load(Ordering::Relaxed) as f64 / 1e6,
        err,
        hot,
        check,
        counted,
        t_dram,
        if t.buffered { "buffered" } else { "locked" },
        tr.exact_extents()
    );
}
