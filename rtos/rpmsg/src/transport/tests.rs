//! Host tests of the transport against a model of Linux's side
//! (`Linux`: the remoteproc core and virtio-rpmsg as far as the rings go),
//! well behaved and hostile, over a byte array that panics on any access
//! outside RPMsg's part of the region.

use super::*;
use crate::vring::{AVAIL_F_NO_INTERRUPT, DESC_F_INDIRECT, DESC_F_NEXT, DESC_F_WRITE};
use core::cell::{Cell, RefCell};
use std::vec;
use std::vec::Vec;
use tandem_abi::rpmsg::{CONTROL_OFFSET, STATUS_ACKNOWLEDGE, STATUS_DRIVER, STATUS_FEATURES_OK};

/// The region's physical base in these tests.
const BASE: u64 = 0x7FE0_0000;

/// RPMsg's part of the region as a byte array; every access is checked
/// against it (a panic is an access outside the part), and reads can be
/// counted per byte.
pub(crate) struct Mem {
    bytes: Vec<u8>,
    counting: Cell<bool>,
    reads: RefCell<Vec<u32>>,
}

impl Mem {
    pub(crate) fn new() -> Mem {
        Mem {
            bytes: vec![0; WINDOW_BYTES],
            counting: Cell::new(false),
            reads: RefCell::new(vec![0; WINDOW_BYTES]),
        }
    }

    fn span(&self, at: usize, n: usize) -> core::ops::Range<usize> {
        assert!(
            at.checked_add(n).is_some_and(|end| end <= WINDOW_BYTES),
            "access outside RPMsg's part: {at:#x}+{n}"
        );
        at..at + n
    }

    fn read(&self, at: usize, n: usize) -> &[u8] {
        let r = self.span(at, n);
        if self.counting.get() {
            // A word counts once, at its first byte.
            self.reads.borrow_mut()[at] += 1;
        }
        &self.bytes[r]
    }

    pub(crate) fn count_reads(&self, on: bool) {
        self.reads.borrow_mut().fill(0);
        self.counting.set(on);
    }

    pub(crate) fn max_reads(&self) -> u32 {
        self.reads.borrow().iter().copied().max().unwrap_or(0)
    }

    pub(crate) fn reads_over(&self, n: u32) -> Vec<usize> {
        let r = self.reads.borrow();
        (0..r.len()).filter(|&i| r[i] > n).collect()
    }

    pub(crate) fn put_u16(&mut self, at: usize, v: u16) {
        let r = self.span(at, 2);
        self.bytes[r].copy_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn put_u32(&mut self, at: usize, v: u32) {
        let r = self.span(at, 4);
        self.bytes[r].copy_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn put_u64(&mut self, at: usize, v: u64) {
        let r = self.span(at, 8);
        self.bytes[r].copy_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn get_u16(&self, at: usize) -> u16 {
        let r = self.span(at, 2);
        u16::from_le_bytes(self.bytes[r].try_into().unwrap())
    }

    pub(crate) fn get_u32(&self, at: usize) -> u32 {
        let r = self.span(at, 4);
        u32::from_le_bytes(self.bytes[r].try_into().unwrap())
    }
}

impl Window for Mem {
    fn read_u16(&self, at: usize) -> u16 {
        u16::from_le_bytes(self.read(at, 2).try_into().unwrap())
    }
    fn read_u32(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.read(at, 4).try_into().unwrap())
    }
    fn read_u64(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.read(at, 8).try_into().unwrap())
    }
    fn read_u8(&self, at: usize) -> u8 {
        self.read(at, 1)[0]
    }
    fn write_u16(&mut self, at: usize, value: u16) {
        self.put_u16(at, value);
    }
    fn write_u32(&mut self, at: usize, value: u32) {
        self.put_u32(at, value);
    }
    fn read_bytes(&self, at: usize, into: &mut [u8]) {
        into.copy_from_slice(self.read(at, into.len()));
    }
    fn write_bytes(&mut self, at: usize, from: &[u8]) {
        let r = self.span(at, from.len());
        self.bytes[r].copy_from_slice(from);
    }
}

/// Services as the RTOS's table gives them: echo, an upper-caser, and one
/// that never answers.
struct Table;

const NAMES: [&str; 3] = ["tandem-echo", "rpmsg-client-sample", "quiet"];

impl Services for Table {
    fn count(&self) -> usize {
        NAMES.len()
    }
    fn name(&self, i: usize) -> &str {
        NAMES[i]
    }
    fn serve(&self, i: usize, _: u32, request: &[u8], reply: &mut [u8]) -> Option<usize> {
        match i {
            0 => {
                reply[..request.len()].copy_from_slice(request);
                Some(request.len())
            }
            1 => {
                for (r, b) in reply.iter_mut().zip(request) {
                    *r = b.to_ascii_uppercase();
                }
                Some(request.len())
            }
            _ => None,
        }
    }
}

fn echo_addr() -> u32 {
    SERVICE_ADDR_BASE
}

/// Linux's side, as far as the rings go: the remoteproc driver's session,
/// virtio's status, virtio-rpmsg's buffers (receive buffers the first
/// half of the pool, send buffers the second).
struct Linux {
    rx_avail: u16,
    rx_used: u16,
    tx_avail: u16,
    tx_used: u16,
    tx_next: u16,
    session: u32,
}

const NUM: u16 = RPMSG_VRING_NUM as u16;

impl Linux {
    fn pool_addr(i: u16) -> u64 {
        pool(BASE).addr + u64::from(i) * BUFFER as u64
    }

    fn pool_at(i: u16) -> usize {
        pool(BASE).at + usize::from(i) * BUFFER
    }

    /// What Linux's driver and virtio core do to attach, with `rt` (the
    /// RTOS) taking its passes when the doorbell would ring.
    fn attach(m: &mut Mem, rt: &mut Transport, last: u32) -> Linux {
        m.write_bytes(STATUS, &[0]);
        let session = last.wrapping_add(1);
        m.put_u32(CONTROL_SESSION, session);
        rt.pass(m, &Table, 64);
        assert_eq!(m.get_u32(CONTROL_ACK), session, "the RTOS acknowledged");
        // The rings zeroed, every receive buffer offered.
        for i in [0, 1] {
            let g = geometry(i);
            m.write_bytes(g.base, &vec![0; g.end() - g.base]);
        }
        let mut l = Linux {
            rx_avail: 0,
            rx_used: 0,
            tx_avail: 0,
            tx_used: 0,
            tx_next: 0,
            session,
        };
        for i in 0..NUM {
            l.offer_rx(m, i);
        }
        m.put_u32(GFEATURES, 1 << VIRTIO_RPMSG_F_NS);
        m.write_bytes(
            STATUS,
            &[STATUS_ACKNOWLEDGE | STATUS_DRIVER | STATUS_FEATURES_OK | STATUS_DRIVER_OK],
        );
        l
    }

    fn offer_rx(&mut self, m: &mut Mem, buffer: u16) {
        let g = geometry(0);
        let (a, len, f, _) = g.desc_fields(buffer);
        m.put_u64(a, Self::pool_addr(buffer));
        m.put_u32(len, BUFFER as u32);
        m.put_u16(f, DESC_F_WRITE);
        m.put_u16(g.avail_entry(self.rx_avail % NUM), buffer);
        self.rx_avail = self.rx_avail.wrapping_add(1);
        m.put_u16(g.avail_idx(), self.rx_avail);
    }

    /// Sends `payload` from `src` to `dst` in a send buffer, as
    /// `rpmsg_send` does (no kick: the test runs the pass).
    fn send(&mut self, m: &mut Mem, src: u32, dst: u32, payload: &[u8]) {
        let g = geometry(1);
        // Send buffers are the second half of the pool, reused as the
        // RTOS gives them back (virtio-rpmsg's get_a_tx_buf).
        let buffer = NUM + self.tx_next % NUM;
        let desc = self.tx_next % NUM;
        self.tx_next = self.tx_next.wrapping_add(1);
        let h = Header {
            src,
            dst,
            len: payload.len() as u16,
            flags: 0,
        };
        m.write_bytes(Self::pool_at(buffer), &h.bytes());
        m.write_bytes(Self::pool_at(buffer) + HEADER, payload);
        let (a, len, f, _) = g.desc_fields(desc);
        m.put_u64(a, Self::pool_addr(buffer));
        m.put_u32(len, (HEADER + payload.len()) as u32);
        m.put_u16(f, 0);
        m.put_u16(g.avail_entry(self.tx_avail % NUM), desc);
        self.tx_avail = self.tx_avail.wrapping_add(1);
        m.put_u16(g.avail_idx(), self.tx_avail);
    }

    /// Messages the RTOS wrote since the last call, each buffer offered
    /// again, as `rpmsg_recv_done` does.
    fn receive(&mut self, m: &mut Mem) -> Vec<(Header, Vec<u8>)> {
        let g = geometry(0);
        let mut out = Vec::new();
        while self.rx_used != m.get_u16(g.used_idx()) {
            let e = g.used_entry(self.rx_used % NUM);
            let (id, len) = (m.get_u32(e), m.get_u32(e + 4));
            assert!(id < u32::from(NUM), "used id in range");
            let at = Self::pool_at(id as u16);
            let mut hdr = [0; HEADER];
            m.read_bytes(at, &mut hdr);
            let h = Header::parse(&hdr);
            assert_eq!(len as usize, HEADER + usize::from(h.len));
            let mut payload = vec![0; usize::from(h.len)];
            m.read_bytes(at + HEADER, &mut payload);
            out.push((h, payload));
            self.rx_used = self.rx_used.wrapping_add(1);
            self.offer_rx(m, id as u16);
        }
        let t = geometry(1);
        self.tx_used = m.get_u16(t.used_idx());
        out
    }
}

fn booted() -> (Mem, Transport) {
    let mut m = Mem::new();
    let rt = Transport::new(BASE);
    rt.publish_table(&mut m);
    (m, rt)
}

fn state(m: &Mem) -> u32 {
    m.get_u32(CONTROL_OFFSET + core::mem::offset_of!(Control, state))
}

fn control(m: &Mem, field: usize) -> u32 {
    m.get_u32(CONTROL_OFFSET + field)
}

#[test]
fn the_published_table_is_what_linux_reads() {
    let (m, _) = booted();
    let mut want = Vec::new();
    let t = ResourceTable::new(BASE);
    // Word by word, as Linux reads the packed struct.
    for w in [
        t.ver,
        t.num,
        0,
        0,
        t.offset[0],
        t.kind,
        t.id,
        t.notifyid,
        t.dfeatures,
        0,
        0,
    ] {
        want.extend_from_slice(&w.to_le_bytes());
    }
    want.extend_from_slice(&[0, 2, 0, 0]);
    for r in t.vring {
        for w in [r.da, r.align, r.num, r.notifyid, r.pa] {
            want.extend_from_slice(&w.to_le_bytes());
        }
    }
    let mut got = vec![0; want.len()];
    m.read_bytes(0, &mut got);
    assert_eq!(got, want);
    assert_eq!(m.get_u32(48), (BASE + 0x15_5000) as u32, "vring 0's da");
}

#[test]
fn every_service_is_announced_when_linux_is_ready() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    let p = rt.pass(&mut m, &Table, 64);
    assert!(p.notify);
    let got = l.receive(&mut m);
    assert_eq!(got.len(), 3);
    for (i, (h, payload)) in got.iter().enumerate() {
        assert_eq!(h.dst, NS_ADDR);
        assert_eq!(h.src, SERVICE_ADDR_BASE + i as u32);
        assert_eq!(payload.as_slice(), &announcement(NAMES[i], h.src)[..]);
    }
    assert_eq!(state(&m), STATE_RUNNING);
    assert_eq!(rt.stats().sessions, 1);
}

#[test]
fn without_the_name_service_nothing_is_announced() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    m.put_u32(GFEATURES, 0);
    rt.pass(&mut m, &Table, 64);
    assert!(l.receive(&mut m).is_empty());
    l.send(&mut m, 1024, echo_addr(), b"still served");
    rt.pass(&mut m, &Table, 64);
    assert_eq!(l.receive(&mut m)[0].1, b"still served");
}

#[test]
fn a_hundred_messages_come_back_as_the_client_sample_sends_them() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    let sample = SERVICE_ADDR_BASE + 1;
    for i in 0..100 {
        l.send(&mut m, 1025, sample, b"hello world!");
        let p = rt.pass(&mut m, &Table, 64);
        assert!(p.notify && !p.more);
        let got = l.receive(&mut m);
        assert_eq!(got.len(), 1, "message {i}");
        assert_eq!(got[0].0.src, sample);
        assert_eq!(got[0].0.dst, 1025);
        assert_eq!(got[0].1, b"HELLO WORLD!");
    }
    assert_eq!(control(&m, core::mem::offset_of!(Control, served)), 100);
    assert_eq!(l.tx_used, 100, "every send buffer given back");
}

#[test]
fn payloads_of_every_size_echo_and_the_budget_bounds_a_pass() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    let sizes: Vec<usize> = (0..=PAYLOAD).step_by(31).chain([PAYLOAD]).collect();
    for &n in &sizes {
        let data: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
        l.send(&mut m, 1024, echo_addr(), &data);
    }
    let mut got = Vec::new();
    let mut passes = 0;
    loop {
        let p = rt.pass(&mut m, &Table, 4);
        passes += 1;
        got.extend(l.receive(&mut m));
        if !p.more {
            break;
        }
    }
    assert_eq!(passes, sizes.len().div_ceil(4));
    assert_eq!(got.len(), sizes.len());
    for (n, (_, payload)) in sizes.iter().zip(&got) {
        assert_eq!(payload.len(), *n);
        assert!(
            payload
                .iter()
                .enumerate()
                .all(|(i, b)| *b == (i * 7 + n) as u8)
        );
    }
}

#[test]
fn messages_wait_for_receive_buffers() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    // Linux holds every receive buffer (it does not offer them again).
    let g = geometry(0);
    let mut held = 0;
    while m.get_u16(g.used_idx()) != l.rx_avail {
        l.send(&mut m, 1024, echo_addr(), b"x");
        rt.pass(&mut m, &Table, 64);
        held += 1;
        l.rx_used = m.get_u16(g.used_idx());
    }
    assert_eq!(held, NUM, "every buffer used");
    l.send(&mut m, 1024, echo_addr(), b"waits");
    let p = rt.pass(&mut m, &Table, 64);
    assert!(!p.more && !p.notify, "no buffer to answer into: {p:?}");
    assert_eq!(m.get_u16(geometry(1).used_idx()), held, "not taken");
    l.offer_rx(&mut m, 0);
    rt.pass(&mut m, &Table, 64);
    assert_eq!(m.get_u16(g.used_idx()), l.rx_avail, "answered");
}

#[test]
fn no_interrupt_when_linux_asks_for_none() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    for ring in [0, 1] {
        m.put_u16(geometry(ring).avail_flags(), AVAIL_F_NO_INTERRUPT);
    }
    l.send(&mut m, 1024, echo_addr(), b"quiet");
    assert!(!rt.pass(&mut m, &Table, 64).notify);
    assert_eq!(l.receive(&mut m)[0].1, b"quiet", "answered all the same");
    // Only the send ring asks for none: the answer interrupts.
    m.put_u16(geometry(0).avail_flags(), 0);
    l.send(&mut m, 1024, echo_addr(), b"loud");
    assert!(rt.pass(&mut m, &Table, 64).notify);
}

#[test]
fn bad_headers_and_unknown_addresses_are_dropped_and_counted() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    l.send(&mut m, 1024, SERVICE_ADDR_BASE + 3, b"nobody");
    l.send(&mut m, 1024, 5, b"reserved");
    l.send(&mut m, 1024, SERVICE_ADDR_BASE + 2, b"no answer");
    // A header whose length claims more than the buffer holds.
    l.send(&mut m, 1024, echo_addr(), b"short");
    let (a, _, _, _) = geometry(1).desc_fields(3);
    let at = pool(BASE).locate(m.get_u64(a), 1).unwrap();
    m.put_u16(at + 12, 400);
    // A buffer shorter than a header.
    l.send(&mut m, 1024, echo_addr(), b"");
    let (_, len, _, _) = geometry(1).desc_fields(4);
    m.put_u32(len, 7);
    l.send(&mut m, 1024, echo_addr(), b"fine");
    rt.pass(&mut m, &Table, 64);
    let got = l.receive(&mut m);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, b"fine");
    assert_eq!(rt.stats().dropped, 4);
    assert_eq!(rt.stats().served, 2, "the quiet service took its message");
    assert_eq!(l.tx_used, 6, "every send buffer given back");
    assert_eq!(state(&m), STATE_RUNNING, "a bad message is not a bad ring");
}

impl Mem {
    fn get_u64(&self, at: usize) -> u64 {
        let r = self.span(at, 8);
        u64::from_le_bytes(self.bytes[r].try_into().unwrap())
    }
}

#[test]
fn a_new_session_starts_from_zeroed_rings() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    for _ in 0..300 {
        l.send(&mut m, 1024, echo_addr(), b"first");
        rt.pass(&mut m, &Table, 64);
        l.receive(&mut m);
    }
    // Linux restarts: a new session, zeroed rings.
    let mut l = Linux::attach(&mut m, &mut rt, l.session);
    assert_eq!(state(&m), STATE_READY, "the acknowledging pass");
    rt.pass(&mut m, &Table, 64);
    assert_eq!(l.receive(&mut m).len(), 3, "announced again");
    l.send(&mut m, 1024, echo_addr(), b"again");
    rt.pass(&mut m, &Table, 64);
    assert_eq!(l.receive(&mut m)[0].1, b"again");
    assert_eq!(rt.stats().sessions, 2);
    assert_eq!(rt.stats().refused, 0);
}

#[test]
fn a_reset_device_is_left_alone_until_it_is_ready_again() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    m.write_bytes(STATUS, &[0]);
    l.send(&mut m, 1024, echo_addr(), b"ignored");
    let before = m.bytes.clone();
    rt.pass(&mut m, &Table, 64);
    assert_eq!(state(&m), STATE_READY);
    let g = geometry(0);
    assert_eq!(m.bytes[g.base..], before[g.base..], "no ring touched");
}

/// Runs `hostile` (what a compromised Linux writes into a running
/// session), then passes: the session is refused with `code`, the rings
/// are left as they were, nothing outside RPMsg's part is touched (the
/// window panics), each pass is bounded, and a new session works.
fn refused_with(code: u32, hostile: impl Fn(&mut Mem, &mut Linux)) {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    l.send(&mut m, 1024, echo_addr(), b"before");
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    hostile(&mut m, &mut l);
    m.count_reads(true);
    rt.pass(&mut m, &Table, 64);
    // A send buffer copied before a receive ring's fault is given back;
    // after the fault nothing is.
    let used = [0, 1].map(|i| m.get_u16(geometry(i).used_idx()));
    for _ in 1..10 {
        rt.pass(&mut m, &Table, 64);
    }
    assert!(
        m.max_reads() <= 10,
        "a word read more than once a pass: {:?}",
        m.reads_over(10)
    );
    m.count_reads(false);
    assert_eq!(state(&m), STATE_REFUSED);
    assert_eq!(control(&m, core::mem::offset_of!(Control, fault)), code);
    assert_eq!(rt.stats().refused, 1);
    assert!(matches!(rt.state(), State::Refused(f) if f.code() == code));
    assert_eq!(
        [0, 1].map(|i| m.get_u16(geometry(i).used_idx())),
        used,
        "nothing given after the fault"
    );
    assert!(used[0] <= l.rx_used, "no answer written");
    let mut l = Linux::attach(&mut m, &mut rt, l.session);
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    l.send(&mut m, 1024, echo_addr(), b"after");
    rt.pass(&mut m, &Table, 64);
    assert_eq!(l.receive(&mut m)[0].1, b"after");
}

#[test]
fn an_available_index_past_the_ring_ends_the_session() {
    refused_with(1, |m, l| {
        m.put_u16(geometry(1).avail_idx(), l.tx_avail + NUM + 1)
    });
    // Behind what the RTOS took.
    refused_with(1, |m, l| {
        m.put_u16(geometry(0).avail_idx(), l.rx_used.wrapping_sub(1))
    });
}

#[test]
fn a_head_past_the_table_ends_the_session() {
    refused_with(2, |m, l| {
        l.send(m, 1024, echo_addr(), b"x");
        m.put_u16(geometry(1).avail_entry((l.tx_avail - 1) % NUM), NUM);
    });
}

#[test]
fn a_next_past_the_table_ends_the_session() {
    refused_with(3, |m, l| {
        l.send(m, 1024, echo_addr(), b"x");
        let (_, _, f, n) = geometry(1).desc_fields(1);
        m.put_u16(f, DESC_F_NEXT);
        m.put_u16(n, 0xFFFF);
    });
}

#[test]
fn a_loop_of_descriptors_ends_the_session() {
    // Three descriptors in a ring: more than MAX_SEGMENTS buffers.
    refused_with(5, |m, l| {
        l.send(m, 1024, echo_addr(), b"x");
        let g = geometry(1);
        for (d, next) in [(1, 2), (2, 3), (3, 1)] {
            let (a, len, f, n) = g.desc_fields(d);
            m.put_u64(a, Linux::pool_addr(NUM));
            m.put_u32(len, 16);
            m.put_u16(f, DESC_F_NEXT);
            m.put_u16(n, next);
        }
    });
    // A chain of two is within the segments, but RPMsg takes one buffer.
    refused_with(5, |m, l| {
        l.send(m, 1024, echo_addr(), b"x");
        let (_, _, f, n) = geometry(1).desc_fields(1);
        m.put_u16(f, DESC_F_NEXT);
        m.put_u16(n, 1);
    });
}

#[test]
fn descriptors_outside_the_pool_end_the_session() {
    for addr in [
        0,
        BASE,
        BASE + 0x15_5000,
        pool(BASE).addr - 512,
        u64::MAX - 8,
        0x0E10_0000,
    ] {
        refused_with(7, |m, l| {
            l.send(m, 1024, echo_addr(), b"x");
            let (a, _, _, _) = geometry(1).desc_fields(1);
            m.put_u64(a, addr);
        });
    }
    refused_with(7, |m, l| {
        l.send(m, 1024, echo_addr(), b"x");
        let (_, len, _, _) = geometry(1).desc_fields(1);
        m.put_u32(len, u32::MAX);
    });
    // A receive buffer outside the pool: the RTOS would write there.
    refused_with(7, |m, l| {
        let (a, _, _, _) = geometry(0).desc_fields(l.rx_used % NUM);
        m.put_u64(a, BASE);
        l.send(m, 1024, echo_addr(), b"x");
    });
}

#[test]
fn indirect_and_unknown_flags_and_wrong_directions_end_the_session() {
    refused_with(6, |m, l| {
        l.send(m, 1024, echo_addr(), b"x");
        m.put_u16(geometry(1).desc_fields(1).2, DESC_F_INDIRECT);
    });
    refused_with(8, |m, l| {
        l.send(m, 1024, echo_addr(), b"x");
        m.put_u16(geometry(1).desc_fields(1).2, DESC_F_WRITE);
    });
    refused_with(8, |m, l| {
        m.put_u16(geometry(0).desc_fields(l.rx_used % NUM).2, 0);
        l.send(m, 1024, echo_addr(), b"x");
    });
}

#[test]
fn a_receive_buffer_too_short_for_the_answer_ends_the_session() {
    refused_with(9, |m, l| {
        m.put_u32(geometry(0).desc_fields(l.rx_used % NUM).1, 8);
        l.send(m, 1024, echo_addr(), b"x");
    });
}

#[test]
fn a_flood_of_passes_on_nothing_new_touches_nothing() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    let p = rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    let before = m.bytes.clone();
    for _ in 0..10_000 {
        let q = rt.pass(&mut m, &Table, 64);
        assert!(!q.notify && !q.more);
        assert!(!q.seen.wants_pass(&Seen::read(&m)));
    }
    let g = geometry(0);
    assert_eq!(m.bytes[g.base..], before[g.base..]);
    assert!(
        p.seen.wants_pass(&Seen::read(&m)),
        "the receive buffers came back since"
    );
}

#[test]
fn the_doorbells_look_sees_what_a_pass_has_not() {
    let (mut m, mut rt) = booted();
    let mut l = Linux::attach(&mut m, &mut rt, 0);
    rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    let p = rt.pass(&mut m, &Table, 64);
    assert!(!p.seen.wants_pass(&Seen::read(&m)));
    l.send(&mut m, 1024, echo_addr(), b"x");
    assert!(p.seen.wants_pass(&Seen::read(&m)), "a message");
    let p = rt.pass(&mut m, &Table, 64);
    l.receive(&mut m);
    let p2 = rt.pass(&mut m, &Table, 64);
    assert!(p.seen.wants_pass(&Seen::read(&m)), "buffers offered again");
    assert!(!p2.seen.wants_pass(&Seen::read(&m)));
    m.put_u32(CONTROL_SESSION, 77);
    assert!(p2.seen.wants_pass(&Seen::read(&m)), "a session");
    assert_eq!(Seen::unpack(p2.seen.pack()), p2.seen);
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn random_rings_never_take_the_transport_outside_its_part() {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut refused = 0;
    for round in 0..300 {
        let (mut m, mut rt) = booted();
        let mut l = Linux::attach(&mut m, &mut rt, round);
        for _ in 0..(rng.next() % 20) {
            l.send(&mut m, 1024, echo_addr(), b"ok");
        }
        // Scribble over both rings and the status: any bytes at all.
        for _ in 0..(rng.next() % 200) {
            let ring = geometry((rng.next() % 2) as usize);
            let at = ring.base + (rng.next() as usize) % (ring.end() - ring.base - 8);
            m.put_u64(at, rng.next());
        }
        m.count_reads(true);
        for _ in 0..5 {
            rt.pass(&mut m, &Table, 64);
        }
        // Bounded by the crate, not by anything written: per message at
        // most a chain walk of the table (four fields a descriptor) each
        // way, and the message's buffer.
        let total: u32 = m.reads.borrow().iter().sum();
        assert!(
            total <= 5 * 64 * 2 * (4 * 256 + 2) + 100,
            "round {round}: {total}"
        );
        m.count_reads(false);
        if matches!(rt.state(), State::Refused(_)) {
            refused += 1;
        }
    }
    assert!(refused > 100, "most scribbles are caught: {refused}");
}
