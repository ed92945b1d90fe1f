//! What keeps a server without authentication (`--insecure-no-auth`) to its own machine.
//!
//! Such a server binds only loopback addresses (see
//! [`ServeError::InsecureNotLoopback`](super::ServeError::InsecureNotLoopback)). That alone
//! does not keep out a web page in the user's browser: a page of another site may post a form
//! to `http://127.0.0.1:<port>/…` (cross-site request forgery), or point a name it controls at
//! 127.0.0.1 and then script the server as "its own" origin (DNS rebinding). So every request
//! must name the server as the browser sees it:
//!
//! * `Host` must be `127.0.0.1:<port>`, `localhost:<port>` or `[::1]:<port>` (the bound port;
//!   without the port when it is 80) — otherwise 421 `MAG-HTTP-HOST`. A rebinding page sends
//!   its own name.
//! * `Origin`, when present, must be `http://` and one of those — otherwise 403
//!   `MAG-HTTP-ORIGIN`. A cross-site form or `fetch` carries the page's origin.
//!
//! With tokens these checks do not apply: browsers never attach a `Bearer` token to a
//! cross-site request on their own, so a foreign page cannot act with the user's rights, and
//! a server behind a proxy or on a LAN is legitimately reached under other names.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// The names a loopback server answers to.
#[derive(Debug, Clone)]
pub(crate) struct LoopbackNames {
    hosts: Vec<String>,
}

impl LoopbackNames {
    /// The names of a server bound to `port` on loopback.
    pub(crate) fn new(port: u16) -> Self {
        let mut hosts = Vec::new();
        for name in ["127.0.0.1", "localhost", "[::1]"] {
            hosts.push(format!("{name}:{port}"));
            if port == 80 {
                hosts.push(name.to_owned());
            }
        }
        Self { hosts }
    }

    fn is_host(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Checks `Host` and `Origin`.
    fn check(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !self.is_host(host) {
            return Err(ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                "MAG-HTTP-HOST",
                format!(
                    "this server runs without authentication and answers only to {} in the \
                     Host header",
                    self.hosts.join(", ")
                ),
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let same = origin
                .to_str()
                .ok()
                .and_then(|o| o.strip_prefix("http://"))
                .is_some_and(|h| self.is_host(h));
            if !same {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "MAG-HTTP-ORIGIN",
                    "this server runs without authentication and refuses requests from web \
                     pages of other origins",
                ));
            }
        }
        Ok(())
    }
}

/// Middleware refusing requests whose `Host` or `Origin` is not the loopback server's own.
pub(crate) async fn check(
    State(names): State<Arc<LoopbackNames>>,
    req: Request,
    next: Next,
) -> Response {
    match names.check(req.headers()) {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        if let Some(o) = origin {
            h.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        h
    }

    #[test]
    fn only_the_loopback_names_of_the_bound_port_pass() {
        let names = LoopbackNames::new(7878);
        for ok in [
            "127.0.0.1:7878",
            "localhost:7878",
            "LOCALHOST:7878",
            "[::1]:7878",
        ] {
            names.check(&headers(ok, None)).unwrap();
            names
                .check(&headers(ok, Some(&format!("http://{ok}"))))
                .unwrap();
        }
        for bad in ["evil.example:7878", "127.0.0.1:7879", "localhost", ""] {
            let e = names.check(&headers(bad, None)).unwrap_err();
            assert_eq!(e.code, "MAG-HTTP-HOST");
        }
        for bad in ["http://evil.example", "null", "https://localhost:7878"] {
            let e = names
                .check(&headers("localhost:7878", Some(bad)))
                .unwrap_err();
            assert_eq!(e.code, "MAG-HTTP-ORIGIN");
        }
        LoopbackNames::new(80)
            .check(&headers("localhost", Some("http://localhost")))
            .unwrap();
    }
}
