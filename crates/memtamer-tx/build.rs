//! Links PMDK libpmemobj for the comparison bench when it is installed
//! (apt libpmemobj-dev) and the `pmdk` feature is on; sets `has_pmdk`.
//!
//! When the script reruns. Cargo reruns a build script only for the paths
//! and variables it names, so the script names what would change its
//! answer, and nothing that changes on every build:
//!
//! * found: the `libpmemobj.so` it links (removed or upgraded: rerun);
//! * not found: the package database `/var/lib/dpkg/status` and the
//!   loader cache `/etc/ld.so.cache`, those of the two that exist, and the
//!   directory `MEMTAMER_PMEMOBJ_DIR` names, if it exists. An
//!   install changes them (apt rewrites the first, ldconfig the second),
//!   so a `target/` built before `apt-get install libpmemobj-dev` links
//!   PMDK on the next build. A path that does not exist is never named:
//!   Cargo takes a missing path as changed and would rerun every build.
//!   Nor are the library directories: Cargo scans a named directory
//!   recursively, and `/usr/lib` holds tens of thousands of files. An
//!   install that touches neither file (a PMDK built into
//!   `/usr/local/lib` by hand on a host without dpkg, no ldconfig run) is
//!   seen after `cargo clean -p memtamer-tx` or with `MEMTAMER_PMEMOBJ_DIR`;
//! * always: this file and `MEMTAMER_PMEMOBJ_DIR`.
//!
//! `MEMTAMER_PMEMOBJ_DIR=DIR` looks for `libpmemobj.so` in DIR only,
//! instead of the standard directories (a PMDK in a private prefix); set
//! but empty, it looks nowhere: the build is the one of a host without
//! PMDK (how the no-PMDK build is checked on a host that has it).

use std::path::PathBuf;

/// Where distributions put `libpmemobj.so`.
const STANDARD_DIRS: [&str; 5] = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/lib/aarch64-linux-gnu",
];

/// Files an installation of the library changes (see the module doc).
const INSTALL_MARKERS: [&str; 2] = ["/var/lib/dpkg/status", "/etc/ld.so.cache"];

/// The override of the directories searched.
const DIR_ENV: &str = "MEMTAMER_PMEMOBJ_DIR";

fn main() {
    println!("cargo:rustc-check-cfg=cfg(has_pmdk)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed={DIR_ENV}");
    if std::env::var_os("CARGO_FEATURE_PMDK").is_none() {
        return;
    }
    let own = std::env::var_os(DIR_ENV).map(PathBuf::from);
    let dirs: Vec<PathBuf> = match &own {
        Some(d) if d.as_os_str().is_empty() => Vec::new(),
        Some(d) => vec![d.clone()],
        None => STANDARD_DIRS.iter().map(PathBuf::from).collect(),
    };
    match dirs.iter().find(|d| d.join("libpmemobj.so").exists()) {
        Some(d) => {
            println!(
                "cargo:rerun-if-changed={}",
                d.join("libpmemobj.so").display()
            );
            println!("cargo:rustc-link-search=native={}", d.display());
            println!("cargo:rustc-link-lib=dylib=pmemobj");
            println!("cargo:rustc-cfg=has_pmdk");
        }
        None => {
            // a directory named by the override is the user's own prefix,
            // small enough to scan; the standard ones are not (module doc)
            let markers = INSTALL_MARKERS.iter().map(PathBuf::from).chain(own);
            for m in markers.filter(|m| !m.as_os_str().is_empty() && m.exists()) {
                println!("cargo:rerun-if-changed={}", m.display());
            }
            println!("cargo:warning=libpmemobj not found: the bench runs ArchTM only (apt-get install libpmemobj-dev)");
        }
    }
}
