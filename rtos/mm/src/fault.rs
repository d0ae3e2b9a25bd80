//! What a synchronous exception taken from a protected task (S-EL0) means,
//! from its syndrome (ESR_EL1).

/// Why an instruction or data access was refused (the fault status code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abort {
    /// Nothing mapped there (level of the walk that found no entry).
    Translation(u8),
    /// The access flag was clear.
    AccessFlag(u8),
    /// Mapped, but not for this access (EL0, write or execute).
    Permission(u8),
    /// A misaligned access.
    Alignment,
    /// Any other status code (external abort, TLB conflict, ...).
    Other(u8),
}

impl Abort {
    fn from_status(fsc: u64) -> Self {
        let level = (fsc & 3) as u8;
        match fsc & 0x3F {
            0b00_0100..=0b00_0111 => Abort::Translation(level),
            0b00_1000..=0b00_1011 => Abort::AccessFlag(level),
            0b00_1100..=0b00_1111 => Abort::Permission(level),
            0b10_0001 => Abort::Alignment,
            other => Abort::Other(other as u8),
        }
    }
}

/// A synchronous exception, classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exception {
    /// `svc #imm` from AArch64: a system call.
    Svc(u16),
    /// A data access refused; `write` from the WnR bit.
    Data {
        /// Why.
        abort: Abort,
        /// A write (else a read).
        write: bool,
    },
    /// An instruction fetch refused.
    Instruction(Abort),
    /// A misaligned PC or SP.
    Alignment,
    /// An instruction the task may not run (undefined, a trapped system
    /// register, FP/SIMD, an SMC or HVC from EL0, ...).
    Refused,
}

impl Exception {
    /// Whether the task did something it may not: anything but a system call.
    pub const fn is_fault(&self) -> bool {
        !matches!(self, Exception::Svc(_))
    }

    /// A short name for reports.
    pub const fn name(&self) -> &'static str {
        match self {
            Exception::Svc(_) => "system call",
            Exception::Data { write: true, .. } => "data abort (write)",
            Exception::Data { write: false, .. } => "data abort (read)",
            Exception::Instruction(_) => "instruction abort",
            Exception::Alignment => "alignment fault",
            Exception::Refused => "refused instruction",
        }
    }
}

/// ESR exception class of an SVC from AArch64.
pub const EC_SVC64: u8 = 0x15;
/// ESR exception class of an instruction abort from a lower EL.
pub const EC_IABT_LOWER: u8 = 0x20;
/// ESR exception class of a data abort from a lower EL.
pub const EC_DABT_LOWER: u8 = 0x24;

/// The exception class of `esr`.
pub const fn class(esr: u64) -> u8 {
    (esr >> 26) as u8 & 0x3F
}

/// Classifies a synchronous exception from its ESR_EL1 value.
pub fn classify(esr: u64) -> Exception {
    let iss = esr & 0x01FF_FFFF;
    match class(esr) {
        EC_SVC64 => Exception::Svc(iss as u16),
        EC_DABT_LOWER | 0x25 => Exception::Data {
            abort: Abort::from_status(iss),
            write: iss >> 6 & 1 == 1,
        },
        EC_IABT_LOWER | 0x21 => Exception::Instruction(Abort::from_status(iss)),
        0x22 | 0x26 => Exception::Alignment,
        _ => Exception::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esr(ec: u64, iss: u64) -> u64 {
        ec << 26 | 1 << 25 | iss
    }

    #[test]
    fn classes() {
        assert_eq!(classify(esr(0x15, 7)), Exception::Svc(7));
        assert!(!classify(esr(0x15, 0)).is_fault());
        // Read of an unmapped address, level 2 walk.
        let read = classify(esr(0x24, 0b00_0110));
        assert_eq!(
            read,
            Exception::Data {
                abort: Abort::Translation(2),
                write: false
            }
        );
        assert_eq!(read.name(), "data abort (read)");
        // Write to a kernel page at level 3: permission.
        assert_eq!(
            classify(esr(0x24, 1 << 6 | 0b00_1111)),
            Exception::Data {
                abort: Abort::Permission(3),
                write: true
            }
        );
        assert_eq!(
            classify(esr(0x20, 0b00_1101)),
            Exception::Instruction(Abort::Permission(1))
        );
        assert_eq!(
            classify(esr(0x24, 0b10_0001)),
            Exception::Data {
                abort: Abort::Alignment,
                write: false
            }
        );
        assert_eq!(
            classify(esr(0x24, 0b01_0000)),
            Exception::Data {
                abort: Abort::Other(0x10),
                write: false
            }
        );
        assert_eq!(
            classify(esr(0x24, 0b00_1010)),
            Exception::Data {
                abort: Abort::AccessFlag(2),
                write: false
            }
        );
        assert_eq!(classify(esr(0x22, 0)), Exception::Alignment);
        for ec in [0x00, 0x07, 0x17, 0x18, 0x3C] {
            assert_eq!(classify(esr(ec, 0)), Exception::Refused, "{ec:#x}");
            assert!(classify(esr(ec, 0)).is_fault());
        }
        assert_eq!(class(esr(0x24, 0)), EC_DABT_LOWER);
    }
}
