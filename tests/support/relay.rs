//! A TCP relay between the browser and serve that a test controls: it can
//! drop every connection at once (the page's channel among them) or be
//! pointed at a restarted serve (`browser_channel_chaos`, `browser_logs`).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};

/// A TCP relay in front of serve that the test can cut.
pub struct Relay {
    pub addr: SocketAddr,
    target: Arc<Mutex<SocketAddr>>,
    connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Relay {
    pub async fn start() -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("relay bind");
        let addr = listener.local_addr().expect("relay addr");
        let target = Arc::new(Mutex::new(addr));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let (t, c) = (Arc::clone(&target), Arc::clone(&connections));
        tokio::spawn(async move {
            while let Ok((mut browser, _)) = listener.accept().await {
                let to = *t.lock().expect("target");
                let task = tokio::spawn(async move {
                    if let Ok(mut serve) = TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut browser, &mut serve).await;
                    }
                });
                c.lock().expect("connections").push(task.abort_handle());
            }
        });
        Relay {
            addr,
            target,
            connections,
        }
    }

    pub fn point_at(&self, serve: SocketAddr) {
        *self.target.lock().expect("target") = serve;
    }

    /// Drops every relayed connection (the page's channel among them).
    pub fn cut(&self) -> usize {
        let cut: Vec<_> = std::mem::take(&mut *self.connections.lock().expect("connections"));
        cut.iter().for_each(|task| task.abort());
        cut.len()
    }
}
