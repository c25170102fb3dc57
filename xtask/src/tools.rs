//! Installing the toolchain from the package registries, each piece only when
//! it is missing or at the wrong version: the wasm32 target (rustup), trunk and
//! wasm-bindgen-cli (crates.io, exact versions, built mostly unoptimised:
//! see [`WASM_BINDGEN_HOT_PACKAGES`]), Chromium and chromedriver (Debian,
//! [`apt_install`], which `postgres::server_bin` uses for the PostgreSQL
//! server the tests run against). Nothing here downloads a binary
//! from anywhere else.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::run::{self, command, output_of, step, Result, XtaskError};

/// trunk 0.22 needs a newer rustc than this machine's; 0.21.14 is checked to work.
pub const TRUNK_VERSION: &str = "0.21.14";

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// What building and serving the page needs.
    Build,
    /// Build plus the browser for tests.
    Everything,
}

pub fn setup(needs: Needs) -> Result<()> {
    let started = Instant::now();
    wasm_target()?;
    trunk()?;
    wasm_bindgen_cli()?;
    if needs == Needs::Everything {
        chromium()?;
    }
    println!(
        "xtask: toolchain ready ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn wasm_target() -> Result<()> {
    let installed = output_of("rustup", &["target", "list", "--installed"]).unwrap_or_default();
    if installed
        .lines()
        .any(|line| line.trim() == "wasm32-unknown-unknown")
    {
        return Ok(());
    }
    step(
        "rustup target add wasm32-unknown-unknown",
        command("rustup").args(["target", "add", "wasm32-unknown-unknown"]),
        "rustup could not add the target; check that rustup manages this toolchain",
    )
}

fn trunk() -> Result<()> {
    let wanted = format!("trunk {TRUNK_VERSION}");
    if output_of("trunk", &["--version"]).is_some_and(|v| v.trim() == wanted) {
        return Ok(());
    }
    println!("xtask: installing {wanted} from crates.io (about 5 minutes on 2 cores)");
    // Unoptimised: trunk's own release profile (fat LTO, one codegen unit)
    // takes 10.4 minutes to build on 2 cores, this 4.8; what trunk does
    // (run cargo and wasm-bindgen, copy files, serve) is no slower for it
    // that a build of the page notices (9.3 s against 10.5 s here).
    step(
        "cargo install trunk",
        &mut unoptimised_install(&["trunk", "--locked", "--version", TRUNK_VERSION]),
        "cargo could not build trunk; it needs a C compiler (gcc) and network access to crates.io",
    )
}

/// `cargo install ARGS` with the release profile at opt-level 0, no LTO
/// and no debug info: the tools build in half the time or less, and do
/// their work no slower that a build of the page notices (see [`trunk`]
/// and [`WASM_BINDGEN_HOT_PACKAGES`]).
fn unoptimised_install(args: &[&str]) -> Command {
    let mut install = command("cargo");
    install
        .arg("install")
        .args(args)
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false");
    install
}

/// wasm-bindgen-cli must match the `wasm-bindgen` crate in Cargo.lock exactly.
pub fn wasm_bindgen_version() -> Result<String> {
    let lock_path = run::root().join("Cargo.lock");
    let lock = std::fs::read_to_string(&lock_path).map_err(|source| XtaskError::Io {
        what: format!("reading {}", lock_path.display()),
        source,
    })?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"wasm-bindgen\"" {
            if let Some(version) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = \""))
            {
                return Ok(version.trim_end_matches('"').to_string());
            }
        }
    }
    Err(XtaskError::Usage(format!(
        "Cargo.lock has no wasm-bindgen entry; run `cargo generate-lockfile` in {}",
        run::root().display()
    )))
}

fn wasm_bindgen_cli() -> Result<()> {
    let version = wasm_bindgen_version()?;
    let wanted = format!("wasm-bindgen {version}");
    let have_bindgen =
        output_of("wasm-bindgen", &["--version"]).is_some_and(|v| v.trim() == wanted);
    let have_runner = output_of("wasm-bindgen-test-runner", &["--version"]).is_some();
    if have_bindgen && have_runner {
        return Ok(());
    }
    println!("xtask: installing wasm-bindgen-cli {version} from crates.io (about 2.5 minutes)");
    // Not --locked: its lockfile pins a webpki-roots version the registry no longer has.
    let mut install = unoptimised_install(&["wasm-bindgen-cli", "--version", &version]);
    // Unoptimised but for the crates that read and write the wasm: the
    // rest (its test runner's HTTP and TLS stack, clap, …) is most of the
    // build and none of a page build's time.
    for package in WASM_BINDGEN_HOT_PACKAGES {
        install.args([
            "--config",
            &format!("profile.release.package.{package}.opt-level=2"),
        ]);
    }
    step(
        "cargo install wasm-bindgen-cli",
        &mut install,
        "cargo could not build wasm-bindgen-cli; it needs network access to crates.io",
    )
}

/// The crates wasm-bindgen spends its time in when it processes the page's
/// wasm (parsing, rewriting and writing it, its DWARF): built optimised.
/// Measured on 2 cores, installing 0.2.130 and processing the 20 MB debug
/// build of the page: all at opt-level 0, 94 s and 6.4 s; these at 2, 142 s
/// and 2.1–2.4 s; the crate's own profile (opt-level 3), 217 s and 2.1 s.
const WASM_BINDGEN_HOT_PACKAGES: [&str; 9] = [
    "walrus",
    "wasmparser",
    "wasm-encoder",
    "wasm-bindgen-cli-support",
    "gimli",
    "leb128",
    "id-arena",
    "indexmap",
    "hashbrown",
];

fn chromium() -> Result<()> {
    let browser = output_of("/usr/bin/chromium", &["--version"]);
    let driver = output_of("/usr/bin/chromedriver", &["--version"]);
    if let (Some(browser), Some(driver)) = (&browser, &driver) {
        if major_version(browser) == major_version(driver) {
            return Ok(());
        }
    }
    if !is_root() {
        return Err(XtaskError::StepFailed {
            step: "installing chromium and chromium-driver".into(),
            hint: "apt-get needs root; run `sudo apt-get install -y chromium chromium-driver` and retry".into(),
        });
    }
    apt_install(
        &["chromium", "chromium-driver"],
        "Chromium could not be installed from Debian's packages",
    )
}

/// `apt-get update` (once per run) and a non-interactive `apt-get install`
/// of `packages` without recommends, repairing dpkg and retrying once.
pub fn apt_install(packages: &[&str], hint: &str) -> Result<()> {
    static UPDATED: AtomicBool = AtomicBool::new(false);
    if !UPDATED.load(Ordering::SeqCst) {
        step(
            "apt-get update",
            command("apt-get").args(["update"]),
            "apt-get could not reach Debian's package mirrors",
        )?;
        UPDATED.store(true, Ordering::SeqCst);
    }
    let names = packages.join(" ");
    let install = || {
        command("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    println!("xtask: ▶ apt-get install {names}");
    if install() {
        return Ok(());
    }
    // dpkg sometimes breaks midway on these images; repair and retry once.
    step(
        "apt-get --fix-broken install",
        command("apt-get")
            .args(["--fix-broken", "install", "-y"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
        "dpkg is in a broken state; run `apt-get --fix-broken install` by hand",
    )?;
    step(
        &format!("apt-get install {names} (retry)"),
        command("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        hint,
    )
}

fn major_version(version_line: &str) -> Option<String> {
    version_line
        .split_whitespace()
        .find(|word| word.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .and_then(|v| v.split('.').next())
        .map(str::to_string)
}

pub fn is_root() -> bool {
    output_of("id", &["-u"]).is_some_and(|uid| uid.trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::major_version;

    #[test]
    fn chromium_and_driver_versions_compare_by_major() {
        assert_eq!(
            major_version("Chromium 156.0.8078.73 built on Debian").as_deref(),
            Some("156")
        );
        assert_eq!(
            major_version("ChromeDriver 156.0.8078.73 (abc)").as_deref(),
            Some("156")
        );
        assert_eq!(major_version("no digits"), None);
    }
}
