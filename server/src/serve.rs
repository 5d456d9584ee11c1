//! The connection loop: each accepted connection served by hyper's HTTP/1
//! server with a deadline for its request headers, and a graceful stop.
//!
//! ```text
//! listener ─accept─► connection task ─ hyper http1 (headers within Limits::header_timeout) ─► router
//!                          │ writes through canned::JsonErrors (hyper's own 400/414/431 get JSON bodies)
//!     ▲                     │ stop signal: finish the request in flight, then close
//! shutdown future ──────────┘ the loop waits until every connection task has ended
//! ```
//!
//! `axum::serve` does the same but gives a connection that never finishes
//! its headers all the time it likes, so slow clients could hold every
//! socket the process may open.

use crate::canned::JsonErrors;
use axum::extract::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt;

/// Serves `router` on `listener` until `shutdown` resolves, then waits for
/// the requests in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let (stop_tx, stop_rx) = watch::channel(());
    let (open_tx, open_rx) = watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors or a connection reset before it
                // was accepted: wait a moment rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = router
            .clone()
            .map_request(|req: Request<Incoming>| req.map(axum::body::Body::new));
        let (stop_rx, open_rx) = (stop_rx.clone(), open_rx.clone());
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(
                    TokioIo::new(JsonErrors::new(stream)),
                    TowerToHyperService::new(service),
                )
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            let mut stop_rx = stop_rx;
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop_rx.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(open_rx);
        });
    }
    drop(listener);
    let _ = stop_tx.send(());
    drop(open_rx);
    open_tx.closed().await;
}
