//! The codes of the journal, the store and the engine (areas ST to SE).

use super::ErrorCode;

/// The codes of the journal, the store and the engine (areas ST to SE), in the order of [`AREAS`](crate::codes::AREAS).
pub(super) const CODES: &[ErrorCode] = &[
    ErrorCode {
        code: "MAG-ST001",
        meaning: "The storage layer failed: an I/O error, a full disk, a failed commit. Nothing of the failed commit was applied.",
        remedy: "Check the disk (space, permissions, health). The engine recovers the affected runs from their journals once the store works again; the error's source holds the underlying I/O error.",
    },
    ErrorCode {
        code: "MAG-ST002",
        meaning: "The store file is already open in another process, or in an engine of this process that is still open (a handle of it is alive), or that took more than 30 s to close.",
        remedy: "Stop the other process, or talk to it as a client; or open another path. In one process, drop every handle of the first engine: a new engine on the file closes a dropped one and waits for it to let go.",
    },
    ErrorCode {
        code: "MAG-ST003",
        meaning: "The engine has stopped (`Engine::stop`, or it is shutting down): its journal writer takes nothing more, and once a new engine of the process has its store file, its handles read nothing more.",
        remedy: "Retry against a running engine (the new one, after a restart in the process).",
    },
    ErrorCode {
        code: "MAG-ST004",
        meaning: "The store is corrupt: an entry of the run index (a run's summary) cannot be decoded, or the store file's pages are damaged (redb found them so when opening it: a flipped bit, a partial copy).",
        remedy: "Restore the store from a backup; when only the run index is damaged, the journals themselves may still be intact.",
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
        code: "MAG-ST007",
        meaning: "On a store several workers share: the worker that holds the run did not answer a delivery (a gate's answer, a signal, a cancel, a pause) within 30 s; it may have stopped. If it had not taken the request, the request was withdrawn and changed nothing; if it had, it may still apply it.",
        remedy: "Wait for another worker to take the run over (once the holder's lease expires, after the workers' lease grace), then send the request again; if the message says it was taken, look at the run first.",
    },
    ErrorCode {
        code: "MAG-LS001",
        meaning: "A run was claimed (its first claim and its reclaims after lost leases) more often than maxClaimAttempts allows: the worker driving it stopped heartbeating each time (crashed, was killed, or froze). The task that was running fails terminally with technical_error instead of going round the workers for ever; catch: routes it.",
        remedy: "Find out why the workers die while running this task (its memory or time, a crash) and fix it; route technical_error with catch: to handle it in the workflow. The limit is the PostgreSQL store's maxClaimAttempts (default 3).",
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
        code: "MAG-EN006",
        meaning: "A start named an idempotency key that already started a run of another workflow (or, for a typed start of a code workflow, of another version of it); nothing was started.",
        remedy: "Use a key of its own for each workflow (e.g. prefix it with the workflow's name).",
    },
    ErrorCode {
        code: "MAG-EN007",
        meaning: "A task attempt was to run more often than maxClaimAttempts allows (its first run counting): each time, the process running it stopped before its result (a crash, a kill, a full disk). It is not run again; it fails terminally with technical_error, which catch: routes.",
        remedy: "Find out why the process stops while running this task (its memory or time, a crash) and fix it; handle the step's technical_error in the workflow (a YAML catch:, or the step's error in code). The limit is EngineBuilder::max_claim_attempts (default 3; `magrathea serve --max-claim-attempts`).",
    },
    ErrorCode {
        code: "MAG-EN008",
        meaning: "A run was not started: its tenant has as many runs in progress (waiting ones included) in this process as one tenant may (`magrathea serve --max-runs-per-tenant`, 10,000 by default), or its runs in memory hold as many journal bytes as one tenant's may and the start would pass them (`--max-resident-bytes-per-tenant`, 1 GiB by default; runs asleep on a timer or a gate count nothing). A sub-run beyond either fails its step with this code.",
        remedy: "Start again once some of the tenant's runs have ended (or wait out of memory), or raise the bound with `magrathea serve --max-runs-per-tenant` / `--max-resident-bytes-per-tenant` (EngineBuilder::max_active_runs_per_tenant, max_resident_bytes_per_tenant).",
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
        meaning: "A run handle was asked for a run of another workflow, or of another version of it.",
        remedy: "Ask for the handle with the workflow (and the version) the run was started with (its `workflowName` and `workflowVersion`).",
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
        meaning: "The token's subject already follows as many runs (SSE streams, WebSocket subscriptions and waiting reads of a run together) as the server allows (HTTP 429).",
        remedy: "Close a stream or subscription or let a wait answer first, or have the operator raise `ServeConfig::max_followers_per_subject`.",
    },
    ErrorCode {
        code: "MAG-RD004",
        meaning: "The WebSocket connection already holds as many subscriptions that have not ended as the server allows.",
        remedy: "Wait for a subscribed run to end, or open another connection.",
    },
    ErrorCode {
        code: "MAG-RD005",
        meaning: "The token's subject already holds as many WebSocket sessions as the server allows (as many as it may hold followers; HTTP 429 before the upgrade): one tenant's idle sessions cannot take every connection of the server.",
        remedy: "Close a session first (a session with no subscription that sends nothing for the idle timeout is closed by the server), or have the operator raise `ServeConfig::max_followers_per_subject`.",
    },
    ErrorCode {
        code: "MAG-BD001",
        meaning: "Bounds exhausted: the run's journal grew past the most bytes a run may hold; the run ended FAILED in the commit that crossed it.",
        remedy: "Keep large data out of the journal (return references, not blobs), bound loops, or raise EngineBuilder::max_journal_bytes_per_run (or the tenant's bounds.maxJournalBytes, which may only lower it).",
    },
    ErrorCode {
        code: "MAG-BD002",
        meaning: "A task's output is larger than the most a task output may hold (its bytes of JSON, or its objects and arrays: one per 64 bytes of the limit); the attempt failed with technical_error, was not retried, and its output was not journaled.",
        remedy: "Return less, or store large data outside the journal and return a reference; or raise EngineBuilder::max_task_output_bytes.",
    },
    ErrorCode {
        code: "MAG-BD003",
        meaning: "A value the YAML runtime builds is larger than 16 MiB of JSON: a terminal's `result:` (the run ended FAILED) or a fan-out's output, its sub-runs' results together (the state ended technical_error). Nothing of it was journaled.",
        remedy: "Keep large data out of the run: have sub-runs return references instead of blobs, and write a parameter into a result once.",
    },
    ErrorCode {
        code: "MAG-BD020",
        meaning: "An HTTP response (an `http_request` body, or a model service's reply to an agent) is larger than the task may read: the request's `maxResponseBytes` or the engine's task output limit, whichever is lower. Reading stopped at the limit and the connection was closed; the attempt failed with technical_error.",
        remedy: "Ask for less (a smaller page, a shorter answer, a lower `maxTokens`), raise `maxResponseBytes` up to the task output limit, or raise EngineBuilder::max_task_output_bytes.",
    },
    ErrorCode {
        code: "MAG-BD030",
        meaning: "A shell_task or script_task asked for a timeout (its `timeoutSeconds`, or the default it would run with) above the tenant's `bounds.maxTaskTimeoutSeconds` (default 86400 s, one day); the step ended technical_error without starting.",
        remedy: "Lower the state's `timeoutSeconds`, or have the tenant's administrator raise `bounds.maxTaskTimeoutSeconds` in `_tenant/_vance/settings.yaml`.",
    },
    ErrorCode {
        code: "MAG-WF001",
        meaning: "Workflow code panicked: the run is BLOCKED with the panic message and its location.",
        remedy: "Fix the code and reopen the engine; the run replays from its journal.",
    },
    ErrorCode {
        code: "MAG-WF002",
        meaning: "The workflow code made a step (a task, timer, gate, …) from a clone of its context outside the workflow's own future: in a `tokio::spawn`ed task or on another thread. Replay runs the code inside the driver's polls and cannot place such a step in order, so the run is BLOCKED before the step is journaled.",
        remedy: "Make every step from the workflow's body and use `join`/`select` (or `futures::join!`) for concurrency; reopen the engine and the run resumes from its journal.",
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
        meaning: "Replay found a different step than the journal holds at this position (kind, name or input differ): the workflow code changed under a running run, or it builds a step's input in an order that changes between processes (a list made from a HashMap or HashSet, a HashSet itself).",
        remedy: "Restore the code the run started with, or guard the change with a patch marker; the run stays BLOCKED until then. Build inputs from ordered collections (BTreeMap, BTreeSet, a sorted Vec).",
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
        meaning: "The run is blocked, so it takes no answers or signals (a cancel still ends it).",
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
        code: "MAG-PS001",
        meaning: "A run was asked to pause that cannot be: it has ended (DONE, FAILED, CANCELLED), its cancellation is under way, or it is BLOCKED.",
        remedy: "Nothing to pause; to run it again, rerun or retry it.",
    },
    ErrorCode {
        code: "MAG-PS002",
        meaning: "A run was asked to resume that is not PAUSED.",
        remedy: "Check the run's status (`magrathea runs show`); only a paused run can be resumed.",
    },
    ErrorCode {
        code: "MAG-PS003",
        meaning: "A retried run was to begin at a state its definition does not have (its StartRecord's entry names it).",
        remedy: "Retry from a state the definition has, or on the frozen definition of the original run.",
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
        code: "MAG-CH003",
        meaning: "A child run was not started: its tree of runs (every run started under the root while the root is active, the root not counted) holds as many sub-runs as one tree may (10,000 by default).",
        remedy: "End the recursion with a condition, start fewer sub-runs per level, or raise the bound with EngineBuilder::max_runs_per_tree or `magrathea serve --max-runs-per-tree`.",
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
];
