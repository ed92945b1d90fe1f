//! The registry of every error code.
//!
//! Every user-facing error message in Magrathea starts with a stable code in brackets, such as
//! `[MAG-ST001]`, so that users can search for it. [`CODES`] lists each code once, with what it
//! means and what to do about it; `docs/error-codes.md` is generated from it
//! ([`markdown`]), and tests check that the codes are unique and that every code used in the
//! workspace's sources is registered here.
//!
//! A code is `MAG-`, an area prefix ([`AREAS`]) and a three-digit number; the HTTP API's codes,
//! the `code` of its JSON error bodies, are `MAG-HTTP-` and a status or a name in capitals. A code
//! keeps its meaning forever: a new meaning gets a new code, never a reused one.

/// One error code: what it means and what the user should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode {
    /// The code without brackets, e.g. `MAG-ST001`; messages show it as `[MAG-ST001]`.
    pub code: &'static str,
    /// What went wrong, in one line.
    pub meaning: &'static str,
    /// What the user should do about it.
    pub remedy: &'static str,
}

/// An area of the codes: the letters after `MAG-`, and what they cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Area {
    /// The letters, e.g. `ST` for `MAG-ST001`.
    pub prefix: &'static str,
    /// What the area covers.
    pub title: &'static str,
}

/// The areas, in the order of [`CODES`].
pub const AREAS: &[Area] = &[
    Area {
        prefix: "ST",
        title: "Store and journal writer",
    },
    Area {
        prefix: "LS",
        title: "Leases of runs on a store several workers share",
    },
    Area {
        prefix: "JF",
        title: "Journal format",
    },
    Area {
        prefix: "ID",
        title: "Identifiers",
    },
    Area {
        prefix: "EN",
        title: "Engine setup and starts",
    },
    Area {
        prefix: "RN",
        title: "Runs",
    },
    Area {
        prefix: "RD",
        title: "Journal readers: paging and live followers",
    },
    Area {
        prefix: "BD",
        title: "Run bounds: journal size, task output, task spawns",
    },
    Area {
        prefix: "WF",
        title: "Workflow code",
    },
    Area {
        prefix: "RP",
        title: "Replay tests",
    },
    Area {
        prefix: "RC",
        title: "Recovery",
    },
    Area {
        prefix: "ND",
        title: "Non-determinism",
    },
    Area {
        prefix: "GT",
        title: "Gates, signals and the inbox",
    },
    Area {
        prefix: "TK",
        title: "Tasks",
    },
    Area {
        prefix: "CX",
        title: "Cancellation",
    },
    Area {
        prefix: "PS",
        title: "Pausing and resuming runs",
    },
    Area {
        prefix: "CH",
        title: "Child runs",
    },
    Area {
        prefix: "SE",
        title: "Serialisation of typed values",
    },
    Area {
        prefix: "Y",
        title: "YAML documents",
    },
    Area {
        prefix: "YA",
        title: "YAML static analysis",
    },
    Area {
        prefix: "YC",
        title: "YAML conditions at run time",
    },
    Area {
        prefix: "YP",
        title: "YAML run parameters",
    },
    Area {
        prefix: "YR",
        title: "YAML recovery",
    },
    Area {
        prefix: "PR",
        title: "Parallel branches: parallel_task and foreach_task",
    },
    Area {
        prefix: "DOC",
        title: "Workflow documents",
    },
    Area {
        prefix: "VR",
        title: "Workflow versions: drafts, publishing, history, archive",
    },
    Area {
        prefix: "SC",
        title: "Scheduler documents",
    },
    Area {
        prefix: "EX",
        title: "Task executors",
    },
    Area {
        prefix: "SH",
        title: "Shell tasks",
    },
    Area {
        prefix: "JS",
        title: "Script tasks",
    },
    Area {
        prefix: "TL",
        title: "Tools",
    },
    Area {
        prefix: "PL",
        title: "Task-type policy",
    },
    Area {
        prefix: "EG",
        title: "Egress policy",
    },
    Area {
        prefix: "AG",
        title: "Agent tasks",
    },
    Area {
        prefix: "HK",
        title: "Hooks and internal-event subscriptions",
    },
    Area {
        prefix: "TR",
        title: "Triggers: registrations, schedules, deliveries",
    },
    Area {
        prefix: "SV",
        title: "Server",
    },
    Area {
        prefix: "CS",
        title: "The control socket of a store's owner",
    },
    Area {
        prefix: "AUTH",
        title: "Authentication",
    },
    Area {
        prefix: "WH",
        title: "Webhooks: configuration and the verification of deliveries",
    },
    Area {
        prefix: "GR",
        title: "The editor graph of a workflow and its layout file",
    },
    Area {
        prefix: "HTTP",
        title: "HTTP API (the `code` of an error response)",
    },
];

mod list;

pub use list::CODES;

/// The registered code `code` (with or without brackets: `MAG-ST001` or `[MAG-ST001]`).
pub fn lookup(code: &str) -> Option<&'static ErrorCode> {
    let code = code.trim_start_matches('[').trim_end_matches(']');
    CODES.iter().find(|c| c.code == code)
}

impl ErrorCode {
    /// The area letters of the code: `ST` for `MAG-ST001`, `HTTP` for `MAG-HTTP-404`.
    pub fn prefix(&self) -> &'static str {
        let body = self.code.trim_start_matches("MAG-");
        let letters = body.bytes().take_while(u8::is_ascii_uppercase).count();
        &body[..letters]
    }
}

/// The text of `docs/error-codes.md`: one section per area, one table row per code.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Error codes\n\n\
         Every error message of Magrathea starts with one of these codes, e.g. `[MAG-ST001]`.\n\
         This file is generated from `core/src/codes/`; after changing the registry, run\n\
         `MAGRATHEA_BLESS=1 cargo test -p magrathea-core --test error_codes`.\n",
    );
    for area in AREAS {
        out.push_str(&format!("\n## {} ({})\n\n", area.title, area.prefix));
        out.push_str("| code | meaning | what to do |\n|---|---|---|\n");
        for c in CODES.iter().filter(|c| c.prefix() == area.prefix) {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                c.code,
                c.meaning.replace('|', "\\|"),
                c.remedy.replace('|', "\\|")
            ));
        }
    }
    out
}
