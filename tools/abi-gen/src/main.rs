//! `tandem-abi-gen c|python`: prints the Tandem ABI as a C header (for
//! Linux's driver and tools, built into `build/include`) or as the Python
//! module the harness imports (kept at `harness/tandem/platform/abi_generated.py`).

fn main() {
    let what = std::env::args().nth(1).unwrap_or_default();
    let text = match what.as_str() {
        "c" => tandem_abi_gen::c_header(),
        "python" => tandem_abi_gen::python_module(),
        _ => {
            eprintln!("usage: tandem-abi-gen c|python");
            std::process::exit(2);
        }
    };
    print!("{text}");
}
