//! Links PMDK libpmemobj for the comparison bench when it is installed
//! (apt libpmemobj-dev) and the `pmdk` feature is on; sets `has_pmdk`.
fn main() {
    println!("cargo:rustc-check-cfg=cfg(has_pmdk)");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_PMDK").is_none() {
        return;
    }
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/usr/lib/aarch64-linux-gnu",
    ];
    if let Some(d) = dirs
        .iter()
        .find(|d| std::path::Path::new(d).join("libpmemobj.so").exists())
    {
        println!("cargo:rustc-link-search=native={d}");
        println!("cargo:rustc-link-lib=dylib=pmemobj");
        println!("cargo:rustc-cfg=has_pmdk");
    } else {
        println!("cargo:warning=libpmemobj not found: the bench runs ArchTM only (apt-get install libpmemobj-dev)");
    }
}
