//! Unit tests of the parse and validate steps, and a smoke test of the expansion.

use proc_macro2::TokenStream;
use quote::quote;

use crate::parse::{self, Kind, RetryAttr};
use crate::validate::{self, Retry};

/// The messages `#[task(args)]` on `item` reports; empty when it is accepted.
fn task_errors(args: TokenStream, item: TokenStream) -> Vec<String> {
    let item = parse::item_fn(item, Kind::Task).expect("a fn");
    let (attrs, mut errors) = parse::task_attrs(args);
    let _ = validate::task(&item, attrs, &mut errors);
    messages(errors)
}

fn workflow_errors(args: TokenStream, item: TokenStream) -> Vec<String> {
    let item = parse::item_fn(item, Kind::Workflow).expect("a fn");
    let (attrs, mut errors) = parse::workflow_attrs(args);
    let _ = validate::workflow(&item, attrs, &mut errors);
    messages(errors)
}

fn messages(errors: crate::errors::Errors) -> Vec<String> {
    match errors.finish() {
        Ok(()) => Vec::new(),
        Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
    }
}

fn retry_of(args: TokenStream) -> Result<Option<Retry>, Vec<String>> {
    let item = parse::item_fn(
        quote!(
            async fn t() -> Result<(), E> {}
        ),
        Kind::Task,
    )
    .unwrap();
    let (attrs, mut errors) = parse::task_attrs(args);
    let def = validate::task(&item, attrs, &mut errors);
    let retry = def.retry;
    let messages = messages(errors);
    if messages.is_empty() {
        Ok(retry)
    } else {
        Err(messages)
    }
}

#[test]
fn task_attrs_read_every_key() {
    let (attrs, errors) = parse::task_attrs(quote!(
        name = "payments.charge",
        retry(max_attempts = 3, backoff_ms = 100),
        timeout_ms = 5000
    ));
    assert!(errors.is_empty());
    assert_eq!(attrs.name.unwrap().value(), "payments.charge");
    assert_eq!(attrs.timeout_ms.unwrap().value, 5000);
    match attrs.retry.unwrap() {
        RetryAttr::Policy {
            max_attempts,
            backoff_ms,
            max_backoff_ms,
            ..
        } => {
            assert_eq!(max_attempts.unwrap().value, 3);
            assert_eq!(backoff_ms.unwrap().value, 100);
            assert!(max_backoff_ms.is_none());
        }
        RetryAttr::None => panic!("expected a policy"),
    }
}

#[test]
fn retry_forms_map_to_policies() {
    assert_eq!(retry_of(quote!()), Ok(None));
    assert_eq!(retry_of(quote!(retry = "none")), Ok(Some(Retry::None)));
    assert_eq!(
        retry_of(quote!(retry(max_attempts = 4))),
        Ok(Some(Retry::Fixed {
            max_attempts: 4,
            backoff_ms: 0
        }))
    );
    assert_eq!(
        retry_of(quote!(retry(max_attempts = 4, backoff_ms = 10))),
        Ok(Some(Retry::Fixed {
            max_attempts: 4,
            backoff_ms: 10
        }))
    );
    assert_eq!(
        retry_of(quote!(retry(
            max_attempts = 5,
            backoff_ms = 10,
            max_backoff_ms = 80
        ))),
        Ok(Some(Retry::Exponential {
            max_attempts: 5,
            backoff_ms: 10,
            max_backoff_ms: 80
        }))
    );
}

#[test]
fn retry_inconsistencies_are_errors() {
    let err = retry_of(quote!(retry(backoff_ms = 10))).unwrap_err();
    assert!(err[0].contains("needs `max_attempts`"), "{err:?}");
    let err = retry_of(quote!(retry(max_attempts = 0))).unwrap_err();
    assert!(err[0].contains("at least 1"), "{err:?}");
    let err = retry_of(quote!(retry(max_attempts = 2, max_backoff_ms = 10))).unwrap_err();
    assert!(
        err[0].contains("give its start with `backoff_ms`"),
        "{err:?}"
    );
    let err = retry_of(quote!(retry(
        max_attempts = 2,
        backoff_ms = 50,
        max_backoff_ms = 10
    )));
    assert!(err.unwrap_err()[0].contains("at least `backoff_ms`"));
    let err = retry_of(quote!(retry = "always")).unwrap_err();
    assert!(err[0].contains("retry = \"none\""), "{err:?}");
    let err = retry_of(quote!(retry(attempts = 2))).unwrap_err();
    assert!(
        err[0].contains("unknown retry(...) argument `attempts`"),
        "{err:?}"
    );
}

#[test]
fn unknown_duplicate_and_mistyped_arguments_are_all_reported() {
    let (_, errors) =
        parse::task_attrs(quote!(nme = "x", name = "a", name = "b", timeout_ms = "5s"));
    let found = messages(errors);
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(
        found[0],
        "unknown #[task] argument `nme`; expected `name`, `retry` or `timeout_ms`"
    );
    assert_eq!(found[1], "duplicate `name` argument");
    assert!(found[2].starts_with("expected a non-negative integer literal"));

    let (_, errors) = parse::workflow_attrs(quote!(version = 2, retry = "none"));
    let found = messages(errors);
    assert_eq!(found[0], "expected a string literal: `version = \"...\"`");
    assert_eq!(
        found[1],
        "unknown #[workflow] argument `retry`; expected `name` or `version`"
    );
}

#[test]
fn accepted_task_shapes() {
    let ok = |item| assert_eq!(task_errors(quote!(), item), Vec::<String>::new());
    ok(quote!(
        async fn charge(order: Order) -> Result<Receipt, TaskError> {
            todo!()
        }
    ));
    ok(quote!(
        async fn ping() -> Result<(), MyError> {
            Ok(())
        }
    ));
    ok(quote!(
        async fn c(ctx: magrathea::TaskContext, o: Order) -> std::result::Result<R, E> {}
    ));
    ok(quote!(
        async fn add((a, b): (u32, u32)) -> Result<u32, E> {
            Ok(a + b)
        }
    ));
    ok(quote!(
        pub(crate) async fn r#type(x: Cow<'static, str>) -> Result<(), E> {}
    ));
}

#[test]
fn task_shape_errors() {
    let first = |item| task_errors(quote!(), item).remove(0);
    assert_eq!(
        first(quote!(
            fn charge(o: Order) -> Result<R, E> {}
        )),
        "#[task] functions must be `async fn`"
    );
    assert_eq!(
        first(quote!(
            async fn charge(a: A, b: B) -> Result<R, E> {}
        )),
        "a task takes one input; group several values into a struct"
    );
    assert!(
        first(quote!(
            async fn charge<T>(a: T) -> Result<R, E> {}
        ))
        .starts_with("tasks cannot be generic")
    );
    assert!(
        first(quote!(
            async fn charge<'a>(a: &'a str) -> Result<R, E> {}
        ))
        .starts_with("tasks cannot be generic")
    );
    assert!(
        first(quote!(
            async fn charge(&self) -> Result<R, E> {}
        ))
        .contains("cannot take `self`")
    );
    assert_eq!(
        first(quote!(
            async fn c(o: Order, ctx: TaskContext) -> Result<R, E> {}
        )),
        "move `ctx: TaskContext` to the first parameter"
    );
    assert!(
        first(quote!(
            async fn c(ctx: Context) -> Result<R, E> {}
        ))
        .contains("not a workflow's `Context`")
    );
    assert!(
        first(quote!(
            async fn c(o: &str) -> Result<R, E> {}
        ))
        .contains("must be an owned type")
    );
    assert!(
        first(quote!(
            async fn c(o: impl Serialize) -> Result<R, E> {}
        ))
        .contains("not `impl Trait`")
    );
    assert_eq!(
        first(quote!(
            async fn c() {}
        )),
        "a task must return `Result<T, E>` where `E: Into<TaskError>` or \
         `E: Into<Box<dyn Error + Send + Sync>>`"
    );
    assert_eq!(
        first(quote!(
            async fn c() -> Receipt {}
        )),
        "a task must return `Result<T, E>` where `E: Into<TaskError>` or \
         `E: Into<Box<dyn Error + Send + Sync>>`"
    );
}

#[test]
fn a_one_argument_result_alias_names_the_output() {
    for ty in [quote!(anyhow::Result<Receipt>), quote!(TaskResult<Receipt>)] {
        let messages = task_errors(quote!(), quote!(async fn c() -> #ty {}));
        assert_eq!(messages, Vec::<String>::new());
    }
}

#[test]
fn a_two_argument_alias_asks_for_the_full_form() {
    let messages = task_errors(
        quote!(),
        quote!(
            async fn c() -> PayResult<Receipt, Declined> {}
        ),
    );
    assert_eq!(messages.len(), 1);
    assert!(
        messages[0].starts_with("write the return type in full as `Result<T, E>`"),
        "{messages:?}"
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let messages = task_errors(
        quote!(colour = "red"),
        quote!(
            fn charge<T>(a: T, b: u8) -> u8 {}
        ),
    );
    assert_eq!(messages.len(), 5, "{messages:?}");
}

#[test]
fn workflow_context_rules() {
    let ok = |item| assert_eq!(workflow_errors(quote!(), item), Vec::<String>::new());
    ok(quote!(
        async fn order(ctx: Context, o: Order) -> Result<S, WorkflowError> {}
    ));
    ok(quote!(
        async fn tick(ctx: magrathea::Context) -> Result<(), WorkflowError> {}
    ));

    let first = |item| workflow_errors(quote!(), item).remove(0);
    let missing = "a workflow's first parameter must be its `ctx: Context`";
    assert_eq!(
        first(quote!(
            async fn order() -> Result<S, E> {}
        )),
        missing
    );
    assert_eq!(
        first(quote!(
            async fn order(o: Order) -> Result<S, E> {}
        )),
        missing
    );
    assert_eq!(
        first(quote!(
            async fn order(o: Order, ctx: Context) -> Result<S, E> {}
        )),
        "move `ctx: Context` to the first parameter"
    );
    assert_eq!(
        workflow_errors(
            quote!(),
            quote!(
                async fn order(ctx: &Context, o: Order) -> Result<S, WorkflowError> {}
            )
        ),
        vec![
            "take the context by value, `ctx: Context`, not by reference: it is a handle, \
             clone it where you need another"
                .to_owned()
        ]
    );
    assert!(
        first(quote!(
            async fn order(ctx: TaskContext) -> Result<S, E> {}
        ))
        .ends_with("a `TaskContext` is for #[task] functions")
    );
    assert_eq!(
        first(quote!(
            async fn order(ctx: Context, a: A, b: B) -> Result<S, E> {}
        )),
        "a workflow takes one input after `ctx`; group several values into a struct"
    );
    assert_eq!(
        first(quote!(
            fn order(ctx: Context) -> Result<S, E> {}
        )),
        "#[workflow] functions must be `async fn`"
    );
    assert!(
        first(quote!(
            async fn order<T>(ctx: Context) -> Result<S, E> {}
        ))
        .starts_with("workflows cannot be generic")
    );
}

#[test]
fn non_fn_items_are_rejected() {
    let err = parse::item_fn(
        quote!(
            struct Charge;
        ),
        Kind::Task,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "#[task] applies to an `async fn`");
}

#[test]
fn expansion_names_the_struct_and_impl() {
    let out = crate::expand::task(
        quote!(name = "payments.charge", retry = "none", timeout_ms = 5),
        quote!(
            pub async fn charge(order: Order) -> Result<Receipt, E> {
                Ok(Receipt)
            }
        ),
    )
    .to_string();
    assert!(out.contains("pub struct charge ;"), "{out}");
    assert!(
        out.contains("impl :: magrathea :: Task for charge"),
        "{out}"
    );
    assert!(out.contains("\"payments.charge\""), "{out}");
    assert!(
        out.contains(":: magrathea :: RetryPolicy :: none ()"),
        "{out}"
    );
    assert!(
        out.contains("# [doc = \" The `payments.charge` task.\"]"),
        "{out}"
    );
    assert!(!out.contains("compile_error"), "{out}");
}

#[test]
fn an_error_still_emits_the_struct_and_a_stub_impl() {
    let out = crate::expand::workflow(
        quote!(),
        quote!(
            fn order(ctx: Context) -> Result<S, E> {}
        ),
    )
    .to_string();
    assert!(out.contains("compile_error"), "{out}");
    assert!(out.contains("struct order ;"), "{out}");
    assert!(
        out.contains("impl :: magrathea :: Workflow for order"),
        "{out}"
    );
}
