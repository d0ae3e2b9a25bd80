//! The RTOS's end of RPMsg over Linux's virtio-rpmsg: sessions, name
//! service announcements and the services' messages, one bounded pass at a
//! time.
//!
//! Vring 0 is Linux's receive ring (the RTOS writes into its buffers),
//! vring 1 its send ring (the RTOS reads them); both point into the buffer
//! pool (`tandem_abi::rpmsg`). A pass ([`Transport::pass`]):
//!
//! 1. reads Linux's session once: a new one (Linux attaches, restarted or
//!    rebound) makes the RTOS forget its ring indexes and acknowledge it;
//! 2. reads the vdev's status once: DRIVER_OK starts serving (the name
//!    service then announces every service, if Linux took the feature),
//!    its absence stops it;
//! 3. serves at most `budget` messages of the send ring, each answered
//!    into a buffer of the receive ring: the message is copied into RTOS
//!    memory (at most one buffer's bytes), its send buffer given back, its
//!    header checked (the length within what was copied, the destination a
//!    service), the service called, the answer written;
//! 4. publishes its state and counts in the control words.
//!
//! A ring that breaks the rules (`vring::Fault`) ends the session: the
//! RTOS touches neither ring until Linux starts another. A message the
//! RTOS cannot deliver (a bad header, no such service) is dropped and
//! counted, its buffer given back.

use crate::Window;
use crate::message::{HEADER, Header, NS_BYTES, announcement};
use crate::vring::{Chain, Direction, Fault, Geometry, Pool, Queue};
use tandem_abi::layout::{
    RPMSG_BUFFER_SIZE, RPMSG_END, RPMSG_OFFSET, RPMSG_POOL_BYTES, RPMSG_POOL_OFFSET,
    RPMSG_VRING_ALIGN, RPMSG_VRING_NUM, rpmsg_vring_offset,
};
use tandem_abi::rpmsg::{
    CONTROL_ACK, CONTROL_OFFSET, CONTROL_SESSION, Control, MAX_PAYLOAD, NS_ADDR, ResourceTable,
    SERVICE_ADDR_BASE, STATE_READY, STATE_REFUSED, STATE_RUNNING, STATUS_DRIVER_OK,
    VIRTIO_RPMSG_F_NS,
};

/// Bytes of RPMsg's part of the region: the window's size.
pub const WINDOW_BYTES: usize = RPMSG_END - RPMSG_OFFSET;
/// Bytes of one buffer.
pub const BUFFER: usize = RPMSG_BUFFER_SIZE as usize;
/// Most payload bytes of a message.
pub const PAYLOAD: usize = MAX_PAYLOAD as usize;
/// Offset of the vdev's status byte in the window.
pub const STATUS: usize = core::mem::offset_of!(ResourceTable, status);
/// Offset of the features Linux accepted.
pub const GFEATURES: usize = core::mem::offset_of!(ResourceTable, gfeatures);

/// Where vring `i` lies in the window.
pub const fn geometry(i: usize) -> Geometry {
    Geometry {
        base: rpmsg_vring_offset(i) - RPMSG_OFFSET,
        num: RPMSG_VRING_NUM as u16,
        align: RPMSG_VRING_ALIGN as usize,
    }
}

/// The buffer pool of a region at physical `base`.
pub const fn pool(base: u64) -> Pool {
    Pool {
        addr: base + RPMSG_POOL_OFFSET as u64,
        at: RPMSG_POOL_OFFSET - RPMSG_OFFSET,
        len: RPMSG_POOL_BYTES,
    }
}

/// The services the transport serves: service `i` listens at
/// `SERVICE_ADDR_BASE + i` and is announced by its name.
pub trait Services {
    /// How many.
    fn count(&self) -> usize;
    /// Service `i`'s name.
    fn name(&self, i: usize) -> &str;
    /// Service `i` answers `request` from address `src` into `reply` (at
    /// most [`PAYLOAD`] bytes): how many bytes, or `None` for no answer.
    fn serve(&self, i: usize, src: u32, request: &[u8], reply: &mut [u8]) -> Option<usize>;
}

/// Where the transport is in a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Waiting for DRIVER_OK (its indexes at 0).
    Ready,
    /// Serving.
    Running,
    /// A ring broke the rules: nothing until the next session.
    Refused(Fault),
}

/// What a pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Linux wants an interrupt (a buffer was given back on a ring whose
    /// driver did not ask for none).
    pub notify: bool,
    /// Messages are left that the budget did not cover: pass again.
    pub more: bool,
    /// What the pass read, for the doorbell's look ([`Seen::wants_pass`]).
    pub seen: Seen,
}

/// The words a pass acted on: if the live ones differ, something happened
/// since (a doorbell's top half compares, without touching the
/// transport).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// Linux's session.
    pub session: u32,
    /// The vdev's status.
    pub status: u8,
    /// The send ring's available index.
    pub tx: u16,
    /// The receive ring's available index.
    pub rx: u16,
}

impl Seen {
    /// The live words (four reads).
    pub fn read(w: &impl Window) -> Seen {
        Seen {
            session: w.read_u32(CONTROL_SESSION),
            status: w.read_u8(STATUS),
            tx: w.read_u16(geometry(1).avail_idx()),
            rx: w.read_u16(geometry(0).avail_idx()),
        }
    }

    /// Whether the transport must look again, `live` being the words now.
    pub fn wants_pass(&self, live: &Seen) -> bool {
        self.pack() != live.pack()
    }

    /// Packed into a word (for one atomic the top half reads whole): the
    /// session's low 24 bits (16 million sessions between two passes would
    /// be needed to hide one), the status, both indexes.
    pub const fn pack(&self) -> u64 {
        ((self.session & 0xFF_FFFF) as u64) << 40
            | (self.status as u64) << 32
            | (self.tx as u64) << 16
            | self.rx as u64
    }

    /// From [`Seen::pack`] (the session's low 24 bits only).
    pub const fn unpack(word: u64) -> Seen {
        Seen {
            session: (word >> 40) as u32,
            status: (word >> 32) as u8,
            tx: (word >> 16) as u16,
            rx: word as u16,
        }
    }
}

/// Counts since boot (published in the control words).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages a service took.
    pub served: u32,
    /// Messages dropped.
    pub dropped: u32,
    /// Sessions refused.
    pub refused: u32,
    /// Sessions served.
    pub sessions: u32,
}

/// The RTOS's end: its own indexes and copies, never read back from the
/// region.
#[derive(Debug)]
pub struct Transport {
    rx: Queue,
    tx: Queue,
    pool: Pool,
    session: u32,
    state: State,
    /// Services announced this session.
    announced: usize,
    stats: Stats,
    last_fault: u32,
    message: [u8; BUFFER],
    reply: [u8; PAYLOAD],
}

impl Transport {
    /// Before any session, for a region at physical `base`.
    pub const fn new(base: u64) -> Transport {
        Transport {
            rx: Queue::new(geometry(0)),
            tx: Queue::new(geometry(1)),
            pool: pool(base),
            session: 0,
            state: State::Ready,
            announced: 0,
            stats: Stats {
                served: 0,
                dropped: 0,
                refused: 0,
                sessions: 0,
            },
            last_fault: 0,
            message: [0; BUFFER],
            reply: [0; PAYLOAD],
        }
    }

    /// Writes the resource table and zeroed control words (at boot, before
    /// Linux runs).
    pub fn publish_table(&self, w: &mut impl Window) {
        let t = ResourceTable::new(self.pool.addr - RPMSG_POOL_OFFSET as u64);
        let words = [
            t.ver,
            t.num,
            t.reserved[0],
            t.reserved[1],
            t.offset[0],
            t.kind,
            t.id,
            t.notifyid,
            t.dfeatures,
            t.gfeatures,
            t.config_len,
            u32::from_le_bytes([t.status, t.num_of_vrings, 0, 0]),
        ];
        for (i, word) in words.iter().enumerate() {
            w.write_u32(4 * i, *word);
        }
        for (i, r) in t.vring.iter().enumerate() {
            let at = 48 + 20 * i;
            for (j, word) in [r.da, r.align, r.num, r.notifyid, r.pa].iter().enumerate() {
                w.write_u32(at + 4 * j, *word);
            }
        }
        w.write_bytes(CONTROL_OFFSET, &[0; core::mem::size_of::<Control>()]);
    }

    /// Its state.
    pub const fn state(&self) -> State {
        self.state
    }

    /// Its counts.
    pub const fn stats(&self) -> Stats {
        self.stats
    }

    /// One pass (the module's comment), serving at most `budget` messages.
    pub fn pass(&mut self, w: &mut impl Window, services: &impl Services, budget: usize) -> Pass {
        let mut seen = Seen {
            session: w.read_u32(CONTROL_SESSION),
            ..Seen::default()
        };
        if seen.session != self.session {
            self.session = seen.session;
            self.rx.reset();
            self.tx.reset();
            self.state = State::Ready;
            w.write_u32(CONTROL_ACK, seen.session);
        }
        seen.status = w.read_u8(STATUS);
        let running = seen.status & STATUS_DRIVER_OK != 0;
        let mut pass = Pass::default();
        match self.state {
            State::Ready if running => {
                self.state = State::Running;
                self.stats.sessions += 1;
                let features = w.read_u32(GFEATURES);
                // Without the name service Linux binds nothing by name:
                // there is nothing to announce.
                self.announced = if features & (1 << VIRTIO_RPMSG_F_NS) != 0 {
                    0
                } else {
                    services.count()
                };
            }
            State::Running if !running => {
                // Linux reset the device: its rings start again at 0.
                self.state = State::Ready;
                self.rx.reset();
                self.tx.reset();
            }
            _ => {}
        }
        if self.state == State::Running {
            match self.serve(w, services, budget, &mut seen) {
                Ok(p) => pass = p,
                Err(fault) => {
                    self.state = State::Refused(fault);
                    self.stats.refused += 1;
                    self.last_fault = fault.code();
                }
            }
        } else {
            // Not serving: only a new session or status needs a pass, so
            // the look is told the indexes as they are.
            seen.tx = w.read_u16(geometry(1).avail_idx());
            seen.rx = w.read_u16(geometry(0).avail_idx());
        }
        pass.seen = seen;
        self.publish(w);
        pass
    }

    /// Writes the state and counts into the control words.
    fn publish(&self, w: &mut impl Window) {
        let state = match self.state {
            State::Ready => STATE_READY,
            State::Running => STATE_RUNNING,
            State::Refused(_) => STATE_REFUSED,
        };
        let c = |field: usize| CONTROL_OFFSET + field;
        w.write_u32(c(core::mem::offset_of!(Control, state)), state);
        w.write_u32(c(core::mem::offset_of!(Control, fault)), self.last_fault);
        w.write_u32(
            c(core::mem::offset_of!(Control, refused)),
            self.stats.refused,
        );
        w.write_u32(c(core::mem::offset_of!(Control, served)), self.stats.served);
        w.write_u32(
            c(core::mem::offset_of!(Control, dropped)),
            self.stats.dropped,
        );
        w.write_u32(
            c(core::mem::offset_of!(Control, sessions)),
            self.stats.sessions,
        );
    }

    /// Announcements, then messages, while the receive ring has buffers
    /// for their answers.
    fn serve(
        &mut self,
        w: &mut impl Window,
        services: &impl Services,
        budget: usize,
        seen: &mut Seen,
    ) -> Result<Pass, Fault> {
        let mut rx_left = self.rx.available(w)?;
        seen.rx = self.rx.taken().wrapping_add(rx_left);
        let (mut gave_rx, mut gave_tx) = (false, false);
        while self.announced < services.count() && rx_left > 0 {
            let i = self.announced;
            let ns = announcement(services.name(i), SERVICE_ADDR_BASE + i as u32);
            let c = self.rx.take(w, &self.pool, Direction::Write)?;
            rx_left -= 1;
            self.answer(w, c, SERVICE_ADDR_BASE + i as u32, NS_ADDR, &ns)?;
            gave_rx = true;
            self.announced += 1;
        }
        let mut pass = Pass::default();
        if self.announced == services.count() {
            let waiting = self.tx.available(w)?;
            seen.tx = self.tx.taken().wrapping_add(waiting);
            let todo = usize::from(waiting).min(budget);
            let mut done = 0;
            while done < todo && rx_left > 0 {
                done += 1;
                let c = self.tx.take(w, &self.pool, Direction::Read)?;
                let [segment] = *c.segments() else {
                    return Err(Fault::Segments { head: c.head });
                };
                let n = (segment.len as usize).min(BUFFER);
                w.read_bytes(segment.at, &mut self.message[..n]);
                self.tx.give(w, c.head, 0);
                gave_tx = true;
                let Some((service, from, len)) = self.route(n, services.count()) else {
                    self.stats.dropped += 1;
                    continue;
                };
                let (request, reply) = (&self.message[HEADER..HEADER + len], &mut self.reply);
                self.stats.served += 1;
                let Some(r) = services.serve(service, from, request, reply) else {
                    continue;
                };
                let r = r.min(PAYLOAD);
                let c = self.rx.take(w, &self.pool, Direction::Write)?;
                rx_left -= 1;
                let reply = self.reply;
                self.answer(w, c, SERVICE_ADDR_BASE + service as u32, from, &reply[..r])?;
                gave_rx = true;
            }
            pass.more = done < usize::from(waiting) && rx_left > 0;
        }
        pass.notify =
            (gave_rx && self.rx.wants_interrupt(w)) || (gave_tx && self.tx.wants_interrupt(w));
        Ok(pass)
    }

    /// The copied message's service, sender and payload length, if its
    /// header (read from the RTOS's copy of `n` bytes) is one to deliver.
    fn route(&self, n: usize, services: usize) -> Option<(usize, u32, usize)> {
        let header: &[u8; HEADER] = self.message.get(..HEADER)?.try_into().ok()?;
        let h = Header::parse(header);
        let len = usize::from(h.len);
        if n < HEADER || len > n - HEADER {
            return None;
        }
        let service = h.dst.checked_sub(SERVICE_ADDR_BASE)? as usize;
        (service < services).then_some((service, h.src, len))
    }

    /// Writes a message from `src` to `dst` into chain `c` of the receive
    /// ring (one buffer, long enough) and gives it back.
    fn answer(
        &mut self,
        w: &mut impl Window,
        c: Chain,
        src: u32,
        dst: u32,
        payload: &[u8],
    ) -> Result<(), Fault> {
        let [segment] = *c.segments() else {
            return Err(Fault::Segments { head: c.head });
        };
        let len = HEADER + payload.len();
        if (segment.len as usize) < len {
            return Err(Fault::Short {
                at: c.head,
                len: segment.len,
            });
        }
        let h = Header {
            src,
            dst,
            len: payload.len() as u16,
            flags: 0,
        };
        w.write_bytes(segment.at, &h.bytes());
        w.write_bytes(segment.at + HEADER, payload);
        self.rx.give(w, c.head, len as u32);
        Ok(())
    }
}

const _: () = assert!(NS_BYTES <= PAYLOAD);

#[cfg(test)]
pub(crate) mod tests;
