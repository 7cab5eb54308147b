//! Low-level cgroup filesystem I/O: reading and writing single cgroup files,
//! listing a cgroup's processes, removing a cgroup directory.
//!
//! Kept apart from [`crate::cgroup`] (which journals every change) so that
//! the undo code can use the same primitives without importing the module
//! that records changes: the journal depends on this, never the reverse.

use crate::{Error, Result};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// Pure: splits a controller list as found in `cgroup.controllers` and
/// `cgroup.subtree_control` (space separated).
pub fn parse_controller_list(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// Reads a (cgroup) file as text.
pub(crate) fn read_value(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `value` to an EXISTING (cgroup) file in one write(2), as the
/// kernel expects. Never creates the file: on a real cgroupfs a missing file
/// means a missing controller, which must be an error.
pub(crate) fn write_value(path: &Path, value: &str) -> Result<()> {
    let err = |source: io::Error| Error::Write {
        path: path.to_path_buf(),
        value: value.to_string(),
        source,
    };
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(err)?;
    f.write_all(value.as_bytes()).map_err(err)
}

/// The pids in a cgroup directory's `cgroup.procs`.
pub(crate) fn read_procs(dir: &Path) -> Result<Vec<i32>> {
    let path = dir.join("cgroup.procs");
    Ok(read_value(&path)?
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

/// rmdir with a short retry: right after its last task leaves, a cgroup can
/// still report EBUSY for a moment.
pub(crate) fn remove_cgroup_dir(path: &Path) -> Result<()> {
    let deadline = Instant::now() + Duration::from_millis(500);
    loop {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(source) => {
                return Err(Error::Fs {
                    op: "rmdir",
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
    }
}
