//! The design's own node configurations (Friday's approval, action and condition configs) as
//! the specs of the document's states, and the tools a draft must allow for its actions.

use magrathea_exec::tools::permission::DEFAULT_POOL;
use serde_json::{Map, Value, json};

use super::{Edge, ImportError, err, seconds_value};

/// The draft's `allowedTools:` when one of the design's own actions calls a tool outside the
/// default pool (an `http_request` action, a skill): the pool and those tools, so that the
/// graph's own actions may run. The tenant's and the project's denials still win. A node
/// written as a document's `tool_task` (an export's) adds nothing: the workflow it came from
/// allowed what it allowed, and its import must not allow more.
pub(super) fn allowed_tools(nodes: &[Value]) -> Option<Vec<String>> {
    let mut tools: Vec<String> = DEFAULT_POOL.iter().map(|t| (*t).to_owned()).collect();
    let pool = tools.len();
    for n in nodes {
        let tool = match n.pointer("/data/config/actionType").and_then(Value::as_str) {
            Some("http_request") => Some("http_request"),
            Some("skill") => n.pointer("/data/config/skillId").and_then(Value::as_str),
            _ => None,
        };
        if let Some(tool) = tool.filter(|t| !t.contains("${"))
            && !tools.iter().any(|have| have == tool)
        {
            tools.push(tool.to_owned());
        }
    }
    (tools.len() > pool).then_some(tools)
}

/// An approval node in the design's own terms (`approverUserId`, `approverRole`,
/// `onReject`, `timeoutMs` in its config, no `inbox`) as a gate's APPROVAL inbox titled with
/// the node's name. `onReject` (default `fail`) stays on the inbox: a `reject` edge routes
/// the rejection, and without one the run fails with `APPROVAL_REJECTED`, as the design says.
pub(super) fn approval_inbox(
    n: &Value,
    id: &str,
    spec: &mut Map<String, Value>,
) -> Result<(), ImportError> {
    let user = spec.remove("approverUserId");
    let role = spec.remove("approverRole");
    // Kept on the inbox (absent, Friday's default `fail`): a rejection nothing routes fails
    // the run with `APPROVAL_REJECTED`, as the design says.
    let on_reject = match spec.remove("onReject") {
        None | Some(Value::Null) => None,
        // In any case, as a document's loader reads it.
        Some(v)
            if v.as_str().is_some_and(|w| {
                w.eq_ignore_ascii_case("fail") || w.eq_ignore_ascii_case("reject_branch")
            }) =>
        {
            Some(v)
        }
        Some(other) => {
            return Err(err(
                "MAG-GR010",
                format!(
                    "approval node '{id}' has onReject {other}: expected \"fail\" or \
                     \"reject_branch\""
                ),
            ));
        }
    };
    if let Some(ms) = spec.remove("timeoutMs").filter(|v| !v.is_null()) {
        let ms = ms.as_f64().ok_or_else(|| {
            err(
                "MAG-GR010",
                format!("approval node '{id}' has timeoutMs {ms}: expected milliseconds"),
            )
        })?;
        spec.entry("timeoutSeconds")
            .or_insert_with(|| seconds_value(ms / 1000.0));
    }
    if spec.contains_key("inbox") {
        // A gate as a document writes it (an exported workflow): its `onReject`, if any,
        // stays where it was written.
        if let Some(v) = on_reject {
            spec.insert("onReject".into(), v);
        }
        return Ok(());
    }
    let title = n
        .pointer("/data/name")
        .and_then(Value::as_str)
        .unwrap_or(id);
    let mut inbox = Map::new();
    inbox.insert("kind".into(), json!("APPROVAL"));
    inbox.insert("title".into(), json!(title));
    let mut approvers = Map::new();
    for (key, v) in [("users", user), ("roles", role)] {
        if let Some(Value::String(name)) = v {
            approvers.insert(key.into(), json!([name]));
        }
    }
    if !approvers.is_empty() {
        inbox.insert("approvers".into(), Value::Object(approvers));
    }
    inbox.insert(
        "onReject".into(),
        on_reject.unwrap_or_else(|| json!("fail")),
    );
    spec.insert("inbox".into(), Value::Object(inbox));
    Ok(())
}

/// The recipe an `ai_completion` action runs when its config names none: the project's (or
/// tenant's) `_vance/recipes/ai-completion.yaml`.
const AI_COMPLETION_RECIPE: &str = "ai-completion";

/// The task type of an action node, its config rewritten into that task's spec where the
/// action is one of the design's own (§4: every action is a skill):
///
/// - `skill` → `tool_task` calling the tool `skillId` with `inputMapping` as its `params`;
/// - `http_request` → `tool_task` calling the built-in `http_request` tool with `method`,
///   `url`, `headers` and `body` as its `params`;
/// - `ai_completion` → `agent_task` with the recipe `recipe` (default
///   [`AI_COMPLETION_RECIPE`]) and `prompt`, `model` and `temperature` as its `params`.
///
/// Any other `actionType` is the task type itself, the config its spec.
pub(super) fn action_state(
    id: &str,
    action: &str,
    spec: &mut Map<String, Value>,
) -> Result<String, ImportError> {
    let missing = |field: &str| {
        err(
            "MAG-GR010",
            format!("{action} action node '{id}' has no data.config.{field}"),
        )
    };
    let mut take = |keys: &[&str]| {
        let mut params = Map::new();
        for k in keys {
            if let Some(v) = spec.remove(*k).filter(|v| !v.is_null()) {
                params.insert((*k).to_owned(), v);
            }
        }
        params
    };
    let ty = match action {
        "skill" => {
            let skill = take(&["skillId", "inputMapping"]);
            let Some(Value::String(tool)) = skill.get("skillId") else {
                return Err(missing("skillId (a string: the tool to call)"));
            };
            spec.insert("tool".into(), json!(tool));
            let params = skill.get("inputMapping").cloned().unwrap_or(json!({}));
            spec.insert("params".into(), params);
            "tool_task"
        }
        "http_request" => {
            let params = take(&["method", "url", "headers", "body"]);
            if !params.contains_key("url") {
                return Err(missing("url"));
            }
            spec.insert("tool".into(), json!("http_request"));
            spec.insert("params".into(), Value::Object(params));
            "tool_task"
        }
        "ai_completion" => {
            let params = take(&["prompt", "model", "temperature"]);
            if !params.contains_key("prompt") {
                return Err(missing("prompt"));
            }
            spec.entry("recipe")
                .or_insert_with(|| json!(AI_COMPLETION_RECIPE));
            spec.insert("params".into(), Value::Object(params));
            "agent_task"
        }
        task => task,
    };
    Ok(ty.to_owned())
}

/// The `transitions:` of a condition node in the design's terms (`conditionType: if | switch`,
/// `expression`, `cases: [{label, expression}]`, no `transitions`), from its edges:
///
/// - an edge with `data.condition` is a rule: the case of that label's expression in a
///   `switch`, else the condition itself;
/// - a `true` edge without one is the rule `if: <expression>`;
/// - a `switch` edge whose branch is a case's label is that case's rule;
/// - the `false` edge (or one labelled `default`/`else`) is the `else:` rule, last.
///
/// In a `switch` the rules follow the order of `cases`, since the first match wins. Returns
/// where the run ends instead, for the caller to route to the end: `else` when no edge is the
/// `else:` (no rule holds), or the `if` of an `if` node whose only edge is its `false` one
/// (when its expression holds, Friday's run goes nowhere from it).
pub(super) fn condition_rules(
    id: &str,
    spec: &mut Map<String, Value>,
    edges: &[Edge],
) -> Result<Option<EndRule>, ImportError> {
    let expression = spec.remove("expression");
    let cases = spec.remove("cases");
    // The design's condition types are `if` and `switch` (seed 001 §1); another would be
    // taken for an `if` without a word.
    match spec.remove("conditionType") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "if" || t == "switch" => {}
        Some(other) => {
            return Err(err(
                "MAG-GR010",
                format!(
                    "condition node '{id}' has conditionType {other}: expected \"if\" or \"switch\""
                ),
            ));
        }
    }
    let cases: Vec<(String, Value)> = cases
        .as_ref()
        .and_then(Value::as_array)
        .map(|cases| {
            cases
                .iter()
                .filter_map(|c| {
                    let label = c.get("label")?.as_str()?.to_owned();
                    Some((label, c.get("expression")?.clone()))
                })
                .collect()
        })
        .unwrap_or_default();
    let case = |label: &str| cases.iter().position(|(l, _)| l == label);
    let mut rules: Vec<(usize, Value)> = Vec::new();
    let mut otherwise: Option<String> = None;
    for e in edges {
        let is_else = matches!(e.branch.as_str(), "false" | "default" | "else")
            || e.condition
                .as_deref()
                .is_some_and(|c| c == "default" || c == "else");
        let rule = match (
            &e.condition,
            case(e.condition.as_deref().unwrap_or(&e.branch)),
        ) {
            _ if is_else => None,
            (_, Some(i)) => Some((i, cases[i].1.clone())),
            (Some(c), None) => Some((usize::MAX, json!(c))),
            (None, None) if e.branch == "true" || e.branch == "success" => match &expression {
                Some(x) => Some((usize::MAX, x.clone())),
                None => {
                    return Err(err(
                        "MAG-GR010",
                        format!(
                            "condition node '{id}': edge {e} has no data.condition and the node \
                             no config.expression to test"
                        ),
                    ));
                }
            },
            (None, None) => {
                return Err(err(
                    "MAG-GR010",
                    format!(
                        "condition node '{id}': edge {e} is neither a case (data.condition or a \
                         case label as its branch), the true branch nor the false one"
                    ),
                ));
            }
        };
        match rule {
            Some((order, cond)) => rules.push((order, json!({ "if": cond, "to": e.target }))),
            None if otherwise.is_some() => {
                return Err(err(
                    "MAG-GR010",
                    format!("condition node '{id}' has more than one false/default edge"),
                ));
            }
            None => otherwise = Some(e.target.clone()),
        }
    }
    // Each case is one rule, and a condition goes one way: two edges of one rule would leave
    // the second never taken.
    if let Some((label, _)) = cases
        .iter()
        .enumerate()
        .find(|(i, _)| !rules.iter().any(|(order, _)| order == i))
        .map(|(_, case)| case)
    {
        return Err(err(
            "MAG-GR010",
            format!("condition node '{id}': case '{label}' has no edge to where it leads"),
        ));
    }
    for (n, (order, rule)) in rules.iter().enumerate() {
        if let Some((_, twin)) = rules[..n]
            .iter()
            .find(|(o, r)| (*o == *order && *o != usize::MAX) || r["if"] == rule["if"])
        {
            return Err(err(
                "MAG-GR010",
                format!(
                    "condition node '{id}' routes one rule to both '{}' and '{}': a condition \
                     goes one way (to run both, fan out after it)",
                    twin["to"].as_str().unwrap_or_default(),
                    rule["to"].as_str().unwrap_or_default()
                ),
            ));
        }
    }
    // Stable: cases in their order, other rules after them in the order of the edges.
    rules.sort_by_key(|(order, _)| *order);
    let no_rule = rules.is_empty();
    let mut transitions: Vec<Value> = rules.into_iter().map(|(_, r)| r).collect();
    let end = match (otherwise, expression) {
        (None, _) => Some(EndRule::Else),
        (Some(to), expression) => {
            transitions.push(json!({ "else": to }));
            // An `if` node with only its false edge: where the expression holds, it ends.
            expression
                .filter(|_| no_rule && cases.is_empty())
                .map(EndRule::When)
        }
    };
    spec.insert("transitions".into(), Value::Array(transitions));
    Ok(end)
}

/// The rule a condition node's transitions gain to end the run (see [`condition_rules`]).
#[derive(Debug)]
pub(super) enum EndRule {
    /// `else: <end>`, last.
    Else,
    /// `if: <expression>, to: <end>`, first.
    When(Value),
}

/// The ids of the graph's nodes in the design's own terms (seed 001 §1): neither trigger nodes
/// nor nodes whose `config` names a document `type`, as an export writes a document's state.
pub fn design_node_ids(graph: &Value) -> Vec<String> {
    graph
        .get("nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|n| n.pointer("/data/type").and_then(Value::as_str) != Some("trigger"))
        .filter(|n| n.pointer("/data/config/type").is_none())
        .filter_map(|n| n.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect()
}
