//! Collects every error a macro invocation finds, so the user sees them all at once.

use proc_macro2::TokenStream;

/// Errors found so far; combined into one `compile_error!` block at the end.
#[derive(Default)]
pub(crate) struct Errors {
    inner: Option<syn::Error>,
}

impl Errors {
    /// Records one error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.inner {
            Some(first) => first.combine(error),
            None => self.inner = Some(error),
        }
    }

    /// Records the error of `result`, if any, and returns its value.
    pub(crate) fn take<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.push(error);
                None
            }
        }
    }

    /// Whether nothing was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    /// One `compile_error!` per recorded error, each at its own span.
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.inner
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }

    /// The recorded errors as one `syn::Error`, or `Ok` if there were none.
    pub(crate) fn finish(self) -> syn::Result<()> {
        self.inner.map_or(Ok(()), Err)
    }
}
