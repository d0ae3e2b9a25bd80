//! Writes the RTOS's linker script from the board description: the RTOS runs
//! from its part of secure RAM, where the monitor copies it.

use std::{env, fs, path::PathBuf};
use tandem_board::BOARD;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let script = include_str!("link.ld.in")
        .replace("@RAM_BASE@", &format!("{:#x}", BOARD.rtos_ram.base))
        .replace("@RAM_SIZE@", &format!("{:#x}", BOARD.rtos_ram.size));
    fs::write(out.join("link.ld"), script).unwrap();
    println!(
        "cargo:rustc-link-arg-bins=-T{}",
        out.join("link.ld").display()
    );
    println!("cargo:rerun-if-changed=link.ld.in");
}
