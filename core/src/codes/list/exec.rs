//! The codes of the executors: shell, script, tools, policy, egress and agents (areas EX to AG).

use super::ErrorCode;

/// The codes of the executors: shell, script, tools, policy, egress and agents (areas EX to AG), in the order of [`AREAS`](crate::codes::AREAS).
pub(super) const CODES: &[ErrorCode] = &[
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
        meaning: "A shell_task's private temporary directory could not be created, or a parameter or variable too large for the environment could not be written to it.",
        remedy: "Check that the server's temporary directory exists, is writable and has space.",
    },
    ErrorCode {
        code: "MAG-SH014",
        meaning: "A served shell_task was refused: the document tree (with `_auth/`, every tenant and the default store) or the server's store lies beneath a directory its sandbox lets it read or write (a system directory such as `/opt`, or a path of the tenant's `shell` settings).",
        remedy: "Serve the tree from a directory no shell step may read (e.g. under /srv or /var/lib), or narrow the tenant's `shell.readPaths`/`writePaths`/`workspaceRoots`.",
    },
    ErrorCode {
        code: "MAG-SH015",
        meaning: "A served shell_task was refused: its tenant's `shell.readPaths` or `writePaths` names a path in the document tree outside the tenant's own projects (another tenant, `_auth/`, the tenant's own `_tenant/` whose settings decide the sandbox, also through a link) or in the server's store.",
        remedy: "The tenant's administrator removes the path from `_tenant/_vance/settings.yaml`; what steps share belongs in a directory of the tenant's own beside its projects, or outside the tree.",
    },
    ErrorCode {
        code: "MAG-SH016",
        meaning: "A shell_task could not start: a variable of its environment (a value spliced into `run:`) holds a NUL byte, which no process environment can hold. Run parameters and variables holding one are given as `<NAME>_FILE` instead.",
        remedy: "Keep binary data out of what `run:` splices: have the earlier step write it to a file, and pass the file's name.",
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
        code: "MAG-JS018",
        meaning: "A served project's script_task names a workspace that lies outside the project directory (and under no root the tenant lists).",
        remedy: "Keep the workspace inside the project, or have the tenant's administrator list its root under `shell.workspaceRoots`.",
    },
    ErrorCode {
        code: "MAG-JS019",
        meaning: "A script_task's path is the project's or the tenant's `_vance/settings.yaml`, which holds secrets; no step reads it.",
        remedy: "Put the script in a file of its own (e.g. `_vance/scripts/<name>.js`).",
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
        code: "MAG-TL006",
        meaning: "`web_search` has no search service: the tenant's settings set no `webSearch.url` (or not a URL).",
        remedy: "Set `webSearch.url` in the tenant's `_tenant/_vance/settings.yaml` to a SearxNG-compatible JSON endpoint, and allow its host in `egress:` if it is private.",
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
        meaning: "The agent's answer is no valid structured reply (an engine such as `jeltz` that asks for the wrapper `{success, data}`): no answer at all, no JSON, no wrapper, `success: false`, or a `data` that does not match `params.schema` (the reference's `schema_violation`). The step ends `agent_error` with the reply as its output.",
        remedy: "Route or retry `agent_error` (`catch:`, `retry.on:`), or adjust the prompt or the schema.",
    },
    ErrorCode {
        code: "MAG-AG010",
        meaning: "The model still called tools after `maxToolRounds` rounds.",
        remedy: "Raise `maxToolRounds`, or adjust the prompt or the tools.",
    },
    ErrorCode {
        code: "MAG-AG011",
        meaning: "In a served tree, a recipe's `apiKeyEnv` names a server variable the tenant's settings do not list under `agents.keyEnv`, or not for the host of the recipe's `baseUrl`.",
        remedy: "The tenant's administrator lists the variable under `agents.keyEnv` in _tenant/_vance/settings.yaml, with the hosts its key may be sent to.",
    },
    ErrorCode {
        code: "MAG-HK001",
        meaning: "A hook script threw an error (or its promise rejected).",
        remedy: "Read the message and the line it names, and fix the script; catch errors the hook can live with.",
    },
    ErrorCode {
        code: "MAG-HK002",
        meaning: "A hook script does not compile.",
        remedy: "Fix the syntax error at the line named in the message.",
    },
    ErrorCode {
        code: "MAG-HK003",
        meaning: "A hook script ran past its `timeoutSeconds` and was interrupted.",
        remedy: "Make the script finish sooner, or raise `timeoutSeconds` (at most 60).",
    },
    ErrorCode {
        code: "MAG-HK004",
        meaning: "A hook script exceeded the sandbox's memory limit.",
        remedy: "Keep less data in the script.",
    },
    ErrorCode {
        code: "MAG-HK005",
        meaning: "A hook script awaited a promise that never settles (the sandbox has no timers or I/O).",
        remedy: "Await only promises the script itself settles, or `workflows.start` results.",
    },
    ErrorCode {
        code: "MAG-HK006",
        meaning: "A hook script returned a value JSON cannot carry.",
        remedy: "Return JSON-compatible values only (objects, arrays, strings, numbers, booleans, null), or nothing.",
    },
    ErrorCode {
        code: "MAG-HK007",
        meaning: "The script engine could not run the hook (it failed to start or crashed).",
        remedy: "Retry; if it persists, report it with the hook script.",
    },
    ErrorCode {
        code: "MAG-HK008",
        meaning: "A hook called `workflows.start` more often than one execution allows.",
        remedy: "Start fewer workflows per event, or start one workflow that fans out.",
    },
    ErrorCode {
        code: "MAG-HK009",
        meaning: "`workflows.start` was called with a bad argument (a name that is not text, params that are not an object).",
        remedy: "Call `workflows.start(\"name\", { ...params })`.",
    },
    ErrorCode {
        code: "MAG-HK010",
        meaning: "An event subscription or hook names an internal event that does not exist.",
        remedy: "Use one of the internal events the message lists (e.g. `workflow.run.failed`).",
    },
    ErrorCode {
        code: "MAG-HK011",
        meaning: "An event filter does not parse, or reads a variable other than `#event`.",
        remedy: "Fix the filter at the character named; filters read the event as `#event['key']`.",
    },
    ErrorCode {
        code: "MAG-HK012",
        meaning: "A hook's `script:` is not a relative `.js` path under the project's `_vance/hooks/` (where writing through the API needs `workflow.run`).",
        remedy: "Move the script under `_vance/hooks/` and name it relative to the project directory, without `..`, e.g. `_vance/hooks/review.js`.",
    },
    ErrorCode {
        code: "MAG-HK013",
        meaning: "A hook's `timeoutSeconds` is outside 1 to 60.",
        remedy: "Set `timeoutSeconds` between 1 and 60 (default 10).",
    },
];
