//! Syntax: the attribute arguments and the annotated item, read into plain structs that keep
//! the spans of what the user wrote. Nothing here judges whether the pieces fit together; that
//! is `validate.rs`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Item, ItemFn, Lit, LitInt, LitStr, Meta, Token};

use crate::errors::Errors;

/// Which macro is running; decides the wording of messages and the trait implemented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Task,
    Workflow,
}

impl Kind {
    /// The attribute as users write it.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Kind::Task => "#[task]",
            Kind::Workflow => "#[workflow]",
        }
    }

    /// The singular noun.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Task => "task",
            Kind::Workflow => "workflow",
        }
    }

    /// The context type the function may (task) or must (workflow) take first.
    pub(crate) fn context(self) -> &'static str {
        match self {
            Kind::Task => "TaskContext",
            Kind::Workflow => "Context",
        }
    }

    /// The error type the function's own error converts into.
    pub(crate) fn error(self) -> &'static str {
        match self {
            Kind::Task => "TaskError",
            Kind::Workflow => "WorkflowError",
        }
    }
}

/// A number the user wrote, with where they wrote it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Number<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// `retry = "none"` or `retry(...)`.
#[derive(Debug)]
pub(crate) enum RetryAttr {
    /// `retry = "none"`: one attempt.
    None,
    /// `retry(max_attempts = N, backoff_ms = M, max_backoff_ms = X)`.
    Policy {
        /// The whole `retry(...)`, for errors about the combination.
        span: Span,
        max_attempts: Option<Number<u32>>,
        backoff_ms: Option<Number<u64>>,
        max_backoff_ms: Option<Number<u64>>,
    },
}

/// The arguments of `#[task(...)]`.
#[derive(Default)]
pub(crate) struct TaskAttrs {
    pub(crate) name: Option<LitStr>,
    pub(crate) retry: Option<RetryAttr>,
    pub(crate) timeout_ms: Option<Number<u64>>,
}

/// The arguments of `#[workflow(...)]`.
#[derive(Default)]
pub(crate) struct WorkflowAttrs {
    pub(crate) name: Option<LitStr>,
    pub(crate) version: Option<LitStr>,
}

const TASK_KEYS: &str = "`name`, `retry` or `timeout_ms`";
const WORKFLOW_KEYS: &str = "`name` or `version`";
const RETRY_KEYS: &str = "`max_attempts`, `backoff_ms` or `max_backoff_ms`";

/// Reads `#[task(...)]`'s arguments. Every bad argument is reported, not only the first.
pub(crate) fn task_attrs(args: TokenStream) -> (TaskAttrs, Errors) {
    let mut attrs = TaskAttrs::default();
    let mut errors = Errors::default();
    let Some(metas) = errors.take(metas(args)) else {
        return (attrs, errors);
    };
    for meta in metas {
        let key = key(&meta);
        match key.as_deref() {
            Some("name") => {
                let value = errors.take(lit_str(&meta));
                set_once(&mut attrs.name, value, &meta, &mut errors);
            }
            Some("timeout_ms") => {
                let value = errors.take(lit_int(&meta, "timeout_ms = 5000"));
                set_once(&mut attrs.timeout_ms, value, &meta, &mut errors);
            }
            Some("retry") => {
                let value = errors.take(retry(&meta));
                set_once(&mut attrs.retry, value, &meta, &mut errors);
            }
            _ => errors.push(unknown(&meta, Kind::Task.attr(), TASK_KEYS)),
        }
    }
    (attrs, errors)
}

/// Reads `#[workflow(...)]`'s arguments.
pub(crate) fn workflow_attrs(args: TokenStream) -> (WorkflowAttrs, Errors) {
    let mut attrs = WorkflowAttrs::default();
    let mut errors = Errors::default();
    let Some(metas) = errors.take(metas(args)) else {
        return (attrs, errors);
    };
    for meta in metas {
        match key(&meta).as_deref() {
            Some("name") => {
                let value = errors.take(lit_str(&meta));
                set_once(&mut attrs.name, value, &meta, &mut errors);
            }
            Some("version") => {
                let value = errors.take(lit_str(&meta));
                set_once(&mut attrs.version, value, &meta, &mut errors);
            }
            _ => errors.push(unknown(&meta, Kind::Workflow.attr(), WORKFLOW_KEYS)),
        }
    }
    (attrs, errors)
}

/// Reads the annotated item, which must be a function.
pub(crate) fn item_fn(item: TokenStream, kind: Kind) -> syn::Result<ItemFn> {
    match syn::parse2::<Item>(item)? {
        Item::Fn(item) => Ok(item),
        other => Err(syn::Error::new(
            item_span(&other),
            format!("{} applies to an `async fn`", kind.attr()),
        )),
    }
}

/// The span of an item's introducing tokens (`struct Foo`, `impl Foo`), not its whole body.
fn item_span(item: &Item) -> Span {
    let mut tokens = quote::ToTokens::into_token_stream(item).into_iter();
    let first = tokens.next().map_or_else(Span::call_site, |t| t.span());
    match tokens.next() {
        Some(second) => first.join(second.span()).unwrap_or(first),
        None => first,
    }
}

fn metas(args: TokenStream) -> syn::Result<Punctuated<Meta, Token![,]>> {
    Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args)
}

fn key(meta: &Meta) -> Option<String> {
    meta.path().get_ident().map(ToString::to_string)
}

fn set_once<T>(slot: &mut Option<T>, value: Option<T>, meta: &Meta, errors: &mut Errors) {
    let Some(value) = value else { return };
    if slot.is_some() {
        let key = key(meta).unwrap_or_default();
        errors.push(syn::Error::new_spanned(
            meta,
            format!("duplicate `{key}` argument"),
        ));
    } else {
        *slot = Some(value);
    }
}

fn unknown(meta: &Meta, attr: &str, valid: &str) -> syn::Error {
    let path = meta.path();
    let shown = quote::quote!(#path).to_string().replace(' ', "");
    syn::Error::new_spanned(
        path,
        format!("unknown {attr} argument `{shown}`; expected {valid}"),
    )
}

/// The value of `key = value`, or an error saying how to write it.
fn value<'a>(meta: &'a Meta, example: &str) -> syn::Result<&'a Expr> {
    match meta {
        Meta::NameValue(nv) => Ok(&nv.value),
        _ => Err(syn::Error::new_spanned(
            meta,
            format!("expected `{example}`"),
        )),
    }
}

fn lit_str(meta: &Meta) -> syn::Result<LitStr> {
    let key = key(meta).unwrap_or_default();
    let example = format!("{key} = \"...\"");
    match value(meta, &example)? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        other => Err(syn::Error::new_spanned(
            other,
            format!("expected a string literal: `{example}`"),
        )),
    }
}

fn lit_int<T>(meta: &Meta, example: &str) -> syn::Result<Number<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    match value(meta, example)? {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => int_value(int),
        other => Err(syn::Error::new_spanned(
            other,
            format!("expected a non-negative integer literal: `{example}`"),
        )),
    }
}

fn int_value<T>(int: &LitInt) -> syn::Result<Number<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    Ok(Number {
        value: int.base10_parse()?,
        span: int.span(),
    })
}

fn retry(meta: &Meta) -> syn::Result<RetryAttr> {
    const EXAMPLE: &str = "retry(max_attempts = 3, backoff_ms = 100)` or `retry = \"none\"";
    let list = match meta {
        Meta::List(list) => list,
        Meta::NameValue(nv) => {
            return match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) if s.value() == "none" => Ok(RetryAttr::None),
                other => Err(syn::Error::new_spanned(
                    other,
                    format!("expected `{EXAMPLE}`"),
                )),
            };
        }
        Meta::Path(_) => {
            return Err(syn::Error::new_spanned(
                meta,
                format!("expected `{EXAMPLE}`"),
            ));
        }
    };
    let mut errors = Errors::default();
    let (mut max_attempts, mut backoff_ms, mut max_backoff_ms) = (None, None, None);
    for inner in list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)? {
        match key(&inner).as_deref() {
            Some("max_attempts") => {
                let value = errors.take(lit_int(&inner, "max_attempts = 3"));
                set_once(&mut max_attempts, value, &inner, &mut errors);
            }
            Some("backoff_ms") => {
                let value = errors.take(lit_int(&inner, "backoff_ms = 100"));
                set_once(&mut backoff_ms, value, &inner, &mut errors);
            }
            Some("max_backoff_ms") => {
                let value = errors.take(lit_int(&inner, "max_backoff_ms = 10000"));
                set_once(&mut max_backoff_ms, value, &inner, &mut errors);
            }
            _ => errors.push(unknown(&inner, "retry(...)", RETRY_KEYS)),
        }
    }
    errors.finish()?;
    Ok(RetryAttr::Policy {
        span: meta.span(),
        max_attempts,
        backoff_ms,
        max_backoff_ms,
    })
}
