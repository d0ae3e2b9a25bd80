//! The RPMsg application: the RTOS's end of Linux's stock virtio-rpmsg
//! (`tandem_rpmsg`, `tandem_abi::rpmsg`). At boot it publishes the
//! resource table in the shared region (before Linux runs); Linux's Tandem
//! remoteproc driver attaches to it. Its task, on the lowest RPC core
//! (where the monitor sends Linux's `RPMSG_NOTIFY`), takes passes of the
//! transport: sessions, name-service announcements of every service in the
//! applications table, their messages and answers; it pends Linux's
//! doorbell SPI when Linux wants an interrupt.
//!
//! It shares the RPC doorbell SGI with the RPC server (the monitor raises
//! that SGI for both calls): its top half compares the words its last pass
//! acted on (session, status, both available indexes) with the live ones,
//! four loads, and wakes the task only if they differ, so RPC's doorbells
//! cost it a look and a flood of RPMsg doorbells with nothing new a look
//! each. The task runs below the RPC servers (priority 11), each pass
//! bounded ([`BUDGET`] messages), so Linux's messages never delay the
//! RTOS's own work.
//!
//! Its own services: `tandem-echo` (answers what it was sent) and
//! `rpmsg-client-sample` (the same: Linux's sample module counts the
//! answers to its 100 messages).

mod params {
    include!(concat!(env!("OUT_DIR"), "/rpmsg.rs"));
}

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
use tandem_abi::layout::RPMSG_OFFSET;
use tandem_board::BOARD;
use tandem_rpmsg::Window;
use tandem_rpmsg::transport::{Seen, Services, Transport, WINDOW_BYTES};
use tandem_rtos_firmware::{hw, log, syscall};
use tandem_rtos_kernel::TaskConfig;
use tandem_rtos_kernel::app::{
    App, Entry, Interrupt, Owner, Refusal, Service, Start, Task, TaskIdentity,
};

/// Its one task.
const CARRIER: u8 = 0;
/// Below the RPC servers (10) and every job.
const PRIORITY: u8 = 11;
/// Messages one pass serves at most.
pub const BUDGET: usize = 32;

/// The application.
pub const APP: App = App {
    name: params::NAME,
    tasks: &[Task {
        config: TaskConfig {
            name: "rpmsg",
            core: 0,
            priority: PRIORITY,
            autostart: false,
        },
        entry: Entry::Kernel(carry),
    }],
    interrupts: &[Interrupt {
        intid: BOARD.sgi.rpc,
        owner: Owner::Task(CARRIER),
        top: Some(top),
        shared: true,
    }],
    params: params::PARAMS,
    services: &[
        Service {
            name: "tandem-echo",
            serve: echo,
        },
        Service {
            name: "rpmsg-client-sample",
            serve: echo,
        },
    ],
    start: Some(start),
    ..App::EMPTY
};

/// Answers what it was sent.
fn echo(_: u32, request: &[u8], reply: &mut [u8]) -> Option<usize> {
    let n = request.len().min(reply.len());
    reply[..n].copy_from_slice(&request[..n]);
    Some(n)
}

/// The core serving RPMsg (`usize::MAX`: none), set once at start.
static CORE: AtomicUsize = AtomicUsize::new(usize::MAX);
/// What the task's last pass acted on (`Seen::pack`), for the top half.
static SEEN: AtomicU64 = AtomicU64::new(0);

/// Publishes the resource table and starts the task on the RPMsg core, if
/// there is an RPC server (else no RPMsg: the table's page is cleared, so
/// Linux's driver finds none).
fn start(s: &mut Start<'_>) -> Result<(), Refusal> {
    let mut w = Region;
    let Some(core) = tandem_abi::rpmsg::core(s.platform.rpc_cores) else {
        w.write_bytes(0, &[0; 64]);
        return Ok(());
    };
    if s.platform.cores & (1 << core) == 0 {
        return Err(Refusal {
            param: "rpc_cores",
            value: core as u64,
            want: "RPMsg's core (the lowest RPC core) running the RTOS",
        });
    }
    // SAFETY: start steps run once, before any task or top half.
    unsafe { (*core::ptr::addr_of!(TRANSPORT)).publish_table(&mut w) };
    CORE.store(core, Ordering::Relaxed);
    let task = s.ids.task(CARRIER);
    s.kernel
        .migrate(task, core as u8)
        .expect("a core running the RTOS");
    s.kernel.activate(task).expect("the task exists");
    Ok(())
}

/// The RPMsg part of the shared region, through volatile accesses; each
/// access is checked against the part's size (the transport's own checks
/// keep them inside; this is the second line).
struct Region;

impl Region {
    fn at<T>(at: usize) -> Option<*mut T> {
        let end = at.checked_add(core::mem::size_of::<T>())?;
        (end <= WINDOW_BYTES && at.is_multiple_of(core::mem::align_of::<T>()))
            .then(|| (BOARD.shared.base as usize + RPMSG_OFFSET + at) as *mut T)
    }

    fn read<T: Default>(at: usize) -> T {
        match Self::at::<T>(at) {
            // SAFETY: inside RPMsg's part of the shared region (checked
            // above), aligned; any bit pattern is a valid integer. Linux may
            // change it meanwhile: the transport reads each field once.
            Some(p) => unsafe { p.read_volatile() },
            None => T::default(),
        }
    }

    fn write<T>(at: usize, value: T) {
        if let Some(p) = Self::at::<T>(at) {
            // SAFETY: inside RPMsg's part of the shared region (checked),
            // aligned; memory Linux may read, never the RTOS's own.
            unsafe { p.write_volatile(value) };
        }
    }
}

impl Window for Region {
    fn read_u16(&self, at: usize) -> u16 {
        Self::read(at)
    }
    fn read_u32(&self, at: usize) -> u32 {
        Self::read(at)
    }
    fn read_u64(&self, at: usize) -> u64 {
        Self::read(at)
    }
    fn read_u8(&self, at: usize) -> u8 {
        Self::read(at)
    }
    fn write_u16(&mut self, at: usize, value: u16) {
        Self::write(at, value);
    }
    fn write_u32(&mut self, at: usize, value: u32) {
        Self::write(at, value);
    }
    fn read_bytes(&self, at: usize, into: &mut [u8]) {
        // Whole aligned words where it can (a message's payload starts 16
        // bytes into its buffer), bytes at the ends.
        let mut i = 0;
        while i < into.len() {
            if (at + i).is_multiple_of(8) && into.len() - i >= 8 {
                let w: u64 = Self::read(at + i);
                into[i..i + 8].copy_from_slice(&w.to_le_bytes());
                i += 8;
            } else {
                into[i] = Self::read(at + i);
                i += 1;
            }
        }
    }
    fn write_bytes(&mut self, at: usize, from: &[u8]) {
        let mut i = 0;
        while i < from.len() {
            if (at + i).is_multiple_of(8) && from.len() - i >= 8 {
                let mut w = [0; 8];
                w.copy_from_slice(&from[i..i + 8]);
                Self::write(at + i, u64::from_le_bytes(w));
                i += 8;
            } else {
                Self::write(at + i, from[i]);
                i += 1;
            }
        }
    }
    fn acquire(&self) {
        fence(Ordering::Acquire);
    }
    fn release(&self) {
        fence(Ordering::Release);
    }
}

/// The applications table's services, in its order.
struct Table;

impl Services for Table {
    fn count(&self) -> usize {
        crate::APPS.services().count()
    }
    fn name(&self, i: usize) -> &str {
        crate::APPS.service(i).map_or("", |s| s.name)
    }
    fn serve(&self, i: usize, src: u32, request: &[u8], reply: &mut [u8]) -> Option<usize> {
        (crate::APPS.service(i)?.serve)(src, request, reply)
    }
}

/// The transport: only the task touches it (and the start step, before).
static mut TRANSPORT: Transport = Transport::new(BOARD.shared.base);

/// The doorbell's top half (every core that takes the RPC SGI runs it):
/// on RPMsg's core, whether anything changed since the last pass.
fn top(core: usize) -> bool {
    if core != CORE.load(Ordering::Relaxed) {
        return false;
    }
    Seen::unpack(SEEN.load(Ordering::Relaxed)).wants_pass(&Seen::read(&Region))
}

/// The task: a pass per wakeup, more while messages are left.
fn carry(_: TaskIdentity) {
    let core = tandem_rtos_firmware::core_index();
    // SAFETY: only this task uses the transport after start; it never
    // migrates and runs once.
    let transport = unsafe { &mut *core::ptr::addr_of_mut!(TRANSPORT) };
    let mut w = Region;
    let mut refused = 0;
    log!(
        core,
        "rpmsg: serving {} services on core {core}",
        Table.count()
    );
    loop {
        let pass = transport.pass(&mut w, &Table, BUDGET);
        SEEN.store(pass.seen.pack(), Ordering::Relaxed);
        if pass.notify {
            hw::raise_linux_doorbell();
        }
        let stats = transport.stats();
        if stats.refused != refused {
            refused = stats.refused;
            log!(
                core,
                "rpmsg: session {} refused: {:?}",
                pass.seen.session,
                transport.state()
            );
        }
        if !pass.more {
            let _ = syscall::sleep(syscall::FOREVER);
        }
    }
}
