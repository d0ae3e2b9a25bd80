//! What the monitor copies out of secure flash and checks first: the RTOS
//! image (to secure RAM, at cold boot) and Linux's images, its kernel, device
//! tree and initramfs (to normal RAM, at cold boot and before every restart
//! of Linux). Linux cannot write secure flash, so each of its boots starts
//! from the images the machine was started with.

use crate::CConstant;

/// `"TNDMRTOS"` as a little-endian u64.
pub const RTOS_MAGIC: u64 = u64::from_le_bytes(*b"TNDMRTOS");

/// `"TNDMHYP2"` as a little-endian u64: the EL2 layer's image (`hyp/`),
/// which starts with the same header as the RTOS's.
pub const HYP_MAGIC: u64 = u64::from_le_bytes(*b"TNDMHYP2");

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
        self.validate_as(RTOS_MAGIC, ram_room)
    }

    /// Checks an image with this header and `magic` (the RTOS's, or the EL2
    /// layer's [`HYP_MAGIC`]) against `ram_room` bytes of RAM.
    pub fn validate_as(&self, magic: u64, ram_room: u64) -> Result<(), ImageError> {
        if self.magic != magic {
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

/// `"TNDMLNUX"` as a little-endian u64.
pub const LINUX_MAGIC: u64 = u64::from_le_bytes(*b"TNDMLNUX");
/// Layout version of [`LinuxImages`].
pub const LINUX_VERSION: u32 = 1;

/// One of Linux's images: where it lies in flash and where it goes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Part {
    /// Bytes from the start of the [`LinuxImages`] header to the image.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
    /// The physical address in normal RAM it is copied to.
    pub load: u64,
}

/// The header of Linux's images in secure flash (the board's
/// `linux_images`), written by the harness; the images follow it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinuxImages {
    /// [`LINUX_MAGIC`].
    pub magic: u64,
    /// [`LINUX_VERSION`].
    pub version: u32,
    /// Zero.
    pub reserved: u32,
    /// The arm64 kernel Image: entered at its load address.
    pub kernel: Part,
    /// The flattened device tree: its load address is x0 at entry.
    pub dtb: Part,
    /// The initramfs (the device tree says where).
    pub initrd: Part,
}

/// Why Linux's images were rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinuxImagesError {
    /// No header there.
    BadMagic,
    /// A layout this monitor does not read.
    BadVersion(u32),
    /// An image is empty, unaligned, outside the flash that holds it, or
    /// goes where it may not (outside normal RAM, into the shared region).
    BadPart(&'static str),
    /// Two images would be copied over each other.
    Overlap(&'static str, &'static str),
}

/// A range of physical addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// First address.
    pub base: u64,
    /// Bytes.
    pub size: u64,
}

impl Span {
    /// Whether `size` bytes at `at` lie inside (without overflow).
    pub const fn holds(&self, at: u64, size: u64) -> bool {
        match at.checked_add(size) {
            Some(end) => at >= self.base && end <= self.base + self.size,
            None => false,
        }
    }

    /// Whether `size` bytes at `at` share any byte with this span.
    pub const fn meets(&self, at: u64, size: u64) -> bool {
        at < self.base + self.size && self.base < at.saturating_add(size)
    }
}

impl LinuxImages {
    /// The images by name, in the header's order.
    pub const fn parts(&self) -> [(&'static str, Part); 3] {
        [
            ("kernel", self.kernel),
            ("device tree", self.dtb),
            ("initramfs", self.initrd),
        ]
    }

    /// Checks the header: `room` bytes of flash from the header's start hold
    /// the images, which must go into `ram` and stay clear of `shared`.
    pub fn validate(&self, room: u64, ram: Span, shared: Span) -> Result<(), LinuxImagesError> {
        if self.magic != LINUX_MAGIC {
            return Err(LinuxImagesError::BadMagic);
        }
        if self.version != LINUX_VERSION {
            return Err(LinuxImagesError::BadVersion(self.version));
        }
        let flash = Span {
            base: 0,
            size: room,
        };
        let header = core::mem::size_of::<Self>() as u64;
        let parts = self.parts();
        for (name, p) in parts {
            let fits = p.size != 0
                && p.offset.is_multiple_of(8)
                && p.load.is_multiple_of(8)
                && p.offset >= header
                && flash.holds(p.offset, p.size)
                && ram.holds(p.load, p.size)
                && !shared.meets(p.load, p.size);
            if !fits {
                return Err(LinuxImagesError::BadPart(name));
            }
        }
        // The kernel is entered at its load address: the arm64 boot protocol
        // wants it 2 MiB aligned.
        if !self.kernel.load.is_multiple_of(0x20_0000) {
            return Err(LinuxImagesError::BadPart("kernel"));
        }
        for (i, (a, pa)) in parts.iter().enumerate() {
            for (b, pb) in &parts[i + 1..] {
                let there = Span {
                    base: pa.load,
                    size: pa.size,
                };
                if there.meets(pb.load, pb.size) {
                    return Err(LinuxImagesError::Overlap(a, b));
                }
            }
        }
        Ok(())
    }
}

macro_rules! linux_offset {
    ($name:literal, $field:ident) => {
        CConstant {
            name: $name,
            value: core::mem::offset_of!(LinuxImages, $field) as i64,
        }
    };
}

pub(crate) const C_CONSTANTS: &[CConstant] = &[
    CConstant {
        name: "LINUX_IMAGES_MAGIC",
        value: LINUX_MAGIC as i64,
    },
    CConstant {
        name: "LINUX_IMAGES_VERSION",
        value: LINUX_VERSION as i64,
    },
    CConstant {
        name: "LINUX_IMAGES_HEADER_SIZE",
        value: core::mem::size_of::<LinuxImages>() as i64,
    },
    linux_offset!("LINUX_IMAGES_OFF_KERNEL", kernel),
    linux_offset!("LINUX_IMAGES_OFF_DTB", dtb),
    linux_offset!("LINUX_IMAGES_OFF_INITRD", initrd),
];

#[cfg(test)]
mod tests {
    use super::*;

    const RAM: Span = Span {
        base: 0x4000_0000,
        size: 0x4000_0000,
    };
    const SHARED: Span = Span {
        base: 0x7FE0_0000,
        size: 0x20_0000,
    };

    fn images() -> LinuxImages {
        LinuxImages {
            magic: LINUX_MAGIC,
            version: LINUX_VERSION,
            reserved: 0,
            kernel: Part {
                offset: 0x1000,
                size: 0x50_0000,
                load: 0x4020_0000,
            },
            dtb: Part {
                offset: 0x51_0000,
                size: 0x2000,
                load: 0x4800_0000,
            },
            initrd: Part {
                offset: 0x52_0000,
                size: 0x200_0000,
                load: 0x4810_0000,
            },
        }
    }

    #[test]
    fn linux_images_are_checked_before_any_copy() {
        let room = 0x300_0000;
        assert_eq!(images().validate(room, RAM, SHARED), Ok(()));
        let bad = |f: fn(&mut LinuxImages)| {
            let mut i = images();
            f(&mut i);
            i.validate(room, RAM, SHARED)
        };
        assert_eq!(bad(|i| i.magic = 0), Err(LinuxImagesError::BadMagic));
        assert_eq!(bad(|i| i.version = 2), Err(LinuxImagesError::BadVersion(2)));
        assert_eq!(
            bad(|i| i.initrd.size = 0x300_0000),
            Err(LinuxImagesError::BadPart("initramfs")),
            "past the flash"
        );
        assert_eq!(
            bad(|i| i.dtb.load = 0x7FE0_1000),
            Err(LinuxImagesError::BadPart("device tree")),
            "into the shared region"
        );
        assert_eq!(
            bad(|i| i.dtb.load = 0x3FFF_F000),
            Err(LinuxImagesError::BadPart("device tree")),
            "below normal RAM"
        );
        assert_eq!(
            bad(|i| i.kernel.size = u64::MAX),
            Err(LinuxImagesError::BadPart("kernel")),
            "wraps"
        );
        assert_eq!(
            bad(|i| i.kernel.load = 0x4010_0000),
            Err(LinuxImagesError::BadPart("kernel")),
            "not 2 MiB aligned"
        );
        assert_eq!(
            bad(|i| i.dtb.offset = 8),
            Err(LinuxImagesError::BadPart("device tree")),
            "inside the header"
        );
        assert_eq!(
            bad(|i| i.initrd.load = 0x4060_0000),
            Err(LinuxImagesError::Overlap("kernel", "initramfs"))
        );
    }

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
