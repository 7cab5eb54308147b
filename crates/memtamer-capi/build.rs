//! Links libmemtamer.so with a soname (`libmemtamer.so.0`: programs record
//! the ABI generation, not the file they were linked against) and versioned
//! symbols: every exported `memtamer_*` symbol gets the version
//! `libmemtamer.so.0` (GNU ld's `--default-symver`).
//!
//! Two constraints shape this. A named version script cannot be used:
//! rustc passes its own anonymous one for a cdylib; GNU ld refuses to
//! combine an anonymous tag with named ones, and lld silently keeps the
//! anonymous one (symbols stay unversioned). And rustc links with its
//! bundled lld, which has no `--default-symver`; so this one library is
//! linked with the system's GNU ld (`-fuse-ld=bfd`, the last `-fuse-ld`
//! wins), which every toolchain that builds C on Linux has.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-fuse-ld=bfd");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmemtamer.so.0");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--default-symver");
    println!("cargo:rerun-if-changed=build.rs");
}
