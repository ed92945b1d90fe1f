//! Verification of webhook deliveries, configured by the `webhook:` block of an event document
//! ([`WebhookConfig`]); pure, so that the route, the delivery records and the tests share it.
//!
//! [`verify`] takes the configuration, the resolved secrets and one request ([`Incoming`]), and
//! either accepts it ([`Accepted`]: the dedupe key, the payload and the selected headers for
//! the run) or names why not ([`Rejection`], with the reason code kept in delivery records and
//! the HTTP status to answer). It checks, in this order:
//!
//! 1. the method: only `POST`;
//! 2. the body's length against `maxBodyBytes`;
//! 3. with `signature:`, the HMAC-SHA256 signature: a missing or empty secret setting refuses
//!    everything; the signature header must be present, start with `prefix`, and decode
//!    (`hex` in either case, or standard `base64`); with `timestampHeader`, the timestamp must
//!    be present and whole unix seconds, and the signed text is `"{timestamp}.{body}"` (the
//!    scheme Stripe signs with; GitHub signs the body alone and sends no timestamp). Every
//!    secret is tried (rotation: any one verifies), each compared in constant time. Only a
//!    correctly signed delivery is then checked for age: a timestamp further than `tolerance`
//!    from `now`, in either direction, is expired, so "expired" always means an authentic but
//!    old (or replayed) delivery;
//! 4. with `dedupe:`, the key: the header's value, or the string or number at the JSON pointer
//!    of a JSON body. A key longer than [`MAX_DEDUPE_KEY_LEN`] bytes is replaced by
//!    `sha256:` and the SHA-256 of the key in hex, so the store holds bounded keys.
//!
//! Messages name the check that failed and never contain a secret, a signature or a token.

use std::fmt;

use axum::http::{HeaderMap, Method, StatusCode};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use magrathea_yaml::schema::{DedupeSource, SignatureEncoding, WebhookConfig, WebhookSignature};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The longest dedupe key kept as sent, in bytes; a longer one is hashed.
pub const MAX_DEDUPE_KEY_LEN: usize = 256;

/// The shortest path token (the value of the setting named by `tokenSetting`).
pub const MIN_PATH_TOKEN_LEN: usize = 32;

/// The longest path token.
pub const MAX_PATH_TOKEN_LEN: usize = 256;

/// The dedupe window when the block has no `dedupe:` (Friday's `dedupe_window_sec`): 300 s.
const DEFAULT_DEDUPE_WINDOW_MS: i64 = 300_000;

/// One webhook request, as the route received it.
#[derive(Debug, Clone, Copy)]
pub struct Incoming<'a> {
    /// The request's method.
    pub method: &'a Method,
    /// The request's headers.
    pub headers: &'a HeaderMap,
    /// The raw body (the route stops reading past the limit; [`verify`] checks the length).
    pub body: &'a [u8],
    /// The server's clock, in milliseconds since the unix epoch (injectable for tests).
    pub now_unix_ms: i64,
}

/// What an accepted delivery gives the run and the dedupe check.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Accepted {
    /// The dedupe key when the block has `dedupe:` (hashed past [`MAX_DEDUPE_KEY_LEN`]).
    pub dedupe_key: Option<String>,
    /// The body for `params.payload`: parsed JSON when it parses, else the body as a string
    /// (invalid UTF-8 replaced by U+FFFD); `None` when the body is empty.
    pub params_payload: Option<Value>,
    /// The headers the block selects, for `params.headers`: lower-cased names; several values
    /// of one header joined by `", "`; absent headers left out.
    pub headers: Map<String, Value>,
}

/// Why a delivery was refused. [`reason`](Self::reason) is the stable code a delivery record
/// keeps, [`status`](Self::status) the HTTP answer, [`message`](Self::message) its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejection {
    /// Not a `POST`: the sender must POST.
    Method,
    /// The body is longer than `maxBodyBytes`: the sender must send less.
    TooLarge,
    /// The signature header is absent: the sender is not configured with the secret.
    MissingSignature,
    /// The signature is malformed or matches no secret: the secrets differ, or the request is
    /// forged.
    BadSignature,
    /// The timestamp header is absent.
    MissingTimestamp,
    /// The timestamp is not whole unix seconds.
    BadTimestamp,
    /// The delivery is correctly signed but its timestamp is outside the tolerance: clocks
    /// differ, or the delivery is replayed.
    ExpiredTimestamp,
    /// `dedupe:` is configured and the delivery has no key.
    MissingDedupeKey,
    /// The secret setting is absent or empty: every delivery is refused until it is set.
    NoSecret,
}

impl Rejection {
    /// The stable snake_case code kept in delivery records.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Method => "method_not_allowed",
            Self::TooLarge => "body_too_large",
            Self::MissingSignature => "missing_signature",
            Self::BadSignature => "bad_signature",
            Self::MissingTimestamp => "missing_timestamp",
            Self::BadTimestamp => "bad_timestamp",
            Self::ExpiredTimestamp => "expired_timestamp",
            Self::MissingDedupeKey => "missing_dedupe_key",
            Self::NoSecret => "no_secret",
        }
    }

    /// The HTTP status to answer: 405, 413, 400 for a missing dedupe key, 401 for everything
    /// about signatures, timestamps and secrets.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Method => StatusCode::METHOD_NOT_ALLOWED,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::MissingDedupeKey => StatusCode::BAD_REQUEST,
            Self::MissingSignature
            | Self::BadSignature
            | Self::MissingTimestamp
            | Self::BadTimestamp
            | Self::ExpiredTimestamp
            | Self::NoSecret => StatusCode::UNAUTHORIZED,
        }
    }

    /// The text of the answer, starting with its `[MAG-WHnnn]` code.
    #[must_use]
    pub fn message(&self) -> String {
        let text = match self {
            Self::Method => "[MAG-WH001] a webhook accepts POST only",
            Self::TooLarge => {
                "[MAG-WH002] the body is larger than this webhook accepts (its maxBodyBytes)"
            }
            Self::MissingSignature => "[MAG-WH003] the request has no signature header",
            Self::BadSignature => {
                "[MAG-WH004] the signature is malformed or does not match the webhook's secret"
            }
            Self::MissingTimestamp => "[MAG-WH005] the request has no timestamp header",
            Self::BadTimestamp => {
                "[MAG-WH006] the timestamp header is not a number of unix seconds"
            }
            Self::ExpiredTimestamp => {
                "[MAG-WH007] the timestamp is outside the webhook's tolerance of the server's clock"
            }
            Self::MissingDedupeKey => "[MAG-WH008] the request has no dedupe key",
            Self::NoSecret => {
                "[MAG-WH009] the webhook's signing secret is not set, so it refuses every request"
            }
        };
        text.to_owned()
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for Rejection {}

/// Verifies one delivery against the block `cfg` and the resolved `secrets` of
/// `signature.secretSetting` (empty strings are ignored). The order of the checks is the
/// module's; the first that fails is the rejection.
pub fn verify(
    cfg: &WebhookConfig,
    secrets: &[String],
    req: &Incoming<'_>,
) -> Result<Accepted, Rejection> {
    if req.method != Method::POST {
        return Err(Rejection::Method);
    }
    if req.body.len() as u64 > cfg.max_body_bytes {
        return Err(Rejection::TooLarge);
    }
    if let Some(sig) = &cfg.signature {
        verify_signature(sig, secrets, req)?;
    }
    // The bytes as signed above; the payload without a byte-order mark in front.
    let body = crate::http::body::without_bom(req.body);
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let dedupe_key = match cfg.dedupe.as_ref().and_then(|d| d.source()) {
        None => None,
        Some(source) => Some(dedupe_key(source, req.headers, parsed.as_ref())?),
    };
    let params_payload = if body.is_empty() {
        None
    } else {
        Some(parsed.unwrap_or_else(|| Value::String(String::from_utf8_lossy(body).into_owned())))
    };
    let mut headers = Map::new();
    for name in &cfg.headers {
        let lower = name.to_ascii_lowercase();
        let values: Vec<String> = req
            .headers
            .get_all(lower.as_str())
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        if !values.is_empty() {
            headers.insert(lower, Value::String(values.join(", ")));
        }
    }
    Ok(Accepted {
        dedupe_key,
        params_payload,
        headers,
    })
}

fn verify_signature(
    sig: &WebhookSignature,
    secrets: &[String],
    req: &Incoming<'_>,
) -> Result<(), Rejection> {
    let secrets: Vec<&String> = secrets.iter().filter(|s| !s.is_empty()).collect();
    if secrets.is_empty() {
        return Err(Rejection::NoSecret);
    }
    let sent = req
        .headers
        .get(sig.header.as_str())
        .ok_or(Rejection::MissingSignature)?;
    let timestamp = match &sig.timestamp_header {
        None => None,
        Some(name) => {
            let value = req
                .headers
                .get(name.as_str())
                .ok_or(Rejection::MissingTimestamp)?;
            let text = value.to_str().map_err(|_| Rejection::BadTimestamp)?.trim();
            let secs = whole_seconds(text).ok_or(Rejection::BadTimestamp)?;
            Some((text, secs))
        }
    };
    let sent = sent.to_str().map_err(|_| Rejection::BadSignature)?.trim();
    let encoded = sent
        .strip_prefix(sig.prefix.as_str())
        .ok_or(Rejection::BadSignature)?;
    let bytes = match sig.encoding {
        SignatureEncoding::Base64 => BASE64.decode(encoded).ok(),
        _ => hex::decode(encoded).ok(),
    }
    .ok_or(Rejection::BadSignature)?;
    let signed_by_one = secrets.iter().any(|secret| {
        // `verify_slice` compares in constant time.
        mac(secret, timestamp.map(|(text, _)| text), req.body)
            .verify_slice(&bytes)
            .is_ok()
    });
    if !signed_by_one {
        return Err(Rejection::BadSignature);
    }
    if let Some((_, secs)) = timestamp {
        let tolerance_ms = i64::try_from(sig.tolerance.0.as_millis()).unwrap_or(i64::MAX);
        let sent_ms = secs.saturating_mul(1000);
        if sent_ms.abs_diff(req.now_unix_ms) > tolerance_ms.unsigned_abs() {
            return Err(Rejection::ExpiredTimestamp);
        }
    }
    Ok(())
}

/// Whole unix seconds: ASCII digits only (no sign, no fraction), at most 12 of them.
fn whole_seconds(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 12 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The HMAC-SHA256 of the signed text under `secret`: the body, or `"{timestamp}.{body}"`.
fn mac(secret: &str, timestamp: Option<&str>, body: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    if let Some(ts) = timestamp {
        mac.update(ts.as_bytes());
        mac.update(b".");
    }
    mac.update(body);
    mac
}

fn dedupe_key(
    source: DedupeSource<'_>,
    headers: &HeaderMap,
    body: Option<&Value>,
) -> Result<String, Rejection> {
    let key = match source {
        DedupeSource::Header(name) => headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned()),
        DedupeSource::Pointer(pointer) => match body.and_then(|b| b.pointer(pointer)) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        },
        _ => None,
    };
    let key = key
        .filter(|k| !k.is_empty())
        .ok_or(Rejection::MissingDedupeKey)?;
    if key.len() > MAX_DEDUPE_KEY_LEN {
        return Ok(format!(
            "sha256:{}",
            hex::encode(Sha256::digest(key.as_bytes()))
        ));
    }
    Ok(key)
}

/// The signature header value a sender with `secret` sends for `body` (and `timestamp`, unix
/// seconds, when the block has `timestampHeader`): `prefix` and the HMAC-SHA256 in the
/// block's encoding (lower-case hex by default). Without `signature:` in `cfg`, plain hex.
#[must_use]
pub fn sign(secret: &str, timestamp: Option<i64>, body: &[u8], cfg: &WebhookConfig) -> String {
    let ts = timestamp.map(|t| t.to_string());
    let tag = mac(secret, ts.as_deref(), body).finalize().into_bytes();
    match &cfg.signature {
        None => hex::encode(tag),
        Some(sig) => {
            let encoded = match sig.encoding {
                SignatureEncoding::Base64 => BASE64.encode(tag),
                _ => hex::encode(tag),
            };
            format!("{}{encoded}", sig.prefix)
        }
    }
}

/// What the store keeps instead of a path token: its SHA-256 in lower-case hex. A request's
/// token is hashed the same way and looked up, so the store never holds a usable token.
#[must_use]
pub fn path_token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Checks a path token (the value of the setting named by `tokenSetting`): 32 to 256
/// characters of letters, digits, `-` and `_`, so that it is unguessable and a plain URL
/// segment. The message starts with `[MAG-WH011]` and says nothing of the token, not even
/// its length or which rule it breaks: a project's document may name a setting of its
/// tenant's file, which the project's writers may not read.
pub fn check_path_token(token: &str) -> Result<(), String> {
    let chars_ok = token
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !chars_ok || !(MIN_PATH_TOKEN_LEN..=MAX_PATH_TOKEN_LEN).contains(&token.len()) {
        return Err(format!(
            "[MAG-WH011] the webhook's path token is not a valid one: expected \
             {MIN_PATH_TOKEN_LEN} to {MAX_PATH_TOKEN_LEN} characters of letters, digits, `-` \
             and `_`"
        ));
    }
    Ok(())
}

/// How long a delivery's dedupe key is remembered, in milliseconds: the block's
/// `dedupe.window`, or 300 000 (300 s) when it has no `dedupe:`.
#[must_use]
pub fn dedupe_window_ms(cfg: &WebhookConfig) -> i64 {
    cfg.dedupe.as_ref().map_or(DEFAULT_DEDUPE_WINDOW_MS, |d| {
        i64::try_from(d.window.0.as_millis()).unwrap_or(i64::MAX)
    })
}
