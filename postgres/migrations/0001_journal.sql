-- The journal, the run index and the idempotency keys of starts: what the redb store holds.
CREATE TABLE magrathea_journal (
    run_id UUID NOT NULL,
    seq BIGINT NOT NULL,
    bytes BYTEA NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE magrathea_runs (
    run_id UUID PRIMARY KEY,
    workflow TEXT NOT NULL,
    scope TEXT NOT NULL,
    active BOOLEAN NOT NULL,
    summary BYTEA NOT NULL
);

CREATE INDEX magrathea_runs_active ON magrathea_runs (run_id) WHERE active;

CREATE TABLE magrathea_idempotency_keys (
    key TEXT PRIMARY KEY,
    run_id UUID NOT NULL
);
