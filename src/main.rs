//! The page's entry point: on `wasm32` it mounts the yew app; natively it only
//! says where the real programs are (the binary `deltascope` lives in `proxy/`).

/// The bench build counts what the page allocates (`metrics::heap`).
#[cfg(all(target_arch = "wasm32", feature = "bench"))]
#[global_allocator]
static ALLOCATOR: deltascope::metrics::heap::CountingAllocator =
    deltascope::metrics::heap::CountingAllocator;

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
