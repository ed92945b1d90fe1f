-- The catalog: small keyed values beside the journals (trigger registrations, scheduler
-- cursors, delivery records). Keys order bytewise (COLLATE "C"), as in every store.
CREATE TABLE magrathea_catalog (
    tbl TEXT NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    value BYTEA NOT NULL,
    PRIMARY KEY (tbl, key)
);
