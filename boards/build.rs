//! Turns the board description `boards/$TANDEM_BOARD.toml` (default `qemu-virt`)
//! into a Rust constant, so firmware and harness read the same numbers.

use serde::Deserialize;
use std::{env, fmt::Write as _, fs, path::PathBuf};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    board: BoardSection,
    memory: MemorySection,
    devices: DevicesSection,
    interrupts: InterruptsSection,
    boot: BootSection,
    /// Used by the harness only.
    #[allow(dead_code)]
    qemu: Option<toml::Table>,
    /// Used by the harness only (Linux's console and device tree).
    #[allow(dead_code)]
    linux: Option<toml::Table>,
    /// Used by the harness only (it writes them into the partition table).
    #[allow(dead_code)]
    partition_devices: Option<toml::Table>,
    /// Used by the harness only (Linux's idle states in its device tree).
    #[allow(dead_code)]
    linux_idle: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoardSection {
    name: String,
    max_cores: usize,
    counter_hz: u64,
    rtos_leave_ns: u64,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct Range {
    base: u64,
    size: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemorySection {
    secure_flash: Range,
    secure_ram: Range,
    monitor_ram: Range,
    rtos_ram: Range,
    normal_ram: Range,
    shared: Range,
    hyp_ram: Range,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DevicesSection {
    gicd: u64,
    gicr: u64,
    uart: Uart,
    normal_uart: u64,
    secure_uart: u64,
    uart_clock_hz: u32,
    power: Power,
    virtio_mmio: Option<VirtioMmio>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct VirtioMmio {
    base: u64,
    stride: u64,
    count: u32,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Uart {
    Pl011,
    Imx,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum Power {
    Pl061 {
        base: u64,
        poweroff_line: u8,
        reset_line: u8,
    },
    ImxSnvsWdog {
        snvs: u64,
        wdog: u64,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InterruptsSection {
    secure_timer: u32,
    nonsecure_virtual_timer: u32,
    doorbell_spi: u32,
    sgi: SgiSection,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SgiSection {
    reschedule: u32,
    demo: u32,
    rpc: u32,
    monitor: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BootSection {
    rtos_image: u64,
    hyp_image: u64,
    config: u64,
    linux_images: u64,
    kernel: u64,
    dtb: u64,
    initrd: u64,
}

fn range(r: Range) -> String {
    format!("MemoryRange {{ base: {:#x}, size: {:#x} }}", r.base, r.size)
}

fn main() {
    let name = env::var("TANDEM_BOARD").unwrap_or_else(|_| "qemu-virt".to_owned());
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let path = manifest.join(format!("{name}.toml"));
    println!("cargo:rerun-if-env-changed=TANDEM_BOARD");
    println!("cargo:rerun-if-changed={}", path.display());
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("board {name}: cannot read {}: {e}", path.display()));
    let f: File =
        toml::from_str(&text).unwrap_or_else(|e| panic!("board {name}: {}: {e}", path.display()));
    assert!(
        f.board.max_cores >= 1 && f.board.max_cores <= tandem_abi::MAX_CORES,
        "{}: board.max_cores must be 1..={} (Tandem's limit, Aff0 only), got {}",
        path.display(),
        tandem_abi::MAX_CORES,
        f.board.max_cores
    );

    let mut out = String::new();
    writeln!(out, "/// The board this build is for (`{name}`).").unwrap();
    writeln!(out, "pub const BOARD: Board = Board {{").unwrap();
    writeln!(out, "    name: {:?},", f.board.name).unwrap();
    writeln!(out, "    max_cores: {},", f.board.max_cores).unwrap();
    writeln!(out, "    counter_hz: {},", f.board.counter_hz).unwrap();
    writeln!(out, "    rtos_leave_ns: {},", f.board.rtos_leave_ns).unwrap();
    let m = &f.memory;
    writeln!(out, "    secure_flash: {},", range(m.secure_flash)).unwrap();
    writeln!(out, "    secure_ram: {},", range(m.secure_ram)).unwrap();
    writeln!(out, "    monitor_ram: {},", range(m.monitor_ram)).unwrap();
    writeln!(out, "    rtos_ram: {},", range(m.rtos_ram)).unwrap();
    writeln!(out, "    normal_ram: {},", range(m.normal_ram)).unwrap();
    writeln!(out, "    shared: {},", range(m.shared)).unwrap();
    writeln!(out, "    hyp_ram: {},", range(m.hyp_ram)).unwrap();
    let d = &f.devices;
    writeln!(out, "    gicd: {:#x},", d.gicd).unwrap();
    writeln!(out, "    gicr: {:#x},", d.gicr).unwrap();
    writeln!(out, "    normal_uart: {:#x},", d.normal_uart).unwrap();
    writeln!(out, "    secure_uart: {:#x},", d.secure_uart).unwrap();
    writeln!(out, "    uart_clock_hz: {},", d.uart_clock_hz).unwrap();
    let uart = match d.uart {
        Uart::Pl011 => "Pl011",
        Uart::Imx => "Imx",
    };
    writeln!(out, "    uart: UartKind::{uart},").unwrap();
    match d.power {
        Power::Pl061 {
            base,
            poweroff_line,
            reset_line,
        } => writeln!(
            out,
            "    power: Power::Pl061 {{ base: {base:#x}, poweroff_line: {poweroff_line}, reset_line: {reset_line} }},"
        ),
        Power::ImxSnvsWdog { snvs, wdog } => writeln!(
            out,
            "    power: Power::ImxSnvsWdog {{ snvs: {snvs:#x}, wdog: {wdog:#x} }},"
        ),
    }
    .unwrap();
    let v = d.virtio_mmio.unwrap_or(VirtioMmio {
        base: 0,
        stride: 0,
        count: 0,
    });
    assert!(
        v.count == 0 || (v.stride >= 0x100 && v.stride.is_power_of_two()),
        "{}: devices.virtio_mmio.stride must be a power of two of at least 0x100 (a transport's registers)",
        path.display()
    );
    writeln!(
        out,
        "    virtio_mmio: VirtioMmio {{ base: {:#x}, stride: {:#x}, count: {} }},",
        v.base, v.stride, v.count
    )
    .unwrap();
    let i = &f.interrupts;
    writeln!(out, "    secure_timer_intid: {},", i.secure_timer).unwrap();
    let sgi = &i.sgi;
    let roles = [
        ("reschedule", sgi.reschedule),
        ("demo", sgi.demo),
        ("rpc", sgi.rpc),
        ("monitor", sgi.monitor),
    ];
    for (k, &(role, n)) in roles.iter().enumerate() {
        // Linux's GIC driver takes SGIs 0-7 for itself.
        assert!(
            (8..16).contains(&n),
            "{}: interrupts.sgi.{role} must be an SGI in 8..=15, got {n}",
            path.display()
        );
        if let Some((other, _)) = roles[..k].iter().find(|&&(_, m)| m == n) {
            panic!(
                "{}: interrupts.sgi.{role} and .{other} are both SGI {n}",
                path.display()
            );
        }
    }
    writeln!(
        out,
        "    sgi: Sgis {{ reschedule: {}, demo: {}, rpc: {}, monitor: {} }},",
        sgi.reschedule, sgi.demo, sgi.rpc, sgi.monitor
    )
    .unwrap();
    writeln!(
        out,
        "    nonsecure_virtual_timer_intid: {},",
        i.nonsecure_virtual_timer
    )
    .unwrap();
    writeln!(out, "    doorbell_spi: {},", i.doorbell_spi).unwrap();
    let b = &f.boot;
    writeln!(out, "    rtos_image: {:#x},", b.rtos_image).unwrap();
    writeln!(out, "    hyp_image: {:#x},", b.hyp_image).unwrap();
    writeln!(out, "    boot_config: {:#x},", b.config).unwrap();
    writeln!(out, "    linux_images: {:#x},", b.linux_images).unwrap();
    writeln!(out, "    kernel_entry: {:#x},", b.kernel).unwrap();
    writeln!(out, "    dtb: {:#x},", b.dtb).unwrap();
    writeln!(out, "    initrd: {:#x},", b.initrd).unwrap();
    writeln!(out, "}};").unwrap();

    let dest = PathBuf::from(env::var("OUT_DIR").unwrap()).join("board.rs");
    fs::write(dest, out).unwrap();
}
