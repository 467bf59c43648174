//! A loopback listener whose every connection can be cut by the request it carries: a handler
//! sets the connection's switch, and from then on every read and write of the connection fails,
//! so the server closes it without an answer (the `DropAfterCommit` fault).

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Accepts connections that carry a [`Cut`] switch.
pub(crate) struct CuttableListener(pub TcpListener);

/// The switch of one connection, handed to its requests' handlers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cut(Arc<AtomicBool>);

impl Cut {
    /// Cuts the connection: nothing more is read from or written to it.
    pub(crate) fn cut(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn is_cut(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A TCP stream that fails once its switch is set.
pub(crate) struct CuttableStream {
    tcp: TcpStream,
    cut: Cut,
}

fn cut_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "connection cut by a fault",
    )
}

impl AsyncRead for CuttableStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.cut.is_cut() {
            return Poll::Ready(Err(cut_error()));
        }
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for CuttableStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.cut.is_cut() {
            return Poll::Ready(Err(cut_error()));
        }
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.cut.is_cut() {
            return Poll::Ready(Err(cut_error()));
        }
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

impl Listener for CuttableListener {
    type Io = CuttableStream;
    type Addr = Cut;

    async fn accept(&mut self) -> (CuttableStream, Cut) {
        loop {
            match self.0.accept().await {
                Ok((tcp, _peer)) => {
                    let _ = tcp.set_nodelay(true);
                    let cut = Cut::default();
                    return (
                        CuttableStream {
                            tcp,
                            cut: cut.clone(),
                        },
                        cut,
                    );
                }
                // Out of descriptors and the like: wait, then accept again.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Cut> {
        self.0.local_addr().map(|_| Cut::default())
    }
}

impl Connected<IncomingStream<'_, CuttableListener>> for Cut {
    fn connect_info(stream: IncomingStream<'_, CuttableListener>) -> Cut {
        stream.remote_addr().clone()
    }
}
