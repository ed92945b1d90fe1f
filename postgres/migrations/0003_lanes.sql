-- Lane slots: a lane of width n has slots 0..n (made on first use); a task holds one while it
-- runs. `holder` is the worker, renewed by its heartbeat; a slot whose holder stopped renewing
-- it is free again once `expires_at` passed. `token` marks one acquisition, so a late release
-- never frees the slot for whoever took it since.
CREATE TABLE magrathea_lane_slots (
    lane TEXT NOT NULL,
    slot INT NOT NULL,
    holder TEXT,
    token UUID,
    expires_at TIMESTAMPTZ,
    PRIMARY KEY (lane, slot)
);

CREATE INDEX magrathea_lane_slots_holder ON magrathea_lane_slots (holder)
    WHERE holder IS NOT NULL;
