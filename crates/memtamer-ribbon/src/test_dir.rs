//! A scratch directory for tests that need a real registry file: removed
//! when dropped, named by the test and the process so that parallel tests
//! and parallel test binaries never share one.

use std::path::{Path, PathBuf};

/// A directory under the system's temporary directory, removed on drop.
pub(crate) struct TestDir(PathBuf);

impl TestDir {
    /// `mt-<tag>-<pid>`, emptied if a crashed earlier run left it behind.
    pub(crate) fn new(tag: &str) -> TestDir {
        let d = std::env::temp_dir().join(format!("mt-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("mkdir");
        TestDir(d)
    }

    /// The directory itself.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// The registry file's path inside the directory.
    pub(crate) fn reg(&self) -> PathBuf {
        self.0.join("registry")
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
