//! [`JsonBody`]: a JSON request body whose rejections are API errors.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A JSON body; an empty body is `T::default()`. Rejections: 400 `MAG-HTTP-INVALID-JSON` for
/// malformed JSON or unknown fields, 413 `MAG-HTTP-413` past the body limit.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

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
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        serde_json::from_slice(&bytes).map(Self).map_err(|e| {
            ApiError::bad_request("MAG-HTTP-INVALID-JSON", format!("invalid JSON body: {e}"))
        })
    }
}

/// The API error of a body that could not be read.
pub(crate) fn body_error(status: StatusCode, text: String) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
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
