//! Task types and task instances (thesis §4.3.3: "a task type is the set of
//! tasks that run the same code region with the same input data size").

use std::fmt;

/// Key of the profiling database: the address of the task region's first
/// instruction plus the size of every object in its dependence clauses
/// (thesis §4.3.3, "Profiling database").
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskType {
    /// Code address of the outlined task function.
    pub code: u64,
    /// Byte size of each dependence object, in clause order.
    pub arg_sizes: Vec<u64>,
}

impl fmt::Display for TaskType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}(", self.code)?;
        for (i, s) in self.arg_sizes.iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{s}")?;
        }
        write!(f, ")")
    }
}

/// How a task uses a dependence object (OpenMP `in`/`out`/`inout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `depend(in: ...)`.
    In,
    /// `depend(out: ...)`.
    Out,
    /// `depend(inout: ...)` (and mutexinoutset, treated alike).
    InOut,
    /// `depend(out: ...)` on an object the task is known to overwrite
    /// completely before reading any of it, so its old contents are dead
    /// when the task starts. OMPT's dependence types say only `out` (no
    /// promise about coverage), so only a shell that knows the task's
    /// writes (the simulator's workload description) passes it; it lets
    /// the planner place the object's pages in DRAM without copying them
    /// (docs/notebook/tahoe.md, "Out blocks placed without a copy"; beyond the
    /// thesis, which does "not distinguish memory read and write", §4.3.7).
    /// Everywhere else it is `out`.
    OutWhole,
}

/// One data object a task names in a dependence clause: the runtime's view
/// of "the start address and size of each referenced object" (§4.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataObject {
    /// Start address.
    pub addr: u64,
    /// Size in bytes (at least 1).
    pub len: u64,
    /// Dependence kind.
    pub access: Access,
}

impl DataObject {
    /// Page numbers (addr / page) this object touches, first to last.
    pub fn pages(&self, page: u64) -> std::ops::RangeInclusive<u64> {
        let last = self.addr + self.len.max(1) - 1;
        (self.addr / page)..=(last / page)
    }
}

/// A task instance as Tahoe tracks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// Runtime-unique id (OMPT task data).
    pub id: u64,
    /// Code address of the task region.
    pub code: u64,
    /// Dependence objects in clause order.
    pub objects: Vec<DataObject>,
}

impl Task {
    /// The task's type key (§4.3.3).
    pub fn task_type(&self) -> TaskType {
        TaskType {
            code: self.code,
            arg_sizes: self.objects.iter().map(|o| o.len).collect(),
        }
    }

    /// Pages whose old contents the task does not need: those lying
    /// entirely inside an object it accesses as [`Access::OutWhole`] and
    /// touched by none of its other objects (a page shared with an `in`
    /// or `inout` object, or only partly covered, keeps live bytes).
    /// Sorted. Placing such a page without a copy is safe only while no
    /// other task reads the old contents, which the dependences guarantee
    /// once the task is ready (every earlier reader of the object has
    /// completed, every later one waits for the task).
    pub fn overwritten_pages(&self, page: u64) -> Vec<u64> {
        let page = page.max(1);
        let mut whole: Vec<u64> = self
            .objects
            .iter()
            .filter(|o| o.access == Access::OutWhole && o.len >= page)
            .flat_map(|o| {
                let first = o.addr.div_ceil(page);
                let end = (o.addr + o.len) / page;
                first..end
            })
            .collect();
        whole.sort_unstable();
        whole.dedup();
        let other: std::collections::BTreeSet<u64> = self
            .objects
            .iter()
            .filter(|o| o.access != Access::OutWhole)
            .flat_map(|o| o.pages(page))
            .collect();
        whole.retain(|p| !other.contains(p));
        whole
    }

    /// Every page the task's objects touch, sorted and deduplicated.
    pub fn footprint(&self, page: u64) -> Vec<u64> {
        let mut v: Vec<u64> = self.objects.iter().flat_map(|o| o.pages(page)).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(addr: u64, len: u64) -> DataObject {
        DataObject {
            addr,
            len,
            access: Access::In,
        }
    }

    #[test]
    fn type_key_is_code_and_sizes() {
        let a = Task {
            id: 1,
            code: 0x400,
            objects: vec![obj(0x1000, 64), obj(0x9000, 128)],
        };
        let b = Task {
            id: 2,
            code: 0x400,
            objects: vec![obj(0x5000, 64), obj(0x7000, 128)],
        };
        let c = Task {
            id: 3,
            code: 0x400,
            objects: vec![obj(0x5000, 64), obj(0x7000, 256)],
        };
        assert_eq!(a.task_type(), b.task_type());
        assert_ne!(a.task_type(), c.task_type());
        assert_eq!(a.task_type().to_string(), "0x400(64,128)");
    }

    #[test]
    fn pages_and_footprint() {
        let o = obj(4095, 2);
        assert_eq!(o.pages(4096), 0..=1);
        assert_eq!(obj(4096, 0).pages(4096), 1..=1);
        let t = Task {
            id: 1,
            code: 0,
            objects: vec![obj(0, 8192), obj(4096, 10), obj(40960, 1)],
        };
        assert_eq!(t.footprint(4096), vec![0, 1, 10]);
    }

    #[test]
    fn overwritten_pages_are_whole_pages_of_outwhole_objects_only() {
        let o = |addr, len, access| DataObject { addr, len, access };
        let t = Task {
            id: 1,
            code: 0,
            objects: vec![
                // pages 1..=3 whole, page 4 only partly (tail 100 bytes)
                o(4096, 3 * 4096 + 100, Access::OutWhole),
                // page 3 is also read: not overwritten
                o(3 * 4096 + 8, 8, Access::In),
                // plain out / inout: never
                o(10 * 4096, 4096, Access::Out),
                o(20 * 4096, 4096, Access::InOut),
                // starts mid-page: page 30 partly, page 31 whole
                o(30 * 4096 + 64, 2 * 4096 - 64, Access::OutWhole),
            ],
        };
        assert_eq!(t.overwritten_pages(4096), vec![1, 2, 31]);
    }
}
