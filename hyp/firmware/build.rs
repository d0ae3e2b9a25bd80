//! Writes the EL2 layer's linker script from the board description: the
//! layer runs from its RAM in the normal world (`[memory] hyp_ram`), where
//! the monitor copies it, and leaves that RAM's last page free for the
//! partition table the monitor copies beside it.

use std::{env, fs, path::PathBuf};
use tandem_board::BOARD;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let script = include_str!("link.ld.in")
        .replace("@RAM_BASE@", &format!("{:#x}", BOARD.hyp_ram.base))
        .replace("@RAM_SIZE@", &format!("{:#x}", BOARD.hyp_ram.size - 0x1000));
    fs::write(out.join("link.ld"), script).unwrap();
    println!(
        "cargo:rustc-link-arg-bins=-T{}",
        out.join("link.ld").display()
    );
    println!("cargo:rerun-if-changed=link.ld.in");
}
