//! The codes of the server and its HTTP API (areas SV, CS, AUTH, WH, GR and HTTP).

use super::ErrorCode;

/// The codes of the server and its HTTP API (areas SV, CS, AUTH, WH, GR and HTTP), in the order of [`AREAS`](crate::codes::AREAS).
pub(super) const CODES: &[ErrorCode] = &[
    ErrorCode {
        code: "MAG-TR001",
        meaning: "The engine's store keeps no catalog, so it cannot hold trigger registrations, cursors or deliveries (a custom `Store` without `catalog()`).",
        remedy: "Serve a redb, in-memory or PostgreSQL store, or implement `Store::catalog` for yours.",
    },
    ErrorCode {
        code: "MAG-TR002",
        meaning: "A webhook's `tokenSetting` names a setting that is set neither in the project's nor in the tenant's `_vance/settings.yaml`; the webhook is registered with this error and answers nothing.",
        remedy: "Set the path token there (32 or more random characters, e.g. from `openssl rand -hex 24`).",
    },
    ErrorCode {
        code: "MAG-TR003",
        meaning: "A webhook's path token is already the path token of another webhook (of this project or of any other); the later webhook is registered with this error and answers nothing, and the one holding the token keeps answering.",
        remedy: "Give each webhook a path token of its own (`openssl rand -hex 24`).",
    },
    ErrorCode {
        code: "MAG-TR004",
        meaning: "A trigger chain reached its bound: event subscriptions, hooks or `workflow_start` tool calls starting runs from runs that were themselves started so have started 16 runs one after another from its first run, or 1,000 runs in all. No more runs are started from it; the delivery is recorded `rejected` (reason `trigger_chain`), a hook's `workflows.start` throws, a `workflow_start` call fails `technical_error`.",
        remedy: "Look for triggers that react to each other's runs (a subscription to `workflow.run.completed` of the workflow it starts, or two that start each other's): narrow them with `filter:` (e.g. on `startedBy`) or `workflow:`; a workflow that calls `workflow_start` on itself needs a condition that ends the loop.",
    },
    ErrorCode {
        code: "MAG-TR005",
        meaning: "An event or hook document (`_vance/events/*.yaml`, `_vance/hooks/*.yaml`) does not parse: a YAML syntax error, an unknown key, or a value of the wrong type, at the line and column named.",
        remedy: "Fix the document there; docs/triggers.md and docs/hooks.md list each key and what it takes.",
    },
    ErrorCode {
        code: "MAG-SV001",
        meaning: "The store directory cannot be created, or the store path names a file (`magrathea serve`, and every command that opens a store).",
        remedy: "Check the path and its permissions; `--store` takes the directory that holds journal.redb.",
    },
    ErrorCode {
        code: "MAG-SV002",
        meaning: "The server cannot open the store.",
        remedy: "See the nested store error (another process may hold it).",
    },
    ErrorCode {
        code: "MAG-SV003",
        meaning: "The server cannot listen on the address.",
        remedy: "Choose a free address or port, or stop what holds it.",
    },
    ErrorCode {
        code: "MAG-SV004",
        meaning: "The metrics exporter cannot start.",
        remedy: "Check the metrics settings.",
    },
    ErrorCode {
        code: "MAG-SV010",
        meaning: "A server without authentication (`--insecure-no-auth`) was asked to bind an address that is not loopback.",
        remedy: "Bind 127.0.0.1 or [::1], or configure tokens in `_auth/tokens.yaml` instead.",
    },
    ErrorCode {
        code: "MAG-CS001",
        meaning: "The process that owns the store could not be reached over its control socket, or went away before it answered.",
        remedy: "What the owner journaled is kept. `magrathea runs list` shows the runs (a run the command started is there: running `run` again would start another), and `magrathea resume` carries on unfinished ones; a reading command can simply be run again (a new owner answers, or the command opens the store itself).",
    },
    ErrorCode {
        code: "MAG-CS002",
        meaning: "A request on a store's control socket is not one the owner understands, or is larger than it reads.",
        remedy: "Use a `magrathea` command of the same version as the owner; the socket is not a public API.",
    },
    ErrorCode {
        code: "MAG-CS003",
        meaning: "The owner of a store cannot serve its control socket (a read-only store directory, a full disk, or `/proc` missing where the store's path is too long for a Unix socket's address).",
        remedy: "Fix the directory's permissions or free the disk (or mount `/proc`, or use a shorter --store path); until then other commands on the store fail while this one runs. `magrathea serve` tries again every 5 seconds and serves the socket once it can; another command does not.",
    },
    ErrorCode {
        code: "MAG-CS004",
        meaning: "A connection to a store's control socket did not carry the store's control key (`<store>/control.key`): only a process that may read the store directory may ask its owner.",
        remedy: "Run the command as a user who can read the store directory; a shell step's sandbox cannot, by design.",
    },
    ErrorCode {
        code: "MAG-AUTH001",
        meaning: "The token file cannot be read.",
        remedy: "Check its path and permissions.",
    },
    ErrorCode {
        code: "MAG-AUTH002",
        meaning: "The token file is invalid.",
        remedy: "Fix its format (the message says where).",
    },
    ErrorCode {
        code: "MAG-AUTH003",
        meaning: "The token file or its `_auth/` directory is writable by every user of the machine, who could add a token of their own: it is not used (at start the server does not start; later the tokens read before stay in force).",
        remedy: "Remove the others' write permission (`chmod o-w`).",
    },
    ErrorCode {
        code: "MAG-WH001",
        meaning: "A webhook was called with a method other than POST.",
        remedy: "Send the delivery as POST.",
    },
    ErrorCode {
        code: "MAG-WH002",
        meaning: "A webhook delivery's body is larger than the webhook's `maxBodyBytes`.",
        remedy: "Send a smaller body, or raise `maxBodyBytes` (at most 1 MiB).",
    },
    ErrorCode {
        code: "MAG-WH003",
        meaning: "A webhook that requires a signature got a delivery without its signature header.",
        remedy: "Configure the sender with the secret, or fix `signature.header` to the header it sends.",
    },
    ErrorCode {
        code: "MAG-WH004",
        meaning: "A webhook delivery's signature is malformed (prefix, hex or base64) or does not match any configured secret.",
        remedy: "Check that the sender and the setting named by `signature.secretSetting` hold the same secret, and the `prefix` and `encoding`.",
    },
    ErrorCode {
        code: "MAG-WH005",
        meaning: "A webhook that requires a timestamp got a delivery without its timestamp header.",
        remedy: "Send the timestamp header named by `signature.timestampHeader`, or unset it (GitHub sends none).",
    },
    ErrorCode {
        code: "MAG-WH006",
        meaning: "A webhook delivery's timestamp header is not a number of unix seconds.",
        remedy: "Send the time of sending as whole unix seconds.",
    },
    ErrorCode {
        code: "MAG-WH007",
        meaning: "A webhook delivery is correctly signed but its timestamp is further from the server's clock than `signature.tolerance`.",
        remedy: "Check the sender's and the server's clocks; a replayed old delivery is refused on purpose.",
    },
    ErrorCode {
        code: "MAG-WH008",
        meaning: "A webhook with `dedupe:` got a delivery without a key (the header is absent, or the pointer finds no string or number in a JSON body).",
        remedy: "Send the key, or fix `dedupe.header` or `dedupe.pointer`.",
    },
    ErrorCode {
        code: "MAG-WH009",
        meaning: "A webhook that requires a signature has no secret: the setting named by `signature.secretSetting` is absent or empty, so every delivery is refused.",
        remedy: "Set the secret (or a list of secrets) in the project's or tenant's `_vance/settings.yaml`.",
    },
    ErrorCode {
        code: "MAG-WH010",
        meaning: "A webhook block of an event document is invalid (a bound, a header name, a settings path or a JSON pointer).",
        remedy: "Fix the field the message names; see docs/webhooks.md.",
    },
    ErrorCode {
        code: "MAG-WH011",
        meaning: "A webhook's path token (the setting named by `tokenSetting`) is missing, shorter than 32 characters, or has characters other than letters, digits, `-` and `_`.",
        remedy: "Set a long random token, e.g. 32 or more characters from `openssl rand -hex 24`.",
    },
    ErrorCode {
        code: "MAG-GR001",
        meaning: "A workflow graph was asked for in a format that does not exist.",
        remedy: "Ask for `format=reactflow` (the default), `mermaid` or `dot`.",
    },
    ErrorCode {
        code: "MAG-GR002",
        meaning: "The body of a graph `PUT` is not JSON of an editor graph (no `nodes` array, a node without `id` or `position`, …).",
        remedy: "Send the graph as `GET …/graph` exports it: `{schemaVersion: \"1.0\", nodes: [{id, position: {x, y}}], viewport?}`.",
    },
    ErrorCode {
        code: "MAG-GR003",
        meaning: "An editor graph names a `schemaVersion` other than `1.0`.",
        remedy: "Send a `FridayWorkflowEditorGraphV1` graph, `schemaVersion: \"1.0\"`.",
    },
    ErrorCode {
        code: "MAG-GR004",
        meaning: "An editor graph has nodes that are not states of the workflow; the graph only places states, it does not add them.",
        remedy: "Remove those nodes, or add the states to the workflow document first.",
    },
    ErrorCode {
        code: "MAG-GR005",
        meaning: "An editor graph names one node twice.",
        remedy: "Send each node once.",
    },
    ErrorCode {
        code: "MAG-GR006",
        meaning: "An editor graph has a node width or height, or a viewport zoom, that is zero or negative.",
        remedy: "Send sizes and a zoom above zero, or leave sizes out.",
    },
    ErrorCode {
        code: "MAG-GR007",
        meaning: "The layout file `_vance/workflows/<name>.layout.json` is not a valid layout (not JSON, unknown fields, another schemaVersion).",
        remedy: "`PUT` the graph again to rewrite it, or delete the file to get the automatic layout.",
    },
    ErrorCode {
        code: "MAG-GR008",
        meaning: "The layout file cannot be read or written.",
        remedy: "Check the permissions of the project's `_vance/workflows/` directory and the free disk space.",
    },
    ErrorCode {
        code: "MAG-GR009",
        meaning: "`magrathea graph import`: the file is not an editor graph (no `nodes`/`edges` arrays, an edge without `source`/`target`, or naming a node that is not there, a node whose `id` and `data.id` differ).",
        remedy: "Import a `FridayWorkflowEditorGraphV1` JSON, as the editor or `magrathea graph --format reactflow` writes it.",
    },
    ErrorCode {
        code: "MAG-GR010",
        meaning: "`magrathea graph import`: a node cannot become a state (an action without `data.config.actionType`, an unknown node type, an approval's unknown `onReject`, a condition routing one rule two ways or a case nowhere), or a trigger node cannot become a trigger document.",
        remedy: "Give action nodes their task type in `data.config.actionType`; use the node types action, approval, condition, terminal.",
    },
    ErrorCode {
        code: "MAG-GR011",
        meaning: "`magrathea graph import`: a fan-out is not series-parallel (its branches do not meet at one node, another path enters where they meet, or a branch forks again); the message names the nodes and edges.",
        remedy: "Redraw the fan-out as branches that are chains meeting at one node, or write the document by hand with `parallel_task`.",
    },
    ErrorCode {
        code: "MAG-GR012",
        meaning: "`magrathea graph import`: the graph has no single start node (exactly one node must have no incoming edge).",
        remedy: "Connect the extra entry nodes, or remove them.",
    },
    ErrorCode {
        code: "MAG-HTTP-401",
        meaning: "The request has no bearer token, or a token the server does not know.",
        remedy: "Send `Authorization: Bearer <token>` with a configured token.",
    },
    ErrorCode {
        code: "MAG-HTTP-403",
        meaning: "The token lacks the scope the route needs.",
        remedy: "Use a token with that scope.",
    },
    ErrorCode {
        code: "MAG-HTTP-404",
        meaning: "Nothing with this id or name exists in the caller's tenant and project (another scope's resources are reported the same way).",
        remedy: "Check the id, the tenant and the project.",
    },
    ErrorCode {
        code: "MAG-HTTP-405",
        meaning: "The route (or the event) does not accept this HTTP method; the `Allow` header lists those it does.",
        remedy: "Use one of the methods the route lists in /openapi.json, or the event document lists.",
    },
    ErrorCode {
        code: "MAG-HTTP-408",
        meaning: "The request body did not arrive in full within the server's body read timeout (counted from the request's head); the connection is closed.",
        remedy: "Send the body right after the head; on a slow link, raise `magrathea serve --body-read-timeout`.",
    },
    ErrorCode {
        code: "MAG-HTTP-413",
        meaning: "The request body exceeds the server's limit.",
        remedy: "Send a smaller body.",
    },
    ErrorCode {
        code: "MAG-HTTP-422",
        meaning: "The workflow document is invalid; the body's `diagnostics` list each finding with its position and code.",
        remedy: "Fix the document at the positions given.",
    },
    ErrorCode {
        code: "MAG-HTTP-STORE-UNAVAILABLE",
        meaning: "A request failed while the journal store fails to commit (an I/O error such as a full disk): the store cannot be read or written until it recovers. The answer is 503 with `Retry-After`.",
        remedy: "Free the disk (or fix the I/O error); once `GET /healthz` answers 200 again, retry. Runs in flight go on by themselves.",
    },
    ErrorCode {
        code: "MAG-HTTP-WORKER-UNAVAILABLE",
        meaning: "On a store several workers share: the worker that holds the run did not answer the request in time (503; the message is MAG-ST007's and says whether the request was withdrawn).",
        remedy: "Retry once another worker has taken the run over (after the holder's lease grace).",
    },
    ErrorCode {
        code: "MAG-HTTP-500",
        meaning: "The server or its store failed; the message gives a reference under which the server logs the full error.",
        remedy: "Look up the reference in the server's log; retry once the cause is fixed.",
    },
    ErrorCode {
        code: "MAG-HTTP-BODY",
        meaning: "The request body cannot be read.",
        remedy: "Send a complete body with the right content type.",
    },
    ErrorCode {
        code: "MAG-HTTP-HOST",
        meaning: "A server without authentication got a request whose `Host` is not its loopback address (e.g. a DNS-rebinding page).",
        remedy: "Address the server as 127.0.0.1:PORT, localhost:PORT or [::1]:PORT.",
    },
    ErrorCode {
        code: "MAG-HTTP-ORIGIN",
        meaning: "A server without authentication got a request from a web page of another origin.",
        remedy: "Call the server from a page it serves, or from a client that sends no foreign `Origin`; or configure tokens.",
    },
    ErrorCode {
        code: "MAG-HTTP-OUTSIDE-PROJECT",
        meaning: "The document path leads outside the project through a symbolic link; the documents API reads, writes and lists only inside the project.",
        remedy: "Replace the link with the document itself, or with a link that stays inside the project.",
    },
    ErrorCode {
        code: "MAG-HTTP-NOT-A-DOCUMENT",
        meaning: "A document write names a directory, or a path through an existing document (`workflows/x.yaml/y`): there is no document to write there.",
        remedy: "Name a file inside the directory, or a path whose parents are directories.",
    },
    ErrorCode {
        code: "MAG-HTTP-QUOTA",
        meaning: "A document write would take the project past the documents or bytes it may hold under `_vance/` (10,000 documents and 256 MiB unless the server is configured otherwise), or would create a project of a tenant that holds as many projects as it may (1,000); nothing was written.",
        remedy: "Remove documents or drafts the project no longer needs, write into an existing project, or ask the operator to raise the quota (`ServeConfig::document_quota`).",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-ANSWER",
        meaning: "A gate answer is malformed: an unknown kind, a missing field, or one the gate does not accept.",
        remedy: "Send one of the answer kinds with the fields it needs.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-CURSOR",
        meaning: "The pagination cursor is not one the list issued (a run id for runs, a delivery's key for deliveries, a document's name for documents).",
        remedy: "Pass the cursor from the previous page unchanged.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-WAIT",
        meaning: "A run's read asks for a `wait` that is not a duration of at most 60 s, an `until` other than `ended` or `settled`, or an `until` without a `wait`.",
        remedy: "Give `wait` as `30s`, `PT30S`, `500ms` or whole seconds, at most 60 s, and ask again when the answer's `status` is not yet what you wait for.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-LIMIT",
        meaning: "A listing's `limit` is 0 or not a whole number (one larger than the listing's largest page gets that page).",
        remedy: "Ask for at most the page the route allows and follow `next` / `X-Next-Cursor` for the rest.",
    },
    ErrorCode {
        code: "MAG-HTTP-PRECONDITION-FAILED",
        meaning: "A write or removal of a document sent `If-Match` or `If-None-Match`, and the document as it is now does not satisfy it: someone changed (or created, or removed) it since the client read it. Nothing changed.",
        remedy: "Read the document again (its `ETag` is the SHA-256 of its bytes), merge your change into it, and send it with the new `ETag` in `If-Match`.",
    },
    ErrorCode {
        code: "MAG-HTTP-PRECONDITION-INVALID",
        meaning: "An `If-Match` or `If-None-Match` header is not text.",
        remedy: "Send entity tags as the server gives them (`\"<sha256>\"`), comma-separated, or `*`.",
    },
    ErrorCode {
        code: "MAG-HTTP-RESERVED-NAME",
        meaning: "A workflow document or draft written through the documents API, or a draft published, is named `runs`: `…/workflows/runs/…` are the routes of runs, so its own routes could not be reached.",
        remedy: "Name the workflow otherwise (`_vance/workflows/<another name>.yaml`).",
    },
    ErrorCode {
        code: "MAG-HTTP-UI-INVALID-STATUS",
        meaning: "The `status` filter of the run listing is not a run status.",
        remedy: "Use one of RUNNING, WAITING, PAUSED, DONE, FAILED, CANCELLED, BLOCKED (any case).",
    },
    ErrorCode {
        code: "MAG-HTTP-UI-INVALID-TIME",
        meaning: "The `since` or `until` filter of the run listing is not a time.",
        remedy: "Give an RFC 3339 instant with an offset (2026-05-01T12:00:00Z) or milliseconds since the epoch.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-EVENT",
        meaning: "An event document does not parse.",
        remedy: "Fix the event document.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-IDEMPOTENCY-KEY",
        meaning: "The `Idempotency-Key` header is empty, longer than 255 bytes, or not visible ASCII.",
        remedy: "Send a key of 1 to 255 visible ASCII characters (a UUID, for instance).",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-JSON",
        meaning: "The body (or a WebSocket message) is not valid JSON for the route: not JSON (a binary WebSocket message included), an unknown field, or a required one missing.",
        remedy: "Send the JSON the route's schema describes (GET /openapi.json).",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-NAME",
        meaning: "A workflow or document name is not a plain file name.",
        remedy: "Use ASCII letters, digits, `.`, `_` and `-` only, at most 250 bytes, not starting with `.` and without `..`.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-PARAMS",
        meaning: "A run's parameters do not match the workflow's parameter schema.",
        remedy: "Pass parameters that the schema accepts.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-PATH",
        meaning: "A document path is empty or has a segment that is not a plain name.",
        remedy: "Use a relative path of plain names.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-STATUS",
        meaning: "The inbox filter names an unknown status.",
        remedy: "Use pending, answered, timed_out, closed or all.",
    },
    ErrorCode {
        code: "MAG-HTTP-NOT-APPROVER",
        meaning: "The approval gate names its approvers (users, roles) or forbids self-approval, and the answering token's subject is not allowed; the refusal is recorded.",
        remedy: "Answer with a token whose subject or roles the gate's `approvers` name, and not as the run's starter when `selfApproval: false`.",
    },
    ErrorCode {
        code: "MAG-HTTP-NO-ROUTE",
        meaning: "No route has this path.",
        remedy: "See GET /openapi.json for the routes.",
    },
    ErrorCode {
        code: "MAG-HTTP-PAUSE-STATE",
        meaning: "A pause or resume does not fit the run's state: pausing a run that has ended (or is being cancelled, or is blocked), resuming a run that is not paused.",
        remedy: "Read the run's status; only a run that has not ended can be paused, only a PAUSED run resumed.",
    },
    ErrorCode {
        code: "MAG-HTTP-PAUSE-REASON",
        meaning: "A pause's `reason` is longer than 4096 bytes.",
        remedy: "Give a shorter reason.",
    },
    ErrorCode {
        code: "MAG-HTTP-RETRY-STATE",
        meaning: "Only a FAILED or CANCELLED run can be retried from a state; this one is running, waiting, paused, blocked or DONE.",
        remedy: "Wait for it to end, cancel it, or rerun it instead.",
    },
    ErrorCode {
        code: "MAG-HTTP-RETRY-FROM",
        meaning: "A retry's `fromState` is a state the original run never entered, or one the chosen definition (the current document) does not have.",
        remedy: "Pick a state the run entered (its journal's StateEnteredRecords), or retry on the frozen definition.",
    },
    ErrorCode {
        code: "MAG-HTTP-RETRY-YAML",
        meaning: "Only a YAML workflow's run can be retried from a state; a code workflow has no states to begin at.",
        remedy: "Rerun it instead (`…/rerun`).",
    },
    ErrorCode {
        code: "MAG-HTTP-RERUN-CHILD",
        meaning: "A sub-run cannot be rerun on its own: its parent started it and awaits its result.",
        remedy: "Rerun the parent run.",
    },
    ErrorCode {
        code: "MAG-HTTP-RUN-BLOCKED",
        meaning: "The run is blocked, so the gate answer was not accepted.",
        remedy: "Resolve the block (see the run's reason) and reopen the engine.",
    },
    ErrorCode {
        code: "MAG-HTTP-AMBIGUOUS-TRIGGER",
        meaning: "A document name given for a trigger declares several triggers (an event document with both `webhook:` and `subscribe:`).",
        remedy: "Name the trigger by its id (`trg_…`), as the message lists them.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-REQUEST",
        meaning: "The request's query string or a segment of its path does not parse (a number that is not one, bytes that are not UTF-8, …); the message says which.",
        remedy: "Send the query parameters and path segments the route documents.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-QUERY",
        meaning: "A query parameter has a value the route does not know (e.g. a delivery `status`).",
        remedy: "Use one of the values the message lists.",
    },
    ErrorCode {
        code: "MAG-HTTP-TRIGGER-DISABLED",
        meaning: "The webhook is paused or its document says `enabled: false`; the delivery is recorded as `trigger_disabled` and nothing starts.",
        remedy: "Enable it: `PATCH …/triggers/{id}` with `{\"enabled\": true}`, or the document's `enabled:`.",
    },
    ErrorCode {
        code: "MAG-HTTP-TRIGGER-FAILED",
        meaning: "A schedule fired by hand could not start its workflow (the delivery is recorded as `failed`).",
        remedy: "Read the message: usually the workflow is missing or invalid, or its parameters do not fit.",
    },
    ErrorCode {
        code: "MAG-HTTP-WEBHOOK-REJECTED",
        meaning: "A webhook delivery failed verification; the message starts with its `MAG-WH` code and the delivery is recorded with its reason.",
        remedy: "See the `MAG-WH` code: the sender's secret, signature header, timestamp, method, size or dedupe key.",
    },
    ErrorCode {
        code: "MAG-HTTP-NO-GRAPH",
        meaning: "The run is a code workflow's: it has no document whose graph could be drawn.",
        remedy: "Read its journal instead; only YAML runs have a state graph.",
    },
    ErrorCode {
        code: "MAG-HTTP-WORKFLOW-NOT-FOUND",
        meaning: "No workflow document of this name exists in the project or tenant.",
        remedy: "Create `_vance/workflows/<name>.yaml`, or fix the name.",
    },
    ErrorCode {
        code: "MAG-HTTP-WS-TYPE",
        meaning: "A WebSocket message has an unknown type.",
        remedy: "Send workflow-start, subscribe, subscribe-events or ping on a project's session; only ping on the tenant's event stream.",
    },
    ErrorCode {
        code: "MAG-HTTP-WS-SUBSCRIBED",
        meaning: "A WebSocket session subscribed to a run it already follows (a second subscription would send every record twice).",
        remedy: "Keep the subscription the session has; to resume after a lost connection, subscribe on the new session with `lastEventId`.",
    },
    ErrorCode {
        code: "MAG-HTTP-WS",
        meaning: "A request to upgrade `GET /v1/workflow-events` to a WebSocket is not a valid WebSocket handshake (a missing or wrong `Sec-WebSocket-Key` or `Sec-WebSocket-Version`, or not over HTTP/1.1 GET).",
        remedy: "Connect with a WebSocket client; without `Upgrade: websocket` the route answers server-sent events.",
    },
];
