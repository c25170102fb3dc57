//! `cargo xtask soak [--minutes N] [--rate R] [--debug]`: the long run that
//! shows the page never diverges nor grows without bound. Builds the page
//! (into target/soak/dist, leaving dist/ alone) and the `deltascope`
//! binary — release by default, since a debug page measures the debug build
//! rather than the product — then runs the ignored browser
//! test `tests/browser_soak.rs`, which drives `serve --demo` at R events/s
//! into a headless page, samples its JS heap and wasm memory every minute,
//! compares digests with churn paused, and writes target/soak/soak.csv and
//! soak.md. Fails when a digest check failed (the page diverged).

use crate::demo;
use crate::run::{command, root, step, Result, XtaskError};
use crate::tools::{self, Needs};

struct SoakArgs {
    minutes: u64,
    rate: u64,
    release: bool,
}

fn parse(args: &[String]) -> Result<SoakArgs> {
    let mut parsed = SoakArgs {
        minutes: 60,
        rate: 500,
        release: true,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut number = |flag: &str| -> Result<u64> {
            let value = iter
                .next()
                .ok_or_else(|| XtaskError::Usage(format!("soak: {flag} needs a number")))?;
            value.parse().map_err(|_| {
                XtaskError::Usage(format!("soak: {flag} wants a whole number, got {value:?}"))
            })
        };
        match arg.as_str() {
            "--minutes" => parsed.minutes = number("--minutes")?.max(1),
            "--rate" => parsed.rate = number("--rate")?,
            "--debug" => parsed.release = false,
            other => {
                return Err(XtaskError::Usage(format!(
                    "soak: unknown argument {other:?} (expected --minutes N, --rate R, --debug)"
                )))
            }
        }
    }
    Ok(parsed)
}

pub fn soak(args: &[String]) -> Result<()> {
    let args = parse(args)?;
    tools::setup(Needs::Everything)?;
    let out = root().join("target/soak");
    let dist = out.join("dist");
    let mut trunk = command("trunk");
    trunk
        .args(["build", "--dist"])
        .arg(&dist)
        .env("TRUNK_SKIP_VERSION_CHECK", "true");
    if args.release {
        trunk.arg("--release");
    }
    step(
        "trunk build (soak page)",
        &mut trunk,
        "the page did not build; the compiler errors above say where",
    )?;
    crate::precompress::precompress(&dist, args.release)?;
    demo::build_binary(args.release)?;
    let profile = if args.release { "release" } else { "debug" };
    let mut test = command("cargo");
    test.args([
        "test",
        "--package",
        "deltascope",
        "--test",
        "browser_soak",
        "--",
        "--ignored",
        "--nocapture",
    ])
    .env(
        "DELTASCOPE_BIN",
        root().join("target").join(profile).join("deltascope"),
    )
    .env("DELTASCOPE_DIST", &dist)
    .env("DELTASCOPE_SOAK_OUT", &out)
    .env("DELTASCOPE_SOAK_MINUTES", args.minutes.to_string())
    .env("DELTASCOPE_SOAK_RATE", args.rate.to_string())
    .env("CHROMEDRIVER", "/usr/bin/chromedriver");
    step(
        &format!(
            "soak: {} min at {} events/s ({profile} page and binary)",
            args.minutes, args.rate
        ),
        &mut test,
        "the page diverged from the cluster or the run broke; see target/soak/soak.md and the output above",
    )?;
    println!("xtask: soak results in {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_and_flags() {
        let d = parse(&[]).expect("defaults");
        assert_eq!((d.minutes, d.rate, d.release), (60, 500, true));
        let p = parse(&strings(&["--minutes", "10", "--rate", "200", "--debug"])).expect("flags");
        assert_eq!((p.minutes, p.rate, p.release), (10, 200, false));
    }

    #[test]
    fn bad_arguments_say_what_is_expected() {
        let error = parse(&strings(&["--minutes", "ten"])).err().expect("error");
        assert!(error.to_string().contains("whole number"), "{error}");
        let error = parse(&strings(&["--fast"])).err().expect("error");
        assert!(error.to_string().contains("--minutes N"), "{error}");
    }
}
