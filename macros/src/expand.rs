//! Code generation: a unit struct named after the function, implementing `Task` or `Workflow`.
//!
//! The user's function is kept whole as a private `async fn` inside `run`, so its parameter
//! patterns, `return`s and `?` conversions mean exactly what they meant before; `run` only
//! passes the input (and context) in and converts the declared error type with `Into`.
//! Generated paths are absolute (`::magrathea::...`, `::core::...`) so the expansion does not
//! depend on what the caller imported.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, ItemFn, Type, Visibility};

use crate::errors::Errors;
use crate::parse::{self, Kind};
use crate::validate::{self, FnDef, Retry, TaskDef, WorkflowDef};

/// Expands `#[task(args)] item`.
pub(crate) fn task(args: TokenStream, item: TokenStream) -> TokenStream {
    let item_fn = match parse::item_fn(item.clone(), Kind::Task) {
        Ok(item_fn) => item_fn,
        Err(error) => return not_a_fn(error, item),
    };
    let (attrs, mut errors) = parse::task_attrs(args);
    let def = validate::task(&item_fn, attrs, &mut errors);
    if !errors.is_empty() {
        return stub(&def.func, &errors);
    }
    let func = &def.func;
    let unit = unit_struct(func);
    let check = assert_journaled(func);
    let impl_ = task_impl(&def);
    quote! { #unit #check #impl_ }
}

/// Expands `#[workflow(args)] item`.
pub(crate) fn workflow(args: TokenStream, item: TokenStream) -> TokenStream {
    let item_fn = match parse::item_fn(item.clone(), Kind::Workflow) {
        Ok(item_fn) => item_fn,
        Err(error) => return not_a_fn(error, item),
    };
    let (attrs, mut errors) = parse::workflow_attrs(args);
    let def = validate::workflow(&item_fn, attrs, &mut errors);
    if !errors.is_empty() {
        return stub(&def.func, &errors);
    }
    let func = &def.func;
    let unit = unit_struct(func);
    let check = assert_journaled(func);
    let impl_ = workflow_impl(&def);
    quote! { #unit #check #impl_ }
}

/// The error, plus the item unchanged when it is one, so code that uses it still resolves.
fn not_a_fn(error: syn::Error, item: TokenStream) -> TokenStream {
    let error = error.to_compile_error();
    if syn::parse2::<syn::Item>(item.clone()).is_ok() {
        quote! { #error #item }
    } else {
        error
    }
}

/// After an error: the errors, the struct and an impl with whatever types could be read, so
/// that code using the task or workflow reports nothing further.
fn stub(func: &FnDef<'_>, errors: &Errors) -> TokenStream {
    let errors = errors.to_compile_errors();
    let unit = unit_struct(func);
    let ident = &func.item.sig.ident;
    let cfgs = cfgs(func.item);
    let name = &func.name;
    let input = input_type(func);
    let output = output_type(func);
    let body = checked_body(func);
    let (trait_, run) = match func.kind {
        Kind::Task => (
            quote!(::magrathea::Task),
            quote! {
                fn run(
                    _: Self::Input,
                    _: ::magrathea::TaskContext,
                ) -> ::magrathea::__private::BoxFuture<
                    'static,
                    ::core::result::Result<Self::Output, ::magrathea::TaskError>,
                > {
                    #body
                    ::core::unimplemented!()
                }
            },
        ),
        Kind::Workflow => (
            quote!(::magrathea::Workflow),
            quote! {
                fn run(
                    _: ::magrathea::Context,
                    _: Self::Input,
                ) -> ::magrathea::__private::BoxFuture<
                    'static,
                    ::core::result::Result<Self::Output, ::magrathea::WorkflowError>,
                > {
                    #body
                    ::core::unimplemented!()
                }
            },
        ),
    };
    quote! {
        #errors
        #unit
        #(#cfgs)*
        impl #trait_ for #ident {
            type Input = #input;
            type Output = #output;
            const NAME: &'static str = #name;
            #run
        }
    }
}

/// The user's function, unused, so that its body is still type-checked and what it imports
/// counts as used: the user sees the macro's error and the body's own, nothing spurious.
/// Left out when it takes `self`, which a free function cannot.
fn checked_body(func: &FnDef<'_>) -> TokenStream {
    if func.item.sig.receiver().is_some() {
        return TokenStream::new();
    }
    let inner = inner_fn(func.item);
    quote! {
        #[allow(dead_code)]
        #inner
    }
}

/// The user's function renamed and made private, to live inside `run`.
fn inner_fn(item: &ItemFn) -> ItemFn {
    let mut inner = item.clone();
    inner.sig.ident = Ident::new("__magrathea_body", Span::call_site());
    inner.vis = Visibility::Inherited;
    inner
        .attrs
        .retain(|a| !a.path().is_ident("doc") && !a.path().is_ident("cfg"));
    inner
}

/// `pub struct charge;` with the function's docs, visibility and `cfg`s.
fn unit_struct(func: &FnDef<'_>) -> TokenStream {
    let item = func.item;
    let (vis, ident) = (&item.vis, &item.sig.ident);
    let docs: Vec<&Attribute> = item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let docs = if docs.is_empty() {
        let text = format!(" The `{}` {}.", func.name.value(), func.kind.noun());
        quote!(#[doc = #text])
    } else {
        quote!(#(#docs)*)
    };
    let cfgs = cfgs(item);
    quote! {
        #docs
        #(#cfgs)*
        #[allow(non_camel_case_types)]
        #[derive(
            ::core::clone::Clone,
            ::core::marker::Copy,
            ::core::fmt::Debug,
            ::core::default::Default,
        )]
        #vis struct #ident;
    }
}

/// A compile-time check that input and output are serde types, spanned on the user's types so
/// the `Journaled` diagnostic points at them. It comes before the impl, so it is reported first.
fn assert_journaled(func: &FnDef<'_>) -> TokenStream {
    let types = func.input.map(|p| &*p.ty).into_iter().chain(func.output);
    let checks = types.map(|ty| {
        quote_spanned! {ty.span()=>
            let _: fn() = __magrathea_assert_journaled::<#ty>;
        }
    });
    let cfgs = cfgs(func.item);
    quote! {
        #(#cfgs)*
        const _: () = {
            fn __magrathea_assert_journaled<T: ::magrathea::Journaled>() {}
            #(#checks)*
        };
    }
}

fn task_impl(def: &TaskDef<'_>) -> TokenStream {
    let func = &def.func;
    let ident = &func.item.sig.ident;
    let name = &func.name;
    let (input, output) = (input_type(func), output_type(func));
    let options = options_fn(def);
    let body = body(func);
    let input_param = if func.input.is_some() {
        quote!(__magrathea_input)
    } else {
        quote!(_)
    };
    let ctx_param = if func.has_ctx {
        quote!(__magrathea_ctx)
    } else {
        quote!(_)
    };
    let cfgs = cfgs(func.item);
    quote! {
        #(#cfgs)*
        impl ::magrathea::Task for #ident {
            type Input = #input;
            type Output = #output;
            const NAME: &'static str = #name;
            #options
            fn run(
                #input_param: Self::Input,
                #ctx_param: ::magrathea::TaskContext,
            ) -> ::magrathea::__private::BoxFuture<
                'static,
                ::core::result::Result<Self::Output, ::magrathea::TaskError>,
            > {
                #body
            }
        }
    }
}

fn workflow_impl(def: &WorkflowDef<'_>) -> TokenStream {
    let func = &def.func;
    let ident = &func.item.sig.ident;
    let name = &func.name;
    let (input, output) = (input_type(func), output_type(func));
    let version = def
        .version
        .as_ref()
        .map(|v| quote!(const VERSION: &'static str = #v;));
    let body = body(func);
    let input_param = if func.input.is_some() {
        quote!(__magrathea_input)
    } else {
        quote!(_)
    };
    let cfgs = cfgs(func.item);
    quote! {
        #(#cfgs)*
        impl ::magrathea::Workflow for #ident {
            type Input = #input;
            type Output = #output;
            const NAME: &'static str = #name;
            #version
            fn run(
                __magrathea_ctx: ::magrathea::Context,
                #input_param: Self::Input,
            ) -> ::magrathea::__private::BoxFuture<
                'static,
                ::core::result::Result<Self::Output, ::magrathea::WorkflowError>,
            > {
                #body
            }
        }
    }
}

/// The user's function kept as a local `async fn`, then called and boxed.
fn body(func: &FnDef<'_>) -> TokenStream {
    let inner = inner_fn(func.item);
    let inner_ident = &inner.sig.ident;

    let mut args = Vec::new();
    if func.has_ctx {
        args.push(quote!(__magrathea_ctx));
    }
    if func.input.is_some() {
        args.push(quote!(__magrathea_input));
    }
    // The error converts by its own `Into` the engine's error, else through a boxed error
    // (`anyhow::Error`, `String`): method resolution on `&&BodyError` tries the first, then
    // the second. Spanned on the declared error type: if neither applies, the one error
    // points there.
    let span = func.error.map_or_else(Span::call_site, Spanned::span);
    let (via_into, via_box, method) = match func.kind {
        Kind::Task => (
            quote!(TaskErrorViaInto),
            quote!(TaskErrorViaBox),
            Ident::new("task_error", span),
        ),
        Kind::Workflow => (
            quote!(WorkflowErrorViaInto),
            quote!(WorkflowErrorViaBox),
            Ident::new("workflow_error", span),
        ),
    };
    let into = quote_spanned! {span=>
        (&&::magrathea::__private::BodyError::new(__magrathea_error)).#method()
    };
    quote! {
        #inner
        ::magrathea::__private::Box::pin(async move {
            match #inner_ident(#(#args),*).await {
                ::core::result::Result::Ok(output) => ::core::result::Result::Ok(output),
                ::core::result::Result::Err(__magrathea_error) => {
                    #[allow(unused_imports)]
                    use ::magrathea::__private::{#via_into as _, #via_box as _};
                    ::core::result::Result::Err(#into)
                }
            }
        })
    }
}

fn options_fn(def: &TaskDef<'_>) -> TokenStream {
    if def.retry.is_none() && def.timeout_ms.is_none() {
        return TokenStream::new();
    }
    let duration = |ms: u64| quote!(::magrathea::__private::Duration::from_millis(#ms));
    let retry = def.retry.as_ref().map(|retry| {
        let policy = match *retry {
            Retry::None => quote!(::magrathea::RetryPolicy::none()),
            Retry::Fixed {
                max_attempts,
                backoff_ms,
            } => {
                let backoff = duration(backoff_ms);
                quote!(::magrathea::RetryPolicy::fixed(#max_attempts, #backoff))
            }
            Retry::Exponential {
                max_attempts,
                backoff_ms,
                max_backoff_ms,
            } => {
                let (initial, max) = (duration(backoff_ms), duration(max_backoff_ms));
                quote!(::magrathea::RetryPolicy::exponential(#max_attempts, #initial, #max))
            }
        };
        quote!(retry: #policy,)
    });
    let timeout = def.timeout_ms.map(|ms| {
        let timeout = duration(ms);
        quote!(timeout: ::core::option::Option::Some(#timeout),)
    });
    quote! {
        #[allow(clippy::needless_update)]
        fn options() -> ::magrathea::TaskOptions {
            ::magrathea::TaskOptions {
                #retry
                #timeout
                ..::core::default::Default::default()
            }
        }
    }
}

fn input_type(func: &FnDef<'_>) -> TokenStream {
    func.input
        .map_or_else(|| quote!(()), |p| p.ty.to_token_stream())
}

fn output_type(func: &FnDef<'_>) -> TokenStream {
    func.output
        .map_or_else(|| quote!(()), Type::to_token_stream)
}

/// `#[cfg]`s of the function, repeated on every generated item so they come and go together.
fn cfgs(item: &ItemFn) -> Vec<&Attribute> {
    item.attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect()
}
