//! The browser side of the network: `fetch` + `ReadableStream` driving the sans-IO reflector.
