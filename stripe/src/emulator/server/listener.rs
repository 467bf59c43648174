//! The loopback listener: every connection carries a kill switch, so that a
//! handler can make its own connection close without an answer.

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// A TCP listener whose connections carry a kill switch, so that a handler can
/// make its own connection close without an answer (the "commit, then drop"
/// fault).
pub(crate) struct KillableListener(pub TcpListener);

/// Per-connection information handed to handlers.
#[derive(Debug, Clone)]
pub(crate) struct Conn {
    #[allow(dead_code)]
    pub peer: SocketAddr,
    pub kill: Arc<AtomicBool>,
}

/// A TCP stream that fails every write once its kill switch is set.
pub(crate) struct KillableStream {
    inner: TcpStream,
    kill: Arc<AtomicBool>,
}

fn killed() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "connection dropped by fault rule",
    )
}

impl AsyncRead for KillableStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.kill.load(Ordering::SeqCst) {
            return Poll::Ready(Err(killed()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.kill.load(Ordering::SeqCst) {
            return Poll::Ready(Err(killed()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.kill.load(Ordering::SeqCst) {
            return Poll::Ready(Err(killed()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl Listener for KillableListener {
    type Io = KillableStream;
    type Addr = Conn;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let kill = Arc::new(AtomicBool::new(false));
                    let conn = Conn {
                        peer,
                        kill: kill.clone(),
                    };
                    return (
                        KillableStream {
                            inner: stream,
                            kill,
                        },
                        conn,
                    );
                }
                // Out of file descriptors and the like: wait and retry.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(Conn {
            peer: self.0.local_addr()?,
            kill: Arc::new(AtomicBool::new(false)),
        })
    }
}

impl Connected<IncomingStream<'_, KillableListener>> for Conn {
    fn connect_info(stream: IncomingStream<'_, KillableListener>) -> Self {
        stream.remote_addr().clone()
    }
}
