//! The page's entry point: on `wasm32` it mounts the yew app; natively it only
//! says where the real programs are (the binary `deltascope` lives in `proxy/`).

#[cfg(target_arch = "wasm32")]
fn main() {
    deltascope::ui::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "deltascope-app is the WebAssembly page; build it with `trunk build`. \
         Run the dashboard with `cargo xtask demo` or `deltascope serve`."
    );
    std::process::exit(2);
}
