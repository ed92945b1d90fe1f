//! [`JsonBody`]: a JSON request body whose rejections are API errors.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A JSON body; an empty body is `T::default()`. Rejected at once: 413 `MAG-HTTP-413` past the
/// body limit (and 408 for a body that does not come). Malformed JSON or unknown fields are
/// the inner `Err` (400 `MAG-HTTP-INVALID-JSON`), for the handler to answer once it has
/// authorized the caller: a caller without a token or the scope hears 401 or 403, never about
/// its body.
#[derive(Debug)]
pub struct JsonBody<T>(pub Result<T, ApiError>);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Default,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| body_error(e.status(), e.body_text()))?;
        // A byte-order mark before the text is ignored, as RFC 8259 (§8.1) lets a parser do
        // (Windows tools write one); a UTF-16 body is named for what it is.
        let bytes = without_bom(&bytes);
        if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
            return Ok(Self(Err(ApiError::bad_request(
                "MAG-HTTP-INVALID-JSON",
                "invalid JSON body: the body is UTF-16 text (it begins with a UTF-16 byte-order \
                 mark): expected UTF-8 JSON",
            ))));
        }
        let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace()) else {
            return Ok(Self(Ok(T::default())));
        };
        // Every body is an object: serde would read an array as the fields in order.
        if *first != b'{' {
            return Ok(Self(Err(ApiError::bad_request(
                "MAG-HTTP-INVALID-JSON",
                "invalid JSON body: expected a JSON object",
            ))));
        }
        Ok(Self(serde_json::from_slice(bytes).map_err(|e| {
            ApiError::bad_request(
                "MAG-HTTP-INVALID-JSON",
                format!("invalid JSON body: {}", plain(&e)),
            )
        })))
    }
}

/// `body` without a UTF-8 byte-order mark in front: RFC 8259 (§8.1) lets a JSON parser
/// ignore one, and Windows tools (PowerShell 5.1 among them) write it.
pub(crate) fn without_bom(body: &[u8]) -> &[u8] {
    body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body)
}

/// The body of a route that takes none: nothing, or an empty JSON object. Anything else is
/// refused as every other route refuses a body it cannot take (400 `MAG-HTTP-INVALID-JSON`),
/// so a client that sends fields here learns they were not read.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoFields {}

/// A JSON error in the words of the API: serde names the type a body maps to (`expected
/// struct StartBody`, `struct AnswerBody with 4 elements`), which means nothing to a client;
/// it is "a JSON object".
pub(crate) fn plain(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("struct ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "struct ".len()..];
        let name_end = after
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(after.len());
        if name_end == 0 {
            out.push_str("struct ");
            rest = after;
            continue;
        }
        out.push_str("a JSON object");
        rest = &after[name_end..];
        // `… with 4 elements`: serde's count of the fields, as if the object were a list.
        if let Some(tail) = rest.strip_prefix(" with ")
            && let Some(space) = tail.find(' ')
            && tail[..space].bytes().all(|b| b.is_ascii_digit())
            && (tail[space..].starts_with(" elements") || tail[space..].starts_with(" element"))
        {
            let word = if tail[space..].starts_with(" elements") {
                " elements"
            } else {
                " element"
            };
            rest = &tail[space + word.len()..];
        }
    }
    out.push_str(rest);
    out
}

/// The API error of a body that could not be read.
pub(crate) fn body_error(status: StatusCode, text: String) -> ApiError {
    if text.contains(super::connections::BODY_READ_TIMEOUT_MESSAGE) {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "MAG-HTTP-408",
            format!(
                "{BODY}: send the body right after the head",
                BODY = super::connections::BODY_READ_TIMEOUT_MESSAGE
            ),
        )
    } else if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            status,
            "MAG-HTTP-413",
            format!(
                "the request body is larger than the server accepts ({} bytes)",
                super::BODY_LIMIT
            ),
        )
    } else {
        ApiError::new(status, "MAG-HTTP-BODY", text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct StartBody {
        params: Option<serde_json::Value>,
    }

    #[test]
    fn errors_name_a_json_object_not_a_rust_type() {
        for (input, expected) in [
            ("null", "invalid type: null, expected a JSON object"),
            ("[]", "invalid length 0, expected a JSON object"),
        ] {
            let e = serde_json::from_str::<StartBody>(input).unwrap_err();
            let text = plain(&e);
            assert!(text.starts_with(expected), "{input}: {text}");
            assert!(!text.contains("StartBody"), "{text}");
        }
        let e = serde_json::from_str::<StartBody>(r#"{"params": 1"#).unwrap_err();
        assert_eq!(
            plain(&e),
            e.to_string(),
            "other errors are left as they are"
        );
    }
}
