//! How serve's upstream client reaches the Kubernetes API: over TCP (an
//! `--upstream URL`, a `kubectl proxy` the user runs) or over the Unix
//! socket of a `kubectl proxy` serve runs itself (`--context`), whose
//! directory only the user can enter, so no local process but serve can
//! borrow the user's credentials through it.
//!
//! [`Connector`] is one `tower::Service<Uri>` for both, and [`Io`] one
//! connection type, so [`crate::forward`] keeps a single pooled hyper
//! `Client` type and every user of the upstream (forwarding, the channel's
//! streams, the recorder's reads) works over either unchanged.
//!
//! Why not the `hyperlocal` crate: it fits hyper 1, but it is a connector of
//! its own type (the client would become generic over two connectors, or
//! boxed), and it expects the socket's path hex-encoded in every request's
//! URI. Here the socket is fixed per upstream and the requests keep the
//! `http://localhost/…` form `kubectl proxy` accepts (its default
//! `--accept-hosts` is loopback names): the few lines below are all it takes.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpStream, UnixStream};

/// Why a connection to the upstream could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// hyper-util's own error (its type is not public).
    #[error(transparent)]
    Tcp(Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot connect to the unix socket {path}: {source}")]
    Unix {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Opens connections to one upstream: TCP to the request's authority, or
/// always the same Unix socket (whatever the URI names).
#[derive(Clone)]
pub enum Connector {
    Tcp(HttpConnector),
    Unix(Arc<Path>),
}

impl Connector {
    /// TCP with `TCP_NODELAY` and a 10 s connect timeout.
    pub fn tcp() -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(std::time::Duration::from_secs(10)));
        Connector::Tcp(connector)
    }

    /// The Unix socket at `path`.
    pub fn unix(path: &Path) -> Self {
        Connector::Unix(Arc::from(path))
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<Io, ConnectError>> + Send>>;

impl tower::Service<Uri> for Connector {
    type Response = Io;
    type Error = ConnectError;
    type Future = Connecting;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self {
            Connector::Tcp(tcp) => tcp.poll_ready(cx).map_err(|e| ConnectError::Tcp(e.into())),
            Connector::Unix(_) => Poll::Ready(Ok(())),
        }
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        match self {
            Connector::Tcp(tcp) => {
                let connecting = tcp.call(uri);
                Box::pin(async move {
                    match connecting.await {
                        Ok(io) => Ok(Io::Tcp(io)),
                        Err(error) => Err(ConnectError::Tcp(error.into())),
                    }
                })
            }
            Connector::Unix(path) => {
                let path = Arc::clone(path);
                Box::pin(async move {
                    match UnixStream::connect(&*path).await {
                        Ok(stream) => Ok(Io::Unix(TokioIo::new(stream))),
                        Err(source) => Err(ConnectError::Unix {
                            path: path.to_path_buf(),
                            source,
                        }),
                    }
                })
            }
        }
    }
}

/// One upstream connection, either kind.
pub enum Io {
    Tcp(TokioIo<TcpStream>),
    Unix(TokioIo<UnixStream>),
}

impl Connection for Io {
    fn connected(&self) -> Connected {
        match self {
            Io::Tcp(tcp) => tcp.connected(),
            Io::Unix(_) => Connected::new(),
        }
    }
}

impl Read for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Tcp(io) => Pin::new(io).poll_read(cx, buf),
            Io::Unix(io) => Pin::new(io).poll_read(cx, buf),
        }
    }
}

impl Write for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Tcp(io) => Pin::new(io).poll_write(cx, buf),
            Io::Unix(io) => Pin::new(io).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Tcp(io) => Pin::new(io).poll_flush(cx),
            Io::Unix(io) => Pin::new(io).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Tcp(io) => Pin::new(io).poll_shutdown(cx),
            Io::Unix(io) => Pin::new(io).poll_shutdown(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Tcp(io) => io.is_write_vectored(),
            Io::Unix(io) => io.is_write_vectored(),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Tcp(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            Io::Unix(io) => Pin::new(io).poll_write_vectored(cx, bufs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[tokio::test]
    async fn a_unix_connector_reaches_its_socket_whatever_the_uri_and_says_which_when_it_cannot() {
        let dir = std::env::temp_dir().join(format!("dsio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("s.sock");
        let _ = std::fs::remove_file(&socket);
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let uri: Uri = "http://localhost/version".parse().unwrap();
        let connected = Connector::unix(&socket).oneshot(uri.clone()).await;
        assert!(matches!(connected, Ok(Io::Unix(_))));
        assert!(listener.accept().await.is_ok());
        drop(listener);
        std::fs::remove_file(&socket).unwrap();
        let error = Connector::unix(&socket).oneshot(uri).await.err().unwrap();
        assert!(error.to_string().contains("s.sock"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
