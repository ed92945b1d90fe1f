//! The `webhook:` block of an event document: a tokenized endpoint
//! `POST /v1/workflow-webhooks/{pathToken}` that starts the event's workflow, with optional
//! HMAC-SHA256 signatures and delivery dedupe.
//!
//! ```yaml
//! # _vance/events/github-pr.yaml
//! workflow: pr-review
//! webhook:
//!   tokenSetting: webhooks.github.path
//!   signature:
//!     secretSetting: webhooks.github.secret
//!     header: X-Hub-Signature-256
//!     prefix: "sha256="
//!   dedupe:
//!     header: X-GitHub-Delivery
//!   headers: [X-GitHub-Event]
//! ```
//!
//! The types only read and check the block ([`WebhookConfig::check`]); the server resolves the
//! settings it names and verifies requests against it.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::duration::parse_duration;

/// The largest body a webhook accepts, and the default of `maxBodyBytes`: 1 MiB.
pub const WEBHOOK_MAX_BODY_BYTES: u64 = 1024 * 1024;

/// The shortest `tolerance` of a timestamp header: 1 second.
pub const MIN_TOLERANCE: Duration = Duration::from_secs(1);
/// The longest `tolerance` of a timestamp header: 1 hour. A longer one would make a captured
/// request replayable for longer than a dedupe window usually covers.
pub const MAX_TOLERANCE: Duration = Duration::from_secs(3600);
/// The shortest dedupe `window`: 1 second.
pub const MIN_DEDUPE_WINDOW: Duration = Duration::from_secs(1);
/// The longest dedupe `window`: 7 days (every delivery of the window stays in the store).
pub const MAX_DEDUPE_WINDOW: Duration = Duration::from_secs(7 * 86_400);
/// The most headers `headers:` may pass to a run.
pub const MAX_PASSED_HEADERS: usize = 32;
/// The longest signature `prefix`.
pub const MAX_PREFIX_LEN: usize = 32;

/// The `webhook:` block of an event document.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct WebhookConfig {
    /// A dotted path into the settings (project, then tenant), e.g. `webhooks.github.path`,
    /// whose value (at least 32 characters of letters, digits, `-` and `_`) is the
    /// `{pathToken}` of `POST /v1/workflow-webhooks/{pathToken}`. The store keeps only its
    /// SHA-256.
    pub token_setting: String,
    /// Requires an HMAC-SHA256 signature of each request, if set.
    pub signature: Option<WebhookSignature>,
    /// Starts one run per delivery key within a window, if set; a repeated delivery answers
    /// 200 with the first run's id and starts nothing.
    pub dedupe: Option<WebhookDedupe>,
    /// Request headers passed to the run as `params.headers`, under their lower-cased names
    /// (at most 32). Absent headers are left out.
    #[serde(default)]
    pub headers: Vec<String>,
    /// The largest accepted body in bytes (default and maximum 1048576, 1 MiB); a larger one
    /// answers 413.
    #[serde(default = "max_body")]
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_body_bytes: u64,
}

fn max_body() -> u64 {
    WEBHOOK_MAX_BODY_BYTES
}

/// How a request's signature is sent and checked: HMAC-SHA256 of the body (or of
/// `"{timestamp}.{body}"` with `timestampHeader`) under one of the secrets.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct WebhookSignature {
    /// A dotted path into the settings whose value is the secret, or a list of secrets: any
    /// one of them verifies a request, so a new secret can be added before the sender
    /// switches to it and the old one removed afterwards. A missing or empty setting refuses
    /// every request.
    pub secret_setting: String,
    /// The request header carrying the signature (default `X-Signature-256`; GitHub sends
    /// `X-Hub-Signature-256`).
    #[serde(default = "signature_header")]
    pub header: String,
    /// Text that must precede the signature in the header, e.g. `sha256=` as GitHub sends it
    /// (default: none).
    #[serde(default)]
    pub prefix: String,
    /// How the signature bytes are written after the prefix (default `hex`, either case).
    #[serde(default)]
    pub encoding: SignatureEncoding,
    /// A request header carrying the send time in unix seconds. When set, the signed text is
    /// `"{timestamp}.{body}"` (the scheme Stripe signs with) and a timestamp further than
    /// `tolerance` from the server's clock, in either direction, is refused. GitHub sends no
    /// timestamp: leave this unset for GitHub.
    pub timestamp_header: Option<String>,
    /// How far a timestamp may be from the server's clock (default `300s`, 1 second to 1
    /// hour).
    #[serde(default = "five_minutes")]
    pub tolerance: DocDuration,
}

fn signature_header() -> String {
    "X-Signature-256".into()
}

fn five_minutes() -> DocDuration {
    DocDuration(Duration::from_secs(300))
}

/// How signature bytes are written in the header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SignatureEncoding {
    /// Hexadecimal, lower or upper case (GitHub, Stripe).
    #[default]
    Hex,
    /// Standard base64 with padding (Shopify, Svix).
    Base64,
}

/// Where a delivery's dedupe key is found: exactly one of `header` and `pointer`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("oneOf" = [{ "required": ["header"] }, { "required": ["pointer"] }]))]
#[non_exhaustive]
pub struct WebhookDedupe {
    /// A request header holding the key, e.g. `X-GitHub-Delivery`.
    pub header: Option<String>,
    /// A JSON pointer (RFC 6901) into the JSON body, e.g. `/delivery/id`; the value there must
    /// be a string or a number.
    pub pointer: Option<String>,
    /// How long a key is remembered (default `300s`, 1 second to 7 days).
    #[serde(default = "five_minutes")]
    pub window: DocDuration,
}

/// Where a dedupe key comes from, once the block is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DedupeSource<'a> {
    /// This request header.
    Header(&'a str),
    /// This JSON pointer into the body.
    Pointer(&'a str),
}

impl WebhookDedupe {
    /// Where the key comes from: the header when set, else the pointer; `None` only for a block
    /// that [`WebhookConfig::check`] refuses.
    #[must_use]
    pub fn source(&self) -> Option<DedupeSource<'_>> {
        match (&self.header, &self.pointer) {
            (Some(h), _) => Some(DedupeSource::Header(h)),
            (None, Some(p)) => Some(DedupeSource::Pointer(p)),
            (None, None) => None,
        }
    }
}

/// A duration written as text in a document: ISO-8601 (`PT5M`) or a shortcut (`300s`, `5m`),
/// as [`parse_duration`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DocDuration(pub Duration);

impl<'de> Deserialize<'de> for DocDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text)
            .map(DocDuration)
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for DocDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for DocDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.subsec_millis() == 0 {
            write!(f, "{}s", self.0.as_secs())
        } else {
            write!(f, "{}ms", self.0.as_millis())
        }
    }
}

impl JsonSchema for DocDuration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "ISO-8601 (`PT5M`) or a shortcut (`300s`, `5m`, `250ms`).",
            "examples": ["300s", "PT5M"]
        })
    }
}

/// The message of a block that [`WebhookConfig::check`] refuses.
fn invalid(what: impl fmt::Display) -> String {
    format!("[MAG-WH010] invalid webhook block: {what}")
}

impl WebhookConfig {
    /// Checks what the types cannot: settings paths, header names, the pointer's syntax, the
    /// bounds of `maxBodyBytes`, `tolerance` and `window`, and that `dedupe` names exactly one
    /// of `header` and `pointer`. The message starts with `[MAG-WH010]` and names the field.
    pub fn check(&self) -> Result<(), String> {
        check_setting("tokenSetting", &self.token_setting)?;
        if !(1..=WEBHOOK_MAX_BODY_BYTES).contains(&self.max_body_bytes) {
            return Err(invalid(format_args!(
                "maxBodyBytes is {}; expected 1 to {WEBHOOK_MAX_BODY_BYTES} (1 MiB)",
                self.max_body_bytes
            )));
        }
        if self.headers.len() > MAX_PASSED_HEADERS {
            return Err(invalid(format_args!(
                "headers lists {} names; expected at most {MAX_PASSED_HEADERS}",
                self.headers.len()
            )));
        }
        for name in &self.headers {
            check_header("headers", name)?;
        }
        if let Some(sig) = &self.signature {
            sig.check()?;
        }
        if let Some(dedupe) = &self.dedupe {
            dedupe.check()?;
        }
        Ok(())
    }
}

impl WebhookSignature {
    fn check(&self) -> Result<(), String> {
        check_setting("signature.secretSetting", &self.secret_setting)?;
        check_header("signature.header", &self.header)?;
        if let Some(ts) = &self.timestamp_header {
            check_header("signature.timestampHeader", ts)?;
        }
        if self.prefix.len() > MAX_PREFIX_LEN || !self.prefix.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(invalid(format_args!(
                "signature.prefix {:?} is not up to {MAX_PREFIX_LEN} visible ASCII characters",
                self.prefix
            )));
        }
        check_range(
            "signature.tolerance",
            self.tolerance,
            MIN_TOLERANCE,
            MAX_TOLERANCE,
        )
    }
}

impl WebhookDedupe {
    fn check(&self) -> Result<(), String> {
        match (&self.header, &self.pointer) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "dedupe has both header and pointer; expected exactly one",
                ));
            }
            (None, None) => {
                return Err(invalid(
                    "dedupe has neither header nor pointer; expected exactly one",
                ));
            }
            (Some(h), None) => check_header("dedupe.header", h)?,
            (None, Some(p)) => check_pointer(p)?,
        }
        check_range(
            "dedupe.window",
            self.window,
            MIN_DEDUPE_WINDOW,
            MAX_DEDUPE_WINDOW,
        )
    }
}

fn check_range(field: &str, d: DocDuration, min: Duration, max: Duration) -> Result<(), String> {
    if d.0 < min || d.0 > max {
        return Err(invalid(format_args!(
            "{field} is {d}; expected {} to {}",
            DocDuration(min),
            DocDuration(max)
        )));
    }
    Ok(())
}

/// A dotted settings path: non-empty segments of letters, digits, `-` and `_`.
fn check_setting(field: &str, path: &str) -> Result<(), String> {
    let ok = !path.is_empty()
        && path.split('.').all(|seg| {
            !seg.is_empty()
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if ok {
        Ok(())
    } else {
        Err(invalid(format_args!(
            "{field} {path:?} is not a dotted settings path like `webhooks.github.secret`"
        )))
    }
}

/// An HTTP header name: a token of RFC 9110 (letters, digits and ``!#$%&'*+-.^_`|~``).
fn check_header(field: &str, name: &str) -> Result<(), String> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if !name.is_empty() && name.bytes().all(token) {
        Ok(())
    } else {
        Err(invalid(format_args!(
            "{field}: {name:?} is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)"
        )))
    }
}

/// A JSON pointer of RFC 6901: empty, or `/`-separated tokens where `~` is followed by `0` or
/// `1`.
fn check_pointer(pointer: &str) -> Result<(), String> {
    let bad = |why: &str| {
        invalid(format_args!(
            "dedupe.pointer {pointer:?} {why}; expected a JSON pointer like `/delivery/id`"
        ))
    };
    if pointer.is_empty() {
        return Err(bad("is empty (the whole body is no key)"));
    }
    if !pointer.starts_with('/') {
        return Err(bad("does not start with `/`"));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(bad("has a `~` not followed by `0` or `1`"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> WebhookConfig {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn refused(yaml: &str) -> String {
        parse(yaml).check().unwrap_err()
    }

    #[test]
    fn a_minimal_block_takes_the_documented_defaults() {
        let c = parse("tokenSetting: webhooks.github.path\n");
        c.check().unwrap();
        assert_eq!(c.max_body_bytes, 1_048_576);
        assert!(c.signature.is_none() && c.dedupe.is_none() && c.headers.is_empty());
        let c =
            parse("tokenSetting: a.b\nsignature: {secretSetting: a.s}\ndedupe: {header: X-Id}\n");
        c.check().unwrap();
        let sig = c.signature.unwrap();
        assert_eq!(sig.header, "X-Signature-256");
        assert_eq!(sig.prefix, "");
        assert_eq!(sig.encoding, SignatureEncoding::Hex);
        assert_eq!(sig.tolerance.0, Duration::from_secs(300));
        assert!(sig.timestamp_header.is_none());
        assert_eq!(c.dedupe.unwrap().window.0, Duration::from_secs(300));
    }

    #[test]
    fn the_full_documented_block_reads_and_checks() {
        let c = parse(
            "tokenSetting: webhooks.github.path\n\
             signature:\n  secretSetting: webhooks.github.secret\n  header: X-Hub-Signature-256\n  \
             prefix: \"sha256=\"\n  encoding: base64\n  timestampHeader: X-Webhook-Timestamp\n  \
             tolerance: PT2M\n\
             dedupe:\n  pointer: /delivery/id\n  window: 10m\n\
             headers: [X-GitHub-Event]\nmaxBodyBytes: 4096\n",
        );
        c.check().unwrap();
        let sig = c.signature.as_ref().unwrap();
        assert_eq!(sig.encoding, SignatureEncoding::Base64);
        assert_eq!(sig.tolerance.0, Duration::from_secs(120));
        let dedupe = c.dedupe.as_ref().unwrap();
        assert_eq!(dedupe.source(), Some(DedupeSource::Pointer("/delivery/id")));
        assert_eq!(dedupe.window.0, Duration::from_secs(600));
    }

    #[test]
    fn unknown_fields_and_bad_words_are_refused_when_read() {
        for yaml in [
            "tokenSetting: a\nsecret: x\n",
            "tokenSetting: a\nsignature: {secretSetting: s, algorithm: sha1}\n",
            "tokenSetting: a\nsignature: {secretSetting: s, encoding: base32}\n",
            "tokenSetting: a\ndedupe: {header: X, ttl: 5s}\n",
            "tokenSetting: a\ndedupe: {header: X, window: soon}\n",
            "signature: {secretSetting: s}\n",
        ] {
            assert!(
                serde_yaml_ng::from_str::<WebhookConfig>(yaml).is_err(),
                "{yaml}"
            );
        }
    }

    #[test]
    fn bounds_of_body_tolerance_and_window_are_checked() {
        let cases = [
            ("tokenSetting: a\nmaxBodyBytes: 0\n", "maxBodyBytes is 0"),
            ("tokenSetting: a\nmaxBodyBytes: 1048577\n", "maxBodyBytes"),
            (
                "tokenSetting: a\nsignature: {secretSetting: s, timestampHeader: T, tolerance: 2h}\n",
                "signature.tolerance is 7200s; expected 1s to 3600s",
            ),
            (
                "tokenSetting: a\nsignature: {secretSetting: s, tolerance: 500ms}\n",
                "signature.tolerance is 500ms",
            ),
            (
                "tokenSetting: a\ndedupe: {header: X, window: 8d}\n",
                "dedupe.window is 691200s; expected 1s to 604800s",
            ),
            (
                "tokenSetting: a\ndedupe: {header: X, window: 0s}\n",
                "dedupe.window is 0s",
            ),
        ];
        for (yaml, expected) in cases {
            let err = refused(yaml);
            assert!(err.starts_with("[MAG-WH010]"), "{err}");
            assert!(err.contains(expected), "{yaml}: {err}");
        }
    }

    #[test]
    fn names_and_paths_are_checked() {
        let cases = [
            ("tokenSetting: \"\"\n", "tokenSetting \"\""),
            ("tokenSetting: a..b\n", "not a dotted settings path"),
            (
                "tokenSetting: a\nsignature: {secretSetting: \"my secret\"}\n",
                "signature.secretSetting",
            ),
            (
                "tokenSetting: a\nsignature: {secretSetting: s, header: \"X Sig\"}\n",
                "signature.header: \"X Sig\" is not an HTTP header name",
            ),
            (
                "tokenSetting: a\nsignature: {secretSetting: s, timestampHeader: \"T:\"}\n",
                "signature.timestampHeader",
            ),
            (
                "tokenSetting: a\nsignature: {secretSetting: s, prefix: \"sha 256=\"}\n",
                "signature.prefix",
            ),
            ("tokenSetting: a\nheaders: [\"\"]\n", "headers: \"\""),
            (
                "tokenSetting: a\nheaders: [\"X-Ok\", \"Bad(1)\"]\n",
                "\"Bad(1)\"",
            ),
        ];
        for (yaml, expected) in cases {
            let err = refused(yaml);
            assert!(err.starts_with("[MAG-WH010]"), "{err}");
            assert!(err.contains(expected), "{yaml}: {err}");
        }
        let many: Vec<String> = (0..33).map(|i| format!("X-{i}")).collect();
        let err = refused(&format!(
            "tokenSetting: a\nheaders: [{}]\n",
            many.join(", ")
        ));
        assert!(err.contains("at most 32"), "{err}");
    }

    #[test]
    fn dedupe_needs_exactly_one_valid_source() {
        let cases = [
            (
                "tokenSetting: a\ndedupe: {window: 5s}\n",
                "neither header nor pointer",
            ),
            (
                "tokenSetting: a\ndedupe: {header: X, pointer: /id}\n",
                "both header and pointer",
            ),
            (
                "tokenSetting: a\ndedupe: {pointer: id}\n",
                "does not start with `/`",
            ),
            ("tokenSetting: a\ndedupe: {pointer: \"\"}\n", "is empty"),
            (
                "tokenSetting: a\ndedupe: {pointer: /a~2b}\n",
                "`~` not followed",
            ),
            (
                "tokenSetting: a\ndedupe: {pointer: /a~}\n",
                "`~` not followed",
            ),
        ];
        for (yaml, expected) in cases {
            let err = refused(yaml);
            assert!(err.starts_with("[MAG-WH010]"), "{err}");
            assert!(err.contains(expected), "{yaml}: {err}");
        }
        parse("tokenSetting: a\ndedupe: {pointer: /a~0b/c~1d/0}\n")
            .check()
            .unwrap();
    }
}
