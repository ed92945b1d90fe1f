//! A Friday graph's trigger nodes → the trigger documents of its draft.
//!
//! Each trigger node whose config names a `triggerType` becomes a document the draft carries
//! beside it (`_vance/workflow-drafts/<name>.triggers/{scheduler,events}/`): `cron` a
//! scheduler document, `webhook` an event document with a `webhook:` block, `event` one with a
//! `subscribe:` block. They start nothing there; publishing the draft makes them live.

use serde_json::{Map, Value};
use serde_yaml_ng::{Mapping, Value as Yaml};

use super::{ImportError, err};

/// A trigger document a graph declares, to be kept beside its draft.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerDocument {
    /// `scheduler` or `events`: the directory of `_vance/` it goes to when published.
    pub dir: &'static str,
    /// Its name (the file name without `.yaml`): `<workflow>-<node id>`.
    pub name: String,
    /// Its text.
    pub text: String,
}

/// The trigger documents of the graph's trigger nodes, each starting `workflow` with
/// `params.triggerNodeId` = the node's id. A trigger node without a `triggerType` (a manual
/// start) declares none.
///
/// # Errors
/// `MAG-GR010`: a trigger node whose config this engine cannot serve (a plugin's events, a
/// method other than `POST`, an invalid cron or filter), naming the node.
pub fn trigger_documents(
    graph: &Value,
    workflow: &str,
) -> Result<Vec<TriggerDocument>, ImportError> {
    let nodes = graph
        .get("nodes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out: Vec<TriggerDocument> = Vec::new();
    for node in nodes {
        if node.pointer("/data/type").and_then(Value::as_str) != Some("trigger") {
            continue;
        }
        let id = node.get("id").and_then(Value::as_str).unwrap_or_default();
        let empty = Map::new();
        let config = node
            .pointer("/data/config")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let Some(kind) = config.get("triggerType") else {
            continue;
        };
        let refuse = |what: String| err("MAG-GR010", format!("trigger node '{id}': {what}"));
        let name = document_name(workflow, id);
        if let Some(other) = out.iter().find(|d| d.name == name) {
            return Err(refuse(format!(
                "its document would be named '{name}' like another trigger node's ({}): give \
                 the nodes ids that differ in letters or digits",
                other.name
            )));
        }
        let mut doc = Mapping::new();
        doc.insert(
            "description".into(),
            format!("Trigger node '{id}' of the editor graph of '{workflow}'").into(),
        );
        doc.insert("workflow".into(), workflow.into());
        let mut params = Mapping::new();
        params.insert("triggerNodeId".into(), id.into());
        doc.insert("params".into(), Yaml::Mapping(params));
        let dir = match kind.as_str() {
            Some("cron") => {
                let cron = text_of(config, "cron")
                    .ok_or_else(|| refuse("a cron trigger needs its `cron` pattern".into()))?;
                doc.insert("cron".into(), cron.into());
                if let Some(zone) = text_of(config, "timezone") {
                    doc.insert("timezone".into(), zone.into());
                }
                "scheduler"
            }
            Some("webhook") => {
                doc.insert(
                    "webhook".into(),
                    webhook_block(config, &name).map_err(refuse)?,
                );
                "events"
            }
            Some("event") => {
                doc.insert("subscribe".into(), subscribe_block(config).map_err(refuse)?);
                "events"
            }
            _ => {
                return Err(refuse(format!(
                    "triggerType {kind}: expected cron, webhook or event"
                )));
            }
        };
        let text = serde_yaml_ng::to_string(&Yaml::Mapping(doc))
            .map_err(|e| refuse(format!("cannot be written as YAML: {e}")))?;
        let label = format!("_vance/{dir}/{name}.yaml");
        crate::triggers::documents::check_trigger_draft(&label, dir, &name, &text, workflow)
            .map_err(refuse)?;
        out.push(TriggerDocument { dir, name, text });
    }
    Ok(out)
}

/// `<workflow>-<node id>`, each character of the id a document name cannot hold (and `.`,
/// which a settings path splits at) written as `_`.
fn document_name(workflow: &str, id: &str) -> String {
    let id: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{workflow}-{id}")
}

/// A config's non-empty string field.
fn text_of<'a>(config: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    config
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The `webhook:` block: the path token in the setting `webhooks.<name>.path` (a `.` of the
/// name written `_`: a settings path splits at dots), `secretRef` as the signature's secret
/// setting, `dedupeKeyPath` as a header or a JSON pointer.
fn webhook_block(config: &Map<String, Value>, name: &str) -> Result<Yaml, String> {
    if let Some(method) = text_of(config, "method")
        && !method.eq_ignore_ascii_case("POST")
    {
        return Err(format!(
            "method {method:?}: a webhook is called with POST only"
        ));
    }
    let mut block = Mapping::new();
    block.insert(
        "tokenSetting".into(),
        format!("webhooks.{}.path", name.replace('.', "_")).into(),
    );
    if let Some(secret) = text_of(config, "secretRef") {
        let mut signature = Mapping::new();
        signature.insert("secretSetting".into(), secret.into());
        block.insert("signature".into(), Yaml::Mapping(signature));
    }
    if let Some(path) = text_of(config, "dedupeKeyPath") {
        let mut dedupe = Mapping::new();
        match dedupe_key(path) {
            DedupeKey::Header(h) => dedupe.insert("header".into(), h.into()),
            DedupeKey::Pointer(p) => dedupe.insert("pointer".into(), p.into()),
        };
        block.insert("dedupe".into(), Yaml::Mapping(dedupe));
    }
    Ok(Yaml::Mapping(block))
}

/// Where a delivery's dedupe key is.
#[derive(Debug, PartialEq, Eq)]
enum DedupeKey {
    Header(String),
    Pointer(String),
}

/// `headers.X-Id` / `header:X-Id` name a header; `/id` is a JSON pointer as it is;
/// `$.a.b`, `body.a.b` and `a.b` are the pointer `/a/b`.
fn dedupe_key(path: &str) -> DedupeKey {
    for prefix in ["headers.", "header.", "header:", "headers:"] {
        if let Some(h) = path.strip_prefix(prefix) {
            return DedupeKey::Header(h.trim().to_owned());
        }
    }
    if path.starts_with('/') {
        return DedupeKey::Pointer(path.to_owned());
    }
    let dotted = path
        .strip_prefix("$.")
        .or_else(|| path.strip_prefix("body."))
        .unwrap_or(path);
    // `a[0].b` is `/a/0/b`.
    let pointer: String = dotted
        .split(['.', '['])
        .filter(|segment| !segment.is_empty())
        .map(|segment| {
            let segment = segment.strip_suffix(']').unwrap_or(segment);
            format!("/{}", segment.replace('~', "~0").replace('/', "~1"))
        })
        .collect();
    DedupeKey::Pointer(pointer)
}

/// The `subscribe:` block: the engine's own events only.
fn subscribe_block(config: &Map<String, Value>) -> Result<Yaml, String> {
    if let Some(plugin) = text_of(config, "pluginId") {
        return Err(format!(
            "the events of plugin {plugin:?}: only the engine's own events (source: internal) \
             start runs here"
        ));
    }
    match text_of(config, "source") {
        None | Some("internal") => {}
        Some(other) => {
            return Err(format!(
                "source {other:?}: only the engine's own events (source: internal) start runs \
                 here"
            ));
        }
    }
    let event =
        text_of(config, "event").ok_or_else(|| "an event trigger needs its `event`".to_owned())?;
    let mut block = Mapping::new();
    block.insert("source".into(), "internal".into());
    block.insert("event".into(), event.into());
    if let Some(filter) = text_of(config, "filterExpr") {
        block.insert("filter".into(), filter.into());
    }
    Ok(Yaml::Mapping(block))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn graph(config: Value) -> Value {
        json!({
            "nodes": [
                {"id": "tick", "data": {"type": "trigger", "config": config}},
                {"id": "work", "data": {"type": "action", "config": {"actionType": "shell_task", "run": "true"}}}
            ],
            "edges": [{"source": "tick", "target": "work"}]
        })
    }

    #[test]
    fn a_cron_node_is_a_schedule_of_the_workflow_with_its_zone() {
        let docs = trigger_documents(
            &graph(
                json!({"triggerType": "cron", "cron": "0 6 * * *", "timezone": "Europe/Berlin"}),
            ),
            "nightly",
        )
        .unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(
            (docs[0].dir, docs[0].name.as_str()),
            ("scheduler", "nightly-tick")
        );
        let doc: Value = serde_yaml_ng::from_str(&docs[0].text).unwrap();
        assert_eq!(doc["workflow"], "nightly");
        assert_eq!(doc["cron"], "0 6 * * *");
        assert_eq!(doc["timezone"], "Europe/Berlin");
        assert_eq!(doc["params"]["triggerNodeId"], "tick");
    }

    #[test]
    fn a_webhook_node_takes_its_token_from_the_settings_and_maps_secret_and_dedupe() {
        let docs = trigger_documents(
            &graph(json!({"triggerType": "webhook", "method": "POST",
                          "secretRef": "webhooks.shop.secret", "dedupeKeyPath": "$.order.id"})),
            "shop",
        )
        .unwrap();
        assert_eq!(docs[0].dir, "events");
        let doc: Value = serde_yaml_ng::from_str(&docs[0].text).unwrap();
        assert_eq!(doc["webhook"]["tokenSetting"], "webhooks.shop-tick.path");
        // A dotted workflow name: the setting's path would split at its dot.
        let dotted = trigger_documents(
            &graph(json!({"triggerType": "webhook", "method": "POST"})),
            "shop.v2",
        )
        .unwrap();
        let dotted: Value = serde_yaml_ng::from_str(&dotted[0].text).unwrap();
        assert_eq!(
            dotted["webhook"]["tokenSetting"],
            "webhooks.shop_v2-tick.path"
        );
        assert_eq!(
            doc["webhook"]["signature"]["secretSetting"],
            "webhooks.shop.secret"
        );
        assert_eq!(doc["webhook"]["dedupe"]["pointer"], "/order/id");
    }

    #[test]
    fn dedupe_paths_name_headers_or_pointers() {
        assert_eq!(
            dedupe_key("headers.X-Delivery"),
            DedupeKey::Header("X-Delivery".into())
        );
        assert_eq!(dedupe_key("/a~1b"), DedupeKey::Pointer("/a~1b".into()));
        assert_eq!(dedupe_key("body.a.b"), DedupeKey::Pointer("/a/b".into()));
        assert_eq!(dedupe_key("id"), DedupeKey::Pointer("/id".into()));
        assert_eq!(
            dedupe_key("$.items[0].sku"),
            DedupeKey::Pointer("/items/0/sku".into())
        );
    }

    #[test]
    fn an_event_node_subscribes_to_the_engines_event_with_its_filter() {
        let docs = trigger_documents(
            &graph(json!({"triggerType": "event", "source": "internal",
                          "event": "workflow.run.failed",
                          "filterExpr": "#event['workflowName'] == 'deploy'"})),
            "alert",
        )
        .unwrap();
        let doc: Value = serde_yaml_ng::from_str(&docs[0].text).unwrap();
        assert_eq!(doc["subscribe"]["event"], "workflow.run.failed");
        assert_eq!(
            doc["subscribe"]["filter"],
            "#event['workflowName'] == 'deploy'"
        );
    }

    #[test]
    fn what_the_engine_cannot_serve_is_refused_naming_the_node() {
        for config in [
            json!({"triggerType": "event", "source": "plugin:slack", "event": "message"}),
            json!({"triggerType": "event", "event": "workflow.run.exploded"}),
            json!({"triggerType": "webhook", "method": "GET"}),
            json!({"triggerType": "cron", "cron": "every day"}),
            json!({"triggerType": "cron"}),
            json!({"triggerType": "email"}),
        ] {
            let e = trigger_documents(&graph(config.clone()), "wf").unwrap_err();
            assert_eq!(e.code, "MAG-GR010", "{config}");
            assert!(e.message.contains("trigger node 'tick'"), "{config}: {e}");
        }
    }

    #[test]
    fn a_trigger_node_without_a_type_declares_nothing() {
        assert!(
            trigger_documents(&graph(json!({})), "wf")
                .unwrap()
                .is_empty()
        );
    }
}
