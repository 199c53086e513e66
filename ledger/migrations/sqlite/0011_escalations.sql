-- countersign ledger, SQLite schema version 11: escalations. When no one
-- decided a proposal within its operation's first delay, the notification
-- goes again, to the next approvers or channels the registry names.
--
-- The signer records the escalation with the proposal, as a second row
-- of the outbox that the notify process is not given before its time:
--
-- `not_before`:  when it may be taken (the ledger's timestamp form); NULL
--                for a row to take at once, as every row before this.
-- `escalates`:   the proposal it escalates; NULL for any other row. Such
--                a row is given only while its proposal is still undecided
--                and its decision window open; once it is decided or
--                expired, the row is deleted unread, since a person who
--                can no longer decide must not be paged.
ALTER TABLE notification_outbox ADD COLUMN not_before TEXT;
ALTER TABLE notification_outbox ADD COLUMN escalates TEXT;
