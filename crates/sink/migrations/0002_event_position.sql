-- Stages of one journey recorded within the same millisecond (Redis's
-- clock in the trace has ms resolution) keep their order by position:
-- the stage's place in the event's trace; the drain's own outcome comes last.
ALTER TABLE sluice.events ADD COLUMN position int NOT NULL DEFAULT 0;
