//! `tandem-memprofile PROFILE`: a memory profile's values and hash as JSON, for the harness's provenance and reports.
//!
//! PROFILE is what `--memmodel` takes: a built-in profile's name or a path
//! to a profile TOML. Exits 1 with the reason on a bad profile.

use tandem_memmodel::Profile;

// The plugin's JSON module (the plugin is a cdylib a binary cannot link);
// the counters' half is the plugin's only.
#[allow(dead_code)]
#[path = "../json.rs"]
mod json;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [spec] = args.as_slice() else {
        eprintln!("usage: tandem-memprofile PROFILE (a built-in name or a TOML path)");
        std::process::exit(2);
    };
    match Profile::named(spec) {
        Ok(profile) => println!("{}", json::profile_json(&profile)),
        Err(e) => {
            eprintln!("tandem-memprofile: {e}");
            std::process::exit(1);
        }
    }
}
