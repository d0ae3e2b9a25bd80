//! The device's side of a virtio split virtqueue (virtio 1.x, section
//! 2.7) whose driver is not trusted: the driver (Linux) owns the
//! descriptor table and the available ring, the device (the RTOS) the used
//! ring, and the device keeps its own indexes in its own memory, never
//! reading back what it wrote.
//!
//! ```text
//! base                      descriptors: num x { addr u64, len u32, flags u16, next u16 }
//! base + 16 num             available: flags u16, idx u16, ring[num] u16, used_event u16
//! align_up(.., align)       used: flags u16, idx u16, ring[num] { id u32, len u32 }, avail_event u16
//! ```
//!
//! What the driver may get wrong, and what the device does about it
//! ([`Fault`]): an available index more than `num` ahead of the entries
//! taken (or behind them), a head or a `next` past the table, a chain
//! longer than the table (a loop), an indirect descriptor (not offered),
//! unknown flags, a buffer outside the pool (or whose end overflows), a
//! buffer the wrong way (device-writable where the device reads, or the
//! reverse), more buffers in a chain than the caller takes. Each is
//! refused before anything is read through the descriptor, and every
//! field is read once: a driver changing the ring meanwhile changes only
//! which of these answers it gets.

use crate::Window;

/// Descriptor flag: the chain goes on at `next`.
pub const DESC_F_NEXT: u16 = 1;
/// Descriptor flag: the device writes this buffer (else it reads it).
pub const DESC_F_WRITE: u16 = 2;
/// Descriptor flag: the buffer is a table of descriptors (not offered).
pub const DESC_F_INDIRECT: u16 = 4;
/// Available-ring flag: the driver asks not to be interrupted.
pub const AVAIL_F_NO_INTERRUPT: u16 = 1;
/// Most buffers one chain may have that [`Queue::take`] returns.
pub const MAX_SEGMENTS: usize = 4;

/// Where a ring lies in the window, and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Offset of its descriptor table.
    pub base: usize,
    /// Entries (a power of two, at most 32768).
    pub num: u16,
    /// Alignment of the used ring.
    pub align: usize,
}

impl Geometry {
    const fn desc(&self, i: u16) -> usize {
        self.base + 16 * i as usize
    }

    const fn avail(&self) -> usize {
        self.base + 16 * self.num as usize
    }

    const fn used(&self) -> usize {
        let end = self.avail() + 2 * (3 + self.num as usize);
        end.div_ceil(self.align) * self.align
    }

    /// Offset of the available ring's flags.
    pub const fn avail_flags(&self) -> usize {
        self.avail()
    }

    /// Offset of the available index.
    pub const fn avail_idx(&self) -> usize {
        self.avail() + 2
    }

    /// Offset of available entry `slot`.
    pub const fn avail_entry(&self, slot: u16) -> usize {
        self.avail() + 4 + 2 * slot as usize
    }

    /// Offset of the used index.
    pub const fn used_idx(&self) -> usize {
        self.used() + 2
    }

    /// Offset of used element `slot`.
    pub const fn used_entry(&self, slot: u16) -> usize {
        self.used() + 4 + 8 * slot as usize
    }

    /// Offset of descriptor `i`'s fields: address, length, flags, next.
    pub const fn desc_fields(&self, i: u16) -> (usize, usize, usize, usize) {
        let d = self.desc(i);
        (d, d + 8, d + 12, d + 14)
    }

    /// One past the ring's last byte.
    pub const fn end(&self) -> usize {
        self.used() + 6 + 8 * self.num as usize
    }
}

/// The buffers' memory: descriptors must point into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    /// Its address as the driver writes it in descriptors (physical).
    pub addr: u64,
    /// Its offset in the window.
    pub at: usize,
    /// Its bytes.
    pub len: usize,
}

impl Pool {
    /// The window offset of `len` bytes at driver address `addr`, if they
    /// lie wholly in the pool (no arithmetic overflows).
    pub fn locate(&self, addr: u64, len: u32) -> Option<usize> {
        let start = addr.checked_sub(self.addr)?;
        let end = start.checked_add(u64::from(len))?;
        (end <= self.len as u64).then(|| self.at + start as usize)
    }
}

/// How a driver broke the ring's rules. The device serves nothing more of
/// the ring after one (until the driver starts again: `Queue::reset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The available index is more than `num` entries ahead of those taken
    /// (or behind them: `seen - taken` wraps past `num`).
    AvailIndex {
        /// What the driver wrote.
        seen: u16,
        /// Entries the device has taken.
        taken: u16,
    },
    /// An available entry names a descriptor past the table.
    Head {
        /// The entry's value.
        head: u16,
    },
    /// A descriptor's `next` is past the table.
    Next {
        /// The descriptor.
        at: u16,
        /// Its `next`.
        next: u16,
    },
    /// A chain visits more descriptors than the table has: a loop.
    Loop {
        /// The chain's head.
        head: u16,
    },
    /// More buffers in a chain than the device takes.
    Segments {
        /// The chain's head.
        head: u16,
    },
    /// An indirect descriptor (the feature is not offered) or unknown
    /// flags.
    Flags {
        /// The descriptor.
        at: u16,
        /// Its flags.
        flags: u16,
    },
    /// A buffer not wholly inside the pool.
    Outside {
        /// The descriptor.
        at: u16,
        /// Its address.
        addr: u64,
        /// Its length.
        len: u32,
    },
    /// A buffer the wrong way: device-writable in a ring the device reads,
    /// or device-readable in one it writes.
    Direction {
        /// The descriptor.
        at: u16,
    },
    /// A buffer too short for what the device must write into it.
    Short {
        /// The descriptor.
        at: u16,
        /// Its length.
        len: u32,
    },
}

impl Fault {
    /// A number for the fault's kind (published for Linux to read: 1..=9).
    pub const fn code(&self) -> u32 {
        match self {
            Fault::AvailIndex { .. } => 1,
            Fault::Head { .. } => 2,
            Fault::Next { .. } => 3,
            Fault::Loop { .. } => 4,
            Fault::Segments { .. } => 5,
            Fault::Flags { .. } => 6,
            Fault::Outside { .. } => 7,
            Fault::Direction { .. } => 8,
            Fault::Short { .. } => 9,
        }
    }
}

/// One buffer of a chain, checked: inside the pool, the right way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// Its offset in the window.
    pub at: usize,
    /// Its bytes.
    pub len: u32,
}

/// A chain the device took: its head (to give back) and its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    /// The descriptor to put in the used ring.
    pub head: u16,
    /// Its buffers, `count` of them.
    pub segments: [Segment; MAX_SEGMENTS],
    /// How many.
    pub count: usize,
}

impl Chain {
    /// Its buffers.
    pub fn segments(&self) -> &[Segment] {
        &self.segments[..self.count]
    }
}

/// Which way the device uses a ring's buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The device reads them (the driver's send ring).
    Read,
    /// The device writes them (the driver's receive ring).
    Write,
}

/// The device's side of one ring: its own indexes, kept in its own memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queue {
    geometry: Geometry,
    /// Available entries taken (free-running, as the driver's index).
    taken: u16,
    /// Used entries given (free-running).
    given: u16,
}

impl Queue {
    /// A ring with nothing taken or given.
    pub const fn new(geometry: Geometry) -> Queue {
        Queue {
            geometry,
            taken: 0,
            given: 0,
        }
    }

    /// Forgets everything taken and given: the driver set the ring up
    /// again (zeroed).
    pub fn reset(&mut self) {
        self.taken = 0;
        self.given = 0;
    }

    /// Its geometry.
    pub const fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Available entries taken so far (free-running).
    pub const fn taken(&self) -> u16 {
        self.taken
    }

    /// How many entries the driver made available that the device has not
    /// taken: its index, read once, checked to be at most `num` ahead.
    pub fn available(&self, w: &impl Window) -> Result<u16, Fault> {
        let seen = w.read_u16(self.geometry.avail_idx());
        w.acquire();
        let ahead = seen.wrapping_sub(self.taken);
        if ahead > self.geometry.num {
            return Err(Fault::AvailIndex {
                seen,
                taken: self.taken,
            });
        }
        Ok(ahead)
    }

    /// Takes the next available chain (call only while [`Queue::available`]
    /// said there is one): reads its entry and each descriptor once,
    /// checks them, and returns its buffers. On a fault nothing is taken.
    pub fn take(&mut self, w: &impl Window, pool: &Pool, way: Direction) -> Result<Chain, Fault> {
        let num = self.geometry.num;
        let slot = self.taken & (num - 1);
        let head = w.read_u16(self.geometry.avail_entry(slot));
        if head >= num {
            return Err(Fault::Head { head });
        }
        let mut chain = Chain {
            head,
            segments: [Segment::default(); MAX_SEGMENTS],
            count: 0,
        };
        let mut at = head;
        // A chain of more descriptors than the table holds visits one
        // twice: the bound is ours, whatever `next` says.
        for _ in 0..num {
            let (a, l, f, n) = self.geometry.desc_fields(at);
            let (addr, len, flags, next) =
                (w.read_u64(a), w.read_u32(l), w.read_u16(f), w.read_u16(n));
            if flags & !(DESC_F_NEXT | DESC_F_WRITE) != 0 {
                return Err(Fault::Flags { at, flags });
            }
            let writable = flags & DESC_F_WRITE != 0;
            if writable != (way == Direction::Write) {
                return Err(Fault::Direction { at });
            }
            let Some(offset) = pool.locate(addr, len) else {
                return Err(Fault::Outside { at, addr, len });
            };
            if chain.count == MAX_SEGMENTS {
                return Err(Fault::Segments { head });
            }
            chain.segments[chain.count] = Segment { at: offset, len };
            chain.count += 1;
            if flags & DESC_F_NEXT == 0 {
                self.taken = self.taken.wrapping_add(1);
                return Ok(chain);
            }
            if next >= num {
                return Err(Fault::Next { at, next });
            }
            at = next;
        }
        Err(Fault::Loop { head })
    }

    /// Gives chain `head` back with `len` bytes written: the used element,
    /// then (ordered after it) the used index.
    pub fn give(&mut self, w: &mut impl Window, head: u16, len: u32) {
        let slot = self.given & (self.geometry.num - 1);
        let e = self.geometry.used_entry(slot);
        w.write_u32(e, u32::from(head));
        w.write_u32(e + 4, len);
        self.given = self.given.wrapping_add(1);
        w.release();
        w.write_u16(self.geometry.used_idx(), self.given);
    }

    /// Whether the driver wants an interrupt for what was given (its
    /// available ring's flags, read once).
    pub fn wants_interrupt(&self, w: &impl Window) -> bool {
        w.read_u16(self.geometry.avail_flags()) & AVAIL_F_NO_INTERRUPT == 0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::transport::tests::Mem;

    pub(crate) const GEO: Geometry = Geometry {
        base: 0x1000,
        num: 8,
        align: 0x1000,
    };
    pub(crate) const POOL: Pool = Pool {
        addr: 0x8000_0000,
        at: 0x4000,
        len: 16 * 512,
    };

    /// Writes descriptor `i`.
    pub(crate) fn desc(
        m: &mut Mem,
        g: Geometry,
        i: u16,
        addr: u64,
        len: u32,
        flags: u16,
        next: u16,
    ) {
        let (a, l, f, n) = g.desc_fields(i);
        m.put_u64(a, addr);
        m.put_u32(l, len);
        m.put_u16(f, flags);
        m.put_u16(n, next);
    }

    /// Makes entry `slot` name `head` and the index `idx`.
    pub(crate) fn avail(m: &mut Mem, g: Geometry, slot: u16, head: u16, idx: u16) {
        m.put_u16(g.avail_entry(slot), head);
        m.put_u16(g.avail_idx(), idx);
    }

    fn buffer(i: u64) -> u64 {
        POOL.addr + i * 512
    }

    #[test]
    fn the_geometry_is_linuxs_vring_layout() {
        let g = Geometry {
            base: 0,
            num: 256,
            align: 4096,
        };
        assert_eq!(g.avail_idx(), 4096 + 2);
        assert_eq!(g.avail_entry(255), 4096 + 4 + 510);
        assert_eq!(g.used_idx(), 8192 + 2);
        assert_eq!(g.used_entry(1), 8192 + 12);
        assert_eq!(
            g.end(),
            tandem_abi::layout::vring_bytes(256, 4096),
            "the same size Linux's vring_size() gives"
        );
    }

    #[test]
    fn a_well_formed_chain_is_taken_and_given_back() {
        let mut m = Mem::new();
        let mut q = Queue::new(GEO);
        desc(&mut m, GEO, 3, buffer(2), 100, DESC_F_NEXT, 5);
        desc(&mut m, GEO, 5, buffer(3), 512, 0, 0);
        avail(&mut m, GEO, 0, 3, 1);
        assert_eq!(q.available(&m), Ok(1));
        let c = q.take(&m, &POOL, Direction::Read).unwrap();
        assert_eq!(c.head, 3);
        assert_eq!(
            c.segments(),
            &[
                Segment {
                    at: POOL.at + 1024,
                    len: 100
                },
                Segment {
                    at: POOL.at + 1536,
                    len: 512
                }
            ]
        );
        assert_eq!(q.available(&m), Ok(0));
        q.give(&mut m, c.head, 7);
        assert_eq!(m.get_u16(GEO.used_idx()), 1);
        assert_eq!(m.get_u32(GEO.used_entry(0)), 3);
        assert_eq!(m.get_u32(GEO.used_entry(0) + 4), 7);
    }

    #[test]
    fn indexes_wrap_as_free_running_counters() {
        let mut m = Mem::new();
        let mut q = Queue::new(GEO);
        q.taken = u16::MAX - 1;
        q.given = u16::MAX - 1;
        desc(&mut m, GEO, 0, buffer(0), 16, 0, 0);
        for i in 0..4u16 {
            let idx = q.taken.wrapping_add(1);
            avail(&mut m, GEO, q.taken & 7, 0, idx);
            assert_eq!(q.available(&m), Ok(1), "{i}");
            let c = q.take(&m, &POOL, Direction::Read).unwrap();
            q.give(&mut m, c.head, 0);
        }
        assert_eq!(m.get_u16(GEO.used_idx()), 2);
    }

    #[test]
    fn an_available_index_past_the_ring_is_refused() {
        let mut m = Mem::new();
        let q = Queue::new(GEO);
        for seen in [9u16, 100, u16::MAX] {
            m.put_u16(GEO.avail_idx(), seen);
            assert_eq!(
                q.available(&m),
                Err(Fault::AvailIndex { seen, taken: 0 }),
                "{seen}"
            );
        }
        m.put_u16(GEO.avail_idx(), 8);
        assert_eq!(q.available(&m), Ok(8), "a full ring is fine");
    }

    #[test]
    fn a_head_past_the_table_is_refused() {
        let mut m = Mem::new();
        let mut q = Queue::new(GEO);
        for head in [8u16, 0xFFFF] {
            avail(&mut m, GEO, 0, head, 1);
            assert_eq!(
                q.take(&m, &POOL, Direction::Read),
                Err(Fault::Head { head })
            );
        }
        assert_eq!(q.taken(), 0, "nothing taken");
    }

    #[test]
    fn a_next_past_the_table_is_refused() {
        let mut m = Mem::new();
        let mut q = Queue::new(GEO);
        desc(&mut m, GEO, 1, buffer(0), 16, DESC_F_NEXT, 200);
        avail(&mut m, GEO, 0, 1, 1);
        assert_eq!(
            q.take(&m, &POOL, Direction::Read),
            Err(Fault::Next { at: 1, next: 200 })
        );
    }

    #[test]
    fn a_loop_of_descriptors_ends_at_the_tables_size() {
        let mut m = Mem::new();
        let mut q = Queue::new(GEO);
        // 0 -> 1 -> 0: a loop of two; and 2 -> 2, a loop of one.
        desc(&mut m, GEO, 0, buffer(0), 16, DESC_F_NEXT, 1);
        desc(&mut m, GEO, 1, buffer(1), 16, DESC_F_NEXT, 0);
        desc(&mut m, GEO, 2, buffer(2), 16, DESC_F_NEXT, 2);
        for head in [0, 2] {
            avail(&mut m, GEO, 0, head, 1);
            // The chain's buffers overflow the segments first when they
            // are few; with room for them all the loop shows.
            let r = q.take(&m, &POOL, Direction::Read);
            assert!(
                matches!(r, Err(Fault::Segments { .. }) | Err(Fault::Loop { .. })),
                "{r:?}"
            );
        }
        // Every descriptor of a full table in one loop, none left to spare:
        // the walk ends after `num` of them.
        let big = Geometry {
            base: 0x1000,
            num: 2,
            align: 0x1000,
        };
        let mut m = Mem::new();
        let mut q = Queue::new(big);
        desc(&mut m, big, 0, buffer(0), 16, DESC_F_NEXT, 1);
        desc(&mut m, big, 1, buffer(1), 16, DESC_F_NEXT, 0);
        avail(&mut m, big, 0, 0, 1);
        assert_eq!(
            q.take(&m, &POOL, Direction::Read),
            Err(Fault::Loop { head: 0 })
        );
    }

    #[test]
    fn descriptors_outside_the_pool_are_refused() {
        let mut q = Queue::new(GEO);
        let end = POOL.addr + POOL.len as u64;
        for (addr, len) in [
            (POOL.addr - 1, 16),   // starts before it
            (end - 15, 16),        // ends past it
            (end, 0),              // empty, but at its end: fine
            (0, 16),               // nowhere near
            (u64::MAX - 4, 16),    // the end overflows
            (POOL.addr, u32::MAX), // longer than the pool
            (0x0E10_0000, 512),    // the RTOS's own RAM
        ] {
            let mut m = Mem::new();
            desc(&mut m, GEO, 0, addr, len, 0, 0);
            avail(&mut m, GEO, 0, 0, 1);
            let r = q.take(&m, &POOL, Direction::Read);
            if addr == end && len == 0 {
                assert!(r.is_ok());
                q.reset();
            } else {
                assert_eq!(
                    r,
                    Err(Fault::Outside { at: 0, addr, len }),
                    "{addr:#x}+{len}"
                );
            }
        }
    }

    #[test]
    fn flags_and_direction_are_checked() {
        let mut q = Queue::new(GEO);
        for (flags, way, want) in [
            (
                DESC_F_INDIRECT,
                Direction::Read,
                Fault::Flags { at: 0, flags: 4 },
            ),
            (0x80, Direction::Read, Fault::Flags { at: 0, flags: 0x80 }),
            (DESC_F_WRITE, Direction::Read, Fault::Direction { at: 0 }),
            (0, Direction::Write, Fault::Direction { at: 0 }),
        ] {
            let mut m = Mem::new();
            desc(&mut m, GEO, 0, buffer(0), 16, flags, 0);
            avail(&mut m, GEO, 0, 0, 1);
            assert_eq!(q.take(&m, &POOL, way), Err(want), "{flags:#x} {way:?}");
        }
    }

    #[test]
    fn every_field_is_read_once() {
        let mut m = Mem::new();
        let mut q = Queue::new(GEO);
        desc(&mut m, GEO, 0, buffer(0), 16, 0, 0);
        avail(&mut m, GEO, 0, 0, 1);
        m.count_reads(true);
        assert_eq!(q.available(&m), Ok(1));
        q.take(&m, &POOL, Direction::Read).unwrap();
        assert!(
            m.max_reads() <= 1,
            "a field read twice: {:?}",
            m.reads_over(1)
        );
    }

    #[test]
    fn the_driver_may_ask_for_no_interrupt() {
        let mut m = Mem::new();
        let q = Queue::new(GEO);
        assert!(q.wants_interrupt(&m));
        m.put_u16(GEO.avail_flags(), AVAIL_F_NO_INTERRUPT);
        assert!(!q.wants_interrupt(&m));
    }
}
