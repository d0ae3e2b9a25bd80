//! Writes the monitor's linker script from the board description, so the
//! memory map has one source (boards/*.toml).

use std::{env, fs, path::PathBuf};
use tandem_board::BOARD;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let template = include_str!("link.ld.in");
    let script = template
        .replace("@FLASH_BASE@", &format!("{:#x}", BOARD.secure_flash.base))
        .replace("@FLASH_SIZE@", &format!("{:#x}", BOARD.secure_flash.size))
        .replace("@RAM_BASE@", &format!("{:#x}", BOARD.monitor_ram.base))
        .replace("@RAM_SIZE@", &format!("{:#x}", BOARD.monitor_ram.size));
    fs::write(out.join("link.ld"), script).unwrap();
    println!(
        "cargo:rustc-link-arg-bins=-T{}",
        out.join("link.ld").display()
    );
    println!("cargo:rerun-if-changed=link.ld.in");
}
