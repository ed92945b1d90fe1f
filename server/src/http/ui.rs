//! `GET /ui` and `GET /ui/{*path}`: the web UI, plain files under `server/ui/` embedded in the
//! binary.
//!
//! The UI is HTML, CSS and ES modules with no build step: it speaks only the public HTTP API,
//! signs in with an API token it keeps in the browser's `sessionStorage` and sends as
//! `Authorization: Bearer`. The pages themselves need no token (they hold no data).
//!
//! The files are embedded with `include_str!` from a fixed table ([`ASSETS`]): a dozen text
//! files need no embedding crate, the binary serves exactly the files listed, and a test
//! checks the table against the directory so no file is forgotten. Every answer carries a
//! strict `Content-Security-Policy` (everything from this origin only, no inline script or
//! style, no framing), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// The policy every UI answer carries: this origin only; no inline code, no plugins, no
/// framing, forms and the base URL pinned to this origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// One embedded file: its path under `/ui/`, its media type and its text.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// The path below `/ui/`, e.g. `app.js`.
    pub path: &'static str,
    /// The `Content-Type` it is served with.
    pub content_type: &'static str,
    /// The file's text.
    pub body: &'static str,
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_str!(concat!("../../ui/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the UI.
pub const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("runs.js", JS),
    asset!("run.js", JS),
    asset!("graph.js", JS),
    asset!("inbox.js", JS),
    asset!("workflows.js", JS),
];

/// The asset at `path` (`""` is the page).
pub fn asset(path: &str) -> Option<&'static Asset> {
    let path = if path.is_empty() { "index.html" } else { path };
    ASSETS.iter().find(|a| a.path == path)
}

/// `GET /ui`: the page.
pub(crate) async fn index() -> Response {
    serve("")
}

/// `GET /ui/{*path}`: an asset; 404 for anything not embedded.
pub(crate) async fn file(Path(path): Path<String>) -> Response {
    serve(&path)
}

fn serve(path: &str) -> Response {
    let Some(a) = asset(path) else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "MAG-HTTP-404",
            "no such file of the UI",
        )
        .into_response();
    };
    let mut r = (StatusCode::OK, a.body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(a.content_type),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The files change with the binary: revalidate rather than cache a stale UI.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_the_ui_directory_is_embedded_and_nothing_else() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = ASSETS.iter().map(|a| a.path.to_owned()).collect();
        embedded.sort();
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn no_asset_fetches_from_another_origin() {
        for a in ASSETS {
            for needle in ["http://", "https://", "//cdn", "eval("] {
                let hits: Vec<&str> = a
                    .body
                    .lines()
                    .filter(|l| l.contains(needle) && !l.contains("www.w3.org/2000/svg"))
                    .collect();
                assert!(hits.is_empty(), "{} contains {needle}: {hits:?}", a.path);
            }
        }
    }
}
