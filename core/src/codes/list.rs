//! The codes themselves, grouped by area in the order of [`AREAS`](super::AREAS).

use super::ErrorCode;

/// Every error code of the workspace, grouped by area in the order of [`AREAS`](super::AREAS).
pub const CODES: &[ErrorCode] = &[
    ErrorCode {
        code: "MAG-ST001",
        meaning: "The storage layer failed: an I/O error, a full disk, a failed commit. Nothing of the failed commit was applied.",
        remedy: "Check the disk (space, permissions, health). The engine recovers the affected runs from their journals once the store works again; the error's source holds the underlying I/O error.",
    },
    ErrorCode {
        code: "MAG-ST002",
        meaning: "The store file is already open in another process.",
        remedy: "Stop the other process, or talk to it as a client; or open another path.",
    },
    ErrorCode {
        code: "MAG-ST003",
        meaning: "The journal writer has stopped: the engine is shutting down.",
        remedy: "Retry against a running engine.",
    },
    ErrorCode {
        code: "MAG-ST004",
        meaning: "An entry of the run index (a run's summary) cannot be decoded: the store is corrupt.",
        remedy: "Restore the store from a backup; the journals themselves may still be intact.",
    },
    ErrorCode {
        code: "MAG-ST005",
        meaning: "A shared store (PostgreSQL) refused a worker's append to a run whose lease it lost: another worker reclaimed the run after the lease expired. Nothing of the append was written.",
        remedy: "Nothing to do: the worker stops driving the run and the new owner replays it. If it happens often, the workers miss heartbeats (overloaded, paused, or a lease grace period that is too short).",
    },
    ErrorCode {
        code: "MAG-ST006",
        meaning: "Two workers started runs with the same idempotency key at the same time; the other worker's start took the key first.",
        remedy: "Nothing to do: the start returns the run that took the key.",
    },
    ErrorCode {
        code: "MAG-LS001",
        meaning: "A run was reclaimed after a lost lease more often than maxClaimAttempts allows: the worker driving it stopped heartbeating each time (crashed, was killed, or froze). The run ends FAILED with a technical_error instead of going round the workers for ever.",
        remedy: "Find out why the workers die while driving this run (its tasks' memory or time, a crash in workflow code) and fix it; then start the run again. The limit is the PostgreSQL store's maxClaimAttempts (default 3).",
    },
    ErrorCode {
        code: "MAG-JF001",
        meaning: "A journal record was written by a newer (or unknown) format version.",
        remedy: "Upgrade Magrathea to a version that reads this format.",
    },
    ErrorCode {
        code: "MAG-JF002",
        meaning: "A journal record has an unknown type tag: a newer build wrote it, or the journal is corrupt.",
        remedy: "Upgrade Magrathea, or restore the store from a backup.",
    },
    ErrorCode {
        code: "MAG-JF003",
        meaning: "A journal record's bytes end early or hold an invalid value: the journal is corrupt.",
        remedy: "Restore the store from a backup.",
    },
    ErrorCode {
        code: "MAG-ID001",
        meaning: "The text is not a run id.",
        remedy: "Pass 32 hex digits: a UUID without dashes.",
    },
    ErrorCode {
        code: "MAG-EN001",
        meaning: "Two workflows or tasks are registered under one name.",
        remedy: "Rename one of them.",
    },
    ErrorCode {
        code: "MAG-EN002",
        meaning: "A start names a workflow the engine does not know.",
        remedy: "Register the workflow with EngineBuilder::workflow, or fix the name.",
    },
    ErrorCode {
        code: "MAG-EN003",
        meaning: "A start names a front end that has no interpreter.",
        remedy: "Register an interpreter for it with EngineBuilder::interpreter.",
    },
    ErrorCode {
        code: "MAG-EN004",
        meaning: "The input of a start cannot be serialised.",
        remedy: "Pass an input that serialises to JSON.",
    },
    ErrorCode {
        code: "MAG-EN005",
        meaning: "This process has no front end for the run (e.g. a server without the code workflow of a run in a shared store); the run is left as it is.",
        remedy: "Deliver to the run through a process that registers its workflow (or the YAML runtime).",
    },
    ErrorCode {
        code: "MAG-RN001",
        meaning: "No run with this id exists in this scope.",
        remedy: "Check the id and the project (`magrathea runs list` shows the runs).",
    },
    ErrorCode {
        code: "MAG-RN002",
        meaning: "A run whose result was asked for ended without success (failed, cancelled or blocked).",
        remedy: "Read the run's journal or view for the reason; fix and start it again.",
    },
    ErrorCode {
        code: "MAG-RN003",
        meaning: "A run handle was asked for a run of another workflow.",
        remedy: "Ask for the handle with the workflow the run was started with (its `workflowName`).",
    },
    ErrorCode {
        code: "MAG-RD001",
        meaning: "The journal page's `cursor` is not one the server handed out.",
        remedy: "Pass the `X-Next-Cursor` of the previous page unchanged, or leave `cursor` out for the first page.",
    },
    ErrorCode {
        code: "MAG-RD002",
        meaning: "The journal page's `limit` is not a whole number from 1 to 10000.",
        remedy: "Ask for at most 10000 records per page and follow `X-Next-Cursor` for the rest.",
    },
    ErrorCode {
        code: "MAG-RD003",
        meaning: "The token's subject already follows as many runs (SSE streams and WebSocket subscriptions together) as the server allows (HTTP 429).",
        remedy: "Close a stream or subscription first, or have the operator raise `ServeConfig::max_followers_per_subject`.",
    },
    ErrorCode {
        code: "MAG-RD004",
        meaning: "The WebSocket connection already holds as many subscriptions that have not ended as the server allows.",
        remedy: "Wait for a subscribed run to end, or open another connection.",
    },
    ErrorCode {
        code: "MAG-BD001",
        meaning: "Bounds exhausted: the run's journal grew past the most bytes a run may hold; the run ended FAILED in the commit that crossed it.",
        remedy: "Keep large data out of the journal (return references, not blobs), bound loops, or raise EngineBuilder::max_journal_bytes_per_run (or the tenant's bounds.maxJournalBytes, which may only lower it).",
    },
    ErrorCode {
        code: "MAG-BD002",
        meaning: "A task's output is larger than the most a task output may hold; the attempt failed with technical_error, was not retried, and its output was not journaled.",
        remedy: "Return less, or store large data outside the journal and return a reference; or raise EngineBuilder::max_task_output_bytes.",
    },
    ErrorCode {
        code: "MAG-BD020",
        meaning: "An HTTP response (an `http_request` body, or a model service's reply to an agent) is larger than the task may read: the request's `maxResponseBytes` or the engine's task output limit, whichever is lower. Reading stopped at the limit and the connection was closed; the attempt failed with technical_error.",
        remedy: "Ask for less (a smaller page, a shorter answer, a lower `maxTokens`), raise `maxResponseBytes` up to the task output limit, or raise EngineBuilder::max_task_output_bytes.",
    },
    ErrorCode {
        code: "MAG-WF001",
        meaning: "Workflow code panicked: the run is BLOCKED with the panic message and its location.",
        remedy: "Fix the code and reopen the engine; the run replays from its journal.",
    },
    ErrorCode {
        code: "MAG-RP001",
        meaning: "A journal file for a replay test cannot be read.",
        remedy: "Check the path; export the journal with `magrathea journal RUN --export FILE`.",
    },
    ErrorCode {
        code: "MAG-RP002",
        meaning: "A line of a journal file for a replay test is not a journal entry.",
        remedy: "Use the file as `magrathea journal RUN --export FILE` wrote it (one JSON entry per line).",
    },
    ErrorCode {
        code: "MAG-RC001",
        meaning: "At recovery a run's journal cannot be decoded or lacks its start record: the run is BLOCKED.",
        remedy: "Restore the store from a backup, or cancel the run.",
    },
    ErrorCode {
        code: "MAG-ND001",
        meaning: "Replay found a different step than the journal holds at this position (kind or name differ): the workflow code changed under a running run.",
        remedy: "Restore the code the run started with, or guard the change with a patch marker; the run stays BLOCKED until then.",
    },
    ErrorCode {
        code: "MAG-ND002",
        meaning: "The journal holds a step the replayed code never asked for.",
        remedy: "Restore the code the run started with, or guard the change with a patch marker.",
    },
    ErrorCode {
        code: "MAG-ND003",
        meaning: "The run started on another version of the workflow than the engine has registered.",
        remedy: "Register the version the run started with, or let the run finish on the engine that has it.",
    },
    ErrorCode {
        code: "MAG-ND004",
        meaning: "The run's workflow (or front end interpreter) is not registered with this engine.",
        remedy: "Register the workflow or interpreter the run was started with and reopen the engine.",
    },
    ErrorCode {
        code: "MAG-ND005",
        meaning: "A patch marker disagrees with the journal.",
        remedy: "Restore the code the run started with, or keep the patch.",
    },
    ErrorCode {
        code: "MAG-GT001",
        meaning: "No inbox item has this id.",
        remedy: "Use an id of the form `<run_id>-<step>`; `magrathea inbox list` shows the pending ones.",
    },
    ErrorCode {
        code: "MAG-GT002",
        meaning: "The answer does not fit the gate (an option it does not offer, a missing field).",
        remedy: "Answer with one of the gate's options or the shape it asks for.",
    },
    ErrorCode {
        code: "MAG-GT003",
        meaning: "The run is blocked, so it takes no answers, signals or cancellations.",
        remedy: "Resolve the block (see the run's reason) and reopen the engine.",
    },
    ErrorCode {
        code: "MAG-TK001",
        meaning: "The workflow calls a task that is not registered with the engine.",
        remedy: "Register it with EngineBuilder::task.",
    },
    ErrorCode {
        code: "MAG-TK002",
        meaning: "A task's input does not decode as the task's input type.",
        remedy: "Pass the input the task expects.",
    },
    ErrorCode {
        code: "MAG-CX001",
        meaning: "The run was cancelled while the task ran; the task's result is discarded.",
        remedy: "Nothing, if the cancellation was intended; otherwise start the run again.",
    },
    ErrorCode {
        code: "MAG-CH001",
        meaning: "A child run ended without success.",
        remedy: "Read the child run's journal for its reason.",
    },
    ErrorCode {
        code: "MAG-CH002",
        meaning: "A child run was not started: it would be nested deeper than the sub-run depth limit (32 by default); the message shows the chain of runs.",
        remedy: "End the recursion with a condition, or raise the limit with EngineBuilder::max_child_depth or `subRuns.maxDepth` in _vance/settings.yaml.",
    },
    ErrorCode {
        code: "MAG-SE001",
        meaning: "A value (a workflow's or task's output) cannot be serialised to JSON.",
        remedy: "Make the type serialise to JSON (string map keys, no non-finite floats).",
    },
    ErrorCode {
        code: "MAG-SE002",
        meaning: "A stored value does not decode as the expected type: the output of a run or child has another shape.",
        remedy: "Align the Rust type with the workflow's output, or read it as a JSON value.",
    },
    ErrorCode {
        code: "MAG-SE003",
        meaning: "A workflow's input does not decode as its input type.",
        remedy: "Pass the input the workflow expects.",
    },
    ErrorCode {
        code: "MAG-Y001",
        meaning: "The text is not well-formed YAML.",
        remedy: "Fix the syntax at the reported line and column.",
    },
    ErrorCode {
        code: "MAG-Y002",
        meaning: "The document exceeds the size limit (LoadOptions::max_bytes).",
        remedy: "Split the document, or raise the limit.",
    },
    ErrorCode {
        code: "MAG-Y003",
        meaning: "The document has too many nodes, nests too deep, or an alias expands too far.",
        remedy: "Simplify the document; avoid alias chains.",
    },
    ErrorCode {
        code: "MAG-Y004",
        meaning: "A state names an unknown task type.",
        remedy: "Use one of the task types the schema lists.",
    },
    ErrorCode {
        code: "MAG-Y005",
        meaning: "A mapping has an unknown field.",
        remedy: "Remove or rename the field (the message suggests the closest known one).",
    },
    ErrorCode {
        code: "MAG-Y006",
        meaning: "A required field is missing.",
        remedy: "Add the field.",
    },
    ErrorCode {
        code: "MAG-Y007",
        meaning: "A field has the wrong kind of value.",
        remedy: "Give the field the type the schema asks for.",
    },
    ErrorCode {
        code: "MAG-Y008",
        meaning: "`start` does not name a state.",
        remedy: "Name one of the states under `states:`.",
    },
    ErrorCode {
        code: "MAG-Y009",
        meaning: "`states` is empty.",
        remedy: "Declare at least one state.",
    },
    ErrorCode {
        code: "MAG-Y010",
        meaning: "A transition targets something that is not a state.",
        remedy: "Name an existing state.",
    },
    ErrorCode {
        code: "MAG-Y011",
        meaning: "`else:` is not the last rule of a condition, or appears twice.",
        remedy: "Keep one `else:`, as the last rule.",
    },
    ErrorCode {
        code: "MAG-Y012",
        meaning: "A condition rule lacks `if` or `to`.",
        remedy: "Give every rule both `if:` and `to:`.",
    },
    ErrorCode {
        code: "MAG-Y013",
        meaning: "A terminal state declares transitions.",
        remedy: "Remove its transitions, or make it non-terminal.",
    },
    ErrorCode {
        code: "MAG-Y014",
        meaning: "A non-terminal state has no way out (a warning).",
        remedy: "Add a transition, or make the state terminal.",
    },
    ErrorCode {
        code: "MAG-Y015",
        meaning: "`catch:` or `retry.on` names an unknown error kind.",
        remedy: "Use one of the error kinds of the reference.",
    },
    ErrorCode {
        code: "MAG-Y016",
        meaning: "The parameter schema is invalid.",
        remedy: "Fix the `parameters:` block.",
    },
    ErrorCode {
        code: "MAG-Y017",
        meaning: "A duration does not parse.",
        remedy: "Fix the duration at the reported position.",
    },
    ErrorCode {
        code: "MAG-Y018",
        meaning: "A retry block is invalid.",
        remedy: "Fix `retry:` (attempts, backoff, `on`).",
    },
    ErrorCode {
        code: "MAG-Y019",
        meaning: "A bounds block is invalid.",
        remedy: "Fix `bounds:`.",
    },
    ErrorCode {
        code: "MAG-Y020",
        meaning: "`timeoutSeconds` is invalid.",
        remedy: "Give a positive number of seconds.",
    },
    ErrorCode {
        code: "MAG-Y021",
        meaning: "`storeAs` is not a plain identifier.",
        remedy: "Use a plain identifier as the variable name.",
    },
    ErrorCode {
        code: "MAG-Y022",
        meaning: "A condition expression does not parse.",
        remedy: "Fix the expression at the reported position.",
    },
    ErrorCode {
        code: "MAG-Y023",
        meaning: "A condition expression leaves the sandbox.",
        remedy: "Use only the variables, operators and functions the condition language offers.",
    },
    ErrorCode {
        code: "MAG-Y024",
        meaning: "A `${...}` is left as text but looks like a misspelt placeholder (warning).",
        remedy: "Write `${params.<key>}` or `${state.<key>}` without spaces; `$${` writes a literal `${`.",
    },
    ErrorCode {
        code: "MAG-Y025",
        meaning: "A mapping key appears twice.",
        remedy: "Keep one of them.",
    },
    ErrorCode {
        code: "MAG-Y026",
        meaning: "A value is not one of the allowed words.",
        remedy: "Use one of the words the message lists.",
    },
    ErrorCode {
        code: "MAG-Y027",
        meaning: "A state is never reached from `start` (a warning).",
        remedy: "Add a transition to it, or remove it.",
    },
    ErrorCode {
        code: "MAG-Y028",
        meaning: "A shell_task splices `${params.…}` or `${state.…}` into its command (an error: a value with quotes or `;` would become code).",
        remedy: "Use the value's environment variable, quoted (`\"$MAGRATHEA_PARAM_X\"`, `\"$MAGRATHEA_VAR_X\"`; the message names it), or opt the state into shell-quoted splicing with `splice: quoted`.",
    },
    ErrorCode {
        code: "MAG-YA001",
        meaning: "A transition names an outcome its task can never end with (e.g. `on: success` on a timer_task, which only ends `fired`); it can never be taken. An error, except for `failure`, which the reference writes loosely and is a warning.",
        remedy: "Route an outcome the task type produces (the message lists them), or remove the transition.",
    },
    ErrorCode {
        code: "MAG-YA002",
        meaning: "A transition its state, as configured, never takes (a warning): `catch: timeout` without `timeoutSeconds`, `on: success` on a condition_task with `else`.",
        remedy: "Set what makes the outcome possible (e.g. `timeoutSeconds`), or remove the transition.",
    },
    ErrorCode {
        code: "MAG-YA003",
        meaning: "A task can end with outcomes that no `on:` or `catch:` routes (a warning): such an outcome fails the run with \"no transition for outcome\".",
        remedy: "Route the outcomes the message names, or accept that they fail the run.",
    },
    ErrorCode {
        code: "MAG-YA004",
        meaning: "A condition_task has no `else` and its rules may all be false (a warning): then the run fails.",
        remedy: "End the rules with `- else: <state>`, or route `on: success`.",
    },
    ErrorCode {
        code: "MAG-YA005",
        meaning: "A workflow_task names a workflow that is neither in the project nor in its tenant (a warning): the task would end `failure`.",
        remedy: "Create `_vance/workflows/<name>.yaml` in the project or in `_tenant`, or fix the name.",
    },
    ErrorCode {
        code: "MAG-YA006",
        meaning: "States form a loop with no timer_task or gate_task on it and the workflow sets no bounds (a warning): a run can loop forever.",
        remedy: "Set `bounds.maxTaskSpawns` or `bounds.maxWallclockSeconds`, or put a timer or gate on the loop.",
    },
    ErrorCode {
        code: "MAG-YC001",
        meaning: "A transition's condition does not parse at run time.",
        remedy: "Fix the condition in the workflow document.",
    },
    ErrorCode {
        code: "MAG-YC002",
        meaning: "A transition's condition fails to evaluate (a missing variable, a type mismatch).",
        remedy: "Fix the condition, or make sure the variables it reads are set.",
    },
    ErrorCode {
        code: "MAG-YP001",
        meaning: "A run's parameters do not match the workflow's parameter schema.",
        remedy: "Pass parameters that the schema accepts.",
    },
    ErrorCode {
        code: "MAG-YR001",
        meaning: "A run's frozen workflow definition no longer loads (the run cannot continue).",
        remedy: "Restore a Magrathea version that reads the definition, or cancel the run.",
    },
    ErrorCode {
        code: "MAG-DOC001",
        meaning: "No workflow document of this name exists in the project or tenant.",
        remedy: "Create `_vance/workflows/<name>.yaml`, or fix the name.",
    },
    ErrorCode {
        code: "MAG-DOC002",
        meaning: "A document name is not a plain file name.",
        remedy: "Use letters, digits, `-` and `_` only.",
    },
    ErrorCode {
        code: "MAG-DOC003",
        meaning: "A document cannot be read.",
        remedy: "Check the file's permissions and encoding.",
    },
    ErrorCode {
        code: "MAG-EX001",
        meaning: "An executor task (shell, script, tool or agent) ran without executors: its call was bound to none and the engine's data holds none.",
        remedy: "Install the executors on the engine with Executors::install (YamlRuntime::install does), or bind the call with Executors::call.",
    },
    ErrorCode {
        code: "MAG-EX002",
        meaning: "A call names an executor this build of magrathea-exec leaves out.",
        remedy: "Enable the executor's cargo feature (`shell`, `script`, `tools`, `agent`).",
    },
    ErrorCode {
        code: "MAG-SH001",
        meaning: "A shell_task has no `dirName:`.",
        remedy: "Name a workspace directory with `dirName:`.",
    },
    ErrorCode {
        code: "MAG-SH002",
        meaning: "The workspace directory of a shell_task does not exist.",
        remedy: "Create the directory, or point `workspaces:` in `_vance/settings.yaml` at an existing one.",
    },
    ErrorCode {
        code: "MAG-SH003",
        meaning: "The shell (`sh -c`) cannot be started.",
        remedy: "Check that `sh` exists and the server may run processes.",
    },
    ErrorCode {
        code: "MAG-SH004",
        meaning: "Waiting for the command failed.",
        remedy: "Check the host (process limits, signals); the task may be retried.",
    },
    ErrorCode {
        code: "MAG-SH005",
        meaning: "A shell_task names an unknown workspace.",
        remedy: "Declare it under `workspaces:` in `_vance/settings.yaml`.",
    },
    ErrorCode {
        code: "MAG-SH010",
        meaning: "A shell_task must run in the sandbox (the default for served trees) but this server's kernel does not enforce Landlock.",
        remedy: "Run the server on a kernel with Landlock (Linux 5.13+, enabled in `lsm=`), or let the tenant's administrator set `shell: {sandbox: off}` in `_tenant/_vance/settings.yaml` to run shell steps unconfined.",
    },
    ErrorCode {
        code: "MAG-SH011",
        meaning: "A shell_task of a served project names a workspace whose real path lies outside the project directory.",
        remedy: "Keep workspaces inside the project, or let the tenant's administrator list their root under `shell.workspaceRoots` in `_tenant/_vance/settings.yaml`.",
    },
    ErrorCode {
        code: "MAG-SH012",
        meaning: "The shell sandbox's rules could not be built or applied.",
        remedy: "Read the message (an unreadable path in `shell.readPaths`/`writePaths`, a process limit); the task may be retried.",
    },
    ErrorCode {
        code: "MAG-SH013",
        meaning: "A shell_task's private temporary directory could not be created.",
        remedy: "Check that the server's temporary directory exists, is writable and has space.",
    },
    ErrorCode {
        code: "MAG-JS001",
        meaning: "A script_task has no `path:`.",
        remedy: "Name the script file, e.g. `path: _vance/scripts/transform.js`.",
    },
    ErrorCode {
        code: "MAG-JS002",
        meaning: "A script path is absolute or leads outside its root.",
        remedy: "Use a path relative to the project or workspace, without `..`.",
    },
    ErrorCode {
        code: "MAG-JS003",
        meaning: "The script file does not exist.",
        remedy: "Create the script, or fix `path:`.",
    },
    ErrorCode {
        code: "MAG-JS004",
        meaning: "The script file cannot be read.",
        remedy: "Check the file's permissions and encoding.",
    },
    ErrorCode {
        code: "MAG-JS005",
        meaning: "A script_task names an unknown workspace.",
        remedy: "Declare it under `workspaces:` in `_vance/settings.yaml`.",
    },
    ErrorCode {
        code: "MAG-JS006",
        meaning: "A script_task names an unknown script source.",
        remedy: "Use `document` or `workspace`.",
    },
    ErrorCode {
        code: "MAG-JS010",
        meaning: "The script threw an error.",
        remedy: "Fix the script (the message names the line).",
    },
    ErrorCode {
        code: "MAG-JS011",
        meaning: "The script did not finish within its timeout and was interrupted.",
        remedy: "Make the script faster, or raise `timeoutSeconds`.",
    },
    ErrorCode {
        code: "MAG-JS012",
        meaning: "The script exceeded its memory limit.",
        remedy: "Make the script use less memory.",
    },
    ErrorCode {
        code: "MAG-JS013",
        meaning: "The script awaited a promise that never settles (the sandbox has no timers or I/O).",
        remedy: "Remove the await, or return the value directly.",
    },
    ErrorCode {
        code: "MAG-JS014",
        meaning: "The script returned no JSON value.",
        remedy: "Return a JSON-serialisable value.",
    },
    ErrorCode {
        code: "MAG-JS015",
        meaning: "The script engine crashed or could not run the script.",
        remedy: "Report it with the script; the task may be retried.",
    },
    ErrorCode {
        code: "MAG-JS016",
        meaning: "The script was interrupted because its run was cancelled.",
        remedy: "Nothing, if the cancellation was intended.",
    },
    ErrorCode {
        code: "MAG-JS017",
        meaning: "A script_task ran outside a project scope.",
        remedy: "Start the run in a `tenant/project` scope.",
    },
    ErrorCode {
        code: "MAG-TL001",
        meaning: "An unknown tool was called: neither a registered task nor a known tool.",
        remedy: "Register the task, or fix the tool's name (the agent's recipe lists the tools it offers).",
    },
    ErrorCode {
        code: "MAG-TL002",
        meaning: "The tool is not allowed here: the permission cascade denied it.",
        remedy: "Allow the tool in the settings the message names, or use another tool.",
    },
    ErrorCode {
        code: "MAG-TL003",
        meaning: "The tool's parameters are invalid.",
        remedy: "Pass the parameters the tool's schema asks for.",
    },
    ErrorCode {
        code: "MAG-TL004",
        meaning: "The tool failed.",
        remedy: "Read the tool's message; the task may be retried.",
    },
    ErrorCode {
        code: "MAG-TL005",
        meaning: "The tool did not finish within the tool_task's `timeoutSeconds` (outcome `timeout`).",
        remedy: "Raise `timeoutSeconds`, or find out why the tool is slow.",
    },
    ErrorCode {
        code: "MAG-PL001",
        meaning: "The tenant's settings do not allow this task type (`shell_task`, `script_task` or `http_request`) for the project (error kind `permission_error`). Served trees deny each type unless allowed; the local `magrathea` command allows it unless denied.",
        remedy: "Set `execution.<type>: true` (or `execution.projects.<project>.<type>: true`) in the tenant's `_tenant/_vance/settings.yaml`, as the message names it.",
    },
    ErrorCode {
        code: "MAG-EG001",
        meaning: "The egress policy refused an `http_request` destination: a private, loopback or reserved address (also after resolving a name, and on a redirect hop), or an allowed host on another port (error kind `permission_error`).",
        remedy: "Add the host to `egress.allowHosts` (or set `egress.allowPrivate: true`) in the tenant's `_tenant/_vance/settings.yaml`.",
    },
    ErrorCode {
        code: "MAG-AG001",
        meaning: "The agent_task's recipe is missing or unknown.",
        remedy: "Name an existing recipe with `recipe:` (the message lists where it looked).",
    },
    ErrorCode {
        code: "MAG-AG002",
        meaning: "The recipe document is invalid.",
        remedy: "Fix the recipe (it needs at least `engine:`).",
    },
    ErrorCode {
        code: "MAG-AG003",
        meaning: "The recipe does not fit its engine: an unknown engine, provider or field, or no `model:`.",
        remedy: "Fix the recipe (the message lists what the engine knows).",
    },
    ErrorCode {
        code: "MAG-AG004",
        meaning: "The agent_task's parameters are invalid (no `params.prompt` string, for instance).",
        remedy: "Fix the task's `params:`.",
    },
    ErrorCode {
        code: "MAG-AG005",
        meaning: "The model's endpoint failed or answered something that is not a chat completion.",
        remedy: "Check the endpoint, the key and the model; the task may be retried.",
    },
    ErrorCode {
        code: "MAG-AG006",
        meaning: "The agent did not answer within its timeout.",
        remedy: "Raise `timeoutSeconds`, or retry.",
    },
    ErrorCode {
        code: "MAG-AG007",
        meaning: "The environment variable named by the recipe's `apiKeyEnv` is not set.",
        remedy: "Set it in the server's environment.",
    },
    ErrorCode {
        code: "MAG-AG008",
        meaning: "The agent session went stale or was closed.",
        remedy: "Retry the task.",
    },
    ErrorCode {
        code: "MAG-AG009",
        meaning: "The agent gave no answer.",
        remedy: "Retry the task, or adjust the prompt.",
    },
    ErrorCode {
        code: "MAG-AG010",
        meaning: "The model still called tools after `maxToolRounds` rounds.",
        remedy: "Raise `maxToolRounds`, or adjust the prompt or the tools.",
    },
    ErrorCode {
        code: "MAG-SV001",
        meaning: "The server cannot create the store directory.",
        remedy: "Check the path and its permissions.",
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
        remedy: "Run the command again: a new owner answers, or, with none left, the command opens the store itself.",
    },
    ErrorCode {
        code: "MAG-CS002",
        meaning: "A request on a store's control socket is not one the owner understands, or is larger than it reads.",
        remedy: "Use a `magrathea` command of the same version as the owner; the socket is not a public API.",
    },
    ErrorCode {
        code: "MAG-CS003",
        meaning: "The owner of a store cannot serve its control socket (a read-only store directory, or a path too long for a Unix socket).",
        remedy: "Fix the directory's permissions or use a shorter --store path; until then other commands on the store fail while this one runs.",
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
        meaning: "The event does not accept this HTTP method.",
        remedy: "Use one of the methods the event document lists.",
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
        code: "MAG-HTTP-INVALID-ANSWER",
        meaning: "A gate answer is malformed: an unknown kind, a missing field, or one the gate does not accept.",
        remedy: "Send one of the answer kinds with the fields it needs.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-CURSOR",
        meaning: "The pagination cursor is not a run id.",
        remedy: "Pass the cursor from the previous page unchanged.",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-DOCUMENT",
        meaning: "The uploaded document is not UTF-8 text.",
        remedy: "Upload the document as UTF-8.",
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
        meaning: "The body (or a WebSocket message) is not valid JSON for the route, or has unknown fields.",
        remedy: "Send the JSON the route's schema describes (GET /openapi.json).",
    },
    ErrorCode {
        code: "MAG-HTTP-INVALID-NAME",
        meaning: "A workflow or document name is not a plain file name.",
        remedy: "Use letters, digits, `-` and `_` only.",
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
        code: "MAG-HTTP-NO-ROUTE",
        meaning: "No route has this path.",
        remedy: "See GET /openapi.json for the routes.",
    },
    ErrorCode {
        code: "MAG-HTTP-RUN-BLOCKED",
        meaning: "The run is blocked, so the gate answer was not accepted.",
        remedy: "Resolve the block (see the run's reason) and reopen the engine.",
    },
    ErrorCode {
        code: "MAG-HTTP-WORKFLOW-NOT-FOUND",
        meaning: "No workflow document of this name exists in the project or tenant.",
        remedy: "Create `_vance/workflows/<name>.yaml`, or fix the name.",
    },
    ErrorCode {
        code: "MAG-HTTP-WS-TYPE",
        meaning: "A WebSocket message has an unknown type.",
        remedy: "Send workflow-start, subscribe or ping.",
    },
];
