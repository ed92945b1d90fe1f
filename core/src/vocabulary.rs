//! The journal's words as types: a task's outcome, a run's front end, a run's scope. On disk and
//! in JSON each is its plain string; in memory a type says which word it is.

use std::borrow::{Borrow, Cow};
use std::fmt;

use serde::{Deserialize, Serialize};

/// A word of the journal's vocabulary: its well-known values (`known`) are kept as the
/// program's own strings, so that making or decoding one (every task result has an outcome,
/// almost always `success`) allocates nothing; any other value is its own `String`.
macro_rules! word {
    ($(#[$doc:meta])* $name:ident, known: [$($known:expr),* $(,)?]) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Cow<'static, str>);

        impl $name {
            /// The word as written in the journal.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The word as a `String`.
            pub fn into_string(self) -> String {
                self.0.into_owned()
            }

            /// The program's own copy of `s`, if it is a well-known value.
            fn known(s: &str) -> Option<&'static str> {
                [$($known),*].into_iter().find(|k| *k == s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match Self::known(s) {
                    Some(k) => Self(Cow::Borrowed(k)),
                    None => Self(Cow::Owned(s.to_string())),
                }
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(Cow::Owned(s))
            }
        }

        impl From<&String> for $name {
            fn from(s: &String) -> Self {
                Self::from(s.as_str())
            }
        }

        impl From<$name> for String {
            fn from(w: $name) -> Self {
                w.into_string()
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == *other
            }
        }
    };
}

word! {
    /// How a task attempt ended: [`Outcome::SUCCESS`] or an error kind of the reference's
    /// vocabulary (`technical_error`, `timeout`, `cancelled`, …; see
    /// [`TaskError`](crate::TaskError)).
    Outcome,
    known: [
        Outcome::SUCCESS,
        crate::TaskError::TECHNICAL,
        crate::TaskError::TIMEOUT,
        crate::TaskError::CANCELLED,
    ]
}

impl Outcome {
    /// The outcome of an attempt that succeeded.
    pub const SUCCESS: &'static str = "success";

    /// `success`.
    pub fn success() -> Self {
        Self::from(Self::SUCCESS)
    }

    /// Whether the attempt succeeded.
    pub fn is_success(&self) -> bool {
        self.0 == Self::SUCCESS
    }
}

word! {
    /// Which front end runs a workflow: [`Frontend::CODE`] for registered `#[workflow]`s, or
    /// the name an interpreter is registered under (`yaml`).
    Frontend,
    known: [Frontend::CODE, "yaml"]
}

impl Frontend {
    /// The front end of code workflows.
    pub const CODE: &'static str = "code";

    /// `code`.
    pub fn code() -> Self {
        Self::from(Self::CODE)
    }

    /// Whether runs of this front end are registered code workflows.
    pub fn is_code(&self) -> bool {
        self.0 == Self::CODE
    }
}

word! {
    /// Where a run belongs: `tenant/project`, or empty for runs outside any project. Every read
    /// of runs is filtered by it (a run of another scope is not found).
    RunScope,
    known: [""]
}

impl RunScope {
    /// Whether the run belongs to no project.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What a durable timer is for, as its `TimerSetRecord` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TimerPurpose {
    /// A `sleep` step.
    #[serde(rename = "sleep")]
    Sleep,
    /// A `sleep_until` step.
    #[serde(rename = "sleep_until")]
    SleepUntil,
    /// The backoff before a task's next attempt.
    #[serde(rename = "retry")]
    Retry,
    /// A gate's timeout.
    #[serde(rename = "gate-timeout")]
    GateTimeout,
    /// The run's deadline ([`WorkflowContext::deadline`](crate::WorkflowContext::deadline)):
    /// when it fires, the run's `CancelRequestedRecord` follows in the same commit.
    #[serde(rename = "deadline")]
    Deadline,
}

impl TimerPurpose {
    /// The word written in the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            TimerPurpose::Sleep => "sleep",
            TimerPurpose::SleepUntil => "sleep_until",
            TimerPurpose::Retry => "retry",
            TimerPurpose::GateTimeout => "gate-timeout",
            TimerPurpose::Deadline => "deadline",
        }
    }

    /// The purpose written as `word`, if it is one.
    pub fn parse(word: &str) -> Option<Self> {
        [
            TimerPurpose::Sleep,
            TimerPurpose::SleepUntil,
            TimerPurpose::Retry,
            TimerPurpose::GateTimeout,
            TimerPurpose::Deadline,
        ]
        .into_iter()
        .find(|p| p.as_str() == word)
    }
}

impl fmt::Display for TimerPurpose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_and_write_as_their_plain_strings() {
        let o = Outcome::from("timeout");
        assert_eq!(serde_json::to_string(&o).unwrap(), "\"timeout\"");
        assert_eq!(
            serde_json::from_str::<Outcome>("\"success\"").unwrap(),
            Outcome::success()
        );
        assert!(Outcome::success().is_success() && !o.is_success());
        assert_eq!(o, "timeout");
        assert!(Frontend::code().is_code() && !Frontend::from("yaml").is_code());
        assert!(RunScope::default().is_empty());
        assert_eq!(RunScope::from("acme/shop").to_string(), "acme/shop");
        for p in [
            TimerPurpose::Sleep,
            TimerPurpose::SleepUntil,
            TimerPurpose::Retry,
            TimerPurpose::GateTimeout,
            TimerPurpose::Deadline,
        ] {
            assert_eq!(TimerPurpose::parse(p.as_str()), Some(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
        }
        assert_eq!(TimerPurpose::parse("nap"), None);
    }
}
