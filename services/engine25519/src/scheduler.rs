//! Fair, bounded job queue with register-window allocation (no Xous dependency).
//!
//! * Each client (Xous PID) has its own FIFO; the engine serves clients round robin, one job (or
//!   one quantum of a long job) per turn, so no client can lock out the others (the reference's defect 3,
//!   docs/reference-system.md).
//! * The queue is bounded globally and per client: `submit` answers `Busy` instead of blocking.
//! * A job holds one of the 16 register windows from its first dispatch until it completes, so a
//!   job preempted at a quantum boundary (or parked by Suspend) keeps its registers in the engine
//!   and resumes where it stopped. A job that asks for a specific window waits until that window
//!   is free; jobs asking for "any" take the lowest free window.

use std::collections::VecDeque;

use crate::api::NUM_WINDOWS;

/// Why a submission was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// queue full (global or this client's share)
    Busy,
    /// window index out of range
    BadWindow,
}

/// Which window a job wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowReq {
    Any,
    Fixed(usize),
}

/// A queued job with its scheduling state.
#[derive(Debug)]
pub struct Entry<J> {
    pub client: u32,
    pub want: WindowReq,
    /// window held (Some once the job has been dispatched at least once)
    pub window: Option<usize>,
    /// times this job was dispatched (1 = fresh start; > 1 = resumes)
    pub dispatches: u32,
    pub job: J,
}

#[derive(Debug)]
struct ClientQ<J> {
    client: u32,
    jobs: VecDeque<Entry<J>>,
}

/// Bitmap allocator of the engine's register windows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Windows {
    used: u32,
}

impl Windows {
    pub fn is_free(&self, w: usize) -> bool {
        w < NUM_WINDOWS && self.used & (1 << w) == 0
    }
    pub fn take(&mut self, req: WindowReq) -> Option<usize> {
        let w = match req {
            WindowReq::Fixed(w) if self.is_free(w) => w,
            WindowReq::Fixed(_) => return None,
            WindowReq::Any => (0..NUM_WINDOWS).find(|&w| self.is_free(w))?,
        };
        self.used |= 1 << w;
        Some(w)
    }
    pub fn release(&mut self, w: usize) {
        debug_assert!(self.used & (1 << w) != 0, "window {} released twice", w);
        self.used &= !(1 << w);
    }
    pub fn in_use(&self) -> u32 {
        self.used.count_ones()
    }
}

pub struct Scheduler<J> {
    /// clients with queued work, in round-robin order (front = next to serve)
    ring: VecDeque<ClientQ<J>>,
    pub windows: Windows,
    global_cap: usize,
    per_client_cap: usize,
    /// queued + running jobs
    depth: usize,
    pub depth_max: usize,
    /// the job currently out on the engine (client id), counted in depth
    running: Option<u32>,
    /// emptied client queues kept for reuse (a client that sends one request at a time would
    /// otherwise cost an allocation and a free per job)
    spare: Vec<VecDeque<Entry<J>>>,
}

/// Emptied client queues kept for reuse.
const SPARE_QUEUES: usize = 4;

impl<J> Scheduler<J> {
    pub fn new(global_cap: usize, per_client_cap: usize) -> Self {
        Scheduler {
            ring: VecDeque::new(),
            windows: Windows::default(),
            global_cap,
            per_client_cap,
            depth: 0,
            depth_max: 0,
            running: None,
            spare: Vec::new(),
        }
    }

    /// Jobs queued or running.
    pub fn depth(&self) -> usize {
        self.depth
    }

    fn client_load(&self, client: u32) -> usize {
        let queued = self.ring.iter().find(|q| q.client == client).map(|q| q.jobs.len()).unwrap_or(0);
        queued + (self.running == Some(client)) as usize
    }

    /// Queue a job for `client`. Never blocks: a full queue answers `Busy`.
    pub fn submit(&mut self, client: u32, want: WindowReq, job: J) -> Result<(), (Refused, J)> {
        if let WindowReq::Fixed(w) = want {
            if w >= NUM_WINDOWS {
                return Err((Refused::BadWindow, job));
            }
        }
        if self.depth >= self.global_cap || self.client_load(client) >= self.per_client_cap {
            return Err((Refused::Busy, job));
        }
        let e = Entry { client, want, window: None, dispatches: 0, job };
        match self.ring.iter_mut().find(|q| q.client == client) {
            Some(q) => q.jobs.push_back(e),
            None => {
                let mut jobs = self.spare.pop().unwrap_or_default();
                jobs.push_back(e);
                self.ring.push_back(ClientQ { client, jobs })
            }
        }
        self.depth += 1;
        self.depth_max = self.depth_max.max(self.depth);
        Ok(())
    }

    /// Take the next job to run: the first client in round-robin order whose head job holds or
    /// can get a window. The client moves to the back of the ring (its turn is used).
    pub fn next(&mut self) -> Option<Entry<J>> {
        assert!(self.running.is_none(), "one job on the engine at a time");
        let n = self.ring.len();
        for i in 0..n {
            let head = &self.ring[i].jobs[0];
            let ok = head.window.is_some()
                || match head.want {
                    WindowReq::Any => self.windows.in_use() < NUM_WINDOWS as u32,
                    WindowReq::Fixed(w) => self.windows.is_free(w),
                };
            if !ok {
                continue;
            }
            let mut q = self.ring.remove(i).unwrap();
            let mut e = q.jobs.pop_front().unwrap();
            if e.window.is_none() {
                e.window = Some(self.windows.take(e.want).expect("window checked free"));
            }
            e.dispatches += 1;
            self.running = Some(e.client);
            if !q.jobs.is_empty() {
                self.ring.push_back(q);
            } else if self.spare.len() < SPARE_QUEUES {
                self.spare.push(q.jobs);
            }
            return Some(e);
        }
        None
    }

    /// A job dispatched without queueing (the engine idle, nothing queued): it takes a window
    /// (`want`) and counts as running and in the depth, as if `submit` and `next` had run.
    /// None if anything is queued or running, or no window is free.
    pub fn dispatch_now(&mut self, client: u32, want: WindowReq) -> Option<usize> {
        if self.running.is_some() || !self.ring.is_empty() || self.depth >= self.global_cap {
            return None;
        }
        let w = self.windows.take(want)?;
        self.running = Some(client);
        self.depth += 1;
        self.depth_max = self.depth_max.max(self.depth);
        Some(w)
    }

    /// The running job `e` finished and a job of `client` takes over the engine at once, in the
    /// same window (the engine idle, nothing queued): as `complete` then `dispatch_now` with
    /// that window, without releasing it. False (nothing changed) if anything is queued.
    pub fn handover(&mut self, e: &Entry<J>, client: u32) -> bool {
        assert_eq!(self.running, Some(e.client));
        if !self.ring.is_empty() || e.window.is_none() {
            return false;
        }
        self.running = Some(client);
        true
    }

    /// The running job finished (successfully or not): free its window.
    pub fn complete(&mut self, e: &Entry<J>) {
        assert_eq!(self.running, Some(e.client));
        self.running = None;
        if let Some(w) = e.window {
            self.windows.release(w);
        }
        self.depth -= 1;
    }

    /// The running job used up its quantum (or was parked): it goes back to the front of its
    /// client's queue, keeping its window, and the client takes its place at the back of the ring.
    pub fn requeue(&mut self, e: Entry<J>) {
        assert_eq!(self.running, Some(e.client));
        self.running = None;
        match self.ring.iter_mut().find(|q| q.client == e.client) {
            Some(q) => q.jobs.push_front(e),
            None => self.ring.push_back(ClientQ { client: e.client, jobs: VecDeque::from([e]) }),
        }
    }

    /// Remove every queued job (e.g. on shutdown), freeing their windows.
    pub fn drain(&mut self) -> Vec<Entry<J>> {
        let mut out = Vec::new();
        while let Some(mut q) = self.ring.pop_front() {
            while let Some(e) = q.jobs.pop_front() {
                if let Some(w) = e.window {
                    self.windows.release(w);
                }
                self.depth -= 1;
                out.push(e);
            }
        }
        out
    }

    /// Clients with queued work (for stats/tests).
    pub fn active_clients(&self) -> usize {
        self.ring.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_across_clients() {
        let mut s = Scheduler::new(64, 16);
        // client 1 floods, clients 2 and 3 submit one each afterwards
        for i in 0..5 {
            s.submit(1, WindowReq::Any, (1, i)).unwrap();
        }
        s.submit(2, WindowReq::Any, (2, 0)).unwrap();
        s.submit(3, WindowReq::Any, (3, 0)).unwrap();
        let mut order = vec![];
        while let Some(e) = s.next() {
            order.push(e.job);
            s.complete(&e);
        }
        assert_eq!(order, vec![(1, 0), (2, 0), (3, 0), (1, 1), (1, 2), (1, 3), (1, 4)]);
        assert_eq!(s.depth(), 0);
        assert_eq!(s.windows.in_use(), 0);
    }

    #[test]
    fn bounded_queue_answers_busy() {
        let mut s = Scheduler::new(4, 2);
        s.submit(1, WindowReq::Any, 0).unwrap();
        s.submit(1, WindowReq::Any, 1).unwrap();
        assert_eq!(s.submit(1, WindowReq::Any, 2).unwrap_err().0, Refused::Busy, "per-client cap");
        s.submit(2, WindowReq::Any, 3).unwrap();
        s.submit(3, WindowReq::Any, 4).unwrap();
        assert_eq!(s.submit(4, WindowReq::Any, 5).unwrap_err().0, Refused::Busy, "global cap");
        // the running job counts against its client's share
        let e = s.next().unwrap();
        assert_eq!(e.client, 1);
        assert_eq!(s.submit(1, WindowReq::Any, 6).unwrap_err().0, Refused::Busy);
        s.complete(&e);
        s.submit(1, WindowReq::Any, 7).unwrap();
    }

    #[test]
    fn bad_window_refused() {
        let mut s: Scheduler<u32> = Scheduler::new(4, 2);
        assert_eq!(s.submit(1, WindowReq::Fixed(16), 0).unwrap_err().0, Refused::BadWindow);
        assert_eq!(s.submit(1, WindowReq::Fixed(usize::MAX), 0).unwrap_err().0, Refused::BadWindow);
        s.submit(1, WindowReq::Fixed(15), 0).unwrap();
        assert_eq!(s.next().unwrap().window, Some(15));
    }

    #[test]
    fn preempted_jobs_keep_window_and_rotate() {
        let mut s = Scheduler::new(64, 16);
        s.submit(1, WindowReq::Any, "long").unwrap();
        s.submit(2, WindowReq::Any, "a").unwrap();
        s.submit(2, WindowReq::Any, "b").unwrap();
        let e = s.next().unwrap();
        assert_eq!((e.job, e.window, e.dispatches), ("long", Some(0), 1));
        s.requeue(e); // quantum expired
        let e2 = s.next().unwrap();
        assert_eq!((e2.job, e2.window), ("a", Some(1)));
        s.complete(&e2);
        let e = s.next().unwrap();
        assert_eq!((e.job, e.window, e.dispatches), ("long", Some(0), 2), "resumed in its window");
        s.complete(&e);
        let e3 = s.next().unwrap();
        assert_eq!((e3.job, e3.window), ("b", Some(0)));
        s.complete(&e3);
    }

    #[test]
    fn fixed_window_waits_until_free() {
        let mut s = Scheduler::new(64, 16);
        s.submit(1, WindowReq::Fixed(3), 'x').unwrap();
        s.submit(2, WindowReq::Fixed(3), 'y').unwrap();
        s.submit(3, WindowReq::Any, 'z').unwrap();
        let x = s.next().unwrap();
        s.requeue(x); // x keeps window 3 while preempted
        let z = s.next().unwrap(); // y must wait: window 3 is held by x
        assert_eq!(z.job, 'z');
        s.complete(&z);
        let x = s.next().unwrap();
        assert_eq!(x.job, 'x');
        s.complete(&x);
        let y = s.next().unwrap();
        assert_eq!((y.job, y.window), ('y', Some(3)));
        s.complete(&y);
    }

    #[test]
    fn sixteen_windows_then_wait() {
        let mut s = Scheduler::new(64, 16);
        for c in 0..20u32 {
            s.submit(c, WindowReq::Any, c).unwrap();
        }
        // preempt everything once: 16 jobs get windows, the other 4 wait for one
        let mut held = vec![];
        for _ in 0..16 {
            let e = s.next().unwrap();
            held.push(e.window.unwrap());
            s.requeue(e);
        }
        held.sort();
        assert_eq!(held, (0..16).collect::<Vec<_>>());
        // while all 16 windows are held, only window holders can run; each completion frees
        // a window that the next waiting client (front of the ring) takes
        let e = s.next().unwrap();
        assert_eq!(e.dispatches, 2, "a window holder runs first");
        s.complete(&e);
        let e2 = s.next().unwrap();
        assert_eq!((e2.client, e2.dispatches), (16, 1), "the freed window goes to the waiting client");
        s.complete(&e2);
        let mut n = 2;
        while let Some(e) = s.next() {
            assert!(s.windows.in_use() <= 16);
            s.complete(&e);
            n += 1;
        }
        assert_eq!(n, 20);
        assert!(s.next().is_none());
        assert_eq!(s.windows.in_use(), 0);
    }
}
