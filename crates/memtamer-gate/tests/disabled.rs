//! Issue 22 item 7: a bad variable disables the process gate once, with a
//! reason (`memtamer_last_error` reads it), and is not re-read and re-printed
//! on every call or thread. Its own test binary: the process gate is global.

#[test]
fn a_bad_variable_disables_the_gate_once_with_a_reason() {
    std::env::set_var("MEMTAMER_GATE_BYPASS", "not-a-number");
    assert!(memtamer_gate::process::gate().is_none());
    let why = memtamer_gate::process::disabled_reason().expect("a reason for the disabled gate");
    assert!(why.contains("MEMTAMER_GATE_BYPASS"), "{why}");
    // fixing the variable later does not re-open it: the process stays
    // consistently ungated (and the reason was printed once)
    std::env::set_var("MEMTAMER_GATE_BYPASS", "256");
    assert!(memtamer_gate::process::gate().is_none());
    let t = std::thread::spawn(memtamer_gate::process::gate);
    assert!(t.join().expect("thread").is_none());
}
