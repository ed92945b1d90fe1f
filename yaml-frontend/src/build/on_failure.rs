//! `onFailure:` of a workflow document (Friday's `failurePolicy`): a policy word, or a block
//! with the fallback state and, for `pause_for_approval`, the decision's timeout and approvers.

use super::ctx::{self, Ctx, found};
use crate::ast::Spanned;
use crate::diagnostic::Code;
use crate::node::YamlNode;

/// `onFailure:`: a policy word, or `{policy: fallback, fallback: <state>}` (`fallback_step`,
/// Friday's word, is read as `fallback`).
pub(super) fn on_failure(ctx: &mut Ctx<'_>, node: &YamlNode) -> crate::ast::FailurePolicy {
    use crate::ast::FailurePolicy;
    const WORDS: &str = "fail_fast, continue_on_error, fallback (or fallback_step), compensate or pause_for_approval";
    let (word_node, fallback) = match node.as_map() {
        Some(_) => {
            ctx.check_fields(
                node,
                &["policy", "fallback", "timeoutSeconds", "approvers"],
                "'onFailure'",
            );
            (node.get("policy"), node.get("fallback"))
        }
        None => (Some(node), None),
    };
    let timeout = node.as_map().and_then(|_| node.get("timeoutSeconds"));
    let approvers_node = node.as_map().and_then(|_| node.get("approvers"));
    // The policy word is read in any case, as the document's other fixed words are.
    let word = word_node
        .and_then(YamlNode::as_str)
        .map(str::to_ascii_lowercase);
    if word.as_deref() != Some("pause_for_approval") {
        for (key, n) in [("timeoutSeconds", timeout), ("approvers", approvers_node)] {
            if let Some(n) = n {
                ctx.error(
                    n.span,
                    Code::InvalidPauseForApproval,
                    format_args!(
                        "'onFailure.{key}' applies to 'policy: pause_for_approval' only: \
                         expected that policy, or no '{key}'"
                    ),
                );
            }
        }
    }
    let Some(word_node) = word_node else {
        ctx.error(
            node.span,
            Code::MissingField,
            format_args!("'onFailure' has no 'policy': expected one of {WORDS}"),
        );
        return FailurePolicy::FailFast;
    };
    match word.as_deref() {
        Some("fail_fast") => FailurePolicy::FailFast,
        Some("continue_on_error") => FailurePolicy::ContinueOnError,
        Some("compensate") => FailurePolicy::Compensate,
        Some("pause_for_approval") => {
            let fallback = fallback.and_then(|f| match f.as_str() {
                Some(s) => Some(Spanned {
                    value: s.to_owned(),
                    span: f.span,
                }),
                None => {
                    ctx.error(
                        f.span,
                        Code::WrongType,
                        format_args!(
                            "'onFailure.fallback' is {}: expected a state name",
                            found(f)
                        ),
                    );
                    None
                }
            });
            let timeout_seconds = timeout.and_then(|t| match ctx::seconds(t) {
                Some(n) if n > 0.0 && n.is_finite() => ctx::within_duration_limit(
                    ctx,
                    t,
                    Code::InvalidPauseForApproval,
                    "onFailure.timeoutSeconds",
                    n,
                )
                .then_some(n),
                _ => {
                    ctx.error(
                        t.span,
                        Code::InvalidPauseForApproval,
                        format_args!(
                            "'onFailure.timeoutSeconds' is {}: expected a positive number of seconds",
                            found(t)
                        ),
                    );
                    None
                }
            });
            let approvers = approvers_node
                .and_then(|a| super::inbox::approvers(ctx, a, "'onFailure.approvers'"));
            FailurePolicy::PauseForApproval {
                fallback,
                timeout_seconds,
                approvers,
            }
        }
        // `fallback_step` is the Friday design's word for it.
        Some("fallback" | "fallback_step") => {
            match fallback.and_then(|f| f.as_str().map(|s| (s, f.span))) {
                Some((s, span)) => FailurePolicy::Fallback(Spanned {
                    value: s.to_owned(),
                    span,
                }),
                None => {
                    ctx.error(
                    node.span,
                    Code::MissingField,
                    "'onFailure: fallback' names no state: expected 'onFailure: {policy: fallback, fallback: <state>}'",
                );
                    FailurePolicy::FailFast
                }
            }
        }
        _ => {
            // `fail-fast`, `failfast`, `fallback-step`: the word meant.
            let hint = word
                .as_deref()
                .map(|w| {
                    use crate::schema::{FailureBlockPolicyWords, WordList};
                    crate::suggest::hint(w, FailureBlockPolicyWords::WORDS.iter().copied())
                })
                .unwrap_or_default();
            ctx.error(
                word_node.span,
                Code::InvalidValue,
                format_args!(
                    "'onFailure' is {}: expected one of {WORDS}{hint}",
                    found(word_node)
                ),
            );
            FailurePolicy::FailFast
        }
    }
}
