//! RPMsg's messages: a 16-byte header (`struct rpmsg_hdr`: source and
//! destination addresses, a reserved word, the payload's length, flags;
//! little-endian, as Linux's legacy virtio device) before the payload,
//! and the name service's announcement (`struct rpmsg_ns_msg`: a name of
//! 32 bytes, the address, create or destroy) sent to address 53.

use tandem_abi::rpmsg::{HEADER_BYTES, NAME_BYTES};

/// Bytes of the header.
pub const HEADER: usize = HEADER_BYTES as usize;
/// Bytes of a name-service announcement.
pub const NS_BYTES: usize = NAME_BYTES + 8;
/// The announcement's flag: the service appeared.
pub const NS_CREATE: u32 = 0;

/// A message's header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Sender's address.
    pub src: u32,
    /// Receiver's address.
    pub dst: u32,
    /// Payload bytes.
    pub len: u16,
    /// Flags (none defined).
    pub flags: u16,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Header {
    /// The header at the start of `bytes` (at least [`HEADER`] of them).
    pub fn parse(bytes: &[u8; HEADER]) -> Header {
        Header {
            src: u32_at(bytes, 0),
            dst: u32_at(bytes, 4),
            len: u16::from_le_bytes([bytes[12], bytes[13]]),
            flags: u16::from_le_bytes([bytes[14], bytes[15]]),
        }
    }

    /// As written before a payload.
    pub fn bytes(&self) -> [u8; HEADER] {
        let mut b = [0; HEADER];
        b[0..4].copy_from_slice(&self.src.to_le_bytes());
        b[4..8].copy_from_slice(&self.dst.to_le_bytes());
        b[12..14].copy_from_slice(&self.len.to_le_bytes());
        b[14..16].copy_from_slice(&self.flags.to_le_bytes());
        b
    }
}

/// The announcement of service `name` at `addr` (a name longer than 31
/// bytes is cut: the last byte stays NUL, as Linux expects).
pub fn announcement(name: &str, addr: u32) -> [u8; NS_BYTES] {
    let mut b = [0; NS_BYTES];
    let n = name.len().min(NAME_BYTES - 1);
    b[..n].copy_from_slice(&name.as_bytes()[..n]);
    b[NAME_BYTES..NAME_BYTES + 4].copy_from_slice(&addr.to_le_bytes());
    b[NAME_BYTES + 4..].copy_from_slice(&NS_CREATE.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_linuxs_rpmsg_hdr() {
        let h = Header {
            src: 0x400,
            dst: 0x401,
            len: 12,
            flags: 0,
        };
        let b = h.bytes();
        assert_eq!(&b[..8], &[0, 4, 0, 0, 1, 4, 0, 0]);
        assert_eq!(&b[8..12], &[0; 4], "reserved");
        assert_eq!(&b[12..], &[12, 0, 0, 0]);
        assert_eq!(Header::parse(&b), h);
    }

    #[test]
    fn an_announcement_is_a_nul_terminated_name_an_address_and_create() {
        let a = announcement("rpmsg-client-sample", 0x401);
        assert_eq!(&a[..19], b"rpmsg-client-sample");
        assert!(a[19..32].iter().all(|&b| b == 0));
        assert_eq!(&a[32..], &[1, 4, 0, 0, 0, 0, 0, 0]);
        let long = announcement(&"x".repeat(40), 1);
        assert_eq!(long[30], b'x');
        assert_eq!(long[31], 0, "always terminated");
    }
}
