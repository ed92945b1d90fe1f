//! Conditional writes of documents (RFC 9110 §13): a document's `ETag` is the SHA-256 of its
//! bytes, and a `PUT` or `DELETE` carrying `If-Match` or `If-None-Match` happens only when the
//! document as it is then satisfies it — else 412 `MAG-HTTP-PRECONDITION-FAILED` and nothing
//! changes. Two editors who each send the `ETag` they read cannot overwrite each other's edit
//! unseen; a client that sends neither header writes as before (the last write wins).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};

use super::error::ApiError;

/// The `ETag` of a document's bytes: their SHA-256, in hex, quoted (a strong tag).
pub(crate) fn etag(bytes: &[u8]) -> String {
    format!("\"{}\"", hex::encode(Sha256::digest(bytes)))
}

/// The `ETag` header of a document's bytes.
pub(crate) fn etag_header(bytes: &[u8]) -> (header::HeaderName, HeaderValue) {
    let value = HeaderValue::from_str(&etag(bytes)).unwrap_or(HeaderValue::from_static("\"\""));
    (header::ETAG, value)
}

/// The conditions a request puts on the document it changes.
#[derive(Debug, Default)]
pub(crate) struct Preconditions {
    /// `If-Match`: `None` without the header; `Some(None)` for `*` (the document exists);
    /// else the tags one of which it must have.
    if_match: Option<Option<Vec<String>>>,
    /// `If-None-Match`: as `if_match`, the tags (or `*`, any document) it must not have.
    if_none_match: Option<Option<Vec<String>>>,
}

impl Preconditions {
    /// The request's `If-Match` and `If-None-Match`; 400 for a header that is not text.
    pub(crate) fn of(headers: &HeaderMap) -> Result<Self, ApiError> {
        Ok(Self {
            if_match: tags(headers, header::IF_MATCH)?,
            if_none_match: tags(headers, header::IF_NONE_MATCH)?,
        })
    }

    /// Whether the request sets any condition (then the document is read before the change).
    pub(crate) fn any(&self) -> bool {
        self.if_match.is_some() || self.if_none_match.is_some()
    }

    /// Checks the conditions of a change against the document as it is (`None`: there is
    /// none); 412 when one does not hold. `If-Match` compares strongly (a weak tag, `W/"…"`,
    /// matches nothing), `If-None-Match` weakly (RFC 9110 §13.1.1–2).
    pub(crate) fn check(&self, path: &str, current: Option<&[u8]>) -> Result<(), ApiError> {
        let now = current.map(etag);
        if let Some(tags) = &self.if_match
            && !matches(tags, now.as_deref(), false)
        {
            return Err(failed(match &now {
                None => format!("`If-Match`: document `{path}` does not exist"),
                Some(now) => format!(
                    "`If-Match`: document `{path}` has changed (its ETag is now {now}); read it \
                     again, and send your change with the new ETag"
                ),
            }));
        }
        if let Some(tags) = &self.if_none_match
            && matches(tags, now.as_deref(), true)
        {
            return Err(failed(format!(
                "`If-None-Match`: document `{path}` exists{}",
                match tags {
                    None => String::new(),
                    Some(_) => " with that ETag".to_string(),
                }
            )));
        }
        Ok(())
    }

    /// Checks the conditions of a read of `bytes`: 412 when `If-Match` does not hold, and
    /// `true` when `If-None-Match` does (the client's copy is current: 304 Not Modified).
    pub(crate) fn check_read(&self, path: &str, bytes: &[u8]) -> Result<bool, ApiError> {
        let now = etag(bytes);
        if let Some(tags) = &self.if_match
            && !matches(tags, Some(&now), false)
        {
            return Err(failed(format!(
                "`If-Match`: document `{path}` has changed (its ETag is now {now})"
            )));
        }
        Ok(self
            .if_none_match
            .as_ref()
            .is_some_and(|tags| matches(tags, Some(&now), true)))
    }
}

/// Whether the document's tag `now` (`None`: no document) is among `tags` (`None`: `*`, any
/// document), comparing weakly (`W/"x"` is `"x"`) or strongly (a weak tag matches nothing).
fn matches(tags: &Option<Vec<String>>, now: Option<&str>, weak: bool) -> bool {
    let Some(now) = now else { return false };
    let Some(tags) = tags else { return true };
    tags.iter().any(|t| match t.strip_prefix("W/") {
        Some(opaque) => weak && opaque == now,
        None => t == now,
    })
}

fn failed(message: String) -> ApiError {
    ApiError::new(
        StatusCode::PRECONDITION_FAILED,
        "MAG-HTTP-PRECONDITION-FAILED",
        message,
    )
}

/// The tags of every `name` header, comma-separated: `None` without one, `Some(None)` for
/// `*`.
fn tags(
    headers: &HeaderMap,
    name: header::HeaderName,
) -> Result<Option<Option<Vec<String>>>, ApiError> {
    let mut out = Vec::new();
    let mut any = false;
    let mut seen = false;
    for value in headers.get_all(&name) {
        seen = true;
        let text = value.to_str().map_err(|_| {
            ApiError::bad_request(
                "MAG-HTTP-PRECONDITION-INVALID",
                format!("`{name}` is not text: expected entity tags such as \"<sha256>\" or *"),
            )
        })?;
        for tag in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if tag == "*" {
                any = true;
            } else {
                out.push(tag.to_owned());
            }
        }
    }
    Ok(seen.then_some((!any).then_some(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre(pairs: &[(header::HeaderName, &str)]) -> Preconditions {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(name, HeaderValue::from_str(value).unwrap());
        }
        Preconditions::of(&headers).unwrap()
    }

    #[test]
    fn if_match_holds_for_the_current_tag_only() {
        let doc = b"start: a\n".as_slice();
        let tag = etag(doc);
        assert!(pre(&[]).check("w", Some(doc)).is_ok());
        assert!(
            pre(&[(header::IF_MATCH, &tag)])
                .check("w", Some(doc))
                .is_ok()
        );
        let list = format!("\"other\", {tag}");
        assert!(
            pre(&[(header::IF_MATCH, &list)])
                .check("w", Some(doc))
                .is_ok()
        );
        let e = pre(&[(header::IF_MATCH, "\"other\"")])
            .check("w", Some(doc))
            .unwrap_err();
        assert_eq!(e.status, StatusCode::PRECONDITION_FAILED);
        assert!(e.message.contains(&tag), "{}", e.message);
        // Weak tags never match strongly.
        let weak = format!("W/{tag}");
        assert!(
            pre(&[(header::IF_MATCH, &weak)])
                .check("w", Some(doc))
                .is_err()
        );
        // `*`: any document, but one.
        assert!(
            pre(&[(header::IF_MATCH, "*")])
                .check("w", Some(doc))
                .is_ok()
        );
        assert!(pre(&[(header::IF_MATCH, "*")]).check("w", None).is_err());
        assert!(pre(&[(header::IF_MATCH, &tag)]).check("w", None).is_err());
    }

    #[test]
    fn if_none_match_star_creates_only() {
        let doc = b"start: a\n".as_slice();
        assert!(
            pre(&[(header::IF_NONE_MATCH, "*")])
                .check("w", None)
                .is_ok()
        );
        let e = pre(&[(header::IF_NONE_MATCH, "*")])
            .check("w", Some(doc))
            .unwrap_err();
        assert_eq!(e.code, "MAG-HTTP-PRECONDITION-FAILED");
        let tag = etag(doc);
        assert!(
            pre(&[(header::IF_NONE_MATCH, &tag)])
                .check("w", Some(doc))
                .is_err()
        );
        assert!(
            pre(&[(header::IF_NONE_MATCH, "\"other\"")])
                .check("w", Some(doc))
                .is_ok()
        );
        // Weakly: `W/"x"` is `"x"` to If-None-Match.
        let weak = format!("W/{tag}");
        assert!(
            pre(&[(header::IF_NONE_MATCH, &weak)])
                .check("w", Some(doc))
                .is_err()
        );
        assert_eq!(
            pre(&[(header::IF_NONE_MATCH, &weak)])
                .check_read("w", doc)
                .ok(),
            Some(true),
            "a read of a current copy is not modified"
        );
        assert!(
            pre(&[(header::IF_MATCH, "\"stale\"")])
                .check_read("w", doc)
                .is_err()
        );
    }
}
