//! Layout of the shared region: a versioned header written by the secure side
//! at boot, followed by per-core records. Linux maps it and validates the
//! header; the secure side validates everything it reads back.

use crate::CConstant;

/// `"TNDM"` read as a little-endian u32.
pub const MAGIC: u32 = u32::from_le_bytes(*b"TNDM");

/// Size of one per-core record: one cache line, so cores never share a line.
pub const CORE_RECORD_SIZE: u32 = 64;

/// The header at offset 0 of the shared region.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: u32,
    /// [`crate::smc::ABI_VERSION`] of the writer.
    pub abi_version: u32,
    /// Size of the whole region in bytes.
    pub region_size: u32,
    /// Size of this header in bytes.
    pub header_size: u32,
    /// Number of per-core records.
    pub core_count: u32,
    /// Size of one per-core record.
    pub core_record_size: u32,
    /// Offset of the first per-core record from the start of the region.
    pub core_records_offset: u32,
    /// Incremented by the monitor on every boot of the machine.
    pub boot_count: u32,
}

/// Size of [`Header`] in bytes.
pub const HEADER_SIZE: u32 = core::mem::size_of::<Header>() as u32;
/// Where the per-core records start (header padded to a cache line).
pub const CORE_RECORDS_OFFSET: u32 = 64;

impl Header {
    /// The header the secure side writes for `core_count` cores in a region of
    /// `region_size` bytes.
    pub const fn new(region_size: u32, core_count: u32, boot_count: u32) -> Self {
        Self {
            magic: MAGIC,
            abi_version: crate::smc::ABI_VERSION,
            region_size,
            header_size: HEADER_SIZE,
            core_count,
            core_record_size: CORE_RECORD_SIZE,
            core_records_offset: CORE_RECORDS_OFFSET,
            boot_count,
        }
    }

    /// Checks a header read from the region; tells what is wrong.
    pub fn validate(&self, region_size: u32) -> Result<(), HeaderError> {
        if self.magic != MAGIC {
            return Err(HeaderError::BadMagic(self.magic));
        }
        if self.abi_version >> 16 != crate::smc::ABI_VERSION >> 16 {
            return Err(HeaderError::IncompatibleVersion(self.abi_version));
        }
        if self.region_size != region_size || self.header_size != HEADER_SIZE {
            return Err(HeaderError::BadSize);
        }
        let records_end = u64::from(self.core_records_offset)
            + u64::from(self.core_count) * u64::from(self.core_record_size);
        if self.core_record_size != CORE_RECORD_SIZE
            || self.core_records_offset < HEADER_SIZE
            || records_end > u64::from(region_size)
        {
            return Err(HeaderError::BadLayout);
        }
        Ok(())
    }
}

/// Why a header was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Not a Tandem region.
    BadMagic(u32),
    /// Written by an incompatible major version.
    IncompatibleVersion(u32),
    /// Sizes disagree with the region.
    BadSize,
    /// Records would lie outside the region.
    BadLayout,
}

macro_rules! offset {
    ($name:literal, $field:ident) => {
        CConstant {
            name: $name,
            value: core::mem::offset_of!(Header, $field) as i64,
        }
    };
}

pub(crate) const C_CONSTANTS: &[CConstant] = &[
    CConstant {
        name: "SHM_MAGIC",
        value: MAGIC as i64,
    },
    CConstant {
        name: "SHM_HEADER_SIZE",
        value: HEADER_SIZE as i64,
    },
    CConstant {
        name: "SHM_CORE_RECORD_SIZE",
        value: CORE_RECORD_SIZE as i64,
    },
    offset!("SHM_OFF_MAGIC", magic),
    offset!("SHM_OFF_ABI_VERSION", abi_version),
    offset!("SHM_OFF_REGION_SIZE", region_size),
    offset!("SHM_OFF_HEADER_SIZE", header_size),
    offset!("SHM_OFF_CORE_COUNT", core_count),
    offset!("SHM_OFF_CORE_RECORD_SIZE", core_record_size),
    offset!("SHM_OFF_CORE_RECORDS_OFFSET", core_records_offset),
    offset!("SHM_OFF_BOOT_COUNT", boot_count),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_header_validates() {
        assert_eq!(Header::new(0x20_0000, 8, 1).validate(0x20_0000), Ok(()));
    }

    #[test]
    fn corrupt_headers_are_rejected_with_reason() {
        let good = Header::new(0x1000, 8, 1);
        let mut h = good;
        h.magic = 0;
        assert_eq!(h.validate(0x1000), Err(HeaderError::BadMagic(0)));
        h = good;
        h.abi_version = 2 << 16;
        assert_eq!(
            h.validate(0x1000),
            Err(HeaderError::IncompatibleVersion(2 << 16))
        );
        h = good;
        h.core_count = u32::MAX;
        assert_eq!(h.validate(0x1000), Err(HeaderError::BadLayout));
        assert_eq!(good.validate(0x2000), Err(HeaderError::BadSize));
    }
}
