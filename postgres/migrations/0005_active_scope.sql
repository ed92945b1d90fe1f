-- The active runs of one scope or of one tenant's scopes (a prefix, compared bytewise), for
-- the inbox: a request for one tenant's items reads no row of another tenant's runs.
CREATE INDEX magrathea_runs_active_scope ON magrathea_runs ((scope COLLATE "C"), run_id)
    WHERE active;
