//! Carries out an emulated access decided by `tandem_hyp_core::gic` on the
//! real device: the distributor, or the last redistributor frame of a
//! partition, both mapped as Device memory in the layer's map.

use tandem_hyp_core::gic::Action;

/// A `size`-byte read at `address`.
///
/// # Safety
///
/// `address` must be a device register the layer maps, `size`-aligned.
unsafe fn read(address: u64, size: u8) -> u64 {
    // SAFETY: the caller's promise; device reads of these registers have
    // no side effects (the GIC's acknowledge registers are system
    // registers, not MMIO).
    unsafe {
        match size {
            1 => u64::from((address as *const u8).read_volatile()),
            2 => u64::from((address as *const u16).read_volatile()),
            4 => u64::from((address as *const u32).read_volatile()),
            _ => (address as *const u64).read_volatile(),
        }
    }
}

/// A `size`-byte write of `value` at `address`.
///
/// # Safety
///
/// As [`read`], and the write must be one the partition may make.
unsafe fn write(address: u64, size: u8, value: u64) {
    // SAFETY: the caller's promise.
    unsafe {
        match size {
            1 => (address as *mut u8).write_volatile(value as u8),
            2 => (address as *mut u16).write_volatile(value as u16),
            4 => (address as *mut u32).write_volatile(value as u32),
            _ => (address as *mut u64).write_volatile(value),
        }
    }
}

/// Carries out `action` on the device at `base`; the value a read gives
/// the partition (0 for a write).
///
/// # Safety
///
/// `base` must be the device `action` was decided for, mapped by the
/// layer; the offsets in `action` come from its decision, which keeps them
/// inside the device and aligned.
pub unsafe fn carry_out(base: u64, action: Action) -> u64 {
    // SAFETY: the caller's promise, for every arm.
    unsafe {
        match action {
            Action::Read {
                offset,
                size,
                mask,
                set,
            } => read(base + offset, size) & mask | set,
            Action::Value(v) => v,
            Action::Write {
                offset,
                size,
                value,
            } => {
                write(base + offset, size, value);
                0
            }
            Action::WriteBytes {
                offset,
                value,
                bytes,
            } => {
                for i in 0..4 {
                    if bytes >> i & 1 != 0 {
                        write(base + offset + i, 1, value >> (8 * i) & 0xFF);
                    }
                }
                0
            }
            Action::Merge {
                offset,
                mask,
                value,
            } => {
                let now = read(base + offset, 4) as u32;
                write(base + offset, 4, u64::from(now & !mask | value & mask));
                0
            }
            Action::Ignore => 0,
        }
    }
}
