//! The `#[task]` and `#[workflow]` attribute macros of Magrathea.
//!
//! Use them through the `magrathea` crate, which re-exports them; the generated code refers to
//! `::magrathea` and does not compile without it.
//!
//! Each macro turns an `async fn` into a unit struct of the same name that implements
//! `magrathea::Task` or `magrathea::Workflow`. The function's body is kept as written; the
//! struct is what you pass around: `ctx.task(charge, order)`, `Engine::builder().workflow(order)`,
//! `engine.start(order, input)`.
//!
//! The macros work in three steps, each in its own module: `parse` reads the tokens, `validate`
//! checks the function's shape and reports every problem at the tokens that cause it, `expand`
//! writes the code. After an error they still emit the struct and a placeholder impl, so the
//! error is reported once rather than again at every use.

mod errors;
mod expand;
mod parse;
mod validate;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Makes an `async fn` a durable task: its result is journaled and it is retried on failure.
///
/// # Shape
///
/// ```
/// use magrathea::{task, TaskContext, TaskError};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// pub struct Order { pub cents: u64 }
/// #[derive(Serialize, Deserialize)]
/// pub struct Receipt { pub id: String }
///
/// /// Charges the order's card.
/// #[task(name = "payments.charge", retry(max_attempts = 3, backoff_ms = 100), timeout_ms = 5000)]
/// async fn charge(order: Order) -> Result<Receipt, TaskError> {
///     Ok(Receipt { id: format!("pay-{}", order.cents) })
/// }
///
/// /// Checks the gateway.
/// #[task]
/// async fn ping() -> Result<(), std::io::Error> { Ok(()) }            // no input: `()`
///
/// /// Uploads with an idempotency key the gateway can dedupe on.
/// #[task]
/// async fn upload(ctx: TaskContext, name: String) -> Result<String, TaskError> {
///     Ok(format!("{name}@{}", ctx.idempotency_key()))
/// }
/// # fn main() {}
/// ```
///
/// * The function must be an `async fn`, not generic, without `self`.
/// * It takes at most one input; group several values into a struct. The input may be bound
///   by a pattern (`Point { x, y }: Point`).
/// * It may take a `TaskContext` as its **first** parameter (recognised by the type's name).
/// * It returns `Result<T, E>` (any path ending in `Result` with both arguments written, or a
///   one-argument alias such as `anyhow::Result<T>`) where `E: Into<TaskError>`, which every
///   `std::error::Error + Send + Sync + 'static` is, or
///   `E: Into<Box<dyn Error + Send + Sync>>`: `anyhow::Error`, `String`, a boxed error. An
///   error fails the attempt retryably with its message and its sources
///   (`context: cause`).
/// * Input and output must be serde types (`magrathea::Journaled`), owned (no borrows).
///
/// # Arguments
///
/// | argument | meaning | default |
/// |---|---|---|
/// | `name = "..."` | name journaled and registered | the function's name |
/// | `retry(max_attempts = N)` | `RetryPolicy::fixed(N, 0 ms)` | `TaskOptions::default()` |
/// | `retry(max_attempts = N, backoff_ms = M)` | `RetryPolicy::fixed(N, M ms)` | |
/// | `retry(max_attempts = N, backoff_ms = M, max_backoff_ms = X)` | `RetryPolicy::exponential(N, M ms, X ms)` | |
/// | `retry = "none"` | `RetryPolicy::none()`: one attempt | |
/// | `timeout_ms = T` | per-attempt timeout | none |
///
/// `max_attempts` counts the first attempt.
///
/// # Expansion
///
/// ```text
/// /// Charges the order's card.                  (or a generated line if undocumented)
/// #[derive(Clone, Copy, Debug, Default)]
/// pub struct charge;                              (the function's visibility)
/// impl magrathea::Task for charge {
///     type Input = Order;
///     type Output = Receipt;
///     const NAME: &'static str = "payments.charge";
///     fn options() -> TaskOptions { /* from the arguments */ }
///     fn run(input: Order, ctx: TaskContext) -> BoxFuture<'static, Result<Receipt, TaskError>> {
///         async fn body(order: Order) -> Result<Receipt, PaymentError> { /* as written */ }
///         Box::pin(async move { body(input).await.map_err(Into::into) })
///     }
/// }
/// ```
///
/// plus a compile-time check that reports a non-serde input or output at its type with
/// "cannot be journaled".
#[proc_macro_attribute]
pub fn task(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::task(args.into(), item.into()).into()
}

/// Makes an `async fn` a durable workflow: deterministic code whose steps are journaled and
/// replayed after a restart.
///
/// # Shape
///
/// ```
/// use magrathea::{task, workflow, Context, TaskError, WorkflowError};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Clone, Serialize, Deserialize)]
/// pub struct Order { pub cents: u64 }
/// #[derive(Serialize, Deserialize)]
/// pub struct Summary { pub receipt: String }
///
/// /// Charges the order's card.
/// #[task]
/// async fn charge(o: Order) -> Result<String, TaskError> { Ok(format!("{}", o.cents)) }
///
/// /// Charges and ships an order.
/// #[workflow(name = "order", version = "2")]
/// async fn order(ctx: Context, input: Order) -> Result<Summary, WorkflowError> {
///     let receipt = ctx.task(charge, input.clone()).await?;
///     Ok(Summary { receipt })
/// }
///
/// /// Runs every minute.
/// #[workflow]
/// async fn tick(ctx: Context) -> Result<(), WorkflowError> { Ok(()) }   // no input: `()`
/// # fn main() {}
/// ```
///
/// * The function must be an `async fn`, not generic, without `self`.
/// * Its **first** parameter is its `ctx: Context` (recognised by the type's name).
/// * After the context it takes at most one input; group several values into a struct.
/// * It returns `Result<T, E>` with `E: Into<WorkflowError>`: `WorkflowError` itself,
///   `magrathea::Error`, `magrathea::StepError`, `magrathea::ChildError` or `TaskError`; or
///   with `E: Into<Box<dyn Error + Send + Sync>>`: `anyhow::Error` (`anyhow::Result<T>`),
///   `String`, a boxed error. Through the latter the run fails with the error's message and
///   sources, or ends `CANCELLED` when the chain holds a cancelled step or child.
/// * Input and output must be owned serde types (`magrathea::Journaled`).
///
/// # Errors and `?`
///
/// With `WorkflowError`, `?` takes the errors of the context's steps (`StepError`) and of
/// child workflows (`ChildError`). Declare `magrathea::Error` to use `?` on any
/// `std::error::Error + Send + Sync + 'static` as well (a `serde_json::Error`, a
/// `ParseIntError`, your own error type): the run fails with the error's message and sources,
/// and a cancelled step or child still ends it `CANCELLED`.
///
/// ```
/// use magrathea::{workflow, Context};
///
/// /// Reads a quantity and asks a child for its price.
/// #[workflow]
/// async fn quote(ctx: Context, quantity: String) -> Result<u64, magrathea::Error> {
///     let quantity: u64 = quantity.trim().parse()?;             // std::num::ParseIntError
///     let unit = ctx.child(unit_price, ()).await?;              // magrathea::ChildError
///     let unit: u64 = serde_json::from_value(unit)?;            // serde_json::Error
///     Ok(quantity * unit)
/// }
///
/// /// The price of one unit, as JSON.
/// #[workflow]
/// async fn unit_price(_ctx: Context) -> Result<serde_json::Value, magrathea::Error> {
///     Ok(serde_json::json!(42))
/// }
/// # fn main() {}
/// ```
///
/// # Arguments
///
/// | argument | meaning | default |
/// |---|---|---|
/// | `name = "..."` | name runs are journaled under | the function's name |
/// | `version = "..."` | `Workflow::VERSION`; runs started on another version are not replayed | `""` |
///
/// # Expansion
///
/// A unit struct of the function's name and visibility, carrying its docs, and
/// `impl magrathea::Workflow` whose `run` calls the function as written (kept as a local
/// `async fn`) and converts its error with `Into`; the same serde check as `#[task]`.
#[proc_macro_attribute]
pub fn workflow(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::workflow(args.into(), item.into()).into()
}
