-- The W3C trace context a task was created in (the api's span of POST .../tasks). A step the
-- agent worker runs outside any wakeup (its periodic scan picked the turn up) continues this
-- trace, so every step of a task is a span of one trace whichever way it was started. NULL when
-- the api exports no traces.
ALTER TABLE state.tasks ADD COLUMN traceparent text;
