//! The inbox item a `gate_task` opens: its kind, texts, options and approval rules.

use crate::ast::{Criticality, InboxKind, InboxSpec};
use crate::diagnostic::Code;
use crate::node::YamlNode;

use super::ctx::Ctx;
use super::state::word;

pub(crate) const INBOX_FIELDS: &[&str] = &[
    "kind",
    "title",
    "body",
    "assignedTo",
    "criticality",
    "tags",
    "options",
    "approvers",
    "quorum",
    "selfApproval",
    "onReject",
];

/// The words of `onReject:`, in the inbox or beside it.
const ON_REJECT: [(&str, crate::ast::OnReject); 2] = [
    ("fail", crate::ast::OnReject::Fail),
    ("reject_branch", crate::ast::OnReject::RejectBranch),
];

pub(crate) fn inbox(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> InboxSpec {
    let mut spec = InboxSpec {
        kind: InboxKind::Approval,
        title: None,
        body: None,
        assigned_to: None,
        criticality: Criticality::Normal,
        tags: Vec::new(),
        options: Vec::new(),
        approvers: None,
        quorum: 1,
        self_approval: true,
        on_reject: None,
    };
    let Some(block) = node.get("inbox") else {
        ctx.error(
            node.span,
            Code::MissingField,
            format_args!("{what} has no 'inbox': expected an 'inbox:' block with at least 'kind'"),
        );
        return spec;
    };
    let iw = format!("the inbox of {what}");
    let Some(block) = ctx.map(block, &iw) else {
        return spec;
    };
    ctx.check_fields(block, INBOX_FIELDS, &iw);
    let kinds = [
        ("APPROVAL", InboxKind::Approval),
        ("DECISION", InboxKind::Decision),
        ("FEEDBACK", InboxKind::Feedback),
    ];
    if block.get("kind").is_none() {
        ctx.error(
            block.span,
            Code::MissingField,
            format_args!("{iw} has no 'kind': expected one of [APPROVAL, DECISION, FEEDBACK]"),
        );
    }
    spec.kind = word(ctx, block, "kind", &kinds, &iw).unwrap_or(InboxKind::Approval);
    let levels = [
        ("LOW", Criticality::Low),
        ("NORMAL", Criticality::Normal),
        ("CRITICAL", Criticality::Critical),
    ];
    spec.criticality = word(ctx, block, "criticality", &levels, &iw).unwrap_or(Criticality::Normal);
    spec.title = ctx.opt_str(block, "title", &iw);
    spec.body = ctx.opt_str(block, "body", &iw);
    spec.assigned_to = ctx.opt_str(block, "assignedTo", &iw);
    if let Some(t) = block.get("tags") {
        spec.tags = ctx
            .str_list(t, &format!("'tags' of {iw}"))
            .unwrap_or_default();
    }
    if let Some(o) = block.get("options") {
        // One `${…}` may give the whole list when the gate opens (reference §2.4).
        let whole = o
            .as_str()
            .filter(|t| crate::template::Template::parse(t).whole().is_some());
        spec.options = match whole {
            Some(t) => vec![t.to_owned()],
            None => ctx
                .str_list(o, &format!("'options' of {iw}"))
                .unwrap_or_default(),
        };
    }
    // Each option is an outcome `on:` routes: one left empty or listed twice is a mistake.
    if let Some(items) = block.get("options").and_then(YamlNode::as_seq) {
        let mut seen: Vec<&str> = Vec::new();
        for item in items {
            let Some(option) = item.as_str() else {
                continue;
            };
            if option.trim().is_empty() {
                ctx.error(
                    item.span,
                    Code::InvalidValue,
                    format_args!(
                        "an option of {iw} is empty: expected a word the decision can be \
                         answered with"
                    ),
                );
            } else if GATE_OWN_OUTCOMES.contains(&option) {
                // The gate ends so by itself: a chosen option of the name could not be told
                // from it, and `catch:` would route it as the gate's own.
                ctx.error(
                    item.span,
                    Code::InvalidValue,
                    format_args!(
                        "option '{option}' of {iw} is an outcome the gate ends with by itself: \
                         expected another word, which on: routes apart from it"
                    ),
                );
            } else if seen.contains(&option) {
                ctx.error(
                    item.span,
                    Code::InvalidValue,
                    format_args!("option '{option}' of {iw} is listed twice: expected each once"),
                );
            } else {
                seen.push(option);
            }
        }
    }
    approval_rules(ctx, block, &iw, &mut spec);
    state_on_reject(ctx, node, what, &mut spec);
    // A list whose items were refused has had its errors already.
    let listed = block
        .get("options")
        .and_then(|o| o.as_seq())
        .is_some_and(|items| !items.is_empty());
    if let Some(o) = block.get("options")
        && spec.kind != InboxKind::Decision
    {
        // The reference: `options` are "only for DECISION".
        let kind = if spec.kind == InboxKind::Feedback {
            "a FEEDBACK gate, whose answer is a text"
        } else {
            "an APPROVAL gate, whose outcomes are approved and rejected"
        };
        ctx.warn(
            o.span,
            Code::InertField,
            format_args!(
                "'options' of {iw} have no effect on {kind}: options are for kind: DECISION; remove them or set the kind"
            ),
        );
    }
    if spec.kind == InboxKind::Decision && spec.options.is_empty() && !listed {
        let at = block.get("options").map_or(block.span, |o| o.span);
        ctx.error(
            at,
            Code::MissingField,
            format_args!("{iw} is a DECISION without options: expected a non-empty 'options' list"),
        );
    }
    spec
}

/// An `approvers: {users, roles}` block (`what` names it in messages); `None` when it is not
/// a mapping.
pub(crate) fn approvers(
    ctx: &mut Ctx<'_>,
    a: &YamlNode,
    what: &str,
) -> Option<crate::ast::Approvers> {
    let map = ctx.map(a, what)?;
    ctx.check_fields(map, &["users", "roles"], what);
    let mut approvers = crate::ast::Approvers::default();
    if let Some(u) = map.get("users") {
        approvers.users = ctx
            .str_list(u, &format!("'users' of {what}"))
            .unwrap_or_default();
    }
    if let Some(r) = map.get("roles") {
        approvers.roles = ctx
            .str_list(r, &format!("'roles' of {what}"))
            .unwrap_or_default();
    }
    if approvers.users.is_empty() && approvers.roles.is_empty() {
        ctx.error(
            map.span,
            Code::InvalidValue,
            format_args!(
                "{what} names nobody: expected 'users' or 'roles' with at least one entry"
            ),
        );
    }
    Some(approvers)
}

/// `onReject:` written beside `inbox:` on the gate's state, as Friday writes it beside the
/// approval node's approvers: the same as in the inbox, once.
fn state_on_reject(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str, spec: &mut InboxSpec) {
    let Some(v) = node.get("onReject") else {
        return;
    };
    if spec.kind != InboxKind::Approval {
        ctx.error(
            v.span,
            Code::InvalidValue,
            format_args!("'onReject' of {what} applies to APPROVAL inboxes only"),
        );
        return;
    }
    if spec.on_reject.is_some() {
        ctx.error(
            v.span,
            Code::InvalidValue,
            format_args!("{what} has 'onReject' twice, beside and in its inbox: expected one"),
        );
        return;
    }
    spec.on_reject = word(ctx, node, "onReject", &ON_REJECT, what);
}

/// Outcomes a DECISION gate ends with by itself, which no option may be named.
const GATE_OWN_OUTCOMES: &[&str] = &[
    "insufficient_info",
    "undecidable",
    "timeout",
    "cancelled",
    "technical_error",
];

/// `approvers:`, `quorum:`, `selfApproval:` and `onReject:` of an APPROVAL inbox (Friday's
/// approval node).
fn approval_rules(ctx: &mut Ctx<'_>, block: &YamlNode, iw: &str, spec: &mut InboxSpec) {
    let named = ["approvers", "quorum", "selfApproval", "onReject"]
        .iter()
        .filter_map(|k| block.get(k))
        .next();
    if let Some(first) = named
        && spec.kind != InboxKind::Approval
    {
        ctx.error(
            first.span,
            Code::InvalidValue,
            format_args!(
                "{iw}: approvers, quorum, selfApproval and onReject apply to APPROVAL inboxes only"
            ),
        );
        return;
    }
    if let Some(a) = block.get("approvers") {
        spec.approvers = approvers(ctx, a, &format!("'approvers' of {iw}"));
    }
    if let Some(q) = block.get("quorum") {
        match q.kind {
            crate::node::YamlKind::Int(n) if (1..=100).contains(&n) => {
                spec.quorum = u32::try_from(n).unwrap_or(1);
            }
            _ => ctx.error(
                q.span,
                Code::InvalidValue,
                format_args!(
                    "'quorum' of {iw} is {}: expected a whole number of approvals from 1 to 100",
                    crate::build::ctx::found(q)
                ),
            ),
        }
    }
    if let Some(b) = block.get("selfApproval") {
        match b.kind {
            crate::node::YamlKind::Bool(v) => spec.self_approval = v,
            _ => ctx.wrong_type(b, &format!("'selfApproval' of {iw}"), "true or false"),
        }
    }
    spec.on_reject = word(ctx, block, "onReject", &ON_REJECT, iw);
}
