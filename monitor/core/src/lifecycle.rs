//! Linux's lifecycle on the machine: which Linux instances there are, and
//! the protocol by which the monitor stops one (its reboot, panic or
//! power-off: PSCI SYSTEM_RESET / SYSTEM_OFF) on all its cores while the
//! RTOS and the other instances run on, and starts it again on its boot
//! core from pristine images.
//!
//! ```text
//!            SYSTEM_RESET / SYSTEM_OFF from any of its cores
//!  Running ─────────────────────────────────────────────────▶ Stopping
//!     ▲        (PSCI refuses its CPU_ONs, drops pending ones;    │ each core: stop here,
//!     │         every core of it is asked to stop)               │ then clear its flag
//!     │                                                          ▼
//!     └──── restarted (images copied, boot core pending) ◀─ all stopped ── Off
//!                                                         (restart: boot core
//!                                                          copies; power-off: stays)
//! ```
//!
//! The part that must be atomic with PSCI (a stop drops every CPU_ON the
//! instance had pending and refuses new ones until the restart, so no core
//! can start the old Linux after it stopped there) lives in
//! [`crate::psci::PsciState`], under the PSCI lock; the per-core "stop
//! here" flags, which the world switch and the idle loop poll, are atomics
//! here, so polling them takes no lock. [`crate::services::Monitor`] joins
//! the two; the firmware only carries out what it decides.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use spin::Once;
use tandem_abi::MAX_CORES;
use tandem_abi::boot::Policies;
use tandem_abi::image::Span;
use tandem_abi::partition::{MAX_DEVICES, MAX_PARTITIONS, Partitions};

/// The core Linux boots on without partitions, at cold boot and at every
/// restart.
pub const BOOT_CORE: usize = 0;

/// One Linux the monitor starts, stops and restarts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Its partition's name ('A', ...), or 0 without partitions.
    pub name: u8,
    /// Its cores (bit per core).
    pub cores: u64,
    /// The core it boots on, at cold boot and at every restart.
    pub boot_core: usize,
    /// Its RAM: its images go there, its cores start there.
    pub ram: Span,
    /// Its images' header: bytes after the board's `linux_images`.
    pub images: u64,
    /// Its power-off powers the machine off.
    pub off_stops_machine: bool,
    /// The devices it owns: quiesced before it restarts.
    pub devices: Devices,
}

/// The normal-world devices one Linux owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Devices {
    /// All of them: the one Linux, without partitions.
    All,
    /// Its partition's MMIO ranges: the EL2 layer maps it no others.
    Ranges {
        /// The ranges; entries past `count` are unused.
        list: [Span; MAX_DEVICES],
        /// Ranges in use.
        count: usize,
    },
}

impl Instance {
    /// Whether `core` is one of its cores.
    pub const fn has_core(&self, core: usize) -> bool {
        core < 64 && self.cores >> core & 1 != 0
    }

    /// Whether the device whose registers are the `size` bytes at `base`
    /// is its own: a partition's restart resets its own devices, never
    /// another partition's, which that partition's Linux may be using.
    pub fn owns_device(&self, base: u64, size: u64) -> bool {
        match self.devices {
            Devices::All => true,
            Devices::Ranges { list, count } => list[..count.min(MAX_DEVICES)]
                .iter()
                .any(|r| r.holds(base, size)),
        }
    }
}

/// Every Linux of this boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instances {
    count: usize,
    list: [Instance; MAX_PARTITIONS],
    of_core: [Option<u8>; MAX_CORES],
    /// The normal world runs under the EL2 layer (there are partitions).
    pub hyp: bool,
}

impl Instances {
    /// One Linux on every core `policies` give it, in all of `normal_ram`,
    /// or one per partition.
    pub fn new(
        policies: &Policies,
        partitions: Option<&Partitions>,
        normal_ram: Span,
        off_stops: bool,
    ) -> Self {
        let none = Instance {
            name: 0,
            cores: 0,
            boot_core: BOOT_CORE,
            ram: normal_ram,
            images: 0,
            off_stops_machine: off_stops,
            devices: Devices::All,
        };
        let mut out = Self {
            count: 1,
            list: [none; MAX_PARTITIONS],
            of_core: [None; MAX_CORES],
            hyp: partitions.is_some(),
        };
        match partitions {
            None => {
                for core in (0..policies.cores()).filter(|&c| policies.of(c).has_linux()) {
                    out.list[0].cores |= 1 << core;
                    out.of_core[core] = Some(0);
                }
            }
            Some(parts) => {
                out.count = parts.count();
                for (i, p) in parts.iter().enumerate() {
                    let mut list = [Span { base: 0, size: 0 }; MAX_DEVICES];
                    let count = p.devices().len().min(MAX_DEVICES);
                    list[..count].copy_from_slice(&p.devices()[..count]);
                    out.list[i] = Instance {
                        name: p.name,
                        cores: p.cores.into(),
                        boot_core: p.boot_core.into(),
                        ram: p.ram,
                        images: p.images,
                        off_stops_machine: p.off_stops_machine(),
                        devices: Devices::Ranges { list, count },
                    };
                }
                for (core, slot) in out.of_core.iter_mut().enumerate() {
                    *slot = parts.of_core(core).map(|i| i as u8);
                }
            }
        }
        out
    }

    /// The instances.
    pub fn iter(&self) -> impl Iterator<Item = &Instance> {
        self.list[..self.count].iter()
    }

    /// Instance `index`.
    pub fn get(&self, index: usize) -> &Instance {
        &self.list[index]
    }

    /// The instance `core` belongs to, if any.
    pub fn of_core(&self, core: usize) -> Option<usize> {
        self.of_core.get(core).copied().flatten().map(usize::from)
    }
}

/// The lifecycle's state outside the PSCI lock: the instances (set once at
/// cold boot) and the flags cores poll.
#[derive(Debug)]
pub struct Lifecycle {
    instances: Once<Instances>,
    /// Per core: Linux must stop here (set with the PSCI lock held by the
    /// core that asked, cleared by the core once Linux is off there).
    stop: [AtomicBool; MAX_CORES],
    /// Per instance: it starts again once it is off on all its cores.
    restart: [AtomicBool; MAX_PARTITIONS],
    /// Per instance: which of its Linux runs (1 from cold boot).
    generation: [AtomicU32; MAX_PARTITIONS],
    /// Per instance: its boot core is to start it afresh (cold boot,
    /// restart), rather than a core it turns on with CPU_ON (the EL2 layer
    /// is told so).
    starting: [AtomicBool; MAX_PARTITIONS],
}

impl Lifecycle {
    /// Before cold boot: no instance configured, nothing to stop.
    pub const fn new() -> Self {
        Self {
            instances: Once::new(),
            stop: [const { AtomicBool::new(false) }; MAX_CORES],
            restart: [const { AtomicBool::new(false) }; MAX_PARTITIONS],
            generation: [const { AtomicU32::new(1) }; MAX_PARTITIONS],
            starting: [const { AtomicBool::new(true) }; MAX_PARTITIONS],
        }
    }

    /// Sets this boot's instances (cold boot, before any core runs Linux).
    pub fn configure(&self, instances: Instances) {
        self.instances.call_once(|| instances);
    }

    /// This boot's instances, if configured.
    pub fn instances(&self) -> Option<&Instances> {
        self.instances.get()
    }

    /// The instance `core` belongs to, if any.
    pub fn instance_of(&self, core: usize) -> Option<usize> {
        self.instances().and_then(|i| i.of_core(core))
    }

    /// Asks every core of instance `index` to stop its Linux (the PSCI
    /// state already refuses its CPU_ONs: the caller holds the PSCI lock
    /// and marked the instance stopping), and to start it again afterwards
    /// if `restart`.
    pub(crate) fn request_stop(&self, index: usize, cores: u64, restart: bool) {
        for (core, stop) in self.stop.iter().enumerate() {
            if cores >> core & 1 != 0 {
                stop.store(true, Ordering::Release);
            }
        }
        // After the flags: the boot core, which reads this first, must find
        // them set, or it would restart Linux while its cores still run it
        // (found by tests/lifecycle.rs with the two stores the other way).
        self.restart[index].store(restart, Ordering::Release);
    }

    /// Whether Linux must stop on `core`.
    #[inline(always)]
    pub fn stop_requested(&self, core: usize) -> bool {
        self.stop
            .get(core)
            .is_some_and(|s| s.load(Ordering::Acquire))
    }

    /// Linux is off on `core` now (it was asked to stop). Returns the boot
    /// core of its instance if that is another core, which may be waiting
    /// for this to restart Linux.
    pub fn stopped(&self, core: usize) -> Option<usize> {
        if let Some(s) = self.stop.get(core) {
            s.store(false, Ordering::Release);
        }
        let boot = self
            .instance_of(core)
            .map_or(BOOT_CORE, |i| self.get(i).boot_core);
        (boot != core).then_some(boot)
    }

    fn get(&self, index: usize) -> &Instance {
        self.instances()
            .expect("instances configured at cold boot")
            .get(index)
    }

    /// The instance `core` is to start again, if it is that instance's boot
    /// core, a restart was asked for and its Linux is off on all its cores.
    pub fn restart_due(&self, core: usize) -> Option<usize> {
        let index = self.instance_of(core)?;
        let instance = self.get(index);
        // The look loop asks on every pass: no restart asked, no more work.
        if core != instance.boot_core || !self.restart[index].load(Ordering::Acquire) {
            return None;
        }
        self.stop
            .iter()
            .enumerate()
            .all(|(c, s)| !instance.has_core(c) || !s.load(Ordering::Acquire))
            .then_some(index)
    }

    /// Instance `index` was started again (its images copied, its boot core
    /// pending in PSCI): returns its new generation.
    pub(crate) fn restarted(&self, index: usize) -> u32 {
        self.restart[index].store(false, Ordering::Relaxed);
        self.starting[index].store(true, Ordering::Relaxed);
        self.generation[index].fetch_add(1, Ordering::AcqRel) + 1
    }

    /// A restart cannot be made (the images are unusable): the instance
    /// stays off.
    pub fn restart_refused(&self, index: usize) {
        self.restart[index].store(false, Ordering::Release);
    }

    /// Which Linux of instance `index` runs (1 from cold boot).
    pub fn generation(&self, index: usize) -> u32 {
        self.generation[index].load(Ordering::Acquire)
    }

    /// Whether Linux starting on `core` now starts its instance (its boot
    /// core, at cold boot or after a restart) rather than being one of its
    /// cores turned on; true once per start.
    pub fn take_start(&self, core: usize) -> bool {
        self.instance_of(core).is_some_and(|i| {
            core == self.get(i).boot_core && self.starting[i].swap(false, Ordering::AcqRel)
        })
    }
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_abi::boot::Policy;

    const RAM: Span = Span {
        base: 0x4000_0000,
        size: 0x4000_0000,
    };

    fn one_linux(cores: usize) -> Lifecycle {
        let l = Lifecycle::new();
        let policies = Policies::uniform(cores, Policy::Shared);
        l.configure(Instances::new(&policies, None, RAM, false));
        l
    }

    #[test]
    fn a_restart_is_due_on_the_boot_core_once_every_core_stopped() {
        let l = one_linux(4);
        assert_eq!(l.restart_due(0), None, "nothing asked");
        l.request_stop(0, 0b1111, true);
        assert!((0..4).all(|c| l.stop_requested(c)));
        assert_eq!(l.stopped(2), Some(0), "core 2 wakes the boot core");
        assert_eq!(l.restart_due(0), None, "cores 0, 1, 3 still run it");
        assert_eq!(l.stopped(1), Some(0));
        assert_eq!(l.stopped(3), Some(0));
        assert_eq!(l.restart_due(0), None, "the boot core itself");
        assert_eq!(l.stopped(0), None);
        assert_eq!(l.restart_due(1), None, "only the boot core restarts it");
        assert_eq!(l.restart_due(0), Some(0));
        assert_eq!(l.restarted(0), 2);
        assert_eq!(l.restart_due(0), None);
        assert!(l.take_start(0));
        assert!(!l.take_start(0), "once per start");
    }

    #[test]
    fn a_power_off_stops_without_a_restart_and_a_refused_restart_stays_off() {
        let l = one_linux(2);
        l.request_stop(0, 0b11, false);
        l.stopped(0);
        l.stopped(1);
        assert_eq!(l.restart_due(0), None);
        l.request_stop(0, 0b11, true);
        l.stopped(0);
        l.stopped(1);
        l.restart_refused(0);
        assert_eq!(l.restart_due(0), None);
        assert_eq!(l.generation(0), 1);
    }

    #[test]
    fn a_restart_quiesces_the_instances_own_devices_only() {
        use tandem_abi::partition::{Machine, Partition, PartitionTable};
        // Without partitions the one Linux owns every device.
        let l = one_linux(4);
        let one = l.instances().unwrap().get(0);
        assert!(one.owns_device(0x0A00_3E00, 0x200));
        // With partitions, each owns the pages it was given: A a UART and
        // the page of eight virtio-mmio transports at 0x0A00_3000, B a UART.
        let span = |base, size| Span { base, size };
        let part = |name, cores: u32, ram, devices: &[Span]| {
            let mut p = Partition {
                name,
                boot_core: cores.trailing_zeros() as u8,
                device_count: devices.len() as u8,
                cores,
                ram,
                ..Partition::EMPTY
            };
            p.devices[..devices.len()].copy_from_slice(devices);
            p
        };
        let a = part(
            b'A',
            0b0111,
            span(0x4000_0000, 0x2000_0000),
            &[span(0x0900_0000, 0x1000), span(0x0A00_3000, 0x1000)],
        );
        let b = part(
            b'B',
            0b1000,
            span(0x6000_0000, 0x1FC0_0000),
            &[span(0x090C_0000, 0x1000)],
        );
        let machine = Machine {
            cores: 4,
            linux_cores: 0b1111,
            normal_ram: RAM,
            shared: span(0x7FE0_0000, 0x20_0000),
            hyp_ram: span(0x7FC0_0000, 0x20_0000),
            reserved_mmio: [span(0x0800_0000, 0x1_0000), span(0x080A_0000, 0x10_0000)],
        };
        let parts = PartitionTable::new(&[a, b]).validate(&machine).unwrap();
        let policies = Policies::uniform(4, Policy::Shared);
        let instances = Instances::new(&policies, Some(&parts), RAM, false);
        let (a, b) = (instances.get(0), instances.get(1));
        assert!(a.owns_device(0x0A00_3000, 0x200) && a.owns_device(0x0A00_3E00, 0x200));
        assert!(
            !a.owns_device(0x0A00_2E00, 0x200),
            "the page below is no one's"
        );
        assert!(
            !a.owns_device(0x0A00_3F00, 0x200),
            "straddles the page's end"
        );
        assert!(
            !b.owns_device(0x0A00_3E00, 0x200),
            "A's transport is not B's"
        );
        assert!(b.owns_device(0x090C_0000, 0x200));
    }

    #[test]
    fn cores_without_linux_and_cores_beyond_the_board_are_no_ones() {
        let l = Lifecycle::new();
        let mut policies = [Policy::Shared; 4];
        policies[3] = Policy::Rtos;
        let blob = tandem_abi::boot::BootConfig::encode(&policies);
        let policies = blob.validate().unwrap();
        l.configure(Instances::new(&policies, None, RAM, false));
        assert_eq!(l.instance_of(3), None);
        assert_eq!(l.instance_of(2), Some(0));
        assert_eq!(l.instances().unwrap().get(0).cores, 0b0111);
        assert!(!l.stop_requested(99));
        assert_eq!(l.stopped(99), Some(BOOT_CORE));
    }
}
