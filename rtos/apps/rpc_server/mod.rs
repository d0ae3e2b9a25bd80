//! The RPC server application (paper 002's server side, `tandem_abi::rpc`):
//! one task per server core, notified by the RPC doorbell SGI that the
//! monitor raises for Linux's `RPC_NOTIFY`. It answers every channel it serves whose request
//! sequence number changed: reads the request once, checks it, copies the
//! data into its own memory (hashing it on the way), writes the response
//! with the sequence number last, and pends the completion SPI if asked.
//!
//! Short calls (`rpc::is_fast`: at most `FAST_MAX` bytes, or refused) are
//! answered by the doorbell's interrupt handler itself, which then needs no
//! task switch and no scheduler pass (the interrupt's top half); everything
//! else notifies the task. A
//! channel the task is working on is marked claimed, and the handler (which
//! runs on the same core, so it can only preempt the task, never run beside
//! it) leaves claimed channels alone.
//!
//! Nothing Linux writes is trusted: fields are read once into RTOS memory,
//! lengths are checked before any copy, the answer is computed from the
//! RTOS's copy only, and the server runs below every periodic job, so a
//! flood of calls cannot make the RTOS miss a deadline. The test operation
//! (`OP_STALL`, which stops a server's service on purpose) is served only
//! when the workload blob, which Linux cannot change, says `test_ops = 1`.

mod params {
    include!(concat!(env!("OUT_DIR"), "/rpc_server.rs"));
}

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering, compiler_fence, fence};
use tandem_abi::rpc::{
    Call, Checksum, FAST_MAX, FLAG_NOTIFY, RPC_CHANNELS, RPC_MAX_DATA, Request, Response,
    STATUS_OK, check, is_fast, rpc_channel_offset, rpc_data_offset, rpc_response_offset,
    server_core,
};
use tandem_board::BOARD;
use tandem_rtos_firmware::{hw, syscall};
use tandem_rtos_kernel::TaskConfig;
use tandem_rtos_kernel::app::{App, Entry, Interrupt, Owner, Refusal, Start, Task, TaskIdentity};

/// Cores that can run a server (one server task each: task `c` serves core
/// `c`).
const SERVERS: usize = 4;
/// Priority of the servers: below every job (4), PERIODIC (3) and PING
/// (8), so calls from Linux never delay the RTOS's own deadlines.
const PRIORITY: u8 = 10;

/// The application.
pub const APP: App = App {
    name: params::NAME,
    tasks: &[server(0), server(1), server(2), server(3)],
    interrupts: &[Interrupt {
        intid: BOARD.sgi.rpc,
        owner: Owner::PerCore {
            first: 0,
            count: SERVERS as u8,
        },
        top: Some(interrupt),
        shared: true,
    }],
    params: params::PARAMS,
    start: Some(start),
    ..App::EMPTY
};

const fn server(core: u8) -> Task {
    Task {
        config: TaskConfig {
            name: "rpc",
            core,
            priority: PRIORITY,
            autostart: false,
        },
        entry: Entry::Kernel(run_server),
    }
}

/// Clears the channels, then starts the servers of the cores the monitor
/// rings (the boot configuration's RPC cores, which it keeps to RTOS
/// cores); they sleep until called.
fn start(s: &mut Start<'_>) -> Result<(), Refusal> {
    TEST_OPS.store(s.param("test_ops") != 0, Ordering::Relaxed);
    let cores = s.platform.rpc_cores;
    if usize::from(cores) >> SERVERS != 0 {
        return Err(Refusal {
            param: "rpc_cores",
            value: cores.into(),
            want: "servers on cores 0..3 only (boot configuration)",
        });
    }
    init(cores);
    for c in 0..SERVERS as u8 {
        if cores & (1 << c) != 0 {
            s.kernel
                .activate(s.ids.task(c))
                .expect("server task exists");
        }
    }
    Ok(())
}
/// Whether this boot serves the test operation (`rpc::OP_STALL`); set once
/// before any server runs.
static TEST_OPS: AtomicBool = AtomicBool::new(false);

/// Words of one server's private buffer.
const WORDS: usize = RPC_MAX_DATA as usize / 8;

/// The channels each server core serves (bit per channel; from the boot
/// configuration's server cores), set once before any server runs.
static CHANNELS_OF: [AtomicU32; SERVERS] = [const { AtomicU32::new(0) }; SERVERS];

/// Per channel, in RTOS memory: the last sequence number answered and how
/// many calls were served. Only the channel's server core touches its slot.
struct ChannelState {
    last_seq: u32,
    served: u64,
}

static mut CHANNELS: [ChannelState; RPC_CHANNELS as usize] = [const {
    ChannelState {
        last_seq: 0,
        served: 0,
    }
}; RPC_CHANNELS as usize];

/// Each server's copy of the data it was sent.
static mut BUFFERS: [[u64; WORDS]; SERVERS] = [[0; WORDS]; SERVERS];
/// Each server core's buffer for the calls its interrupt handler answers.
static mut FAST_BUFFERS: [[u64; FAST_MAX / 8]; SERVERS] = [[0; FAST_MAX / 8]; SERVERS];
/// The server task is working on the channel: the handler leaves it alone.
static CLAIMED: [AtomicBool; RPC_CHANNELS as usize] =
    [const { AtomicBool::new(false) }; RPC_CHANNELS as usize];

/// Records which channels each server core serves (`mask`: the server
/// cores) and clears every channel's request and response,
/// so that sequence numbers start at 0 on both sides. Runs on the first core
/// in, before Linux starts and before any server task runs.
fn init(mask: u8) {
    for ch in 0..RPC_CHANNELS as usize {
        if let Some(core) = server_core(mask, ch).filter(|&c| c < SERVERS) {
            CHANNELS_OF[core].fetch_or(1 << ch, Ordering::Relaxed);
        }
        let req = shared(rpc_channel_offset(ch)) as *mut Request;
        let resp = shared(rpc_response_offset(ch)) as *mut Response;
        // SAFETY: both lie inside the shared region at ABI offsets
        // (`rpc_channel_offset` is checked against the region size at build
        // time); Linux has not started, so nothing else writes them.
        unsafe {
            req.write_volatile(Request::default());
            resp.write_volatile(Response::default());
        }
    }
}

fn shared(offset: usize) -> usize {
    BOARD.shared.base as usize + offset
}

/// Reads the fields of a request the server uses, once each, into RTOS
/// memory (field by field: a whole-struct volatile copy costs a memcpy).
fn read_request(ch: usize, seq: u32) -> Request {
    let req = shared(rpc_channel_offset(ch)) as *const Request;
    // SAFETY: inside the shared region at an ABI offset; the fields are
    // plain integers, any bit pattern valid. Linux may change them under
    // us: that is why each is read once and only the copy is used.
    unsafe {
        Request {
            seq,
            op: core::ptr::addr_of!((*req).op).read_volatile(),
            len: core::ptr::addr_of!((*req).len).read_volatile(),
            flags: core::ptr::addr_of!((*req).flags).read_volatile(),
            arg: core::ptr::addr_of!((*req).arg).read_volatile(),
            ..Request::default()
        }
    }
}

/// Copies `len` bytes of channel `ch`'s data into `buf` (which holds at
/// least `len` bytes: checked by the caller), zero-padding the last word,
/// and returns the checksum of what was copied. Whole words in a tight loop,
/// the tail apart.
fn copy_in(ch: usize, len: usize, buf: &mut [u64]) -> u32 {
    let src = shared(rpc_data_offset(ch)) as *const u64;
    let full = len / 8;
    let mut sum = Checksum::new(len);
    for (i, slot) in buf[..full].iter_mut().enumerate() {
        // SAFETY: `len` <= RPC_MAX_DATA was checked, so word `i` lies inside
        // the channel's data area (page-aligned, so 8-byte aligned).
        let w = unsafe { src.add(i).read_volatile() };
        *slot = w;
        sum = sum.word(w);
    }
    let rest = len % 8;
    if rest != 0 {
        // SAFETY: as above: the word holding the last bytes is in the area.
        let w = unsafe { src.add(full).read_volatile() } & ((1u64 << (rest * 8)) - 1);
        buf[full] = w;
        sum = sum.word(w);
    }
    sum.finish()
}

/// Writes the first `len` bytes of `buf` back into channel `ch`'s data.
fn copy_out(ch: usize, len: usize, buf: &[u64]) {
    let dst = shared(rpc_data_offset(ch)) as *mut u64;
    for (i, w) in buf[..len.div_ceil(8)].iter().enumerate() {
        // SAFETY: as in `copy_in`: inside the channel's data area.
        unsafe { dst.add(i).write_volatile(*w) };
    }
}

/// What [`serve`] did.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Served {
    /// No new request, or answered.
    Done,
    /// A new request too long for the interrupt handler (`inline` only).
    Left,
}

/// Answers channel `ch` if it has a new request. `inline` (the interrupt
/// handler, with a `FAST_MAX`-byte `buf`): only short calls, leaving the
/// rest for the task.
fn serve(ch: usize, core: usize, buf: &mut [u64], inline: bool) -> Served {
    // SAFETY: the slot is used only on the channel's server core, by its
    // task while it holds the claim, else by the doorbell handler, which
    // never runs during the task's use (it skips claimed channels).
    let state = unsafe { &mut (*core::ptr::addr_of_mut!(CHANNELS))[ch] };
    let seq_ptr = shared(rpc_channel_offset(ch)) as *const u32;
    // SAFETY: the request's first word, inside the shared region.
    let seq = unsafe { seq_ptr.read_volatile() };
    if seq == state.last_seq {
        return Served::Done;
    }
    // Everything Linux wrote before the new sequence number is visible now.
    fence(Ordering::Acquire);
    let started = hw::now();
    // The sequence number answered is the one that made us look, whatever
    // Linux wrote since.
    let req = read_request(ch, seq);
    let call = check(&req, TEST_OPS.load(Ordering::Relaxed));
    if inline && !is_fast(&call) {
        return Served::Left;
    }
    let (status, len, sum) = match call {
        Ok(Call::Send { len }) => (STATUS_OK, len, copy_in(ch, len, buf)),
        Ok(Call::Echo { len }) => {
            let sum = copy_in(ch, len, buf);
            copy_out(ch, len, buf);
            (STATUS_OK, len, sum)
        }
        Ok(Call::Stall { ms }) => {
            let _ = syscall::delay(u64::from(ms) * BOARD.counter_hz / 1000);
            (STATUS_OK, 0, 0)
        }
        Err(status) => (status, 0, 0),
    };
    state.last_seq = seq;
    state.served += 1;
    let r = shared(rpc_response_offset(ch)) as *mut Response;
    // SAFETY: the response lies inside the shared region; the RTOS is its
    // only writer (field by field, as in `read_request`). The sequence
    // number goes last, after a barrier, so a client that sees it sees the
    // rest.
    unsafe {
        core::ptr::addr_of_mut!((*r).status).write_volatile(status);
        core::ptr::addr_of_mut!((*r).len).write_volatile(len as u32);
        core::ptr::addr_of_mut!((*r).checksum).write_volatile(sum);
        core::ptr::addr_of_mut!((*r).started_at).write_volatile(started);
        core::ptr::addr_of_mut!((*r).done_at).write_volatile(hw::now());
        core::ptr::addr_of_mut!((*r).served).write_volatile(state.served);
        core::ptr::addr_of_mut!((*r).core).write_volatile(core as u32);
        fence(Ordering::Release);
        core::ptr::addr_of_mut!((*r).seq).write_volatile(seq);
    }
    if req.flags & FLAG_NOTIFY != 0 {
        hw::raise_linux_doorbell();
    }
    Served::Done
}

fn channels_of(core: usize) -> u32 {
    CHANNELS_OF[core].load(Ordering::Relaxed)
}

/// The RPC doorbell's top half (before the scheduler runs; only the
/// kernel's interrupts may preempt it, and they leave the scheduler to it):
/// answers the short calls waiting on this core's channels. Returns whether
/// the server task must run (a longer call, or a channel it holds).
fn interrupt(core: usize) -> bool {
    if core >= SERVERS {
        return false;
    }
    // SAFETY: only this core's doorbell handler uses this core's fast
    // buffer, and it does not nest in itself: only the kernel's interrupts
    // (of higher priority) preempt a top half, and they run none.
    let buf = unsafe { &mut (*core::ptr::addr_of_mut!(FAST_BUFFERS))[core] };
    let mut left = channels_of(core);
    let mut wake = false;
    while left != 0 {
        let ch = left.trailing_zeros() as usize;
        left &= left - 1;
        if CLAIMED[ch].load(Ordering::Relaxed) {
            wake = true;
        } else {
            wake |= serve(ch, core, buf, true) == Served::Left;
        }
    }
    wake
}

/// The server task's body (one per server core; it never migrates).
fn run_server(_: TaskIdentity) {
    let core = tandem_rtos_firmware::core_index();
    if core >= SERVERS {
        return;
    }
    // SAFETY: each server task runs on its own core and is the only user of
    // that core's buffer.
    let buf = unsafe { &mut (*core::ptr::addr_of_mut!(BUFFERS))[core] };
    let mine = channels_of(core);
    loop {
        // One pass per wakeup: a call that arrives while we work rings
        // again, and that wakeup is queued, so the next sleep returns at
        // once and the next pass finds it.
        let mut left = mine;
        while left != 0 {
            let ch = left.trailing_zeros() as usize;
            left &= left - 1;
            // The handler runs on this core only between our instructions:
            // a relaxed flag, kept in program order by the fences, is enough.
            CLAIMED[ch].store(true, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            serve(ch, core, buf, false);
            compiler_fence(Ordering::SeqCst);
            CLAIMED[ch].store(false, Ordering::Relaxed);
        }
        let _ = syscall::sleep(syscall::FOREVER);
    }
}
