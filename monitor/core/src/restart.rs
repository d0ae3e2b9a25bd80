//! A restart's work on an instance's boot core, once its Linux is off on
//! every core: first its devices are quiesced, then its images are copied
//! from secure flash block by block with the cache maintenance that the
//! next Linux's boot core (MMU off) needs. The decisions are here, on the
//! host; the firmware lends the machine ([`Machine`]: the devices' resets,
//! word reads and writes through the monitor's caches, `dc civac` and
//! `dc cvac`).
//!
//! Why the devices first: a device the last Linux left running (a
//! virtio-blk request in flight) writes normal RAM whenever it completes;
//! after the copy, it would write into the next Linux's pristine images.
//! Reset first, a device finishes or drops what it had before a byte is
//! copied (QEMU's virtio-mmio reset drains the block layer's requests).
//!
//! Why each destination is cleaned and invalidated before it is compared:
//! the monitor compares through its caches, but the last Linux may have
//! written that RAM through a non-cacheable alias, changing memory under a
//! clean cached line that still holds the image. Compared through that
//! line, the block looks pristine and is skipped, and the next Linux's
//! boot core, reading memory with its MMU off (or any core, once the line
//! is evicted), runs the old Linux's bytes. `dc civac` writes back any
//! dirty line and drops every line, so the comparison reads memory itself.
//! Blocks that already hold the image are still not written: an emulator
//! keeps its translations of code it does not see written (QEMU models no
//! caches, so the clean and invalidate change nothing there).

/// Words compared, and written if any differs, at a time: a cache line.
pub const BLOCK_WORDS: u64 = 8;

/// Bytes a restart copies per step: the boot core copies in steps so that
/// the RTOS's interrupts there wait for one step at most (a few thousand
/// instructions), never for the whole copy.
pub const STEP: u64 = 32 * 1024;

/// What a restart needs of the machine, as the monitor sees it: its MMU
/// and caches on.
pub trait Machine {
    /// Resets every device of the instance that could write its RAM, and
    /// waits until each says it is reset.
    fn quiesce(&mut self) -> Quiesced;
    /// The 8-byte word at `addr` (8-byte aligned), through the caches.
    fn read(&self, addr: u64) -> u64;
    /// Writes the 8-byte word at `addr` (8-byte aligned), through the caches.
    fn write(&mut self, addr: u64, value: u64);
    /// The byte at `addr`, through the caches.
    fn read_byte(&self, addr: u64) -> u8;
    /// Writes the byte at `addr`, through the caches.
    fn write_byte(&mut self, addr: u64, value: u8);
    /// Cleans and invalidates the data cache lines holding
    /// `[addr, addr + len)` to the point of coherency (`dc civac`, then a
    /// barrier): dirty lines are written back, every line is dropped.
    fn clean_invalidate(&mut self, addr: u64, len: u64);
    /// Cleans the lines holding `[addr, addr + len)` to the point of
    /// coherency (`dc cvac`, then a barrier).
    fn clean(&mut self, addr: u64, len: u64);
}

/// What quiescing the devices did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quiesced {
    /// Devices reset.
    pub reset: u32,
    /// Devices that did not say they were reset in time.
    pub stuck: u32,
}

/// One piece of an image copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Where it lies in flash.
    pub from: u64,
    /// Where it goes in normal RAM (8-byte aligned, as `from`).
    pub to: u64,
    /// Its bytes.
    pub len: u64,
    /// Part of the kernel image: cleaned to the point of coherency, as the
    /// arm64 boot protocol asks (Linux's boot core reads it with its MMU
    /// off). The device tree and initramfs Linux reads with its MMU on,
    /// cached, as the monitor wrote them.
    pub kernel: bool,
}

/// What a copy did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Copied {
    /// Blocks compared.
    pub blocks: u64,
    /// Blocks written (they differed from the image).
    pub written: u64,
}

/// Copies one piece: the destination cleaned and invalidated to the point
/// of coherency, then compared with flash a block at a time and written
/// where it differs; a kernel piece cleaned to the point of coherency
/// after. Words are compared one by one (a slice comparison would be a
/// bytewise memcmp); the tail that is no whole word is always written.
pub fn copy<M: Machine>(m: &mut M, piece: Piece) -> Copied {
    let Piece {
        from,
        to,
        len,
        kernel,
    } = piece;
    m.clean_invalidate(to, len);
    let words = len / 8;
    let mut done = Copied::default();
    let mut word = 0;
    while word < words {
        let n = BLOCK_WORDS.min(words - word);
        let at = 8 * word;
        done.blocks += 1;
        if (0..n).any(|i| m.read(from + at + 8 * i) != m.read(to + at + 8 * i)) {
            for i in 0..n {
                m.write(to + at + 8 * i, m.read(from + at + 8 * i));
            }
            done.written += 1;
        }
        word += n;
    }
    for at in 8 * words..len {
        m.write_byte(to + at, m.read_byte(from + at));
    }
    if kernel {
        m.clean(to, len);
    }
    done
}

/// One image to copy: where it lies in flash, where it goes, its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    /// Its first byte in flash.
    pub from: u64,
    /// Its load address in normal RAM.
    pub to: u64,
    /// Its bytes.
    pub size: u64,
    /// It is the kernel (see [`Piece::kernel`]).
    pub kernel: bool,
}

/// Where a restart is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Progress {
    /// Its devices are not quiesced yet: nothing copied.
    #[default]
    Start,
    /// Devices quiesced; copying image `image`, `done` bytes of it so far.
    Copying {
        /// Index in the images.
        image: usize,
        /// Bytes of it copied.
        done: u64,
    },
}

/// What one step of a restart did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stepped {
    /// The instance's devices were reset.
    Quiesced(Quiesced),
    /// A piece of an image was copied.
    Copied(Copied),
    /// Every image is copied; the next step starts a new restart.
    Done,
}

/// One step of a restart: quiesce the devices, or copy the next
/// [`STEP`] bytes of an image, or say that all is done. `progress` goes
/// back to [`Progress::Start`] when done.
pub fn step<M: Machine>(m: &mut M, progress: &mut Progress, images: &[Image]) -> Stepped {
    match *progress {
        Progress::Start => {
            let quiesced = m.quiesce();
            *progress = Progress::Copying { image: 0, done: 0 };
            Stepped::Quiesced(quiesced)
        }
        Progress::Copying { image, done } => {
            let Some(i) = images.get(image) else {
                *progress = Progress::Start;
                return Stepped::Done;
            };
            let len = STEP.min(i.size - done);
            let copied = copy(
                m,
                Piece {
                    from: i.from + done,
                    to: i.to + done,
                    len,
                    kernel: i.kernel,
                },
            );
            *progress = if done + len >= i.size {
                Progress::Copying {
                    image: image + 1,
                    done: 0,
                }
            } else {
                Progress::Copying {
                    image,
                    done: done + len,
                }
            };
            Stepped::Copied(copied)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::vec;
    use std::vec::Vec;

    const LINE: u64 = 64;
    const FLASH: u64 = 0x0100_0000;
    const RAM: u64 = 0x4000_0000;

    /// What the fake machine saw, in order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Op {
        Quiesce,
        Write(u64),
        CleanInvalidate(u64),
        Clean(u64),
    }

    /// A core with a write-back, read- and write-allocate data cache of
    /// 64-byte lines over DRAM, flash beside it (uncached here: Linux
    /// cannot write it, so no line of it is ever stale). With `cache`
    /// off it is QEMU: every access reaches memory.
    struct Fake {
        flash: Vec<u8>,
        dram: Vec<u8>,
        cache: Option<BTreeMap<u64, ([u8; LINE as usize], bool)>>,
        ops: Vec<Op>,
        writes: u64,
    }

    impl Fake {
        fn new(image: &[u8], cache: bool) -> Self {
            Self {
                flash: image.to_vec(),
                dram: vec![0; image.len() + 2 * LINE as usize],
                cache: cache.then(BTreeMap::new),
                ops: Vec::new(),
                writes: 0,
            }
        }

        fn line_of(addr: u64) -> u64 {
            addr & !(LINE - 1)
        }

        /// The line holding `addr`, filled from DRAM on a miss.
        fn line(&mut self, addr: u64) -> &mut ([u8; LINE as usize], bool) {
            let base = Self::line_of(addr);
            let at = (base - RAM) as usize;
            let fill: [u8; LINE as usize] = self.dram[at..at + LINE as usize].try_into().unwrap();
            self.cache
                .as_mut()
                .unwrap()
                .entry(base)
                .or_insert((fill, false))
        }

        fn get(&self, addr: u64) -> u8 {
            if addr < RAM {
                return self.flash[(addr - FLASH) as usize];
            }
            let base = Self::line_of(addr);
            match self.cache.as_ref().and_then(|c| c.get(&base)) {
                Some((data, _)) => data[(addr - base) as usize],
                None => self.dram[(addr - RAM) as usize],
            }
        }

        fn set(&mut self, addr: u64, value: u8) {
            if self.cache.is_none() {
                self.dram[(addr - RAM) as usize] = value;
                return;
            }
            let base = Self::line_of(addr);
            let line = self.line(addr);
            line.0[(addr - base) as usize] = value;
            line.1 = true;
        }

        /// A cached read that allocates its line (Linux reading with its
        /// MMU on).
        fn cached_read(&mut self, addr: u64) -> u8 {
            if self.cache.is_some() {
                self.line(addr);
            }
            self.get(addr)
        }

        /// A write through a non-cacheable alias: memory changes, no line
        /// does (the old Linux's attack).
        fn noncacheable_write(&mut self, addr: u64, value: u8) {
            self.dram[(addr - RAM) as usize] = value;
        }

        /// What an observer with its MMU off reads: memory.
        fn memory(&self, addr: u64, len: u64) -> &[u8] {
            &self.dram[(addr - RAM) as usize..(addr - RAM + len) as usize]
        }

        /// Offsets where memory differs from `image` (loaded at RAM).
        fn differing(&self, image: &[u8]) -> Vec<u64> {
            let memory = self.memory(RAM, image.len() as u64);
            (0..image.len())
                .filter(|&i| memory[i] != image[i])
                .map(|i| i as u64)
                .collect()
        }

        fn lines(&self, addr: u64, len: u64) -> impl Iterator<Item = u64> {
            (Self::line_of(addr)..addr + len).step_by(LINE as usize)
        }

        fn write_back(&mut self, base: u64) {
            if let Some((data, dirty)) = self.cache.as_mut().and_then(|c| c.get_mut(&base))
                && *dirty
            {
                let at = (base - RAM) as usize;
                self.dram[at..at + LINE as usize].copy_from_slice(data);
                *dirty = false;
            }
        }

        /// The cache may write back and drop any line at any time.
        fn evict_all(&mut self) {
            let lines: Vec<u64> = self.cache.iter().flat_map(|c| c.keys().copied()).collect();
            for base in lines {
                self.write_back(base);
                self.cache.as_mut().unwrap().remove(&base);
            }
        }
    }

    impl Machine for Fake {
        fn quiesce(&mut self) -> Quiesced {
            self.ops.push(Op::Quiesce);
            Quiesced { reset: 1, stuck: 0 }
        }

        fn read(&self, addr: u64) -> u64 {
            let bytes: Vec<u8> = (addr..addr + 8).map(|a| self.get(a)).collect();
            u64::from_le_bytes(bytes.try_into().unwrap())
        }

        fn write(&mut self, addr: u64, value: u64) {
            self.ops.push(Op::Write(addr));
            self.writes += 1;
            for (i, b) in value.to_le_bytes().into_iter().enumerate() {
                self.set(addr + i as u64, b);
            }
        }

        fn read_byte(&self, addr: u64) -> u8 {
            self.get(addr)
        }

        fn write_byte(&mut self, addr: u64, value: u8) {
            self.ops.push(Op::Write(addr));
            self.writes += 1;
            self.set(addr, value);
        }

        fn clean_invalidate(&mut self, addr: u64, len: u64) {
            self.ops.push(Op::CleanInvalidate(addr));
            for base in self.lines(addr, len).collect::<Vec<_>>() {
                self.write_back(base);
                if let Some(c) = self.cache.as_mut() {
                    c.remove(&base);
                }
            }
        }

        fn clean(&mut self, addr: u64, len: u64) {
            self.ops.push(Op::Clean(addr));
            for base in self.lines(addr, len).collect::<Vec<_>>() {
                self.write_back(base);
            }
        }
    }

    /// An image of `len` bytes, no two words alike.
    fn image(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    fn piece(len: u64, kernel: bool) -> Piece {
        Piece {
            from: FLASH,
            to: RAM,
            len,
            kernel,
        }
    }

    #[test]
    fn a_restart_undoes_what_the_old_linux_wrote_past_the_cache() {
        // The old Linux writes its RAM through a non-cacheable alias where
        // the monitor's cache still holds clean lines of the image: in the
        // kernel (cleaned to the point of coherency at the copy, so the
        // lines stay cached, clean), and in the device tree (which the old
        // Linux read, cached, after its lines were written back).
        let len = 4096;
        let flash = image(len as usize);
        let mut stale = Vec::new();
        for kernel in [true, false] {
            let mut m = Fake::new(&flash, true);
            copy(&mut m, piece(len, kernel));
            if !kernel {
                m.evict_all();
                for a in 0..len {
                    m.cached_read(RAM + a);
                }
            }
            for a in [0, 8, 100, 1000, 4095] {
                m.noncacheable_write(RAM + a, 0xEE);
            }
            copy(&mut m, piece(len, kernel));
            if kernel {
                // The next Linux's boot core, MMU off, reads memory.
                stale.push(("kernel, MMU off", m.differing(&flash)));
            }
            // Its cores with their MMU on read through the cache, which
            // may have dropped any clean line by then.
            m.evict_all();
            let what = if kernel { "kernel" } else { "device tree" };
            stale.push((what, m.differing(&flash)));
        }
        assert!(
            stale.iter().all(|(_, at)| at.is_empty()),
            "bytes of the old Linux's, not the image's: {stale:?}"
        );
    }

    #[test]
    fn lines_the_monitor_left_dirty_are_written_back_not_dropped() {
        // The device tree's lines stay dirty after the cold boot's copy;
        // the old Linux wrote memory under them. The image is what stays.
        let len = 512;
        let flash = image(len as usize);
        let mut m = Fake::new(&flash, true);
        copy(&mut m, piece(len, false));
        m.noncacheable_write(RAM + 64, 0xEE);
        let c = copy(&mut m, piece(len, false));
        m.evict_all();
        assert_eq!(m.memory(RAM, len), &flash[..]);
        assert_eq!(c.written, 0, "the dirty lines held the image");
    }

    #[test]
    fn blocks_that_hold_the_image_are_not_written_again() {
        // QEMU (no caches): a restart over a kernel the old Linux did not
        // change writes nothing, so QEMU keeps its translations; where it
        // changed three blocks, those three are written.
        let len = 64 * 1024;
        let flash = image(len as usize);
        let mut m = Fake::new(&flash, false);
        let first = copy(&mut m, piece(len, true));
        assert_eq!(first.written, len / 64);
        m.writes = 0;
        assert_eq!(
            copy(&mut m, piece(len, true)),
            Copied {
                blocks: len / 64,
                written: 0
            }
        );
        assert_eq!(m.writes, 0);
        for a in [0, 64 * 100, len - 1] {
            m.noncacheable_write(RAM + a, 0xEE);
        }
        assert_eq!(copy(&mut m, piece(len, true)).written, 3);
        assert_eq!(m.memory(RAM, len), &flash[..]);
        // With caches, untouched memory: nothing written either.
        let mut m = Fake::new(&flash, true);
        copy(&mut m, piece(len, true));
        m.writes = 0;
        assert_eq!(copy(&mut m, piece(len, true)).written, 0);
        assert_eq!(m.writes, 0);
    }

    #[test]
    fn a_tail_short_of_a_word_is_copied_and_nothing_past_it() {
        let flash = image(77);
        let mut m = Fake::new(&flash, true);
        for a in 0..m.dram.len() as u64 {
            m.noncacheable_write(RAM + a, 0x55);
        }
        copy(&mut m, piece(77, true));
        assert_eq!(m.memory(RAM, 77), &flash[..]);
        m.evict_all();
        assert_eq!(m.memory(RAM, 77), &flash[..]);
        assert!(m.memory(RAM + 77, 64).iter().all(|&b| b == 0x55));
    }

    #[test]
    fn the_copy_cleans_and_invalidates_before_it_compares_and_cleans_the_kernel_after() {
        let flash = image(256);
        let mut m = Fake::new(&flash, true);
        copy(&mut m, piece(256, true));
        assert_eq!(m.ops.first(), Some(&Op::CleanInvalidate(RAM)));
        assert_eq!(m.ops.last(), Some(&Op::Clean(RAM)));
        m.ops.clear();
        copy(&mut m, piece(256, false));
        assert_eq!(
            m.ops,
            [Op::CleanInvalidate(RAM)],
            "the device tree: no clean"
        );
    }

    #[test]
    fn every_restart_quiesces_the_devices_before_it_copies_a_byte() {
        let size = 3 * STEP + 100;
        let flash = image(size as usize + 300);
        let images = [
            Image {
                from: FLASH,
                to: RAM,
                size,
                kernel: true,
            },
            Image {
                from: FLASH + size,
                to: RAM + size + 4,
                size: 200,
                kernel: false,
            },
        ];
        let mut m = Fake::new(&flash, true);
        m.dram.resize(flash.len() + 1024, 0xEE);
        let mut progress = Progress::Start;
        for restart in 0..2 {
            m.ops.clear();
            let mut steps = Vec::new();
            loop {
                let s = step(&mut m, &mut progress, &images);
                steps.push(s);
                if s == Stepped::Done {
                    break;
                }
            }
            assert_eq!(
                steps[0],
                Stepped::Quiesced(Quiesced { reset: 1, stuck: 0 }),
                "restart {restart}"
            );
            assert_eq!(steps.len(), 1 + 4 + 1 + 1, "quiesce, 4 + 1 pieces, done");
            assert_eq!(m.ops[0], Op::Quiesce, "before any cache operation or write");
            assert_eq!(m.ops.iter().filter(|&&o| o == Op::Quiesce).count(), 1);
            assert_eq!(progress, Progress::Start);
        }
        m.evict_all();
        assert_eq!(m.memory(RAM, size), &flash[..size as usize]);
        assert_eq!(
            m.memory(RAM + size + 4, 200),
            &flash[size as usize..size as usize + 200]
        );
    }
}
