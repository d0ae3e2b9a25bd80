//! RPMsg for Tandem's RTOS, free of hardware: the device side of virtio's
//! split virtqueues ([`vring`]), RPMsg's messages and name service
//! ([`message`]) and a transport that serves an applications' table of
//! services over Linux's stock virtio-rpmsg ([`transport`]), all through a
//! [`Window`] onto RPMsg's part of the shared region
//! (`tandem_abi::rpmsg`). The RTOS gives it a window of volatile accesses;
//! the host tests a plain byte array that Linux's side of each test, well
//! behaved or hostile, writes into.
//!
//! Why not a crate from crates.io: `virtio-queue` (rust-vmm) needs `std`
//! and `vm-memory` and serves a VMM that owns the guest's memory;
//! `virtio-drivers` is the driver side; the small `alloc`-based models
//! keep the rings in their own memory. None reads rings that an untrusted
//! peer keeps writing, once per field, without a heap.
//!
//! Everything the driver (Linux) writes is untrusted: each index, address,
//! length and flag is read once, checked against the ring and the buffer
//! pool before it is used, and no loop runs on a count Linux gave without a
//! bound of the crate's own.
#![no_std]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

pub mod message;
pub mod transport;
pub mod vring;

/// RPMsg's part of the shared region, as the crate reads and writes it:
/// offsets from its start (`tandem_abi::layout::RPMSG_OFFSET`),
/// little-endian. An implementation must keep every access inside the part
/// whatever the offset (the crate's own checks keep them there; the
/// window's are a second line); a read past it may return anything.
pub trait Window {
    /// The 16-bit word at `at`.
    fn read_u16(&self, at: usize) -> u16;
    /// The 32-bit word at `at`.
    fn read_u32(&self, at: usize) -> u32;
    /// The 64-bit word at `at`.
    fn read_u64(&self, at: usize) -> u64;
    /// The byte at `at`.
    fn read_u8(&self, at: usize) -> u8;
    /// Writes the 16-bit word at `at`.
    fn write_u16(&mut self, at: usize, value: u16);
    /// Writes the 32-bit word at `at`.
    fn write_u32(&mut self, at: usize, value: u32);
    /// Copies `into.len()` bytes from `at` into `into`.
    fn read_bytes(&self, at: usize, into: &mut [u8]);
    /// Copies `from` to `at`.
    fn write_bytes(&mut self, at: usize, from: &[u8]);
    /// Orders the reads before it (an index) before those after it (what
    /// the index published).
    fn acquire(&self) {}
    /// Orders the writes before it (a used entry) before those after it
    /// (the index that publishes it).
    fn release(&self) {}
}
