-- When each lease was last taken or renewed, by the database's clock. A lease whose last
-- renewal came before the server's start (`pg_postmaster_start_time()`) lapsed across a restart
-- of the database, which no worker could renew it through: taking it over counts no reclaim.
ALTER TABLE magrathea_leases ADD COLUMN renewed_at TIMESTAMPTZ NOT NULL DEFAULT now();
