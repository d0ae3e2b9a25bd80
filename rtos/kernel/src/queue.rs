//! Intrusive FIFO queues of tasks. A task is in at most one queue at a time
//! (a ready queue or the wait queue of one object), so one `next` link per
//! task serves them all and a queue is just a head and a tail: no heap, and
//! a ready queue per core per priority costs two bytes.

use crate::MAX_TASKS;

/// "No task" in a link, head or tail.
const NIL: u8 = u8::MAX;

/// The `next` link of every task, indexed by task.
pub(crate) type Links = [u8; MAX_TASKS];

/// Links of tasks in no queue.
pub(crate) const NO_LINKS: Links = [NIL; MAX_TASKS];

/// A FIFO queue of task indexes threaded through a [`Links`] array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Queue {
    head: u8,
    tail: u8,
}

impl Queue {
    /// The empty queue.
    pub(crate) const EMPTY: Queue = Queue {
        head: NIL,
        tail: NIL,
    };

    /// No task queued?
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// The first task, without removing it.
    pub(crate) fn front(&self) -> Option<usize> {
        (self.head != NIL).then_some(self.head as usize)
    }

    /// Appends `t`, which must be in no queue.
    pub(crate) fn push_back(&mut self, links: &mut Links, t: usize) {
        links[t] = NIL;
        if self.tail == NIL {
            self.head = t as u8;
        } else {
            links[self.tail as usize] = t as u8;
        }
        self.tail = t as u8;
    }

    /// Prepends `t`, which must be in no queue.
    pub(crate) fn push_front(&mut self, links: &mut Links, t: usize) {
        links[t] = self.head;
        if self.head == NIL {
            self.tail = t as u8;
        }
        self.head = t as u8;
    }

    /// Removes and returns the first task.
    pub(crate) fn pop_front(&mut self, links: &mut Links) -> Option<usize> {
        let t = self.front()?;
        self.head = links[t];
        if self.head == NIL {
            self.tail = NIL;
        }
        links[t] = NIL;
        Some(t)
    }

    /// Removes `t` wherever it is; false if it was not queued here.
    /// Linear, which is fine for at most [`MAX_TASKS`] tasks.
    pub(crate) fn remove(&mut self, links: &mut Links, t: usize) -> bool {
        let mut prev = NIL;
        let mut cur = self.head;
        while cur != NIL {
            let next = links[cur as usize];
            if cur as usize == t {
                if prev == NIL {
                    self.head = next;
                } else {
                    links[prev as usize] = next;
                }
                if self.tail == cur {
                    self.tail = prev;
                }
                links[t] = NIL;
                return true;
            }
            prev = cur;
            cur = next;
        }
        false
    }

    /// The tasks in order, front first.
    pub(crate) fn iter<'a>(&self, links: &'a Links) -> Iter<'a> {
        Iter {
            links,
            next: self.head,
        }
    }
}

/// Iterator over a [`Queue`], front first.
pub(crate) struct Iter<'a> {
    links: &'a Links,
    next: u8,
}

impl Iterator for Iter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.next == NIL {
            return None;
        }
        let t = self.next as usize;
        self.next = self.links[t];
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::xorshift;
    use std::collections::VecDeque;
    use std::vec::Vec;

    fn contents(q: &Queue, links: &Links) -> Vec<usize> {
        q.iter(links).collect()
    }

    #[test]
    fn fifo_order_with_front_insertion() {
        let mut links = NO_LINKS;
        let mut q = Queue::EMPTY;
        assert!(q.is_empty());
        assert_eq!(q.pop_front(&mut links), None);
        q.push_back(&mut links, 3);
        q.push_back(&mut links, 1);
        q.push_front(&mut links, 7);
        assert_eq!(contents(&q, &links), [7, 3, 1]);
        assert_eq!(q.front(), Some(7));
        assert!(q.remove(&mut links, 1));
        assert!(!q.remove(&mut links, 1));
        q.push_back(&mut links, 5);
        assert_eq!(contents(&q, &links), [7, 3, 5]);
        assert_eq!(q.pop_front(&mut links), Some(7));
        assert_eq!(q.pop_front(&mut links), Some(3));
        assert_eq!(q.pop_front(&mut links), Some(5));
        assert!(q.is_empty());
        assert_eq!(q, Queue::EMPTY);
    }

    /// Several queues sharing one links array behave like `VecDeque`s.
    #[test]
    fn random_operations_match_a_model() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut links = NO_LINKS;
        let mut queues = [Queue::EMPTY; 3];
        let mut model: [VecDeque<usize>; 3] = Default::default();
        let mut home = [None::<usize>; MAX_TASKS];
        for _ in 0..100_000 {
            let t = (xorshift(&mut seed) % MAX_TASKS as u64) as usize;
            let q = (xorshift(&mut seed) % 3) as usize;
            match (home[t], xorshift(&mut seed) % 4) {
                (None, 0) => {
                    queues[q].push_back(&mut links, t);
                    model[q].push_back(t);
                    home[t] = Some(q);
                }
                (None, 1) => {
                    queues[q].push_front(&mut links, t);
                    model[q].push_front(t);
                    home[t] = Some(q);
                }
                (Some(h), 2) => {
                    assert!(queues[h].remove(&mut links, t));
                    model[h].retain(|&x| x != t);
                    home[t] = None;
                }
                _ => {
                    let got = queues[q].pop_front(&mut links);
                    assert_eq!(got, model[q].pop_front());
                    if let Some(x) = got {
                        home[x] = None;
                    }
                }
            }
            for (queue, m) in queues.iter().zip(&model) {
                assert_eq!(
                    contents(queue, &links),
                    m.iter().copied().collect::<Vec<_>>()
                );
                assert_eq!(queue.front(), m.front().copied());
            }
        }
    }
}
