//! A long poll on one run: `GET …/workflows/runs/{run_id}?wait=30s[&until=ended|settled]`
//! answers the run as soon as it has ended (`until=ended`, the default: `DONE`, `FAILED`,
//! `CANCELLED` or `BLOCKED`) or settled (`until=settled`: also `WAITING` on a gate, `PAUSED`,
//! or `RUNNING` while it waits only on sub-runs that wait on people), or once the wait is
//! over or the server begins to stop, whichever comes first; the answer is the run as it is
//! then, so a caller reads its `status` and asks again while it is not what it waits for.
//!
//! A wait is at most [`MAX_WAIT`]. While it waits it holds one of its token subject's follower
//! slots (the SSE streams and WebSocket subscriptions share them), so one token cannot hold
//! more of them than the server allows; a run that already meets the condition is answered at
//! once without one. On a store other workers share, the run may be driven by another process:
//! the wait then looks at the store now and then as well (see `Engine::wait_until`).

use std::time::Duration;

use magrathea_core::{RunStatus, RunSummary};

use super::auth::Principal;
use super::error::ApiError;
use super::state::AppState;

/// The longest a request may wait for its run.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// What the wait waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Until {
    /// The run has ended, or is `BLOCKED` (it needs fixed code or a restored store).
    Ended,
    /// The run no longer runs on its own: ended, `BLOCKED`, `WAITING` on a gate, `PAUSED`, or
    /// waiting only on sub-runs that wait on people.
    Settled,
}

impl Until {
    fn met(self, status: RunStatus) -> bool {
        match self {
            Until::Ended => status.is_terminal() || status == RunStatus::Blocked,
            Until::Settled => status != RunStatus::Running,
        }
    }
}

/// A request's `wait` and `until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wait {
    longest: Duration,
    until: Until,
}

impl Wait {
    /// The wait a query asks for: `None` without `wait`; 400 `MAG-HTTP-INVALID-WAIT` for a
    /// `wait` that is not a duration (`30s`, `PT30S`, `500ms`, or whole seconds such as `30`)
    /// of at most [`MAX_WAIT`], an `until` other than `ended` or `settled`, or an `until`
    /// without a `wait`.
    pub(crate) fn parse(wait: Option<&str>, until: Option<&str>) -> Result<Option<Self>, ApiError> {
        let invalid = |message: String| ApiError::bad_request("MAG-HTTP-INVALID-WAIT", message);
        let until = match until {
            None => None,
            Some("ended") => Some(Until::Ended),
            Some("settled") => Some(Until::Settled),
            Some(other) => {
                return Err(invalid(format!(
                    "`until` is `ended` or `settled`, not `{other}`"
                )));
            }
        };
        let Some(text) = wait else {
            return match until {
                Some(_) => Err(invalid("`until` needs a `wait`, e.g. `wait=30s`".into())),
                None => Ok(None),
            };
        };
        let too_long = || {
            invalid(format!(
                "`wait` `{text}` is longer than {} s, the most a request may wait; ask again \
                 when it answers",
                MAX_WAIT.as_secs()
            ))
        };
        let longest = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            // Whole seconds, however many digits.
            Duration::from_secs(text.parse::<u64>().map_err(|_| too_long())?)
        } else {
            magrathea_yaml::parse_duration(text).map_err(|_| {
                invalid(format!(
                    "`wait` `{text}` is not a duration: expected one such as `30s`, `PT30S`, \
                     `500ms` or whole seconds (`30`), at most {} s",
                    MAX_WAIT.as_secs()
                ))
            })?
        };
        if longest > MAX_WAIT {
            return Err(too_long());
        }
        Ok(Some(Self {
            longest,
            until: until.unwrap_or(Until::Ended),
        }))
    }

    /// Waits until `run` meets the condition or the wait is over. A run that meets it already
    /// returns at once; otherwise the wait holds a follower slot of `who` (429 `MAG-RD003`
    /// when the subject has none left). The revocation of `token` (what `who` signed in with)
    /// ends the wait too, as it ends a stream; the caller authorizes the request again.
    pub(crate) async fn wait(
        self,
        state: &AppState,
        tenant: &str,
        who: &Principal,
        token: Option<&str>,
        run: &RunSummary,
    ) -> Result<(), ApiError> {
        if self.longest.is_zero() || self.until.met(run.status) {
            return Ok(());
        }
        let _slot = state.follower_slot(tenant, who)?;
        let engine = &state.engine;
        let id = run.run_id;
        // An error of the store ends the wait early, and so do the server's stop and the
        // token's revocation; the answer that follows reads the run again and reports it.
        let waited = async {
            match self.until {
                Until::Ended => {
                    let _ = engine.wait_until(id, |s| Until::Ended.met(s)).await;
                }
                // A run that waits on people through its sub-runs (their gates) stays
                // RUNNING: it has settled all the same, as `magrathea run` says with exit
                // code 3.
                Until::Settled => {
                    tokio::select! {
                        _ = engine.wait_settled(id) => {}
                        () = crate::pending::waiting_through_sub_runs(engine, id) => {}
                    }
                }
            }
        };
        let _ = tokio::time::timeout(self.longest, async {
            tokio::select! {
                () = waited => {}
                _ = state.stream_end(token.map(str::to_owned), who.clone()) => {}
            }
        })
        .await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Result<Option<Wait>, ApiError>) -> String {
        r.expect_err("refused").code.to_owned()
    }

    #[test]
    fn a_wait_is_a_duration_or_whole_seconds_of_at_most_a_minute() {
        let w = |t: &str| Wait::parse(Some(t), None).unwrap().unwrap().longest;
        assert_eq!(w("30"), Duration::from_secs(30));
        assert_eq!(w("30s"), Duration::from_secs(30));
        assert_eq!(w("PT1M"), MAX_WAIT);
        assert_eq!(w("250ms"), Duration::from_millis(250));
        assert_eq!(Wait::parse(None, None).unwrap(), None);
        for bad in ["61", "2m", "soon", "-1", "", "99999999999999999999"] {
            assert_eq!(
                code(Wait::parse(Some(bad), None)),
                "MAG-HTTP-INVALID-WAIT",
                "{bad}"
            );
        }
        // Its message offers only waits it takes.
        let said = |t: &str| Wait::parse(Some(t), None).unwrap_err().message;
        assert!(
            said("soon").contains("`30s`, `PT30S`, `500ms` or whole seconds (`30`), at most 60 s")
        );
        assert!(!said("soon").contains("'7d'"), "{}", said("soon"));
        assert!(said("99999999999999999999").contains("is longer than 60 s"));
    }

    #[test]
    fn until_is_ended_by_default_or_settled_and_needs_a_wait() {
        let u = |t: Option<&str>| Wait::parse(Some("1s"), t).unwrap().unwrap().until;
        assert_eq!(u(None), Until::Ended);
        assert_eq!(u(Some("ended")), Until::Ended);
        assert_eq!(u(Some("settled")), Until::Settled);
        assert_eq!(
            code(Wait::parse(Some("1s"), Some("done"))),
            "MAG-HTTP-INVALID-WAIT"
        );
        assert_eq!(
            code(Wait::parse(None, Some("ended"))),
            "MAG-HTTP-INVALID-WAIT"
        );
    }

    #[test]
    fn a_waiting_or_paused_run_has_settled_but_not_ended() {
        for s in [RunStatus::Waiting, RunStatus::Paused] {
            assert!(Until::Settled.met(s) && !Until::Ended.met(s), "{s:?}");
        }
        for s in [
            RunStatus::Done,
            RunStatus::Failed,
            RunStatus::Cancelled,
            RunStatus::Blocked,
        ] {
            assert!(Until::Settled.met(s) && Until::Ended.met(s), "{s:?}");
        }
        assert!(!Until::Settled.met(RunStatus::Running));
    }
}
