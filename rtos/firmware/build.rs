//! Writes the RTOS's linker script from the board description: the RTOS runs
//! from its part of secure RAM, where the monitor copies it. The script goes
//! on the library search path, where the image crate's link finds it by name
//! (`tandem-rtos.ld`).

use std::{env, fs, path::PathBuf};
use tandem_board::BOARD;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let script = include_str!("link.ld.in")
        .replace("@RAM_BASE@", &format!("{:#x}", BOARD.rtos_ram.base))
        .replace("@RAM_SIZE@", &format!("{:#x}", BOARD.rtos_ram.size));
    fs::write(out.join("tandem-rtos.ld"), script).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=link.ld.in");
}
