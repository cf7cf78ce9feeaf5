//! The writer's queue: jobs in, batches out.
//!
//! A batch that nobody waits for (the events and messages a run queues as
//! it goes) is held for up to [`GATHER`], so the jobs queued meanwhile
//! share its commit instead of each paying for one; a job someone waits
//! for (a run's start and end, a session's creation, `settle`) ends the
//! wait at once and commits everything queued before it. Senders wake the
//! writer only when it sleeps for want of work, or gathers and a waited
//! job arrives or the batch is full: a run queueing one event after
//! another does not wake the writer for each.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Longest a batch nobody waits for is held for company. Live subscribers
/// see such events this much later at most; what they see is unchanged.
pub(super) const GATHER: Duration = Duration::from_millis(1);

/// Whether someone waits for a job's commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Waiter {
    /// A caller waits: the batch commits as soon as the writer can.
    Waiting,
    /// Nobody waits: the job may wait up to [`GATHER`] for company.
    Detached,
}

/// What the writer is doing, as the senders see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activity {
    /// Working, or already woken: nobody needs to wake it.
    Busy,
    /// Asleep with nothing to do.
    Idle,
    /// Holding a batch nobody waits for.
    Gathering,
}

struct State<J> {
    /// Jobs in the order they came, each with whether someone waits for it.
    jobs: Vec<(J, Waiter)>,
    /// How many queued jobs someone waits for.
    waited: usize,
    /// False once closed: no new jobs; the writer empties the queue and stops.
    open: bool,
    writer: Activity,
}

/// Jobs waiting for the writer.
pub(super) struct Queue<J> {
    state: Mutex<State<J>>,
    ready: Condvar,
    /// Most jobs in one batch.
    max_batch: usize,
}

impl<J> Queue<J> {
    /// An empty queue handing out at most `max_batch` jobs at a time;
    /// `open` false makes one that takes no job.
    pub(super) fn new(max_batch: usize, open: bool) -> Queue<J> {
        let state = State { jobs: Vec::new(), waited: 0, open, writer: Activity::Busy };
        Queue { state: Mutex::new(state), ready: Condvar::new(), max_batch }
    }

    fn lock(&self) -> MutexGuard<'_, State<J>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue `job`; it comes back when the queue is closed.
    pub(super) fn push(&self, job: J, waiter: Waiter) -> Result<(), J> {
        let mut st = self.lock();
        if !st.open {
            return Err(job);
        }
        st.jobs.push((job, waiter));
        if waiter == Waiter::Waiting {
            st.waited += 1;
        }
        let wake = match st.writer {
            Activity::Busy => false,
            Activity::Idle => true,
            Activity::Gathering => waiter == Waiter::Waiting || st.jobs.len() >= self.max_batch,
        };
        if wake {
            st.writer = Activity::Busy;
            drop(st);
            self.ready.notify_one();
        }
        Ok(())
    }

    /// Take no more jobs; the writer takes what is queued, then stops.
    pub(super) fn close(&self) {
        self.lock().open = false;
        self.ready.notify_one();
    }

    /// Close the queue and drop what it holds (the writer is gone: a
    /// caller waiting for a dropped job hears that the writer stopped).
    pub(super) fn abandon(&self) {
        let jobs = {
            let mut st = self.lock();
            st.open = false;
            st.waited = 0;
            std::mem::take(&mut st.jobs)
        };
        drop(jobs);
    }

    /// The next batch, in queue order, once there is one and it need not
    /// wait longer for company; `None` once closed and empty.
    pub(super) fn next_batch(&self) -> Option<Vec<J>> {
        let mut st = self.lock();
        while st.jobs.is_empty() {
            if !st.open {
                return None;
            }
            st.writer = Activity::Idle;
            st = self.ready.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        let deadline = Instant::now() + GATHER;
        while st.waited == 0 && st.open && st.jobs.len() < self.max_batch {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st.writer = Activity::Gathering;
            st = self.ready.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        st.writer = Activity::Busy;
        let n = st.jobs.len().min(self.max_batch);
        let batch: Vec<(J, Waiter)> = st.jobs.drain(..n).collect();
        st.waited -= batch.iter().filter(|(_, w)| *w == Waiter::Waiting).count();
        Some(batch.into_iter().map(|(job, _)| job).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_waited_job_takes_the_detached_ones_before_it_in_one_batch_in_order() {
        let q = Queue::new(8, true);
        q.push(1, Waiter::Detached).unwrap();
        q.push(2, Waiter::Detached).unwrap();
        q.push(3, Waiter::Waiting).unwrap();
        assert_eq!(q.next_batch(), Some(vec![1, 2, 3]));
    }

    #[test]
    fn detached_jobs_alone_come_out_after_the_gathering_wait() {
        let q = Queue::new(8, true);
        q.push("a", Waiter::Detached).unwrap();
        assert_eq!(q.next_batch(), Some(vec!["a"]));
    }

    #[test]
    fn batches_are_capped_and_the_rest_follows() {
        let q = Queue::new(2, true);
        for i in 0..5 {
            q.push(i, Waiter::Detached).unwrap();
        }
        assert_eq!(q.next_batch(), Some(vec![0, 1]));
        assert_eq!(q.next_batch(), Some(vec![2, 3]));
        assert_eq!(q.next_batch(), Some(vec![4]));
    }

    #[test]
    fn a_closed_queue_refuses_jobs_but_hands_out_what_it_holds() {
        let q = Queue::new(8, true);
        q.push(1, Waiter::Detached).unwrap();
        q.close();
        assert_eq!(q.push(2, Waiter::Waiting), Err(2));
        assert_eq!(q.next_batch(), Some(vec![1]));
        assert_eq!(q.next_batch(), None);
        assert_eq!(Queue::<u8>::new(8, false).push(3, Waiter::Waiting), Err(3), "a queue made closed takes nothing");
    }

    #[test]
    fn an_abandoned_queue_drops_its_jobs_and_takes_no_more() {
        let q = Queue::new(8, true);
        let job = Arc::new(());
        q.push(job.clone(), Waiter::Waiting).unwrap();
        q.abandon();
        assert_eq!(Arc::strong_count(&job), 1, "the queued job was dropped");
        assert!(q.push(job, Waiter::Detached).is_err());
        assert_eq!(q.next_batch(), None);
    }

    #[test]
    fn a_sleeping_writer_is_woken_by_a_job_and_by_closing() {
        let q = Arc::new(Queue::new(8, true));
        let writer = {
            let q = q.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while let Some(batch) = q.next_batch() {
                    got.extend(batch);
                }
                got
            })
        };
        q.push(1, Waiter::Waiting).unwrap();
        q.push(2, Waiter::Detached).unwrap();
        q.close();
        assert_eq!(writer.join().unwrap(), vec![1, 2]);
    }
}
