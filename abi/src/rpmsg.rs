//! RPMsg between Linux and the RTOS (OpenAMP's protocol over virtio): what
//! both sides agree on in the shared region. Where each part lies is
//! [`crate::layout`]'s; this module says what is in them.
//!
//! ```text
//! RPMSG_OFFSET          the resource table (written by the RTOS at boot,
//!                       before Linux runs; then Linux's remoteproc core
//!                       writes the vdev's status, features and the
//!                       vrings' notify IDs into it, as on any remoteproc)
//! RPMSG_OFFSET + 0x800  the control words (Linux's session, the RTOS's
//!                       acknowledgement, state and counts)
//! vring 0, vring 1      Linux's receive ring and its send ring (split
//!                       virtqueues of RPMSG_VRING_NUM entries)
//! RPMSG_POOL_OFFSET     the buffers both rings point into (Linux's
//!                       `vdev0buffer` carveout), RPMSG_BUFFER_SIZE each
//! ```
//!
//! The resource table is Linux's `struct resource_table` with one entry, a
//! `fw_rsc_vdev` (virtio ID 7, rpmsg) with two `fw_rsc_vdev_vring`s, the
//! name-service feature offered. Linux's Tandem remoteproc driver attaches
//! (the RTOS already runs), registers the vrings and the pool as
//! carveouts at these offsets, and the stock virtio-rpmsg stack does the
//! rest. Doorbells: Linux → RTOS by SiP `RPMSG_NOTIFY`, which raises the
//! RPC doorbell SGI on the RPMsg core ([`core`]); RTOS → Linux by the
//! doorbell SPI, as RPC's completions.
//!
//! Sessions. The RTOS keeps its own ring indexes; a Linux that starts again
//! (a restart, a rebind of its driver) zeroes the rings, so the two must
//! agree when that happens. Before it touches the rings Linux's driver
//! clears the vdev's status, writes `Control::session` + 1 and rings
//! ([`NOTIFY_CONTROL`]); the RTOS stops touching the rings, forgets its
//! indexes and writes `Control::ack` = that session; Linux waits for the
//! acknowledgement before it sets the rings up. The RTOS starts serving
//! when it next sees DRIVER_OK in the status with its acknowledged session.
//!
//! Nothing Linux writes here is trusted by the RTOS (`tandem-rpmsg`):
//! every index, address, length and flag is read once, checked against
//! the ring and the pool, and never trusted to end a loop.

use crate::CConstant;
use crate::layout::{
    PAGE, RPMSG_BUFFER_SIZE, RPMSG_OFFSET, RPMSG_POOL_OFFSET, RPMSG_VRING_ALIGN, RPMSG_VRING_NUM,
    rpmsg_vring_offset,
};

/// `fw_resource_type` RSC_VDEV.
pub const RSC_VDEV: u32 = 3;
/// Virtio device ID of rpmsg.
pub const VIRTIO_ID_RPMSG: u32 = 7;
/// Feature bit: the device announces its services (`VIRTIO_RPMSG_F_NS`).
pub const VIRTIO_RPMSG_F_NS: u32 = 0;
/// Virtio status bits (`include/uapi/linux/virtio_config.h`).
pub const STATUS_ACKNOWLEDGE: u8 = 1;
/// The driver knows the device.
pub const STATUS_DRIVER: u8 = 2;
/// The driver is ready: its rings are set up.
pub const STATUS_DRIVER_OK: u8 = 4;
/// The features are agreed.
pub const STATUS_FEATURES_OK: u8 = 8;

/// Offset of the vdev entry in the resource table (after the table's
/// header and its one offset).
pub const VDEV_ENTRY: u32 = 20;
/// Offset of the control words from [`crate::layout::RPMSG_OFFSET`].
pub const CONTROL_OFFSET: usize = 0x800;

/// `RPMSG_NOTIFY`'s argument for the control words: the session changed.
/// (0 and 1 are the vrings' notify IDs.)
pub const NOTIFY_CONTROL: u32 = 2;

/// Bytes of an RPMsg message header (`struct rpmsg_hdr`).
pub const HEADER_BYTES: u32 = 16;
/// Most payload bytes one message carries.
pub const MAX_PAYLOAD: u32 = RPMSG_BUFFER_SIZE - HEADER_BYTES;
/// The name service's address (`RPMSG_NS_ADDR`).
pub const NS_ADDR: u32 = 53;
/// Bytes of a service name, NUL included (`RPMSG_NAME_SIZE`).
pub const NAME_BYTES: usize = 32;
/// The RTOS's first endpoint address: service `i` of the applications
/// table listens at `SERVICE_ADDR_BASE + i` (below it, addresses are
/// reserved, as OpenAMP reserves them).
pub const SERVICE_ADDR_BASE: u32 = 0x400;

/// The transport's state, as the RTOS publishes it in `Control::state`.
pub const STATE_IDLE: u32 = 0;
/// Acknowledged a session; waiting for DRIVER_OK.
pub const STATE_READY: u32 = 1;
/// Serving the rings.
pub const STATE_RUNNING: u32 = 2;
/// Refused this session's rings (a ring broke the rules): it serves
/// nothing until Linux starts a new session.
pub const STATE_REFUSED: u32 = 3;

/// One vring as the resource table describes it (`fw_rsc_vdev_vring`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vring {
    /// Device address: where the ring lies (physical, 32-bit).
    pub da: u32,
    /// Alignment of its used ring.
    pub align: u32,
    /// Entries.
    pub num: u32,
    /// Linux's notify ID for it (Linux writes it).
    pub notifyid: u32,
    /// Physical address (unused by Linux for vrings; 0).
    pub pa: u32,
}

/// The resource table, as Linux's `struct resource_table` with one
/// `fw_rsc_vdev` entry and two vrings (all packed; no padding here).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceTable {
    /// Table version: 1.
    pub ver: u32,
    /// Entries: 1.
    pub num: u32,
    /// Zero.
    pub reserved: [u32; 2],
    /// Offset of the entry: [`VDEV_ENTRY`].
    pub offset: [u32; 1],
    /// `fw_rsc_hdr.type`: [`RSC_VDEV`].
    pub kind: u32,
    /// Virtio device ID: [`VIRTIO_ID_RPMSG`].
    pub id: u32,
    /// Unused by Linux.
    pub notifyid: u32,
    /// Features the device offers.
    pub dfeatures: u32,
    /// Features Linux accepted (Linux writes them).
    pub gfeatures: u32,
    /// Bytes of config space after the vrings: 0.
    pub config_len: u32,
    /// Virtio status (Linux writes it).
    pub status: u8,
    /// Vrings: 2.
    pub num_of_vrings: u8,
    /// Zero.
    pub reserved_vdev: [u8; 2],
    /// Linux's receive ring, then its send ring.
    pub vring: [Vring; 2],
}

/// Bytes of the resource table (what Linux's driver hands its core).
pub const TABLE_BYTES: usize = core::mem::size_of::<ResourceTable>();
const _: () = assert!(TABLE_BYTES == 88);
const _: () = assert!(core::mem::offset_of!(ResourceTable, kind) == VDEV_ENTRY as usize);
const _: () = assert!(TABLE_BYTES <= CONTROL_OFFSET);

impl ResourceTable {
    /// The table the RTOS publishes for a region at physical `base`.
    pub const fn new(base: u64) -> ResourceTable {
        const fn ring(base: u64, i: usize) -> Vring {
            Vring {
                da: (base + rpmsg_vring_offset(i) as u64) as u32,
                align: RPMSG_VRING_ALIGN,
                num: RPMSG_VRING_NUM,
                // Linux allocates them (FW_RSC_ADDR_ANY until then).
                notifyid: u32::MAX,
                pa: 0,
            }
        }
        ResourceTable {
            ver: 1,
            num: 1,
            reserved: [0; 2],
            offset: [VDEV_ENTRY],
            kind: RSC_VDEV,
            id: VIRTIO_ID_RPMSG,
            notifyid: 0,
            dfeatures: 1 << VIRTIO_RPMSG_F_NS,
            gfeatures: 0,
            config_len: 0,
            status: 0,
            num_of_vrings: 2,
            reserved_vdev: [0; 2],
            vring: [ring(base, 0), ring(base, 1)],
        }
    }
}

/// The control words, after the table in its page. Linux writes
/// `session` only; the RTOS writes the rest and never reads them back.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Control {
    /// Linux: its session (one more at each attach and detach).
    pub session: u32,
    /// RTOS: the session it last reset its ring indexes for.
    pub ack: u32,
    /// RTOS: `STATE_*`.
    pub state: u32,
    /// RTOS: why it refused the last session it refused (a
    /// `tandem_rpmsg` fault code), 0 if none.
    pub fault: u32,
    /// RTOS: sessions refused since boot.
    pub refused: u32,
    /// RTOS: messages answered since boot.
    pub served: u32,
    /// RTOS: messages dropped since boot (no such endpoint, a bad header).
    pub dropped: u32,
    /// RTOS: sessions it started serving since boot.
    pub sessions: u32,
}

/// Offsets of the control words' fields from [`RPMSG_OFFSET`].
pub const CONTROL_SESSION: usize = CONTROL_OFFSET + core::mem::offset_of!(Control, session);
/// See [`Control::ack`].
pub const CONTROL_ACK: usize = CONTROL_OFFSET + core::mem::offset_of!(Control, ack);
const _: () = assert!(CONTROL_OFFSET + core::mem::size_of::<Control>() <= PAGE);
const _: () = assert!(RPMSG_OFFSET + PAGE <= rpmsg_vring_offset(0));
const _: () = assert!(rpmsg_vring_offset(1) < RPMSG_POOL_OFFSET);

/// The core that serves RPMsg, of the RPC server cores (`rpc_cores`, the
/// boot configuration's mask): the lowest. `None`: no RPC server, so no
/// RPMsg either.
pub const fn core(rpc_cores: u8) -> Option<usize> {
    if rpc_cores == 0 {
        None
    } else {
        Some(rpc_cores.trailing_zeros() as usize)
    }
}

macro_rules! rpmsg_constant {
    ($name:literal, $value:expr) => {
        CConstant {
            name: $name,
            value: $value as i64,
        }
    };
}

pub(crate) const C_CONSTANTS: &[CConstant] = &[
    rpmsg_constant!("RPMSG_TABLE_BYTES", TABLE_BYTES),
    rpmsg_constant!("RPMSG_VDEV_ENTRY", VDEV_ENTRY),
    rpmsg_constant!("RPMSG_CONTROL_OFFSET", CONTROL_OFFSET),
    rpmsg_constant!("RPMSG_CONTROL_SESSION", CONTROL_SESSION),
    rpmsg_constant!("RPMSG_CONTROL_ACK", CONTROL_ACK),
    rpmsg_constant!(
        "RPMSG_CONTROL_STATE",
        CONTROL_OFFSET + core::mem::offset_of!(Control, state)
    ),
    rpmsg_constant!(
        "RPMSG_CONTROL_FAULT",
        CONTROL_OFFSET + core::mem::offset_of!(Control, fault)
    ),
    rpmsg_constant!(
        "RPMSG_CONTROL_REFUSED",
        CONTROL_OFFSET + core::mem::offset_of!(Control, refused)
    ),
    rpmsg_constant!(
        "RPMSG_CONTROL_SERVED",
        CONTROL_OFFSET + core::mem::offset_of!(Control, served)
    ),
    rpmsg_constant!(
        "RPMSG_CONTROL_DROPPED",
        CONTROL_OFFSET + core::mem::offset_of!(Control, dropped)
    ),
    rpmsg_constant!(
        "RPMSG_CONTROL_SESSIONS",
        CONTROL_OFFSET + core::mem::offset_of!(Control, sessions)
    ),
    rpmsg_constant!("RPMSG_NOTIFY_CONTROL", NOTIFY_CONTROL),
    rpmsg_constant!("RPMSG_STATE_IDLE", STATE_IDLE),
    rpmsg_constant!("RPMSG_STATE_READY", STATE_READY),
    rpmsg_constant!("RPMSG_STATE_RUNNING", STATE_RUNNING),
    rpmsg_constant!("RPMSG_STATE_REFUSED", STATE_REFUSED),
    rpmsg_constant!("RPMSG_HEADER_BYTES", HEADER_BYTES),
    rpmsg_constant!("RPMSG_MAX_PAYLOAD", MAX_PAYLOAD),
    rpmsg_constant!("RPMSG_SERVICE_ADDR_BASE", SERVICE_ADDR_BASE),
];

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn the_table_is_linuxs_resource_table_with_one_vdev() {
        // Offsets of Linux's packed structs (include/linux/remoteproc.h).
        assert_eq!(offset_of!(ResourceTable, offset), 16);
        assert_eq!(offset_of!(ResourceTable, id), 24);
        assert_eq!(offset_of!(ResourceTable, config_len), 40);
        assert_eq!(offset_of!(ResourceTable, status), 44);
        assert_eq!(offset_of!(ResourceTable, num_of_vrings), 45);
        assert_eq!(offset_of!(ResourceTable, vring), 48);
        assert_eq!(core::mem::size_of::<Vring>(), 20);
        let t = ResourceTable::new(0x7FE0_0000);
        assert_eq!(t.vring[0].da, 0x7FF5_5000);
        assert_eq!(t.vring[1].da, 0x7FF5_8000);
        assert_eq!((t.vring[0].num, t.vring[0].align), (256, 4096));
        assert_eq!(t.dfeatures, 1, "the name service offered");
    }

    #[test]
    fn rpmsg_is_served_on_the_lowest_rpc_core() {
        assert_eq!(core(0), None);
        assert_eq!(core(0b1000), Some(3));
        assert_eq!(core(0b0110), Some(1));
    }
}
