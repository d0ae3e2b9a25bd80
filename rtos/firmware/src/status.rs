//! What the RTOS reports of itself: per-core statistics with the deadline
//! misses the applications table counts, to the shared region (for Linux)
//! and as the status line an application prints.

use crate::table::apps;
use crate::{sched, stats};
use core::fmt::Write;

/// Deadline misses on core `c`, as the applications table counts them.
fn misses(c: usize) -> u64 {
    sched::with_kernel(|k| apps().misses(k, c as u8))
}

/// Writes every RTOS core's record in the shared region.
pub fn publish() {
    stats::publish(misses);
}

/// The status line's per-core part, after `seconds`: per core, releases,
/// deadline misses, RTOS load.
pub fn write(w: &mut impl Write, seconds: u64) {
    stats::write_cores(w, seconds, misses);
}

/// A line of text built in place (no heap): what [`write`] and an
/// application's own words go into before a [`crate::log!`].
pub struct Line {
    bytes: [u8; 320],
    len: usize,
}

impl Line {
    /// An empty line.
    pub const fn new() -> Line {
        Line {
            bytes: [0; 320],
            len: 0,
        }
    }

    /// What was written (cut at the buffer's end).
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("?")
    }
}

impl Default for Line {
    fn default() -> Line {
        Line::new()
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}
