//! Meaning: checks that the annotated function has the shape of a task or a workflow and that
//! the attribute arguments agree with each other, and produces the definitions `expand.rs`
//! turns into code. Every problem is reported at the tokens that cause it.

use proc_macro2::Span;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{
    FnArg, GenericArgument, ItemFn, LitStr, PatType, PathArguments, ReturnType, Signature, Type,
};

use crate::errors::Errors;
use crate::parse::{Kind, RetryAttr, TaskAttrs, WorkflowAttrs};

/// What both macros need to know about the function.
pub(crate) struct FnDef<'a> {
    pub(crate) kind: Kind,
    pub(crate) item: &'a ItemFn,
    /// The name the task or workflow is registered and journaled under.
    pub(crate) name: LitStr,
    /// Whether the function takes its context as first parameter.
    pub(crate) has_ctx: bool,
    /// The input parameter; `None` when there is none (the input is `()`) or it is unusable.
    pub(crate) input: Option<&'a PatType>,
    /// `T` of the returned `Result<T, E>`; `None` only after an error.
    pub(crate) output: Option<&'a Type>,
    /// `E` of the returned `Result<T, E>` (the whole return type for a one-argument alias such
    /// as `anyhow::Result<T>`, where the error is the alias's); `None` only after an error.
    pub(crate) error: Option<&'a Type>,
}

/// A validated `#[task]`.
pub(crate) struct TaskDef<'a> {
    pub(crate) func: FnDef<'a>,
    pub(crate) retry: Option<Retry>,
    pub(crate) timeout_ms: Option<u64>,
}

/// A validated `#[workflow]`.
pub(crate) struct WorkflowDef<'a> {
    pub(crate) func: FnDef<'a>,
    pub(crate) version: Option<LitStr>,
}

/// The retry policy a task declares, mapped onto `RetryPolicy`'s constructors.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// `RetryPolicy::none()`.
    None,
    /// `RetryPolicy::fixed(max_attempts, backoff)`.
    Fixed { max_attempts: u32, backoff_ms: u64 },
    /// `RetryPolicy::exponential(max_attempts, initial, max)`.
    Exponential {
        max_attempts: u32,
        backoff_ms: u64,
        max_backoff_ms: u64,
    },
}

/// Validates a `#[task]`; the definition is usable for a stub even when errors were recorded.
pub(crate) fn task<'a>(item: &'a ItemFn, attrs: TaskAttrs, errors: &mut Errors) -> TaskDef<'a> {
    let func = function(item, Kind::Task, attrs.name, errors);
    let retry = attrs
        .retry
        .and_then(|retry| errors.take(retry_policy(retry)));
    let timeout_ms = attrs.timeout_ms.and_then(|t| {
        if t.value == 0 {
            errors.push(syn::Error::new(
                t.span,
                "`timeout_ms` must be greater than 0",
            ));
            None
        } else {
            Some(t.value)
        }
    });
    TaskDef {
        func,
        retry,
        timeout_ms,
    }
}

/// Validates a `#[workflow]`.
pub(crate) fn workflow<'a>(
    item: &'a ItemFn,
    attrs: WorkflowAttrs,
    errors: &mut Errors,
) -> WorkflowDef<'a> {
    let func = function(item, Kind::Workflow, attrs.name, errors);
    WorkflowDef {
        func,
        version: attrs.version,
    }
}

fn function<'a>(
    item: &'a ItemFn,
    kind: Kind,
    name: Option<LitStr>,
    errors: &mut Errors,
) -> FnDef<'a> {
    let sig = &item.sig;
    let concrete = check_header(sig, kind, errors);
    let (has_ctx, input) = params(sig, kind, errors);
    let (output, error) = result_types(sig, kind, errors);
    let name =
        name.unwrap_or_else(|| LitStr::new(&sig.ident.unraw().to_string(), sig.ident.span()));
    if name.value().is_empty() {
        errors.push(syn::Error::new_spanned(
            &name,
            format!("a {} name cannot be empty", kind.noun()),
        ));
    }
    // Types that mention the function's generics or borrow cannot name an associated type.
    let input = input.filter(|p| concrete && errors.take(owned(&p.ty, kind, "input")).is_some());
    let output = output.filter(|ty| concrete && errors.take(owned(ty, kind, "output")).is_some());
    FnDef {
        kind,
        item,
        name,
        has_ctx,
        input,
        output,
        error,
    }
}

/// Checks the qualifiers and generics; returns whether the signature is free of generics.
fn check_header(sig: &Signature, kind: Kind, errors: &mut Errors) -> bool {
    let attr = kind.attr();
    if sig.asyncness.is_none() {
        let (fn_token, ident) = (&sig.fn_token, &sig.ident);
        errors.push(syn::Error::new_spanned(
            quote!(#fn_token #ident),
            format!("{attr} functions must be `async fn`"),
        ));
    }
    if let Some(token) = &sig.constness {
        errors.push(syn::Error::new_spanned(
            token,
            format!("{attr} functions cannot be `const`"),
        ));
    }
    if let Some(token) = &sig.unsafety {
        errors.push(syn::Error::new_spanned(
            token,
            format!("{attr} functions cannot be `unsafe`"),
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(syn::Error::new_spanned(
            abi,
            format!("{attr} functions cannot be `extern`"),
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(syn::Error::new_spanned(
            variadic,
            format!("{attr} functions cannot be variadic"),
        ));
    }
    let generics: Option<&dyn ToTokens> = if !sig.generics.params.is_empty() {
        Some(&sig.generics)
    } else {
        sig.generics
            .where_clause
            .as_ref()
            .map(|w| w as &dyn ToTokens)
    };
    match generics {
        Some(tokens) => {
            errors.push(syn::Error::new_spanned(
                tokens,
                format!(
                    "{}s cannot be generic: the journal needs one concrete input and output type",
                    kind.noun()
                ),
            ));
            false
        }
        None => true,
    }
}

/// Splits the parameters into the context and the one input.
fn params<'a>(sig: &'a Signature, kind: Kind, errors: &mut Errors) -> (bool, Option<&'a PatType>) {
    let (noun, ctx) = (kind.noun(), kind.context());
    let mut typed = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(receiver) => errors.push(syn::Error::new_spanned(
                receiver,
                format!("a {noun} is a free function; it cannot take `self`"),
            )),
            FnArg::Typed(pat_type) => typed.push(pat_type),
        }
    }
    // `ctx: &Context`: the context, taken the wrong way; said once, and not taken for the input.
    let ctx_by_ref = typed.first().filter(|p| match strip(&p.ty) {
        Type::Reference(r) => is_named(&r.elem, ctx),
        _ => false,
    });
    if let Some(p) = ctx_by_ref {
        errors.push(syn::Error::new_spanned(
            &p.ty,
            format!("take the context by value, `ctx: {ctx}`, not by reference: it is a handle, clone it where you need another"),
        ));
    }
    let first_is_ctx = ctx_by_ref.is_some() || typed.first().is_some_and(|p| is_named(&p.ty, ctx));
    let has_ctx = first_is_ctx
        && sig
            .inputs
            .first()
            .is_some_and(|a| matches!(a, FnArg::Typed(_)));
    let rest = if has_ctx { &typed[1..] } else { &typed[..] };

    let mut inputs = Vec::new();
    for pat_type in rest {
        if is_named(&pat_type.ty, ctx) {
            errors.push(syn::Error::new_spanned(
                pat_type,
                format!("move `ctx: {ctx}` to the first parameter"),
            ));
        } else if kind == Kind::Task && is_named(&pat_type.ty, "Context") {
            errors.push(syn::Error::new_spanned(
                &pat_type.ty,
                "a task receives a `TaskContext`, not a workflow's `Context`",
            ));
        } else {
            inputs.push(*pat_type);
        }
    }

    let mut count_inputs = true;
    if kind == Kind::Workflow && !has_ctx {
        let misplaced = typed.iter().skip(1).any(|p| is_named(&p.ty, ctx));
        if !misplaced {
            // Without a context the parameters' roles are unclear; one message is enough.
            count_inputs = false;
            let message = "a workflow's first parameter must be its `ctx: Context`";
            errors.push(match typed.first() {
                Some(first) if is_named(&first.ty, "TaskContext") => syn::Error::new_spanned(
                    &first.ty,
                    format!("{message}; a `TaskContext` is for #[task] functions"),
                ),
                Some(first) => syn::Error::new_spanned(first, message),
                None => syn::Error::new(sig.paren_token.span.join(), message),
            });
        }
    }

    if count_inputs && inputs.len() > 1 {
        let extra = &inputs[1..];
        let what = match kind {
            Kind::Task => "a task takes one input",
            Kind::Workflow => "a workflow takes one input after `ctx`",
        };
        errors.push(syn::Error::new_spanned(
            quote!(#(#extra),*),
            format!("{what}; group several values into a struct"),
        ));
    }
    (has_ctx, inputs.first().copied())
}

/// `T` and `E` of the declared `Result<T, E>`.
fn result_types<'a>(
    sig: &'a Signature,
    kind: Kind,
    errors: &mut Errors,
) -> (Option<&'a Type>, Option<&'a Type>) {
    let expected = format!(
        "a {} must return `Result<T, E>` where `E: Into<{}>` or \
         `E: Into<Box<dyn Error + Send + Sync>>`",
        kind.noun(),
        kind.error()
    );
    let ty = match &sig.output {
        ReturnType::Type(_, ty) => ty,
        ReturnType::Default => {
            let (ident, paren) = (&sig.ident, sig.paren_token.span.join());
            let span = ident.span().join(paren).unwrap_or(paren);
            errors.push(syn::Error::new(span, expected));
            return (None, None);
        }
    };
    let segment = match strip(ty) {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        _ => None,
    };
    let Some(segment) = segment.filter(|s| s.ident.to_string().ends_with("Result")) else {
        errors.push(syn::Error::new_spanned(ty, expected));
        return (None, None);
    };
    let args: Vec<&Type> = match &segment.arguments {
        PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter_map(|arg| match arg {
                GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    match args[..] {
        [output, error] if segment.ident == "Result" => (Some(output), Some(error)),
        // `anyhow::Result<T>`, `io::Result<T>`: a one-argument alias names the output.
        [output] => (Some(output), Some(ty)),
        [_, _, ..] => {
            errors.push(syn::Error::new_spanned(
                ty,
                format!(
                    "write the return type in full as `Result<T, E>`: an alias of several \
                     arguments hides which type is the {}'s output and which its error",
                    kind.noun()
                ),
            ));
            (None, None)
        }
        _ => {
            errors.push(syn::Error::new_spanned(ty, expected));
            (None, None)
        }
    }
}

/// Whether the type is a path whose last segment is `name` (`Context`, `magrathea::Context`).
pub(crate) fn is_named(ty: &Type, name: &str) -> bool {
    match strip(ty) {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name),
        _ => false,
    }
}

/// Looks through parentheses and invisible groups (from `macro_rules!` expansions).
fn strip(ty: &Type) -> &Type {
    match ty {
        Type::Group(group) => strip(&group.elem),
        Type::Paren(paren) => strip(&paren.elem),
        _ => ty,
    }
}

/// Rejects types the journal cannot hold as-is: borrowed ones and `impl Trait`.
fn owned(ty: &Type, kind: Kind, role: &str) -> syn::Result<()> {
    let mut finder = NotOwned::default();
    finder.visit_type(ty);
    let noun = kind.noun();
    match finder.found {
        Some((span, NotOwnedKind::ImplTrait)) => Err(syn::Error::new(
            span,
            format!("a {noun}'s {role} must be a concrete type, not `impl Trait`"),
        )),
        Some((span, NotOwnedKind::Borrowed)) => Err(syn::Error::new(
            span,
            format!(
                "a {noun}'s {role} must be an owned type, as it is read back from the journal \
                 (e.g. `String` rather than `&str`)"
            ),
        )),
        None => Ok(()),
    }
}

#[derive(Clone, Copy)]
enum NotOwnedKind {
    ImplTrait,
    Borrowed,
}

#[derive(Default)]
struct NotOwned {
    found: Option<(Span, NotOwnedKind)>,
}

impl<'ast> Visit<'ast> for NotOwned {
    fn visit_type_impl_trait(&mut self, node: &'ast syn::TypeImplTrait) {
        self.found
            .get_or_insert((node.span(), NotOwnedKind::ImplTrait));
    }
    fn visit_type_reference(&mut self, node: &'ast syn::TypeReference) {
        self.found
            .get_or_insert((node.span(), NotOwnedKind::Borrowed));
    }
    fn visit_lifetime(&mut self, node: &'ast syn::Lifetime) {
        if node.ident != "static" {
            self.found
                .get_or_insert((node.span(), NotOwnedKind::Borrowed));
        }
    }
}

fn retry_policy(retry: RetryAttr) -> syn::Result<Retry> {
    let (span, max_attempts, backoff_ms, max_backoff_ms) = match retry {
        RetryAttr::None => return Ok(Retry::None),
        RetryAttr::Policy {
            span,
            max_attempts,
            backoff_ms,
            max_backoff_ms,
        } => (span, max_attempts, backoff_ms, max_backoff_ms),
    };
    let mut errors = Errors::default();
    match max_attempts {
        None => errors.push(syn::Error::new(
            span,
            "`retry(...)` needs `max_attempts`, e.g. `retry(max_attempts = 3, backoff_ms = 100)`",
        )),
        Some(n) if n.value == 0 => errors.push(syn::Error::new(
            n.span,
            "`max_attempts` counts the first attempt and must be at least 1; \
             for a single attempt write `retry = \"none\"`",
        )),
        Some(_) => {}
    }
    if let Some(max) = max_backoff_ms {
        match backoff_ms {
            None => errors.push(syn::Error::new(
                max.span,
                "`max_backoff_ms` caps an exponential backoff; give its start with `backoff_ms`",
            )),
            Some(initial) if max.value < initial.value => errors.push(syn::Error::new(
                max.span,
                "`max_backoff_ms` must be at least `backoff_ms`",
            )),
            Some(_) => {}
        }
    }
    errors.finish()?;
    let max_attempts = max_attempts.map_or(1, |n| n.value);
    let backoff_ms = backoff_ms.map_or(0, |b| b.value);
    Ok(match max_backoff_ms {
        Some(max) => Retry::Exponential {
            max_attempts,
            backoff_ms,
            max_backoff_ms: max.value,
        },
        None => Retry::Fixed {
            max_attempts,
            backoff_ms,
        },
    })
}
