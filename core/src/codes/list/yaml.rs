//! The codes of YAML documents: loading, analysis, the plan and its runtime (areas Y to SC).

use super::ErrorCode;

/// The codes of YAML documents: loading, analysis, the plan and its runtime (areas Y to SC), in the order of [`AREAS`](crate::codes::AREAS).
pub(super) const CODES: &[ErrorCode] = &[
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
        meaning: "A bounds block is invalid; or (a warning) `maxTaskSpawns: 0`, under which no task starts and a run fails `bounds exhausted` before its first task.",
        remedy: "Fix `bounds:`; a cap on task starts is at least 1.",
    },
    ErrorCode {
        code: "MAG-Y020",
        meaning: "`timeoutSeconds` is invalid.",
        remedy: "Give a positive number of seconds.",
    },
    ErrorCode {
        code: "MAG-Y021",
        meaning: "`storeAs` is not a variable key: empty, over 256 bytes, or holding `.`, a space, a quote, a bracket, a brace, `$` or `\\`.",
        remedy: "Name the variable with letters, digits and punctuation such as `-` or `_` (e.g. `review`, `check-output`).",
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
        remedy: "Write `${params.<key>}` or `${state.<key>}` without spaces.",
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
        meaning: "A shell_task has `${params.…}` or `${state.…}` in its command where no value can be spliced as data (inside `$((…))` or a here-document with a quoted delimiter), or anywhere under `splice: none`.",
        remedy: "Use the value's environment variable, quoted (`\"$MAGRATHEA_PARAM_X\"`, `\"$MAGRATHEA_VAR_X\"`; the message names it), outside the arithmetic or here-document; under `splice: none`, drop it to pass each value through a variable of its own (the default) or set `splice: quoted`.",
    },
    ErrorCode {
        code: "MAG-Y029",
        meaning: "A parallel_task has no branches, a foreach_task no items, or a branch (or a foreach_task) names neither a `workflow:` nor inline `start:`/`states:`, or both.",
        remedy: "Give each branch (and each foreach_task) exactly one of `workflow: <name>` or `start:` + `states:`.",
    },
    ErrorCode {
        code: "MAG-Y030",
        meaning: "`maxParallelism` of a parallel_task or foreach_task is not an integer from 1 to 1000 (each sub-run in flight holds its parameters in memory).",
        remedy: "Write a whole number from 1 to 1000, or leave it out for 64 at once.",
    },
    ErrorCode {
        code: "MAG-Y031",
        meaning: "`toleratedFailures` is neither a count (an integer >= 0) nor a percentage string such as \"25%\" (0 to 100).",
        remedy: "Write a count (`toleratedFailures: 1`) or a percentage (`toleratedFailures: \"10%\"`).",
    },
    ErrorCode {
        code: "MAG-Y037",
        meaning: "`bounds` sets both `maxWallclockSeconds` and `runTimeoutMs`, the same deadline in seconds and in milliseconds.",
        remedy: "Keep one of them.",
    },
    ErrorCode {
        code: "MAG-Y038",
        meaning: "`onFailure:` has a `timeoutSeconds` that is not a positive number of seconds, or a `timeoutSeconds` or `approvers` without `policy: pause_for_approval` (the only policy that asks a person).",
        remedy: "Write `onFailure: {policy: pause_for_approval, fallback: <state>, timeoutSeconds: <n>, approvers: {users: [...], roles: [...]}}` (all but `policy` optional), or drop the field.",
    },
    ErrorCode {
        code: "MAG-Y039",
        meaning: "A state sets a field that has no effect on its task type (a warning): `timeoutSeconds` on a timer_task (it always ends `fired` after its `duration`) or a condition_task (decided at once), or `options` on an APPROVAL or FEEDBACK gate (options are only for a DECISION).",
        remedy: "Remove the field; a timer's wait is its `duration`, and a gate that offers options is `kind: DECISION`.",
    },
    ErrorCode {
        code: "MAG-Y040",
        meaning: "A script_task's `path`, written without placeholders, names no script it can run: no such file in the project or its tenant (`source: document`) or in its workspace, a path that is absolute, holds `..` or leads out through a symbolic link, or an unknown workspace. Reported by `magrathea validate`; a run would end the task `technical_error` with the MAG-JS code the message quotes. A script of `source: workspace` that is not there yet is a warning: a state before it may write it during the run.",
        remedy: "Create the script, or fix `path`, `source` or `dirName` (a path relative to the project or workspace directory, without `..`).",
    },
    ErrorCode {
        code: "MAG-Y041",
        meaning: "A shell_task has no `dirName:` (a warning): a step without a workspace directory does not run; it ends `technical_error` with MAG-SH001, as the reference says.",
        remedy: "Name the workspace it runs in: `dirName: workspace` (the project directory) or a workspace of the project's settings.",
    },
    ErrorCode {
        code: "MAG-Y042",
        meaning: "A shell_task's `dirName:`, written without placeholders, names no workspace of the project (a warning, reported by `magrathea validate`): the step would end `technical_error` with MAG-SH005.",
        remedy: "Use `workspace` (the project directory) or declare the workspace under `workspaces:` in the project's `_vance/settings.yaml`.",
    },
    ErrorCode {
        code: "MAG-Y043",
        meaning: "An agent_task's `params.schema`, written without placeholders, is no schema a structured reply can be checked against (a warning, reported by `magrathea validate`): with a recipe whose engine asks for a structured reply (the Jeltz wrapper) the task would end `technical_error` with MAG-AG004.",
        remedy: "Write a JSON Schema (`{type: object, properties: {...}}`) or a map of the reply's fields to their schemas (`{risk: {type: string}}`).",
    },
    ErrorCode {
        code: "MAG-Y044",
        meaning: "A file in a documents folder (`_vance/workflows/`, `_vance/scheduler/`, `_vance/events/` …) whose name does not end in `.yaml` (`.yml`, `.YAML`): nothing reads it, so it starts nothing and is never checked (a warning, reported by `magrathea validate`).",
        remedy: "Rename it to end in `.yaml`, or move it out of the folder.",
    },
    ErrorCode {
        code: "MAG-YA001",
        meaning: "A transition names an outcome its task can never end with (e.g. `on: success` on a timer_task, which only ends `fired`); it can never be taken (a warning: the document loads, as the reference's loader takes it, and an outcome the task does end with that nothing routes is named by MAG-YA003). The same warning for a `retry.on:` kind the task never ends with: it is never retried.",
        remedy: "Route (or retry) an outcome the task type produces (the message lists them), or remove the transition.",
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
        meaning: "States form a loop with no timer_task or gate_task on it and the workflow sets no bounds (a warning): a run loops until its tenant's default bounds stop it (10000 task spawns unless set).",
        remedy: "Set `bounds.maxTaskSpawns` or `bounds.maxWallclockSeconds`, or put a timer or gate on the loop.",
    },
    ErrorCode {
        code: "MAG-YA007",
        meaning: "An agent_task names a recipe that is neither in the project nor in its tenant (a warning, reported by `magrathea validate`): the task would end `technical_error` with MAG-AG001.",
        remedy: "Create `_vance/recipes/<name>.yaml` in the project or in `_tenant` (see docs/agents.md), or fix the name.",
    },
    ErrorCode {
        code: "MAG-YA008",
        meaning: "A workflow_task leaves out a required parameter (without a default) of the workflow it starts, or passes one as a value of another type than it declares (a warning, reported by `magrathea validate`): the sub-run would be refused and the task end `failure` with MAG-YR002.",
        remedy: "Pass the parameter under `params:` with a value of the declared type, or give it a default in the sub-workflow's `parameters:`.",
    },
    ErrorCode {
        code: "MAG-YA009",
        meaning: "A shell_task or script_task asks for a timeout (its `timeoutSeconds`, or the document's `defaults.taskTimeoutSeconds`) above the tenant's `bounds.maxTaskTimeoutSeconds` (default 86400 s; a warning, reported by `magrathea validate`): the step would end `technical_error` with MAG-BD030 without starting.",
        remedy: "Lower the timeout, or have the tenant's administrator raise `bounds.maxTaskTimeoutSeconds` in `_tenant/_vance/settings.yaml`.",
    },
    ErrorCode {
        code: "MAG-YA010",
        meaning: "A tool_task calls a tool that the workflow's own pool leaves out: its `allowedTools:`, or, when it declares none, the default pool (web_search, doc_read, doc_list, inbox_read). The cascade intersects that pool with the tenant's and the project's, so every run of the state ends `permission_error` with MAG-TL002 (a warning).",
        remedy: "Name the tool under the workflow's `allowedTools:` (the tenant's and project's settings must allow it too), or fix the tool's name.",
    },
    ErrorCode {
        code: "MAG-YA011",
        meaning: "A `catch:` entry names an outcome that an `on:` entry of the same state routes to another state (e.g. `on: {timeout: retry_later}` beside `catch: {timeout: give_up}`): the resolver tries `on:` before `catch:`, so the catch entry is never taken (a warning).",
        remedy: "Keep one route for the outcome: remove the `catch:` entry, or the `on:` entry if the catch target is the one meant.",
    },
    ErrorCode {
        code: "MAG-YA012",
        meaning: "No state of type `terminal` is reached from the workflow's `start` (a warning): a run of it never ends DONE; it ends only when a step's outcome has no route (FAILED), when it is cancelled, or when its bounds stop it.",
        remedy: "Add a `type: terminal` state and a transition to it, or keep the document as it is when the run is meant to go on until it is cancelled.",
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
        code: "MAG-YR002",
        meaning: "A workflow_task could not start its sub-run: the workflow is neither in the project nor in its tenant, its document does not load, or it refuses the parameters. The state ends `failure` (a failed task result with this message), routed by `on:`/`catch:` like a failed sub-run.",
        remedy: "Fix what the message names (create or fix `_vance/workflows/<name>.yaml`, or pass the parameters it declares); `magrathea validate` reports a missing workflow beforehand (MAG-YA005).",
    },
    ErrorCode {
        code: "MAG-YR003",
        meaning: "A DECISION gate's options, given by a placeholder, resolved to no option: nobody could decide, so the gate step ends `technical_error` without opening an inbox item.",
        remedy: "Pass a non-empty list in the parameter or variable the `options:` placeholder names.",
    },
    ErrorCode {
        code: "MAG-PR001",
        meaning: "The `items:` of a foreach_task resolved to something other than a JSON array (the state ends `failure`).",
        remedy: "Point `items:` at a list, e.g. `items: \"${state.files}\"` where the variable holds an array.",
    },
    ErrorCode {
        code: "MAG-PR002",
        meaning: "A foreach_task's items hold more than 10,000 entries, the most one fan-out runs (the state ends `failure`).",
        remedy: "Split the list, or run a foreach_task over batches.",
    },
    ErrorCode {
        code: "MAG-PR003",
        meaning: "A parallel_task or foreach_task reached its `timeoutSeconds` before every sub-run ended; the sub-runs still running were cancelled (the state ends `timeout`).",
        remedy: "Raise `timeoutSeconds`, or route `timeout` to a state that handles it.",
    },
    ErrorCode {
        code: "MAG-PR004",
        meaning: "More sub-runs of a parallel_task or foreach_task failed than `toleratedFailures` allows; the others were cancelled and no more were started (the state ends `failure`; its output lists which failed and why).",
        remedy: "Fix the failing sub-runs, or allow some failures with `toleratedFailures: <count>` or `\"<n>%\"`.",
    },
    ErrorCode {
        code: "MAG-PR005",
        meaning: "A parallel_task or foreach_task would hand its sub-runs more than 64 MiB of input in all: an inline branch gets a copy of its run's parameters and variables, a workflow branch its resolved params: (the state ends `failure`, no sub-run started).",
        remedy: "Pass large data by reference (a document path, a URL) rather than as a parameter, or fan out over fewer items.",
    },
    ErrorCode {
        code: "MAG-DOC001",
        meaning: "No workflow document of this name exists in the project or tenant.",
        remedy: "Create `_vance/workflows/<name>.yaml`, or fix the name.",
    },
    ErrorCode {
        code: "MAG-DOC002",
        meaning: "A document name is not a plain file name.",
        remedy: "Use ASCII letters, digits, `.`, `_` and `-` only (no path separators, no \
                 `..`, not starting with `.`).",
    },
    ErrorCode {
        code: "MAG-DOC003",
        meaning: "A document cannot be read.",
        remedy: "Check the file's permissions and encoding.",
    },
    ErrorCode {
        code: "MAG-DOC004",
        meaning: "On a server, a document (or a directory above it) is a symbolic link that leads out of its project or tenant directory: the server does not follow it.",
        remedy: "Replace the link with the document itself; a document shared by several projects belongs in the tenant's `_tenant/_vance/`.",
    },
    ErrorCode {
        code: "MAG-VR001",
        meaning: "The workflow is archived: it refuses new starts; runs already started finish.",
        remedy: "Unarchive it (`magrathea unarchive NAME`, `POST …/workflows/{name}/unarchive`) to start it again.",
    },
    ErrorCode {
        code: "MAG-VR002",
        meaning: "A draft start or a publish found no draft of the workflow in the project.",
        remedy: "Write the draft to `_vance/workflow-drafts/<name>.yaml` first.",
    },
    ErrorCode {
        code: "MAG-VR003",
        meaning: "The draft is not a valid workflow document, so it was not published; nothing changed.",
        remedy: "Fix the draft at the places the diagnostics name, then publish again.",
    },
    ErrorCode {
        code: "MAG-VR004",
        meaning: "A history entry exists under the content hash of the live document but holds other text.",
        remedy: "Restore the history file from a backup: history entries are never overwritten.",
    },
    ErrorCode {
        code: "MAG-VR005",
        meaning: "A write under `_vance/workflow-history/` was refused: the history of published workflows is immutable.",
        remedy: "Write the new text as a draft (`_vance/workflow-drafts/<name>.yaml`) and publish it.",
    },
    ErrorCode {
        code: "MAG-SC001",
        meaning: "A scheduler document sets both `recipe:` and `workflow:`; they are mutually exclusive.",
        remedy: "Keep `workflow:` and remove `recipe:`.",
    },
    ErrorCode {
        code: "MAG-SC002",
        meaning: "A scheduler document names a `recipe:`; Magrathea schedules workflows only.",
        remedy: "Replace `recipe:` with `workflow: <name>` of a workflow that runs the recipe.",
    },
    ErrorCode {
        code: "MAG-SC003",
        meaning: "A scheduler document names no `workflow:` to start.",
        remedy: "Add `workflow: <name>`.",
    },
    ErrorCode {
        code: "MAG-SC004",
        meaning: "A scheduler document sets both `cron:` and `at:`.",
        remedy: "Keep `cron:` for a repeating schedule or `at:` for a one-shot, not both.",
    },
    ErrorCode {
        code: "MAG-SC005",
        meaning: "A scheduler document sets neither `cron:` nor `at:`, so it never fires.",
        remedy: "Add `cron: \"<pattern>\"` (5 fields, or 6 with seconds first) or `at: <ISO-8601 instant>`.",
    },
    ErrorCode {
        code: "MAG-SC006",
        meaning: "A scheduler document's `cron:` expression does not parse; the message says why.",
        remedy: "Write 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, e.g. `0 0 6 * * *`.",
    },
    ErrorCode {
        code: "MAG-SC007",
        meaning: "A scheduler document's `timezone:` is not an IANA time zone name.",
        remedy: "Use a name such as `Europe/Berlin`, `America/New_York` or `UTC`.",
    },
    ErrorCode {
        code: "MAG-SC008",
        meaning: "A scheduler document's `at:` is not an ISO-8601 instant with an offset or `Z`.",
        remedy: "Write e.g. `2026-12-24T18:00:00+01:00` or `2026-12-24T17:00:00Z`.",
    },
    ErrorCode {
        code: "MAG-SC009",
        meaning: "A scheduler document gives `timezone:` with `at:`; the instant carries its own offset, so the zone would be ignored.",
        remedy: "Remove `timezone:`, or write the offset into `at:`.",
    },
    ErrorCode {
        code: "MAG-SC010",
        meaning: "A scheduler document never fires: its `cron:` expression matches no time at all (e.g. 30 February), an error; or its one-shot `at:` lies in the past, a warning of `validate`.",
        remedy: "Fix the day and month fields, or give `at:` a time to come.",
    },
];
