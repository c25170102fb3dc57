//! The project's commands: `cargo xtask demo` (run the dashboard on the
//! embedded simulated cluster, or a real one with `--upstream URL`),
//! `cargo xtask test` (every check CI runs, the native tests against a
//! private PostgreSQL server: `postgres`) and `cargo xtask setup` (install
//! the toolchain pieces only). Each installs what it needs, skipping what is
//! already present at the right version. Not in the usage text: `cargo
//! xtask postgres [--check]`, the tests' PostgreSQL server on its own.

mod bench;
mod demo;
mod dev;
mod postgres;
mod precompress;
mod run;
mod soak;
mod test;
mod tools;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  demo [--upstream URL] [--listen ADDR] [-- SERVE-ARGS…]
        build the page and run `deltascope serve --demo` (or against URL, e.g. kubectl proxy)
  dev [--upstream URL] [--port P] [--serve-port S]
        the development loop: `deltascope serve` (demo, or in front of URL) and `trunk serve`
        (rebuilds and reloads the page on save) together; prints one sign-in URL on trunk's port
  test  fmt, clippy (native + wasm32), native tests (against a private PostgreSQL), wasm tests
        and browser tests in headless Chromium
  setup install the wasm target, trunk, wasm-bindgen-cli, Chromium, chromedriver and the
        PostgreSQL server when missing
  build [--release]
        build the page into dist/ and the `deltascope` binary
  bench [--quick] [--only core|timeline|proxy|sim|history|bundle|page]
        run the benchmarks; writes BENCHMARKS.md and target/bench/results.json
  soak [--minutes N] [--rate R] [--debug]
        the long run: R events/s (500) into a headless page for N minutes (60); memory
        and digest checks every minute into target/soak/soak.csv and soak.md";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    let result = match command.as_str() {
        "bench" => bench::bench(rest),
        "demo" => demo::demo(rest),
        "dev" => dev::dev(rest),
        "test" => test::test(rest),
        "setup" => {
            tools::setup(tools::Needs::Everything).and_then(|()| postgres::server_bin().map(drop))
        }
        "postgres" => postgres::command(rest),
        "build" => demo::build(rest.iter().any(|a| a == "--release")),
        "soak" => soak::soak(rest),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(run::XtaskError::Usage(format!(
            "unknown command {other:?}\n\n{USAGE}"
        ))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error}");
            ExitCode::FAILURE
        }
    }
}
