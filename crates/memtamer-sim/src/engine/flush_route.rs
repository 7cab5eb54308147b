//! Where a program's flush goes under Ribbon (a child of `flush.rs`): into
//! its queue, or run on its application thread, by the runtime's own rule
//! (`memtamer_ribbon::route`); at M = N the thread first runs what its queue
//! still holds, as the runtime's `flush_here` does.

use super::super::cpu::Block;
use super::super::Engine;
use super::{line_of, FlushRole, Step};
use crate::config::FlushMode;
use crate::workload::Op;
use memtamer_ribbon::route::{route, Route};

impl Engine {
    /// The program flushes a line: queued for a flusher under Ribbon,
    /// executed by the thread itself otherwise.
    pub(super) fn flush_request(&mut self, tid: u32, addr: u64) -> Step {
        let FlushRole::App { job, queue } = self.threads[tid as usize].flush_role else {
            return self.clwb(tid, addr);
        };
        let Some(u) = self.flush.as_mut() else {
            return Step::Go;
        };
        let j = &mut u.jobs[job as usize];
        if j.mode == FlushMode::Eager {
            return self.clwb(tid, addr);
        }
        // the runtime's rule: every queue is registered (N = the job's
        // application threads), and nothing here is stopping
        match route(j.inline_when_dedicated, j.active, j.app.len(), true, false) {
            Route::Caller => self.clwb(tid, addr),
            Route::Dedicated => {
                j.stats.dedicated += 1;
                self.flush_here(tid, addr)
            }
            Route::Queue => {
                let q = queue as usize;
                j.queues[q].push_back(line_of(addr));
                j.enqueued[q] += 1;
                self.wake_servers(job as usize, q);
                Step::Go
            }
        }
    }

    /// A flush run on its application thread at M = N (the runtime's
    /// `flush_here`): first whatever the thread's queue still holds from
    /// before M became N (`drain_own`), then the line's `clwb`. Untaken
    /// requests the thread takes as one batch and runs itself: their clwbs,
    /// an sfence, the batch done (`Shared::execute`). A batch a flusher holds
    /// (the queue's consumer flag) it waits for, giving up its CPU until the
    /// batch is done, and then looks again.
    pub(super) fn flush_here(&mut self, tid: u32, addr: u64) -> Step {
        let FlushRole::App { job, queue } = self.threads[tid as usize].flush_role else {
            return self.clwb(tid, addr);
        };
        let Some(u) = self.flush.as_mut() else {
            return Step::Go;
        };
        let j = &mut u.jobs[job as usize];
        let q = queue as usize;
        let untaken = j.queues[q].len() as u64;
        let outstanding = j.enqueued[q] - j.completed[q];
        if outstanding == 0 {
            return self.clwb(tid, addr);
        }
        if outstanding > untaken {
            // a flusher holds a batch of this queue: wait until it is done
            j.waiting[q] = Some(j.enqueued[q] - untaken);
            self.threads[tid as usize].pending = Some(Op::FlushHere { addr });
            self.yield_cpu(tid, Block::Fence);
            return Step::Stop;
        }
        j.stats.self_drains += 1;
        let lines: Vec<u64> = j.queues[q].drain(..).collect();
        let n = lines.len() as u32;
        let mut ops: Vec<Op> = lines.into_iter().map(|a| Op::Clwb { addr: a }).collect();
        ops.push(Op::Drain);
        ops.push(Op::BatchDone { queue, lines: n });
        ops.push(Op::Clwb { addr });
        self.threads[tid as usize].gen.inject_front(ops);
        Step::Go
    }
}
