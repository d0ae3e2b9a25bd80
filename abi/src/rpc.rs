//! Synchronous RPC from Linux (client) to the RTOS (server) over channels in
//! the shared region (paper 002's `send_buf`).
//!
//! ```text
//! 0x110000 + n * 0x11000   channel n (RPC_CHANNELS of them)
//!   +0x000  Request  (64 B, written by Linux only)
//!   +0x040  Response (64 B, written by the RTOS only)
//!   +0x1000 data     (RPC_MAX_DATA bytes: the request's, then an echo's answer)
//! ```
//!
//! A call: Linux writes the data, then `op`, `len`, `flags`, `arg`, then
//! (after a write barrier) a new `seq`, and rings the doorbell (SiP
//! `RPC_NOTIFY` with the channel). The monitor raises the RPC SGI on the
//! channel's server core ([`server_core`]). The server task there finds
//! every channel it serves whose `seq` differs from the last one it
//! answered, reads the request once, checks it ([`check`]), copies the data
//! into its own memory, and writes the response, `seq` last; with
//! [`FLAG_NOTIFY`] it then pends the completion SPI. Linux waits for
//! `Response::seq == Request::seq` by spinning or by sleeping until the SPI.
//!
//! The RTOS trusts nothing here: every field is read once, lengths are
//! checked before any copy, and the answer depends only on the RTOS's own
//! copy of the data. Where the channels lie is [`crate::layout`]'s.

use crate::CConstant;
pub use crate::layout::{
    RPC_CHANNEL_SIZE, RPC_CHANNELS, RPC_CONTROL_SIZE, RPC_MAX_DATA, RPC_OFFSET, RPC_RESPONSE,
    rpc_channel_offset, rpc_data_offset, rpc_response_offset,
};

/// Operation: copy the data into the server (`send_buf`); the response
/// carries the data's [`checksum`] as the server saw it.
pub const OP_SEND: u32 = 1;
/// Operation: as [`OP_SEND`], then the server writes its copy back into the
/// channel's data area (the response's `len` bytes).
pub const OP_ECHO: u32 = 2;
/// Operation (for tests): the server stops for `arg` ms (at most
/// [`MAX_STALL_MS`]) before answering, as a stopped or overloaded server
/// would. Other channels of the same server wait too, so a production
/// boot refuses it ([`STATUS_DISABLED`]): only a boot whose workload blob
/// (secure flash, out of Linux's reach) turns the RPC server's `test_ops`
/// on serves it.
pub const OP_STALL: u32 = 3;
/// Longest stall [`OP_STALL`] accepts, ms.
pub const MAX_STALL_MS: u32 = 2000;

/// Request flag: pend the completion SPI when the answer is written (a
/// client that sleeps needs it; one that spins does not).
pub const FLAG_NOTIFY: u32 = 1;
/// Every flag this layout defines.
pub const FLAGS_KNOWN: u32 = FLAG_NOTIFY;

/// Response status: done.
pub const STATUS_OK: i32 = 0;
/// Response status: `len` above [`RPC_MAX_DATA`] (or negative, as i32).
pub const STATUS_BAD_LENGTH: i32 = -1;
/// Response status: unknown operation.
pub const STATUS_BAD_OP: i32 = -2;
/// Response status: unknown flags or an argument out of range.
pub const STATUS_BAD_ARG: i32 = -3;
/// Response status: a test operation ([`OP_STALL`]) this boot does not serve.
pub const STATUS_DISABLED: i32 = -4;

/// What Linux writes at the start of a channel.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// Changed (incremented) by the client for each call; written last.
    pub seq: u32,
    /// [`OP_SEND`], [`OP_ECHO`] or [`OP_STALL`].
    pub op: u32,
    /// Data bytes, at most [`RPC_MAX_DATA`].
    pub len: u32,
    /// [`FLAG_NOTIFY`].
    pub flags: u32,
    /// [`OP_STALL`]: ms.
    pub arg: u32,
    /// Zero.
    pub pad: u32,
    /// Counter value when the client rang (for the client's own timing; the
    /// server does not read it).
    pub sent_at: u64,
    /// Zero.
    pub reserved: [u32; 8],
}

/// What the RTOS writes after the request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// The `seq` of the request answered; written last.
    pub seq: u32,
    /// `STATUS_*`.
    pub status: i32,
    /// Bytes the server took (and, for [`OP_ECHO`], wrote back).
    pub len: u32,
    /// [`checksum`] of the server's copy of the data.
    pub checksum: u32,
    /// Counter when the server started on the request.
    pub started_at: u64,
    /// Counter when the server finished (just before writing `seq`).
    pub done_at: u64,
    /// Requests this channel's server answered since boot.
    pub served: u64,
    /// The core that served it.
    pub core: u32,
    /// Zero.
    pub reserved: [u32; 5],
}

const _: () = assert!(core::mem::size_of::<Request>() == RPC_RESPONSE as usize);
const _: () =
    assert!(RPC_RESPONSE as usize + core::mem::size_of::<Response>() <= RPC_CONTROL_SIZE as usize);

/// A request the server may carry out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// Copy `len` bytes in.
    Send {
        /// Bytes.
        len: usize,
    },
    /// Copy `len` bytes in and back out.
    Echo {
        /// Bytes.
        len: usize,
    },
    /// Wait `ms` before answering.
    Stall {
        /// Milliseconds.
        ms: u32,
    },
}

/// Checks a request (as read once from the region); the error is the
/// response status to answer with. `test_ops`: this boot serves the test
/// operation ([`OP_STALL`]).
pub fn check(req: &Request, test_ops: bool) -> Result<Call, i32> {
    if req.flags & !FLAGS_KNOWN != 0 {
        return Err(STATUS_BAD_ARG);
    }
    let len = req.len;
    match req.op {
        OP_SEND | OP_ECHO if len > RPC_MAX_DATA => Err(STATUS_BAD_LENGTH),
        OP_SEND => Ok(Call::Send { len: len as usize }),
        OP_ECHO => Ok(Call::Echo { len: len as usize }),
        OP_STALL if !test_ops => Err(STATUS_DISABLED),
        OP_STALL if req.arg > MAX_STALL_MS => Err(STATUS_BAD_ARG),
        OP_STALL => Ok(Call::Stall { ms: req.arg }),
        _ => Err(STATUS_BAD_OP),
    }
}

/// Largest call the server answers in its interrupt handler (no task
/// switch): a copy this short is cheaper than waking the server task.
pub const FAST_MAX: usize = 256;

/// Whether a checked request is answered in the interrupt handler: a
/// refusal (nothing to copy), or a send or echo of at most [`FAST_MAX`]
/// bytes. Longer copies and stalls go to the server task, which runs below
/// the RTOS's periodic work.
pub const fn is_fast(call: &Result<Call, i32>) -> bool {
    match call {
        Err(_) => true,
        Ok(Call::Send { len } | Call::Echo { len }) => *len <= FAST_MAX,
        Ok(Call::Stall { .. }) => false,
    }
}

/// Multiplier of the [`checksum`] (FNV-1a's 64-bit prime).
pub const CHECKSUM_PRIME: u64 = 0x0000_0100_0000_01B3;
/// Start value of the [`checksum`] before the length is mixed in.
pub const CHECKSUM_SEED: u64 = 0x6A09_E667_F3BC_C908;

/// Incremental [`checksum`] over little-endian 64-bit words (the server
/// hashes each word as it copies it).
#[derive(Clone, Copy, Debug)]
pub struct Checksum(u64);

impl Checksum {
    /// Starts a checksum over `len` bytes.
    pub const fn new(len: usize) -> Self {
        Self((CHECKSUM_SEED ^ len as u64).wrapping_mul(CHECKSUM_PRIME))
    }

    /// Adds the next word (the last one zero-padded).
    pub const fn word(self, w: u64) -> Self {
        Self((self.0 ^ w).wrapping_mul(CHECKSUM_PRIME))
    }

    /// The 32-bit result.
    pub const fn finish(self) -> u32 {
        (self.0 ^ (self.0 >> 32)) as u32
    }
}

/// The checksum of `data`: FNV-style over its little-endian 64-bit words,
/// the last zero-padded, seeded with the length. Cheap enough to compute
/// while copying; it lets a client check that the server received exactly
/// its bytes (and no other channel's).
pub fn checksum(data: &[u8]) -> u32 {
    let mut c = Checksum::new(data.len());
    for chunk in data.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        c = c.word(u64::from_le_bytes(w));
    }
    c.finish()
}

/// The core serving channel `ch` when `mask` names the server cores: the
/// channels are dealt round the server cores in order (channel 0 to the
/// lowest). None if there is no server or no such channel.
pub const fn server_core(mask: u8, ch: usize) -> Option<usize> {
    if mask == 0 || ch >= RPC_CHANNELS as usize {
        return None;
    }
    let mut nth = ch % mask.count_ones() as usize;
    let mut core = 0;
    while core < 8 {
        if mask & (1 << core) != 0 {
            if nth == 0 {
                return Some(core);
            }
            nth -= 1;
        }
        core += 1;
    }
    None
}

macro_rules! req {
    ($name:literal, $field:ident) => {
        CConstant {
            name: $name,
            value: core::mem::offset_of!(Request, $field) as i64,
        }
    };
}

macro_rules! resp {
    ($name:literal, $field:ident) => {
        CConstant {
            name: $name,
            value: (RPC_RESPONSE as usize + core::mem::offset_of!(Response, $field)) as i64,
        }
    };
}

pub(crate) const C_CONSTANTS: &[CConstant] = &[
    CConstant {
        name: "RPC_OP_SEND",
        value: OP_SEND as i64,
    },
    CConstant {
        name: "RPC_OP_ECHO",
        value: OP_ECHO as i64,
    },
    CConstant {
        name: "RPC_OP_STALL",
        value: OP_STALL as i64,
    },
    CConstant {
        name: "RPC_MAX_STALL_MS",
        value: MAX_STALL_MS as i64,
    },
    CConstant {
        name: "RPC_FLAG_NOTIFY",
        value: FLAG_NOTIFY as i64,
    },
    CConstant {
        name: "RPC_STATUS_OK",
        value: STATUS_OK as i64,
    },
    CConstant {
        name: "RPC_STATUS_BAD_LENGTH",
        value: STATUS_BAD_LENGTH as i64,
    },
    CConstant {
        name: "RPC_STATUS_BAD_OP",
        value: STATUS_BAD_OP as i64,
    },
    CConstant {
        name: "RPC_STATUS_BAD_ARG",
        value: STATUS_BAD_ARG as i64,
    },
    CConstant {
        name: "RPC_STATUS_DISABLED",
        value: STATUS_DISABLED as i64,
    },
    CConstant {
        name: "RPC_CHECKSUM_PRIME",
        value: CHECKSUM_PRIME as i64,
    },
    CConstant {
        name: "RPC_CHECKSUM_SEED",
        value: CHECKSUM_SEED as i64,
    },
    req!("RPC_REQ_SEQ", seq),
    req!("RPC_REQ_OP", op),
    req!("RPC_REQ_LEN", len),
    req!("RPC_REQ_FLAGS", flags),
    req!("RPC_REQ_ARG", arg),
    req!("RPC_REQ_SENT_AT", sent_at),
    resp!("RPC_RESP_SEQ", seq),
    resp!("RPC_RESP_STATUS", status),
    resp!("RPC_RESP_LEN", len),
    resp!("RPC_RESP_CHECKSUM", checksum),
    resp!("RPC_RESP_STARTED_AT", started_at),
    resp!("RPC_RESP_DONE_AT", done_at),
    resp!("RPC_RESP_SERVED", served),
    resp!("RPC_RESP_CORE", core),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A boot that serves the test operation.
    fn check_on(req: &Request) -> Result<Call, i32> {
        check(req, true)
    }

    fn req(op: u32, len: u32) -> Request {
        Request {
            op,
            len,
            ..Default::default()
        }
    }

    #[test]
    fn layout() {
        assert_eq!(core::mem::offset_of!(Response, done_at), 24);
    }

    #[test]
    fn requests_are_checked() {
        assert_eq!(check_on(&req(OP_SEND, 0)), Ok(Call::Send { len: 0 }));
        assert_eq!(
            check_on(&req(OP_ECHO, RPC_MAX_DATA)),
            Ok(Call::Echo { len: 65536 })
        );
        assert_eq!(
            check_on(&req(OP_SEND, RPC_MAX_DATA + 1)),
            Err(STATUS_BAD_LENGTH)
        );
        // A negative length, as Linux's int would write it.
        assert_eq!(
            check_on(&req(OP_ECHO, -1i32 as u32)),
            Err(STATUS_BAD_LENGTH)
        );
        assert_eq!(check_on(&req(0, 4)), Err(STATUS_BAD_OP));
        assert_eq!(check_on(&req(99, 4)), Err(STATUS_BAD_OP));
        let mut r = req(OP_STALL, 0);
        r.arg = MAX_STALL_MS;
        assert_eq!(check_on(&r), Ok(Call::Stall { ms: 2000 }));
        r.arg = MAX_STALL_MS + 1;
        assert_eq!(check_on(&r), Err(STATUS_BAD_ARG));
        let mut r = req(OP_SEND, 8);
        r.flags = FLAG_NOTIFY;
        assert!(check_on(&r).is_ok());
        r.flags = 2;
        assert_eq!(check_on(&r), Err(STATUS_BAD_ARG));
    }

    #[test]
    fn the_stall_test_operation_is_served_only_when_the_boot_asks() {
        let mut r = req(OP_STALL, 0);
        r.arg = 10;
        assert_eq!(check(&r, false), Err(STATUS_DISABLED));
        assert_eq!(check(&r, true), Ok(Call::Stall { ms: 10 }));
        assert!(
            is_fast(&check(&r, false)),
            "refused at once, in the handler"
        );
        // The other operations do not depend on it.
        assert_eq!(check(&req(OP_SEND, 8), false), Ok(Call::Send { len: 8 }));
        assert_eq!(check(&req(OP_ECHO, 8), false), Ok(Call::Echo { len: 8 }));
    }

    #[test]
    fn only_short_copies_and_refusals_are_fast() {
        assert!(is_fast(&check_on(&req(OP_SEND, 0))));
        assert!(is_fast(&check_on(&req(OP_ECHO, FAST_MAX as u32))));
        assert!(!is_fast(&check_on(&req(OP_ECHO, FAST_MAX as u32 + 1))));
        assert!(!is_fast(&check_on(&req(OP_STALL, 0))));
        assert!(
            is_fast(&check_on(&req(OP_SEND, u32::MAX))),
            "refused at once"
        );
        assert!(is_fast(&check_on(&req(7, 0))));
    }

    #[test]
    fn checksum_sees_every_byte_and_the_length() {
        let a = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        let base = checksum(&a);
        for i in 0..a.len() {
            let mut b = a;
            b[i] ^= 0x40;
            assert_ne!(checksum(&b), base, "byte {i}");
        }
        assert_ne!(checksum(&a[..8]), checksum(&[1, 2, 3, 4, 5, 6, 7, 8, 0]));
        assert_ne!(checksum(&[]), checksum(&[0]));
        // Incremental over words as the server does it.
        let mut c = Checksum::new(9);
        c = c.word(u64::from_le_bytes([1, 2, 3, 4, 5, 6, 7, 8]));
        c = c.word(9);
        assert_eq!(c.finish(), base);
    }

    #[test]
    fn channels_are_dealt_round_the_server_cores() {
        assert_eq!(server_core(0, 0), None);
        assert_eq!(server_core(0b1000, 0), Some(3));
        assert_eq!(server_core(0b1000, 3), Some(3));
        assert_eq!(server_core(0b1000, 4), None);
        assert_eq!(server_core(0b0110, 0), Some(1));
        assert_eq!(server_core(0b0110, 1), Some(2));
        assert_eq!(server_core(0b0110, 2), Some(1));
        assert_eq!(server_core(0xFF, 3), Some(3));
    }
}
