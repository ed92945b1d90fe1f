-- Leases: which worker drives which run, with a fencing epoch that grows with every claim by
-- another worker. A row exists while a run is active and some worker has claimed it.
CREATE TABLE magrathea_leases (
    run_id UUID PRIMARY KEY,
    owner TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    reclaims INT NOT NULL DEFAULT 0
);

CREATE INDEX magrathea_leases_owner ON magrathea_leases (owner);
CREATE INDEX magrathea_leases_expiry ON magrathea_leases (expires_at);

-- The mailbox: deliveries to runs another worker holds, and their replies.
CREATE TABLE magrathea_mailbox (
    id BIGSERIAL PRIMARY KEY,
    run_id UUID NOT NULL,
    body JSONB NOT NULL,
    taken BOOLEAN NOT NULL DEFAULT false,
    reply JSONB,
    posted_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX magrathea_mailbox_unread ON magrathea_mailbox (run_id, id) WHERE NOT taken;
