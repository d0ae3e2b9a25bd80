//! The header at the start of the RTOS image in secure flash, which the
//! monitor checks before copying the image to secure RAM and entering it.

/// `"TNDMRTOS"` as a little-endian u64.
pub const RTOS_MAGIC: u64 = u64::from_le_bytes(*b"TNDMRTOS");

/// First 32 bytes of the RTOS image (like the arm64 Image header: a branch to
/// the real entry comes first, so entering at the image base works).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtosImageHeader {
    /// `b _start`.
    pub branch: u32,
    /// Zero.
    pub reserved: u32,
    /// [`RTOS_MAGIC`].
    pub magic: u64,
    /// Bytes to copy (code and initialised data; .bss is zeroed by the RTOS).
    pub image_size: u64,
    /// Bytes of RAM the RTOS uses from its base, .bss and stacks included.
    pub ram_size: u64,
}

/// Why an RTOS image was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageError {
    /// No RTOS image there.
    BadMagic,
    /// The image or its RAM does not fit where the board puts the RTOS.
    TooBig {
        /// RAM the image needs.
        needs: u64,
        /// RAM the board gives it.
        room: u64,
    },
}

impl RtosImageHeader {
    /// Checks the header against the RAM the board gives the RTOS.
    pub fn validate(&self, ram_room: u64) -> Result<(), ImageError> {
        if self.magic != RTOS_MAGIC {
            return Err(ImageError::BadMagic);
        }
        let needs = self.image_size.max(self.ram_size);
        if needs > ram_room || self.image_size == 0 {
            return Err(ImageError::TooBig {
                needs,
                room: ram_room,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_magic_and_size() {
        let h = RtosImageHeader {
            branch: 0,
            reserved: 0,
            magic: RTOS_MAGIC,
            image_size: 100,
            ram_size: 4096,
        };
        assert_eq!(h.validate(4096), Ok(()));
        assert_eq!(
            h.validate(4095),
            Err(ImageError::TooBig {
                needs: 4096,
                room: 4095
            })
        );
        assert_eq!(
            RtosImageHeader { magic: 0, ..h }.validate(4096),
            Err(ImageError::BadMagic)
        );
    }
}
