//! Catching panics of user code (a workflow body, an interpreter) with their message and
//! location, so that a bug blocks its run visibly instead of killing the run's driver.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    /// Set while user code runs under [`catch`] on this thread.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// Set while code runs under [`catch_quietly`] on this thread: its panics do not print.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// Where the last caught panic happened.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Adds a panic hook that notes the location of panics raised under [`catch`] and then calls
/// the hook that was installed before (so panics print as usual).
fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) {
                let location = info
                    .location()
                    .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
                LOCATION.with(|l| *l.borrow_mut() = location);
            }
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// A panic of user code: its message and where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Panic {
    pub(crate) message: String,
    pub(crate) location: Option<String>,
}

impl fmt::Display for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self
            .location
            .as_deref()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        write!(
            f,
            "[MAG-WF001] workflow code panicked{at}: {}. The run is blocked: fix the code and \
             reopen the engine, and the run resumes from its journal (or cancel the run)",
            self.message
        )
    }
}

/// The text of a panic payload.
pub(crate) fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `f`, turning a panic into a [`Panic`].
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, Panic> {
    install_hook();
    let was = CATCHING.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(was));
    result.map_err(|payload| Panic {
        message: message(payload.as_ref()),
        location: LOCATION.with(|l| l.borrow_mut().take()),
    })
}

/// A future whose every poll runs under [`catch`]: a panic while it is polled ends it with
/// the [`Panic`], its location included (a task's body).
pub(crate) struct CatchFuture<F>(pub(crate) F);

impl<F: std::future::Future + Unpin> std::future::Future for CatchFuture<F> {
    type Output = Result<F::Output, Panic>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match catch(|| std::pin::Pin::new(&mut self.0).poll(cx)) {
            Ok(std::task::Poll::Ready(out)) => std::task::Poll::Ready(Ok(out)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        }
    }
}

/// [`catch`] for a panic that the caller reports as an error of its own (a library that
/// panics on a damaged file): it is not printed.
pub(crate) fn catch_quietly<R>(f: impl FnOnce() -> R) -> Result<R, Panic> {
    let was = QUIET.with(|q| q.replace(true));
    let result = catch(f);
    QUIET.with(|q| q.set(was));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_while_a_future_is_polled_is_caught_with_its_location() {
        let fut = CatchFuture(Box::pin(async {
            panic!("polled {}", 7);
        }));
        let p = futures::executor::block_on(fut).expect_err("the panic ends the future");
        assert_eq!(p.message, "polled 7");
        let at = p.location.expect("the location is noted");
        assert!(at.starts_with(&format!("{}:", file!())), "{at}");
    }

    #[test]
    fn a_panic_is_caught_with_its_message_and_location() {
        let caught = catch(|| -> u32 { panic!("boom {}", 42) });
        let p = caught.expect_err("the panic is caught");
        assert_eq!(p.message, "boom 42");
        let location = p.location.clone().expect("a location");
        assert!(location.starts_with("core/src/panic.rs:"), "{location}");
        assert!(
            p.to_string()
                .starts_with("[MAG-WF001] workflow code panicked at core/src/panic.rs:")
        );
        assert_eq!(catch(|| 7), Ok(7));
    }
}
