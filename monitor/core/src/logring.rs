//! Log lines the monitor keeps for later: a ring of bytes per core, which
//! only that core writes and any core empties onto the console when it has
//! nothing else to do.
//!
//! Anything Linux can make the monitor do, it can make it do in a loop, and
//! a UART line is milliseconds at 115 200 baud with the core at EL3,
//! interrupts masked, holding the console lock another core may want. So
//! paths Linux triggers never write the console themselves: they put a
//! line here (all of it or, when the ring is full, none of it, counted) and
//! go on; an idle core's look loop moves what the UART's FIFO takes without
//! waiting.

use core::cell::UnsafeCell;
use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Longest line kept; longer ones are cut (and end with "...").
pub const LINE_MAX: usize = 160;

/// A single-writer, single-reader ring of `N` bytes (`N` a power of two).
pub struct LogRing<const N: usize> {
    bytes: UnsafeCell<[u8; N]>,
    /// Bytes ever written (the writer's; wraps).
    head: AtomicUsize,
    /// Bytes ever read (the reader's; wraps).
    tail: AtomicUsize,
    /// Lines that did not fit.
    dropped: AtomicU32,
}

// SAFETY: the writer only writes bytes in [head, tail + N) and then
// publishes them with a Release store of `head`; the reader only reads bytes
// in [tail, head) after an Acquire load of `head`, and frees them with a
// Release store of `tail`, which the writer loads with Acquire. The two never
// touch the same byte at once, provided there is one writer and one reader
// at a time (each method's contract).
unsafe impl<const N: usize> Sync for LogRing<N> {}

impl<const N: usize> LogRing<N> {
    const CHECK: () = assert!(N.is_power_of_two() && N > LINE_MAX);

    /// An empty ring.
    pub const fn new() -> Self {
        let () = Self::CHECK;
        Self {
            bytes: UnsafeCell::new([0; N]),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            dropped: AtomicU32::new(0),
        }
    }

    /// Puts `line` (and a newline) into the ring, whole, or counts it as
    /// dropped if it does not fit. Only one core may write a ring (its own).
    pub fn push(&self, line: &[u8]) -> bool {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        let free = N - head.wrapping_sub(tail);
        if line.len() + 1 > free {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let bytes = self.bytes.get().cast::<u8>();
        for (i, &b) in line.iter().chain(b"\n").enumerate() {
            // SAFETY: the index is inside the ring, in the free part the
            // reader does not read until `head` says so (see `Sync`).
            unsafe { bytes.add(head.wrapping_add(i) % N).write(b) };
        }
        self.head
            .store(head.wrapping_add(line.len() + 1), Ordering::Release);
        true
    }

    /// Formats a line and puts it into the ring (see [`Self::push`]).
    pub fn push_fmt(&self, args: fmt::Arguments<'_>) -> bool {
        let mut line = Line::new();
        // A line that does not fit in LINE_MAX is cut, not lost.
        let _ = fmt::write(&mut line, args);
        self.push(line.as_bytes())
    }

    /// Moves bytes out in order while `put` takes them (returns true);
    /// returns the number moved. Only one core may read at a time.
    pub fn drain(&self, mut put: impl FnMut(u8) -> bool) -> usize {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        let bytes = self.bytes.get().cast::<u8>();
        let mut moved = 0;
        while tail.wrapping_add(moved) != head {
            // SAFETY: inside the ring, in the part the writer published and
            // does not write until `tail` frees it (see `Sync`).
            let b = unsafe { bytes.add(tail.wrapping_add(moved) % N).read() };
            if !put(b) {
                break;
            }
            moved += 1;
        }
        self.tail.store(tail.wrapping_add(moved), Ordering::Release);
        moved
    }

    /// Whether there are bytes to move.
    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Acquire) == self.tail.load(Ordering::Relaxed)
    }

    /// Lines dropped so far, and counts them as reported.
    pub fn take_dropped(&self) -> u32 {
        self.dropped.swap(0, Ordering::Relaxed)
    }
}

impl<const N: usize> Default for LogRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// One line being formatted, on the stack.
struct Line {
    bytes: [u8; LINE_MAX],
    len: usize,
}

impl Line {
    const fn new() -> Self {
        Self {
            bytes: [0; LINE_MAX],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            if self.len == LINE_MAX {
                self.bytes[LINE_MAX - 3..].copy_from_slice(b"...");
                return Err(fmt::Error);
            }
            // Control characters would break the line structure.
            self.bytes[self.len] = if b == b'\n' || b == b'\r' { b' ' } else { b };
            self.len += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    fn drain_all<const N: usize>(r: &LogRing<N>) -> String {
        let mut out = Vec::new();
        r.drain(|b| {
            out.push(b);
            true
        });
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lines_come_out_whole_and_in_order() {
        let r = LogRing::<256>::new();
        assert!(r.is_empty());
        assert!(r.push_fmt(format_args!("Linux restarts (generation {})", 2)));
        assert!(r.push(b"second"));
        assert_eq!(drain_all(&r), "Linux restarts (generation 2)\nsecond\n");
        assert!(r.is_empty());
    }

    #[test]
    fn a_full_ring_drops_whole_lines_and_counts_them() {
        let r = LogRing::<256>::new();
        let line = [b'x'; 99];
        assert!(r.push(&line));
        assert!(r.push(&line));
        assert!(!r.push(&line), "56 bytes left: the line is dropped whole");
        assert!(r.push(&line[..50]));
        assert_eq!(r.take_dropped(), 1);
        assert_eq!(r.take_dropped(), 0);
        assert_eq!(drain_all(&r).len(), 100 + 100 + 51);
    }

    #[test]
    fn a_slow_console_takes_what_it_can_and_the_rest_waits() {
        let r = LogRing::<256>::new();
        r.push(b"abcdef");
        let mut room = 3;
        let mut got = Vec::new();
        let moved = r.drain(|b| {
            if room == 0 {
                return false;
            }
            room -= 1;
            got.push(b);
            true
        });
        assert_eq!((moved, &got[..]), (3, &b"abc"[..]));
        assert_eq!(drain_all(&r), "def\n");
        // Wrapping around the end keeps the order.
        for i in 0..20 {
            r.push_fmt(format_args!("line {i:02} of twenty, padded out"));
            assert_eq!(
                drain_all(&r),
                std::format!("line {i:02} of twenty, padded out\n")
            );
        }
    }

    #[test]
    fn long_lines_are_cut_and_newlines_flattened() {
        let r = LogRing::<512>::new();
        let long: String = std::iter::repeat_n('y', 300).collect();
        r.push_fmt(format_args!("a\nb {long}"));
        let out = drain_all(&r);
        assert_eq!(out.len(), LINE_MAX + 1);
        assert!(
            out.starts_with("a b yyy") && out.ends_with("...\n"),
            "{out}"
        );
    }

    #[test]
    fn one_writer_and_one_reader_at_once_lose_and_reorder_nothing() {
        let r = std::sync::Arc::new(LogRing::<1024>::new());
        let writer = {
            let r = std::sync::Arc::clone(&r);
            std::thread::spawn(move || {
                let mut sent = 0u32;
                while sent < 20_000 {
                    if r.push_fmt(format_args!("{sent}")) {
                        sent += 1;
                    }
                }
            })
        };
        let mut text = String::new();
        while text.lines().count() < 20_000 {
            r.drain(|b| {
                text.push(b as char);
                true
            });
        }
        writer.join().unwrap();
        for (i, line) in text.lines().enumerate() {
            assert_eq!(line, std::format!("{i}"));
        }
    }
}
