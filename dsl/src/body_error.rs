//! How the error a `#[task]` or `#[workflow]` body returns becomes the engine's error.
//!
//! A body returns `Result<T, E>`. The macros accept two kinds of `E`:
//!
//! 1. any `E: Into<TaskError>` for a task (every `std::error::Error + Send + Sync + 'static`),
//!    any `E: Into<WorkflowError>` for a workflow ([`Error`](crate::Error), [`StepError`],
//!    [`ChildError`], [`WorkflowError`]): the conversion the type itself defines;
//! 2. otherwise any `E: Into<Box<dyn std::error::Error + Send + Sync>>`: `anyhow::Error`,
//!    `eyre::Report`, `Box<dyn Error + Send + Sync>`, `String`, `&'static str`. The message is
//!    the error and its sources (`context: cause`); a task's attempt fails retryably, as with
//!    any other error, and a workflow fails, or is cancelled when the chain holds a cancelled
//!    step or child (an `anyhow::Error` is asked for its chain: boxing it would hide its root
//!    error's type).
//!
//! Neither `anyhow::Error` nor a boxed error can take the first path: a
//! `From<anyhow::Error> for TaskError` would overlap the blanket conversion from every
//! `std::error::Error`. So the macros choose by method resolution on a reference to a
//! [`BodyError`]: the first kind's trait is implemented for `&BodyError<E>` and is found
//! before auto-dereferencing reaches the second kind's, implemented for `BodyError<E>`.

use std::cell::Cell;
use std::error::Error as StdError;

use magrathea_core::{TaskError, WorkflowError};

use crate::error::{take, with_sources};
use crate::{ChildError, Error, StepError};

/// A boxed error of a body.
type Boxed = Box<dyn StdError + Send + Sync + 'static>;

/// The error a body returned, on its way to the engine's error type.
pub struct BodyError<E>(Cell<Option<E>>);

impl<E> std::fmt::Debug for BodyError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodyError")
    }
}

impl<E> BodyError<E> {
    /// Holds `error` for one conversion.
    pub fn new(error: E) -> Self {
        Self(Cell::new(Some(error)))
    }

    fn take(&self) -> E {
        self.0
            .take()
            .expect("a body's error is converted once, right after it is returned")
    }
}

/// A task body's error that converts into [`TaskError`] itself.
pub trait TaskErrorViaInto {
    /// The task error.
    fn task_error(&self) -> TaskError;
}

impl<E: Into<TaskError>> TaskErrorViaInto for &BodyError<E> {
    fn task_error(&self) -> TaskError {
        self.take().into()
    }
}

/// A task body's error that converts into a boxed error (`anyhow::Error`, `String`, …).
pub trait TaskErrorViaBox {
    /// The task error: retryable, with the error's message and its sources.
    fn task_error(&self) -> TaskError;
}

impl<E: Into<Boxed>> TaskErrorViaBox for BodyError<E> {
    fn task_error(&self) -> TaskError {
        let boxed: Boxed = self.take().into();
        TaskError::retryable(with_sources(boxed.as_ref()))
    }
}

/// A workflow body's error that converts into [`WorkflowError`] itself.
pub trait WorkflowErrorViaInto {
    /// The workflow error.
    fn workflow_error(&self) -> WorkflowError;
}

impl<E: Into<WorkflowError>> WorkflowErrorViaInto for &BodyError<E> {
    fn workflow_error(&self) -> WorkflowError {
        self.take().into()
    }
}

/// A workflow body's error that converts into a boxed error (`anyhow::Error`, `String`, …).
pub trait WorkflowErrorViaBox {
    /// The workflow error: the run fails with the error's message and its sources, or is
    /// cancelled when the chain holds a cancelled step or child.
    fn workflow_error(&self) -> WorkflowError;
}

impl<E: Into<Boxed> + 'static> WorkflowErrorViaBox for BodyError<E> {
    fn workflow_error(&self) -> WorkflowError {
        let mut slot = Some(self.take());
        // `anyhow::Error` shows its root error and each context as the chain it keeps.
        if let Some(error) = take::<anyhow::Error, E>(&mut slot) {
            return end_of(error.chain(), || format!("{error:#}"));
        }
        let boxed: Boxed = slot
            .take()
            .map(Into::into)
            .expect("the error is in the slot");
        let top: &(dyn StdError + 'static) = boxed.as_ref();
        end_of(std::iter::successors(Some(top), |e| (*e).source()), || {
            with_sources(top)
        })
    }
}

/// The end of a run whose code stopped on an error whose chain, outermost first, is `chain`:
/// a bare end, step error or child error converts as it always does; anything else fails the
/// run with `message`, or cancels it when the chain holds an error that would.
fn end_of<'e>(
    mut chain: impl Iterator<Item = &'e (dyn StdError + 'static)>,
    message: impl FnOnce() -> String,
) -> WorkflowError {
    let top = chain.next();
    if let Some(end) = top.and_then(known_end) {
        return end;
    }
    let cancelled = chain.any(|e| known_end(e).is_some_and(|end| end.cancelled));
    if cancelled {
        Error::cancelled(message()).into_workflow_error()
    } else {
        Error::failed(message()).into_workflow_error()
    }
}

/// The end `error` makes by its own conversion, when it is one of the errors that say how a
/// run ends: a [`WorkflowError`], a [`StepError`] or a [`ChildError`].
fn known_end(error: &(dyn StdError + 'static)) -> Option<WorkflowError> {
    error
        .downcast_ref::<WorkflowError>()
        .cloned()
        .or_else(|| error.downcast_ref::<StepError>().cloned().map(Into::into))
        .or_else(|| error.downcast_ref::<ChildError>().cloned().map(Into::into))
}
