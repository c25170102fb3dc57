//! `cargo xtask build` and `cargo xtask demo`: build the page with trunk and the
//! `deltascope` binary, then run `deltascope serve` on the simulated cluster (or
//! in front of a real cluster's `kubectl proxy` with `--upstream URL`).

use std::os::unix::process::CommandExt;

use crate::run::{command, root, step, Result, XtaskError};
use crate::tools::{self, Needs};

/// Builds dist/ (trunk) and the `deltascope` binary, in debug or release.
pub fn build(release: bool) -> Result<()> {
    tools::setup(Needs::Build)?;
    build_page(release)?;
    build_binary(release)
}

/// `trunk build` into `dist/`, then the brotli of its files (`FILE.br`).
pub fn build_page(release: bool) -> Result<()> {
    let mut trunk = command("trunk");
    trunk.arg("build").env("TRUNK_SKIP_VERSION_CHECK", "true");
    if release {
        trunk.arg("--release");
    }
    step(
        if release {
            "trunk build --release"
        } else {
            "trunk build"
        },
        &mut trunk,
        "the page did not build; the compiler errors above say where",
    )?;
    crate::precompress::precompress(&root().join("dist"), release)?;
    Ok(())
}

pub fn build_binary(release: bool) -> Result<()> {
    let mut cargo = command("cargo");
    cargo.args([
        "build",
        "--package",
        "deltascope-proxy",
        "--bin",
        "deltascope",
    ]);
    if release {
        cargo.arg("--release");
    }
    step(
        "cargo build deltascope",
        &mut cargo,
        "the proxy did not build; see the errors above",
    )
}

pub fn demo(args: &[String]) -> Result<()> {
    let mut upstream: Option<String> = None;
    let mut listen = "127.0.0.1:8080".to_string();
    let mut extra: Vec<String> = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--upstream" => upstream = Some(value_of(&mut iter, "--upstream")?),
            "--listen" => listen = value_of(&mut iter, "--listen")?,
            "--" => extra.extend(iter.by_ref().cloned()),
            other => {
                return Err(XtaskError::Usage(format!(
                    "demo: unknown argument {other:?} (put serve flags after --)"
                )))
            }
        }
    }
    build(true)?;
    let binary = root().join("target/release/deltascope");
    let mut serve = command(&binary.to_string_lossy());
    serve
        .arg("serve")
        .args(["--listen", &listen, "--dist"])
        .arg(root().join("dist"));
    match &upstream {
        Some(url) => serve.args(["--upstream", url]),
        None => serve.arg("--demo"),
    };
    serve.args(&extra);
    println!("xtask: starting {}", binary.display());
    // Replace this process so Ctrl-C stops the server directly.
    let error = serve.exec();
    Err(XtaskError::Spawn {
        program: binary.display().to_string(),
        source: error,
    })
}

fn value_of<'a>(iter: &mut impl Iterator<Item = &'a String>, flag: &str) -> Result<String> {
    iter.next()
        .cloned()
        .ok_or_else(|| XtaskError::Usage(format!("{flag} needs a value")))
}
